"""NB IBP-RFLVM on real single-cell counts: 700 PBMCs with 10 labelled cell types, offline.

Data: ``10x_pbmc68k_reduced.h5ad``, which the scanpy package ships inside its wheel (700 cells,
765 genes, 10 ``bulk_labels`` cell types); ``--h5ad PATH`` reads a copy elsewhere. Its ``raw.X``
is ``log1p(10^4 y / n_counts)`` with ``n_counts`` each cell's library size, so the integer
counts are ``y = round(expm1(raw.X) n_counts / 10^4)``; the loader checks that this gives
integers (largest rounding distance under 0.25; about 0.08 in practice, from float32 storage)
before using them. The scoring runs scanpy's neighbours, UMAP and Leiden:
``pip install 'ibp-rflvm[single-cell]'`` (scanpy, igraph, leidenalg).

The fit is the user's path: ``ibp_rflvm(adata, model=IBPRFLVM(likelihood="negbinom",
likelihood_params={"size_factors": "total"}))`` (each cell's depth an offset, not a latent
dimension), which writes the posterior embedding, the final sample's latent positions and a
15-neighbour graph from the posterior distances (:mod:`ibp_rflvm.adata`). Each representation
is scored against the cell types twice:

* 5-NN: the 5-fold stratified cross-validated accuracy of a 5-nearest-neighbour classifier;
* Leiden ARI: the adjusted Rand index of a Leiden clustering (igraph flavour, resolution 1.0,
  seed 0, 2 iterations, scanpy's settings) of a 15-neighbour UMAP graph.

The rows: the posterior embedding ``embedding_`` (its own dimension ``embedding_dims_``; Leiden
on the graph ``ibp_rflvm`` wrote, which measures distance in all the kernel's components, up to
50); ``embedding(D)`` at PCA's D (Leiden on ``sc.pp.neighbors`` of those D columns); the final
sample's ``latent_`` (``K+`` columns; ``sc.pp.neighbors`` of them); and PCA of the log-normalised
counts (``log1p(10^4 y / total)``, the usual single-cell preprocessing) with D = ``K+``
components, ``sc.pp.neighbors`` on its scores. The figure shows the posterior embedding's first
two components and the UMAP of its graph beside PCA's two components and the UMAP of PCA's
graph, coloured by cell type.

Measured (200 sweeps, stop 36: the per-block Polya-gamma streams of ``n_threads`` and the
embedding dimension rule "90% of the trace, at least the median ``K+``"; about 135 CPU seconds
per fit; each cell is 5-NN accuracy / Leiden ARI (number of clusters); d is ``embedding_dims_``):

=========================  ==========================  ==========================
row                        seed 0 (K+ = D = 12)        seed 1 (K+ = D = 12)
=========================  ==========================  ==========================
posterior embedding        0.784 / 0.280 (18), d = 12  0.766 / 0.347 (18), d = 12
embedding(D)               0.784 / 0.273 (18)          0.766 / 0.290 (19)
final sample ``latent_``   0.787 / 0.278 (17)          0.790 / 0.295 (17)
PCA, D components          0.793 / 0.482 (11)          0.793 / 0.482 (11)
=========================  ==========================  ==========================

Each accuracy has a standard error of about 0.016 (700 cells), so for 5-NN classification every
representation is level with PCA (seed 1's posterior embedding, 0.027 behind, is at 1.7 standard
errors). Leiden at resolution 1.0 does markedly worse on the posterior graphs (ARI 0.27-0.35
against 0.48), which it splits into more clusters (17-19 against 11; in the figure's UMAP of the
posterior graph the dendritic cells fall in several islands). The written graph's use of up to
50 components is not the cause: the scanpy graph of the D columns of ``embedding(D)`` scores
alike or lower. docs/embedding.md section 5 has the measurements on why (the dense RFLVM comes
close to PCA's ARI; the IBP-RFLVM does not, under either likelihood).

Run::

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python examples/single_cell.py [--sweeps 200] [--out FIG]
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from anndata import AnnData

    from ibp_rflvm import IBPRFLVM

FILE = "10x_pbmc68k_reduced.h5ad"
#: Largest distance to the nearest integer accepted when recovering counts.
MAX_ROUNDING = 0.25
#: Neighbours per cell (self included) of every graph, and Leiden's resolution and seed: one
#: setting for all representations, so that only the graph differs (scanpy's defaults).
N_NEIGHBORS = 15
RESOLUTION = 1.0
LEIDEN_SEED = 0


def bundled_path() -> Path:
    """Where the installed scanpy package keeps the file (found without importing scanpy, which
    takes seconds)."""
    spec = importlib.util.find_spec("scanpy")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"{FILE} ships with scanpy, which the example also runs: pip install 'ibp-rflvm[single-cell]'"
            " (`pip install --no-deps scanpy` gives the file alone), or pass --h5ad PATH"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / "datasets" / FILE
    if not path.exists():
        raise FileNotFoundError(f"{path} not found in the installed scanpy; pass --h5ad PATH")
    return path


def load_pbmc(path: Path | None = None) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Integer counts (cells x genes), integer cell-type labels and the label names."""
    import h5py
    import scipy.sparse as sp

    with h5py.File(path or bundled_path(), "r") as f:
        g = f["raw.X"]
        shape = tuple(int(v) for v in g.attrs["h5sparse_shape"])
        raw = sp.csr_matrix((g["data"][:], g["indices"][:], g["indptr"][:]), shape=shape)
        obs = f["obs"][:]
        names = [n.decode() for n in f["uns/bulk_labels_categories"][:]]
    scaled = np.expm1(raw.toarray().astype(np.float64)) * obs["n_counts"].astype(np.float64)[:, None] / 1e4
    counts = np.round(scaled)
    worst = float(np.max(np.abs(scaled - counts)))
    if worst > MAX_ROUNDING:
        raise ValueError(f"raw.X does not give integer counts (largest rounding distance {worst:.2f})")
    return counts, obs["bulk_labels"].astype(np.int64), names


