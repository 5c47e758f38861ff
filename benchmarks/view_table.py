"""Table 3's 2-D rows for the view (issue 42), run by hand in three stages.

``python benchmarks/view_table.py fit DATASET [--sweeps N]``
    Fits the IBP-RFLVM of Table 3's cell (trial 0's training matrix, the cell's seed, the
    library's default sampler; NB on the count sets) and stores every kernel principal component
    of its posterior embedding with ``embedding_dims_`` in ``results/view/DATASET.ibp.npz``, so
    the views can be scored again without refitting.
``python benchmarks/view_table.py gplvm DATASET [--iters N]``
    Fits the Bayesian GPLVM with a 2-D latent to the same training matrix (counts as log1p) and
    stores its latent means in ``results/view/DATASET.gplvm.npz``. Cancer and mice reuse the
    committed 2-D cells ``results/cells/DATASET__gplvm__t0`` instead (``--reuse``).
``python benchmarks/view_table.py scale [--rows 10000] [--sweeps 10]``
    Seconds of the view after a fit of 10,000 synthetic rows (bench_scale.py's Gaussian data,
    50 columns) against the fit's own seconds.
``python benchmarks/view_table.py pbmc [--sweeps 200] [--seed 0]``
    The PBMC example's picture (examples/single_cell.py's fit through the AnnData tool): 5-NN
    accuracy and Leiden ARI of the view beside PCA's two components, ``embedding(2)`` and t-SNE
    of the log-normalised counts, each Leiden on ``sc.pp.neighbors`` of the picture's columns.
``python benchmarks/view_table.py table [DATASET ...]``
    Prints 1-NN and 5-NN accuracy (Table 3's stratified 5-fold split) of PCA(2), the posterior
    embedding at d = 2, the GPLVM's 2-D latent, t-SNE(2) of the standardised (log1p) data and the
    view, with the full ``embedding_`` for reference, and the view's seconds.

Every figure is printed beside the command that made it. ``IBP_RFLVM_DATA`` names the data.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from ibp_rflvm.evaluation.cells import build_estimator, dataset_arrays, split_for
from ibp_rflvm.evaluation.experiments import RunConfig, _dataset_kind, model_seed
from ibp_rflvm.evaluation.latent_report import pca_scores
from ibp_rflvm.evaluation.metrics import knn_accuracy, knn_seed
from ibp_rflvm.view import tsne_view

OUT = Path("results/view")
DATASETS = ("cancer", "mice", "olivetti", "congress", "spam", "newsgroups")
COMMAND = "PYTHONPATH=src OPENBLAS_NUM_THREADS=1 python benchmarks/view_table.py"


def _method(dataset: str) -> str:
    return "nb-ibp-rflvm" if _dataset_kind(dataset) == "counts" else "ibp-rflvm"


def _training(dataset: str) -> tuple[np.ndarray, np.ndarray, str]:
    data_home = os.environ.get("IBP_RFLVM_DATA")
    Y, labels, _ = dataset_arrays(dataset, False, data_home, None)
    Y_train, _, _, digest = split_for(Y, dataset, 0, 0)
    return Y_train, np.asarray(labels), digest


def fit(dataset: str, sweeps: int, suffix: str = "") -> None:
    Y_train, _, digest = _training(dataset)
    method = _method(dataset)
    cfg = RunConfig(n_iter=sweeps, sampler="default", data_home=os.environ.get("IBP_RFLVM_DATA"))
    est = build_estimator(method, None, model_seed(dataset, method, 0, 0), cfg)
    t0 = time.perf_counter()
    with threadpool_limits(limits=1, user_api="blas"):
        est.fit(Y_train)
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    own = int(est.embedding_dims_)
    scores = est.embedding(est._embedding().n_available)
    emb_s = time.perf_counter() - t0
    OUT.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        OUT / f"{dataset}.ibp{suffix}.npz", scores=scores, own_d=own, fit_seconds=fit_s,
        embedding_seconds=emb_s, sweeps=sweeps, mask_digest=digest,
        chain_weights=np.asarray(est.chain_weights_),
    )
    print(f"{dataset}: {method}, {sweeps} sweeps, fit {fit_s:.1f} s, embedding {emb_s:.1f} s, "
          f"own d {own} of {scores.shape[1]}")


def gplvm(dataset: str, iters: int, reuse: bool) -> None:
    Y_train, _, digest = _training(dataset)
    if reuse:
        rec = json.loads(Path(f"results/cells/{dataset}__gplvm__t0.json").read_text())
        if rec["mask_digest"] != digest or rec["D"] != 2:
            sys.exit(f"{dataset}: the committed GPLVM cell is not trial 0's 2-D fit")
        latent = np.load(f"results/cells/{rec['latent_file']}")
        fit_s, iters = rec["fit_seconds"], rec["settings"]["gplvm_iters"]
    else:
        from ibp_rflvm.baselines import BayesianGPLVM

        Y = np.log1p(Y_train) if _dataset_kind(dataset) == "counts" else Y_train
        est = BayesianGPLVM(n_components=2, max_iters=iters,
                            random_state=model_seed(dataset, "gplvm", 0, 0))
        t0 = time.perf_counter()
        est.fit(Y)
        fit_s = time.perf_counter() - t0
        latent = est.latent_
    OUT.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT / f"{dataset}.gplvm.npz", latent=latent, fit_seconds=fit_s, iters=iters,
                        reused=reuse)
    print(f"{dataset}: GPLVM 2-D, {iters} iterations, {fit_s:.1f} s{' (committed cell)' if reuse else ''}")


def standardised(Y_train: np.ndarray, counts: bool) -> np.ndarray:
    """The data t-SNE sees: log1p counts or standardised columns, gaps filled with the column mean."""
    X = np.log1p(Y_train) if counts else np.asarray(Y_train, dtype=np.float64)
    means = np.nanmean(X, axis=0)
    X = np.where(np.isnan(X), means, X) - means
    if not counts:
        sd = X.std(axis=0)
        X = X / np.where(sd > 0, sd, 1.0)
    return X


def table(datasets: list[str], suffix: str = "") -> None:
    for d in datasets:
        Y_train, labels, digest = _training(d)
        counts = _dataset_kind(d) == "counts"
        seed = knn_seed(d, 0)
        ibp = np.load(OUT / f"{d}.ibp{suffix}.npz")
        if str(ibp["mask_digest"]) != digest:
            sys.exit(f"{d}: stored fit is not of trial 0's training matrix")
        emb = ibp["scores"][:, : int(ibp["own_d"])]
        reps: dict[str, tuple[np.ndarray, str]] = {
            "PCA(2)": (pca_scores(Y_train, 2, counts), "pca_scores(Y_train, 2)"),
            "embedding(2)": (ibp["scores"][:, :2], "stored fit"),
        }
        gp = OUT / f"{d}.gplvm.npz"
        if gp.exists():
            g = np.load(gp)
            reps["GPLVM 2-D"] = (g["latent"], f"{int(g['iters'])} iterations")
        data = standardised(Y_train, counts)
        t0 = time.perf_counter()
        reps["t-SNE(2) of data"] = (tsne_view(data, 2, 0), "perplexity 30")
        data_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        v = tsne_view(emb, 2, 0)
        view_s = time.perf_counter() - t0
        reps["view (t-SNE of embedding_)"] = (v, "perplexity 30 (the default)")
        reps["view, perplexity 10"] = (tsne_view(emb, 2, 0, 10.0), "sensitivity")
        reps[f"embedding_ (d = {emb.shape[1]})"] = (emb, "reference")
        reps["the data, all columns"] = (data, "reference: " + ("log1p" if counts else "standardised"))
        print(f"\n## {d} ({Y_train.shape[0]} x {Y_train.shape[1]}; fit {int(ibp['sweeps'])} sweeps, "
              f"{float(ibp['fit_seconds']):.0f} s; view {view_s:.1f} s, t-SNE of data {data_s:.1f} s)")
        print(f"command: {COMMAND} table {d}" + (f" --suffix {suffix}" if suffix else ""))
        print("| representation | 1-NN | 5-NN | note |\n|---|---|---|---|")
        for name, (X, note) in reps.items():
            a1 = knn_accuracy(X, labels, 1, random_state=seed)
            a5 = knn_accuracy(X, labels, 5, random_state=seed)
            print(f"| {name} | {a1:.3f} | {a5:.3f} | {note} |", flush=True)


def scale(rows: int, sweeps: int) -> None:
    from ibp_rflvm.estimator import IBPRFLVM
    from ibp_rflvm.view import view

    rng = np.random.default_rng(0)
    H = rng.standard_normal((rows, 3))
    Y = np.sin(H @ rng.standard_normal((3, 50))) + 0.3 * rng.standard_normal((rows, 50))
    Y = (Y - Y.mean(axis=0)) / Y.std(axis=0)
    t0, c0 = time.perf_counter(), time.process_time()
    with threadpool_limits(limits=1, user_api="blas"):
        model = IBPRFLVM(n_iter=sweeps, random_state=0).fit(Y)
    fit_s, fit_c = time.perf_counter() - t0, time.process_time() - c0
    t0, c0 = time.perf_counter(), time.process_time()
    E = model.embedding_
    emb_s, emb_c = time.perf_counter() - t0, time.process_time() - c0
    t0, c0 = time.perf_counter(), time.process_time()
    V = view(model)
    view_s, view_c = time.perf_counter() - t0, time.process_time() - c0
    print(f"command: {COMMAND} scale --rows {rows} --sweeps {sweeps}")
    print(f"{rows} x 50 Gaussian, {sweeps} sweeps (wall / CPU s): fit {fit_s:.1f} / {fit_c:.1f} "
          f"({fit_c / sweeps:.2f} CPU s per sweep with the start), embedding_ ({E.shape[1]} dims) "
          f"{emb_s:.1f} / {emb_c:.1f}, view {view_s:.1f} / {view_c:.1f}, shape {V.shape}")


def pbmc(sweeps: int, seed: int) -> None:
    import anndata
    import scanpy as sc
    import scipy.sparse as sp

    sys.path.insert(0, "examples")
    import single_cell as ex
    from ibp_rflvm.adata import ibp_rflvm
    from ibp_rflvm.view import view

    sc.settings.verbosity = 0
    counts, labels, _ = ex.load_pbmc()
    keep = counts.sum(axis=1) > 0
    counts, labels = counts[keep], labels[keep]
    adata = anndata.AnnData(X=sp.csr_matrix(counts))
    model = ex.make_model(sweeps, seed)
    t0 = time.perf_counter()
    ibp_rflvm(adata, model=model, n_neighbors=ex.N_NEIGHBORS)
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    adata.obsm["X_view"] = view(model)
    view_s = time.perf_counter() - t0
    logn = ex.log_normalised(counts)
    adata.obsm["X_pca2"] = ex.pca(logn, 2)
    adata.obsm["X_emb2"] = model.embedding(2)
    adata.obsm["X_tsne_data"] = tsne_view(logn, 2, 0)
    adata.obsm["X_pca_D"] = ex.pca(logn, model.latent_.shape[1])
    print(f"command: {COMMAND} pbmc --sweeps {sweeps} --seed {seed}")
    print(f"PBMC {counts.shape}, {sweeps} sweeps, seed {seed}: fit {fit_s:.0f} s, view {view_s:.1f} s; "
          f"Leiden resolution {ex.RESOLUTION} on a {ex.N_NEIGHBORS}-neighbour graph of each picture")
    print("| picture | 5-NN | Leiden ARI (clusters) |\n|---|---|---|")
    names = {"X_view": "view", "X_pca2": "PCA(2)", "X_emb2": "embedding(2)",
             "X_tsne_data": "t-SNE(2) of log-normalised counts",
             "X_pca_D": f"PCA, D = K+ = {model.latent_.shape[1]} (reference)"}
    for rep, name in names.items():
        acc = ex.knn_accuracy(adata.obsm[rep], labels)
        ari, n = ex.leiden_ari(adata, ex.scanpy_graph(adata, rep, ex.N_NEIGHBORS), labels)
        print(f"| {name} | {acc:.3f} | {ari:.3f} ({n}) |", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="stage", required=True)
    f = sub.add_parser("fit")
    f.add_argument("dataset", choices=DATASETS)
    f.add_argument("--sweeps", type=int, default=100)
    f.add_argument("--suffix", default="", help="stored as DATASET.ibpSUFFIX.npz (a second fit of a set)")
    g = sub.add_parser("gplvm")
    g.add_argument("dataset", choices=DATASETS)
    g.add_argument("--iters", type=int, default=1000)
    g.add_argument("--reuse", action="store_true")
    c = sub.add_parser("scale")
    c.add_argument("--rows", type=int, default=10_000)
    c.add_argument("--sweeps", type=int, default=10)
    b = sub.add_parser("pbmc")
    b.add_argument("--sweeps", type=int, default=200)
    b.add_argument("--seed", type=int, default=0)
    t = sub.add_parser("table")
    t.add_argument("datasets", nargs="*", default=list(DATASETS))
    t.add_argument("--suffix", default="", help="score DATASET.ibpSUFFIX.npz")
    args = p.parse_args()
    if args.stage == "fit":
        fit(args.dataset, args.sweeps, args.suffix)
    elif args.stage == "gplvm":
        gplvm(args.dataset, args.iters, args.reuse)
    elif args.stage == "pbmc":
        pbmc(args.sweeps, args.seed)
    elif args.stage == "scale":
        scale(args.rows, args.sweeps)
    else:
        table(args.datasets, args.suffix)


if __name__ == "__main__":
    main()
