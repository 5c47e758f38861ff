"""Which summary of an NB IBP-RFLVM fit clusters the PBMC cell types (docs/embedding.md section 5).

Fits the single-cell example's model (``examples/single_cell.py``: negative binomial, size
factors ``"total"``) with 1 or more chains, then scores, by 5-fold 5-NN accuracy and by the ARI
of Leiden clusterings (resolutions 0.5 and 1.0) of ``sc.pp.neighbors`` graphs:

* PCA of the log-normalised counts (D = the final ``K+``, and 50);
* the same PCA pipeline applied to the model's posterior-mean prediction ``predict()`` (the
  model's denoised counts, so the graph differs from PCA's only by what the model kept);
* kernel PCA of the posterior kernel under four per-sample blocks: the noise-free predictor
  ``F = Phi beta`` (the estimators' ``"signal"``), and three variance-stabilised means at the
  median depth (NB ``2 sqrt(r) asinh(sqrt(mu / r))``, ``2 sqrt(mu)``, ``log1p(10^4 mu / J)``),
  each at the 90%-trace dimension, at D and with all 50 components;
* ``embedding_`` and the final sample's ``latent_``.

``--likelihood gaussian`` fits the Gaussian IBP-RFLVM to the log-normalised counts instead (PCA's
own input), to tell the negative binomial's part in the result from the latent space's; its
summaries are the ``"signal"`` kernel and PCA of ``predict()`` itself.

Run (about 150 CPU s per chain; the Gaussian about 340)::

    OPENBLAS_NUM_THREADS=1 .venv/bin/python studies/pbmc_summaries.py --chains 1 [--likelihood gaussian]

A one-off study (``studies/``, not maintained): its result and command are in
docs/record/embedding.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import single_cell as scx  # noqa: E402
from ibp_rflvm import IBPRFLVM  # noqa: E402
from ibp_rflvm.features import feature_map  # noqa: E402
from ibp_rflvm.summaries.embedding import embedding_samples, fit_embedding, posterior_embedding  # noqa: E402


def blocks(model, kind: str, depth: float, n_genes: int) -> list[np.ndarray]:
    """The weighted per-sample blocks of one summary."""
    samples, weights, _ = embedding_samples(model.posterior_)
    out = []
    for sample, w in zip(samples, weights, strict=True):
        F = feature_map(sample.H, sample.W, model.spec_.bias) @ sample.params.beta
        r = sample.params.r[None, :]
        mean = r * np.exp(F)  # NB mean at size factor 1 (log-odds F, dispersion r)
        if kind == "signal":
            B = F
        elif kind == "nb-vst":
            B = 2.0 * np.sqrt(r) * np.arcsinh(np.sqrt(depth * mean / r))
        elif kind == "sqrt":
            B = 2.0 * np.sqrt(depth * mean)
        else:  # "log1p": scanpy's log-normalisation of the predicted mean
            B = np.log1p(1e4 * mean / n_genes)
        out.append(np.sqrt(w) * B)
    return out


def score(E: np.ndarray, labels: np.ndarray, name: str) -> None:
    import anndata

    adata = anndata.AnnData(X=np.zeros((E.shape[0], 1)))
    adata.obsm["E"] = E
    key = scx.scanpy_graph(adata, "E", scx.N_NEIGHBORS)
    aris = [scx.leiden_ari(adata, key, labels, resolution=res) for res in (0.5, 1.0)]
    ari = "  ".join(f"res {res}: {a:.3f} ({n})" for res, (a, n) in zip((0.5, 1.0), aris, strict=True))
    print(f"{name:36s} d = {E.shape[1]:2d}  5-NN {scx.knn_accuracy(E, labels):.3f}  ARI {ari}", flush=True)


def score_components(emb, D: int, labels: np.ndarray, name: str) -> None:
    """`score` of a kernel embedding at its 90%-trace dimension, at `D` and with every component."""
    for d in sorted({emb.default_dimension(), D, emb.n_available}):
        score(emb.scores[:, :d], labels, name)


def load_cells() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The PBMC counts of the cells with any count, their cell types and log-normalised counts."""
    counts, labels, _ = scx.load_pbmc()
    keep = counts.sum(axis=1) > 0
    counts, labels = counts[keep], labels[keep]
    return counts, labels, scx.log_normalised(counts)


def main() -> None:
    import scanpy as sc

    fmt = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=fmt)
    parser.add_argument("--chains", type=int, default=1)
    parser.add_argument("--sweeps", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--likelihood", choices=("negbinom", "gaussian"), default="negbinom")
    args = parser.parse_args()
    sc.settings.verbosity = 0
    counts, labels, logged = load_cells()
    gaussian = args.likelihood == "gaussian"
    if gaussian:
        model = IBPRFLVM(n_iter=args.sweeps, random_state=args.seed, n_chains=args.chains).fit(logged)
    else:
        model = scx.make_model(args.sweeps, args.seed).set_params(n_chains=args.chains).fit(counts)
    D = model.latent_.shape[1]
    print(f"{args.likelihood}, {args.chains} chain(s), {args.sweeps} sweeps: K+ {D}, "
          f"embedding_dims_ {model.embedding_dims_}")  # fmt: skip
    score(scx.pca(logged, D), labels, "PCA of log-normalised counts")
    score(scx.pca(logged, 50), labels, "PCA of log-normalised counts")
    if gaussian:
        score(scx.pca(model.predict(), D), labels, "PCA of predict()")
        score_components(posterior_embedding(model.posterior_), D, labels, "kernel PCA, signal blocks")
        score(model.latent_, labels, "final sample latent_")
        return
    score(scx.pca(scx.log_normalised(model.predict()), D), labels, "PCA of log-normalised predict()")
    depth = float(np.median(counts.mean(axis=1)))
    for kind in ("signal", "nb-vst", "sqrt", "log1p"):
        emb = fit_embedding(blocks(model, kind, depth, counts.shape[1]))
        score_components(emb, D, labels, f"kernel PCA, {kind} blocks")
    score(model.embedding_, labels, "embedding_")
    score(model.latent_, labels, "final sample latent_")


if __name__ == "__main__":
    main()