def log_normalised(counts: np.ndarray) -> np.ndarray:
    return np.log1p(1e4 * counts / counts.sum(axis=1, keepdims=True))


def knn_accuracy(H: np.ndarray, labels: np.ndarray, k: int = 5, seed: int = 0) -> float:
    """Mean 5-fold stratified cross-validated accuracy of a k-nearest-neighbour classifier."""
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.neighbors import KNeighborsClassifier

    cv = StratifiedKFold(5, shuffle=True, random_state=seed)
    return float(cross_val_score(KNeighborsClassifier(k), H, labels, cv=cv).mean())


def pca(X: np.ndarray, d: int) -> np.ndarray:
    from sklearn.decomposition import PCA

    return PCA(n_components=d, random_state=0).fit_transform(X)


def leiden_ari(
    adata: AnnData, neighbors_key: str, labels: np.ndarray, resolution: float = RESOLUTION
) -> tuple[float, int]:
    """Adjusted Rand index of the cell types and a Leiden clustering of a graph in `adata`, and
    the number of clusters. One setting for every graph, so only the graph differs."""
    import scanpy as sc
    from sklearn.metrics import adjusted_rand_score

    key = f"leiden_{neighbors_key}"
    sc.tl.leiden(
        adata, resolution=resolution, neighbors_key=neighbors_key, key_added=key, random_state=LEIDEN_SEED,
        flavor="igraph", n_iterations=2, directed=False,
    )  # fmt: skip
    clusters = adata.obs[key].to_numpy()
    return float(adjusted_rand_score(labels, clusters)), int(np.unique(clusters).size)


def scanpy_graph(adata: AnnData, use_rep: str, n_neighbors: int) -> str:
    """``sc.pp.neighbors`` of ``adata.obsm[use_rep]`` (exact neighbours below 8,192 cells), under
    its own key; returns the key."""
    import scanpy as sc

    key = f"neighbors_{use_rep}"
    sc.pp.neighbors(adata, n_neighbors=n_neighbors, use_rep=use_rep, key_added=key, random_state=0)
    return key


def make_model(sweeps: int, seed: int, size_factors: str | None = "total") -> IBPRFLVM:
    """The unfitted estimator: negative binomial, each cell's total count its size factor."""
    from ibp_rflvm import IBPRFLVM

    return IBPRFLVM(
        likelihood="negbinom", n_iter=sweeps, random_state=seed,
        likelihood_params={"size_factors": size_factors},
    )  # fmt: skip


