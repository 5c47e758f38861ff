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
``python benchmarks/view_table.py perplexity [SET ...] [--seeds 3]``
    The view's perplexity chosen by measurement (issue 48): 1-NN and 5-NN accuracy of the view of
    each stored fit (the 100-sweep one where a set has two; PBMC's from the ``pbmc`` stage, with
    the Leiden ARI of its picture too) at each perplexity of ``PERPLEXITY_GRID`` and of each rule
    of ``PERPLEXITY_RULES``, over t-SNE seeds (:func:`seeded_tsne`). Results are merged into
    ``results/view/perplexity.json`` and the summary covers every set stored there (``--summary``
    prints it without computing).
``python benchmarks/view_table.py table [DATASET ...]``
    Prints 1-NN and 5-NN accuracy (Table 3's stratified 5-fold split) of PCA(2), the posterior
    embedding at d = 2, the GPLVM's 2-D latent, t-SNE(2) of the standardised (log1p) data and the
    view (t-SNE of the data also at the view's perplexity, the view also at the former default 30),
    with the full ``embedding_`` for reference, and the view's seconds.

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
from ibp_rflvm.summaries.view import PERPLEXITY, _start, tsne_view

OUT = Path("results/view")
DATASETS = ("cancer", "mice", "olivetti", "congress", "spam", "newsgroups")
#: Perplexities the ``perplexity`` stage scores, and the rules from the number of rows it scores
#: beside them (each rule's value is clipped to (N - 1) / 3 like any perplexity).
PERPLEXITY_GRID = (5.0, 10.0, 15.0, 20.0, 30.0, 50.0)
PERPLEXITY_RULES = {
    "N/100 in [5, 50]": lambda n: float(np.clip(n / 100.0, 5.0, 50.0)),
    "N/50 in [5, 50]": lambda n: float(np.clip(n / 50.0, 5.0, 50.0)),
}
#: A seeded start's noise, as a share of the view's start's scale (see seeded_tsne).
START_NOISE = 0.1
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
        reps["t-SNE(2) of data"] = (tsne_view(data, 2, 0, 30.0), "perplexity 30")
        data_s = time.perf_counter() - t0
        reps[f"t-SNE(2) of data, perplexity {PERPLEXITY:g}"] = (
            tsne_view(data, 2, 0, PERPLEXITY), "the view's perplexity")
        t0 = time.perf_counter()
        v = tsne_view(emb, 2, 0)
        view_s = time.perf_counter() - t0
        reps["view (t-SNE of embedding_)"] = (v, f"perplexity {PERPLEXITY:g} (the default)")
        reps["view, perplexity 30"] = (tsne_view(emb, 2, 0, 30.0), "the default before 2026-11-27")
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


def seeded_tsne(X: np.ndarray, perplexity: float, seed: int) -> np.ndarray:
    """The view's t-SNE of `X` at `perplexity`, at t-SNE seed `seed`.

    Seed 0 is the view itself (``tsne_view(X, 2, 0, perplexity)``). The view draws nothing (its
    start is `X`'s principal axes), so to see how much a score owes to where one optimisation
    happens to end, seed s > 0 starts the same t-SNE from the view's start plus Gaussian noise
    (``START_NOISE`` of the start's first column's standard deviation, drawn with seed s).
    """
    if seed == 0:
        return tsne_view(X, 2, 0, perplexity)
    from sklearn.manifold import TSNE

    init = _start(X, 2)
    init = init + np.random.default_rng(seed).standard_normal(init.shape) * START_NOISE * init[:, 0].std()
    perp = min(float(perplexity), (X.shape[0] - 1) / 3.0)
    tsne = TSNE(n_components=2, perplexity=perp, init=init, random_state=seed, learning_rate="auto",
                method="barnes_hut")
    with threadpool_limits(limits=1):
        return tsne.fit_transform(X)


def _view_fit(dataset: str) -> tuple[np.ndarray, np.ndarray, str]:
    """`embedding_` of the stored fit the perplexity stage views, its labels and a note."""
    if dataset == "pbmc":
        if not (OUT / "pbmc.ibp.npz").exists():
            sys.exit(f"pbmc: no stored fit; run {COMMAND} pbmc first (it stores {OUT}/pbmc.ibp.npz)")
        z = np.load(OUT / "pbmc.ibp.npz")
        return z["embedding"], z["labels"], f"pbmc.ibp.npz, {int(z['sweeps'])} sweeps"
    _, labels, digest = _training(dataset)
    name = next(f for f in (f"{dataset}.ibp-100.npz", f"{dataset}.ibp.npz") if (OUT / f).exists())
    z = np.load(OUT / name)
    if str(z["mask_digest"]) != digest:
        sys.exit(f"{dataset}: stored fit is not of trial 0's training matrix")
    return z["scores"][:, : int(z["own_d"])], labels, f"{name}, {int(z['sweeps'])} sweeps"


def _pbmc_scorer(labels: np.ndarray):
    """PBMC's scores of a picture: the example's 1-NN and 5-NN and its Leiden ARI (clusters)."""
    import anndata
    import scanpy as sc

    sys.path.insert(0, "examples")
    import single_cell as ex

    sc.settings.verbosity = 0

    def score(V: np.ndarray) -> dict:
        adata = anndata.AnnData(X=np.zeros((V.shape[0], 1)))
        adata.obsm["X_v"] = V
        ari, k = ex.leiden_ari(adata, ex.scanpy_graph(adata, "X_v", ex.N_NEIGHBORS), labels)
        return {"1-NN": ex.knn_accuracy(V, labels, 1), "5-NN": ex.knn_accuracy(V, labels, 5),
                "ARI": ari, "clusters": int(k)}

    return score


def perplexity_sweep(datasets: list[str], seeds: int) -> None:
    store = OUT / "perplexity.json"
    results = json.loads(store.read_text()) if store.exists() else {}
    for d in datasets:
        X, labels, note = _view_fit(d)
        n = X.shape[0]
        if d == "pbmc":
            score = _pbmc_scorer(labels)
        else:
            split = knn_seed(d, 0)

            def score(V: np.ndarray, labels=labels, split=split) -> dict:
                return {k: knn_accuracy(V, labels, int(k[0]), random_state=split) for k in ("1-NN", "5-NN")}

        settings = {f"{p:g}": p for p in PERPLEXITY_GRID}
        settings.update({rule: f(n) for rule, f in PERPLEXITY_RULES.items()})
        done: dict[float, dict] = {}
        rows = {}
        print(f"\n## {d} ({n} rows, d = {X.shape[1]}; {note})", flush=True)
        for name, p in settings.items():
            p_eff = min(p, (n - 1) / 3.0)
            if p_eff not in done:
                per_seed, secs = [], []
                for s in range(seeds):
                    t0 = time.perf_counter()
                    V = seeded_tsne(X, p_eff, s)
                    secs.append(time.perf_counter() - t0)
                    per_seed.append(score(V))
                done[p_eff] = {"perplexity": p_eff, "seconds": float(np.mean(secs)),
                               "scores": {k: [r[k] for r in per_seed] for k in per_seed[0]}}
            rows[name] = done[p_eff]
            sc_ = done[p_eff]["scores"]
            print(f"  {name} (perplexity {p_eff:.3g}): " + ", ".join(
                f"{k} {' '.join(f'{v:.3f}' if k != 'clusters' else str(v) for v in vals)}"
                for k, vals in sc_.items()) + f"; {done[p_eff]['seconds']:.1f} s per map", flush=True)
        results[d] = {"rows": n, "fit": note, "seeds": seeds, "settings": rows}
        store.write_text(json.dumps(results, indent=1) + "\n")
    _perplexity_summary(results)


def _perplexity_summary(results: dict) -> None:
    """Mean over seeds and the seeds' range of each set and setting, and each setting's change
    from perplexity 30 averaged over the sets (its worst set beside it)."""
    sets = [d for d in (*DATASETS, "pbmc") if d in results]
    names = list(results[sets[0]]["settings"])
    print(f"\ncommand: {COMMAND} perplexity {' '.join(sets)}\n")
    print(f"1-NN / 5-NN: mean over {results[sets[0]]['seeds']} t-SNE seeds (seed 0 the view itself; "
          f"the seeds' range in brackets); each rule's perplexity on the set in square brackets\n")
    print("| perplexity | " + " | ".join(f"{d} ({results[d]['rows']})" for d in sets)
          + " | change from 30, mean over sets (worst set) |")
    print("|---" * (len(sets) + 2) + "|")
    for name in names:
        cells, diffs = [], {"1-NN": [], "5-NN": []}
        for d in sets:
            row = results[d]["settings"][name]
            base = results[d]["settings"]["30"]["scores"]
            parts = []
            for k in ("1-NN", "5-NN"):
                v = np.asarray(row["scores"][k])
                parts.append(f"{v.mean():.3f} ({np.ptp(v):.3f})")
                diffs[k].append(v.mean() - np.mean(base[k]))
            rule = "" if name[0].isdigit() else f" [{row['perplexity']:.3g}]"
            cells.append(" / ".join(parts) + rule)
        change = " / ".join(f"{np.mean(v):+.4f} ({min(v):+.3f})" for v in diffs.values())
        print(f"| {name} | " + " | ".join(cells) + f" | {change} |")
    if "pbmc" in sets:
        print("\nPBMC's Leiden ARI (clusters), mean over seeds (range):\n")
        print("| perplexity | ARI | clusters |\n|---|---|---|")
        for name in names:
            r = results["pbmc"]["settings"][name]["scores"]
            print(f"| {name} [{results['pbmc']['settings'][name]['perplexity']:.3g}] | "
                  f"{np.mean(r['ARI']):.3f} ({np.ptp(r['ARI']):.3f}) | "
                  f"{np.mean(r['clusters']):.1f} ({min(r['clusters'])}-{max(r['clusters'])}) |")


def scale(rows: int, sweeps: int) -> None:
    from ibp_rflvm.estimator import IBPRFLVM
    from ibp_rflvm.summaries.view import view

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
    from ibp_rflvm.summaries.view import view

    sc.settings.verbosity = 0
    counts, labels, _ = ex.load_pbmc()
    keep = counts.sum(axis=1) > 0
    counts, labels = counts[keep], labels[keep]
    adata = anndata.AnnData(X=sp.csr_matrix(counts))
    model = ex.make_model(sweeps, seed)
    t0 = time.perf_counter()
    ibp_rflvm(adata, model=model, n_neighbors=ex.N_NEIGHBORS)
    fit_s = time.perf_counter() - t0
    OUT.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT / "pbmc.ibp.npz", embedding=model.embedding_, labels=labels, sweeps=sweeps,
                        seed=seed, fit_seconds=fit_s)
    t0 = time.perf_counter()
    adata.obsm["X_view"] = view(model)
    view_s = time.perf_counter() - t0
    logn = ex.log_normalised(counts)
    adata.obsm["X_pca2"] = ex.pca(logn, 2)
    adata.obsm["X_emb2"] = model.embedding(2)
    adata.obsm["X_tsne_data"] = tsne_view(logn, 2, 0, 30.0)
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
    q = sub.add_parser("perplexity")
    q.add_argument("datasets", nargs="*", metavar="SET",
                   help=f"of {', '.join(DATASETS)}, pbmc (default: all)")
    q.add_argument("--seeds", type=int, default=3)
    q.add_argument("--summary", action="store_true", help="print the stored results' summary only")
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
    elif args.stage == "perplexity":
        if args.summary:
            _perplexity_summary(json.loads((OUT / "perplexity.json").read_text()))
        else:
            unknown = set(args.datasets) - {*DATASETS, "pbmc"}
            if unknown:
                sys.exit(f"perplexity: unknown sets {sorted(unknown)}")
            perplexity_sweep(args.datasets or [*DATASETS, "pbmc"], args.seeds)
    elif args.stage == "scale":
        scale(args.rows, args.sweeps)
    else:
        table(args.datasets, args.suffix)


if __name__ == "__main__":
    main()