def figure(panels: list[tuple[np.ndarray, str]], labels: np.ndarray, names: list[str], out: Path) -> None:
    """A 2 x 2 grid of 2-D embeddings (posterior on the left, PCA on the right; components on top,
    UMAP below), coloured by cell type."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(13, 10))
    cmap = plt.get_cmap("tab10")
    for ax, (E, what) in zip(axes.T.ravel(), panels, strict=False):
        for c, name in enumerate(names):
            sel = labels == c
            ax.scatter(E[sel, 0], E[sel, 1], s=6, color=cmap(c), label=f"{name} ({sel.sum()})")
        ax.set_title(what, fontsize=10)
        ax.set_xticks([])
        ax.set_yticks([])
    for ax in axes.ravel()[len(panels) :]:
        ax.set_visible(False)
    axes[0, 1].legend(fontsize=7, markerscale=2, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)


def run(
    sweeps: int, seed: int, out: Path | None, h5ad: Path | None = None, cells: int | None = None,
    genes: int | None = None, compare_no_offset: bool = False, n_neighbors: int = N_NEIGHBORS,
) -> dict:  # fmt: skip
    """Fit through the AnnData tool and score; `cells`/`genes` take the first ones only (for a
    quick check). Returns the figures printed."""
    import anndata
    import scanpy as sc
    import scipy.sparse as sp

    from ibp_rflvm.adata import ibp_rflvm
    from ibp_rflvm.summaries.embedding import posterior_embedding

    sc.settings.verbosity = 0
    counts, labels, names = load_pbmc(h5ad)
    counts, labels = counts[:cells, :genes], labels[:cells]
    keep = counts.sum(axis=1) > 0  # a cell needs counts for its size factor
    counts, labels = counts[keep], labels[keep]
    print(f"{counts.shape[0]} cells x {counts.shape[1]} genes, {np.mean(counts == 0):.1%} zeros, "
          f"{len(np.unique(labels))} cell types")  # fmt: skip
    adata = anndata.AnnData(X=sp.csr_matrix(counts))
    model = make_model(sweeps, seed)
    t0 = time.process_time()
    ibp_rflvm(adata, model=model, n_neighbors=n_neighbors)
    cpu = time.process_time() - t0

    k_plus = adata.obsm["X_ibp_rflvm_sample"].shape[1]
    full = posterior_embedding(model.posterior_)
    d = max(1, min(k_plus, full.n_available, min(counts.shape) - 1))
    adata.obsm["X_ibp_rflvm_D"] = model.embedding(d)
    adata.obsm["X_pca"] = pca(log_normalised(counts), d)
    rows = {  # name: (obsm key, graph key; None = sc.pp.neighbors of the obsm key)
        "posterior embedding": ("X_ibp_rflvm", "ibp_rflvm_neighbors"),
        "embedding(D)": ("X_ibp_rflvm_D", None),
        "final sample latent_": ("X_ibp_rflvm_sample", None),
        "PCA (log-normalised)": ("X_pca", None),
    }
    result = {
        "D": d,
        "K+": k_plus,
        "embedding_dims": adata.uns["ibp_rflvm"]["embedding_dims"],
        "graph_dims": full.n_available,
        "cpu_seconds": cpu,
    }
    print(f"fit: {cpu:.0f} CPU s; K+ = {k_plus}, embedding_dims = {result['embedding_dims']}, "
          f"PCA D = {d}; Leiden resolution {RESOLUTION}, {n_neighbors} neighbours")  # fmt: skip
    print(f"{'':22s} {'dims':>4s} {'5-NN':>6s} {'ARI':>6s} {'clusters':>8s}")
    short = {"posterior embedding": "embedding", "embedding(D)": "embedding_D",
             "final sample latent_": "latent", "PCA (log-normalised)": "pca"}  # fmt: skip
    for name, (rep, graph) in rows.items():
        H = adata.obsm[rep]
        if H.shape[1] == 0:
            acc, ari, n_clusters = float("nan"), float("nan"), 0
        else:
            acc = knn_accuracy(H, labels)
            ari, n_clusters = leiden_ari(adata, graph or scanpy_graph(adata, rep, n_neighbors), labels)
        result[f"knn_{short[name]}"], result[f"ari_{short[name]}"] = acc, ari
        result[f"clusters_{short[name]}"] = n_clusters
        dims = result["graph_dims"] if graph else H.shape[1]
        print(f"{name:22s} {H.shape[1]:4d} {acc:6.3f} {ari:6.3f} {n_clusters:8d}"
              + (f"   (graph: all {dims} components)" if graph else ""))  # fmt: skip
    if compare_no_offset:
        plain = make_model(sweeps, seed, size_factors=None).fit(counts)
        extra = {
            "K+_no_offset": plain.latent_.shape[1],
            "embedding_dims_no_offset": plain.embedding_dims_,
            "knn_embedding_no_offset": knn_accuracy(plain.embedding_, labels),
            "knn_latent_no_offset": knn_accuracy(plain.latent_, labels) if plain.latent_.shape[1] else np.nan,
        }
        result.update(extra)
        for key, value in extra.items():
            print(f"{key}: {value:.3f}" if isinstance(value, float) else f"{key}: {value}")
    if out is not None and full.n_available >= 2:
        sc.tl.umap(adata, neighbors_key="ibp_rflvm_neighbors", random_state=0)
        umap_posterior = adata.obsm["X_umap"].copy()
        sc.tl.umap(adata, neighbors_key=scanpy_graph(adata, "X_pca", n_neighbors), random_state=0)
        panels = [
            (model.view(), f"view: t-SNE of the posterior embedding ({result['embedding_dims']} dims)"),
            (umap_posterior, f"UMAP of the posterior graph (ARI {result['ari_embedding']:.2f})"),
            (pca(log_normalised(counts), 2), "PCA of log-normalised counts, components 1-2"),
            (adata.obsm["X_umap"], f"UMAP of PCA's graph, D = {d} (ARI {result['ari_pca']:.2f})"),
        ]
        figure(panels, labels, names, out)
        print(f"figure: {out}")
    return result


def main() -> None:
    fmt = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=fmt)
    parser.add_argument("--sweeps", type=int, default=200, help="MCMC sweeps (default 200)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("single_cell_embedding.png"))
    parser.add_argument("--h5ad", type=Path, default=None, help=f"path of {FILE} (default: scanpy's copy)")
    parser.add_argument("--compare-no-offset", action="store_true", help="also fit without size factors")
    args = parser.parse_args()
    run(args.sweeps, args.seed, args.out, args.h5ad, compare_no_offset=args.compare_no_offset)


if __name__ == "__main__":
    main()
