"""Reading the latent space on real data (issue 54): each dimension's top columns and each row's
embedding sd, on breast cancer (Gaussian), PBMC 68k reduced (negative binomial, size factors
"total") and the congress speeches (negative binomial).

For each: the fit's time, ``dimensions_``, ``top_columns(n)``, the time of the summaries, and
the embedding sd of rows with 50-90% of their entries held out against the others (cancer);
for PBMC, which known marker genes of its cell types are among each dimension's top genes.

Run::

    IBP_RFLVM_DATA=../shared/datasets OPENBLAS_NUM_THREADS=1 \
        .venv/bin/python studies/latent_space.py cancer --sweeps 300
    ... studies/latent_space.py pbmc --sweeps 200
    ... studies/latent_space.py congress --sweeps 200 [--size-factors total]
    ... studies/latent_space.py blocks --sweeps 60   # the tests' simulated blocks, seeds 1-5

A one-off study (``studies/``, not maintained): its results and commands are in
docs/record/latent_space.md.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd

from ibp_rflvm import IBPRFLVM
from ibp_rflvm.datasets import load

#: Marker genes of the PBMC cell types (the usual panel: scanpy's PBMC tutorial and its sources).
MARKERS = {
    "T cells": ["IL7R", "CD3D", "CD3E", "LDHB"],
    "CD14+ monocytes": ["CD14", "LYZ", "S100A8", "S100A9"],
    "B cells": ["MS4A1", "CD79A", "CD79B"],
    "CD8 T cells": ["CD8A", "CD8B"],
    "NK cells": ["GNLY", "NKG7"],
    "FCGR3A+ monocytes": ["FCGR3A", "MS4A7"],
    "dendritic cells": ["FCER1A", "CST3"],
    "megakaryocytes": ["PPBP"],
}


def report(model: IBPRFLVM, n_top: int) -> pd.DataFrame:
    start = time.perf_counter()
    dims = model.dimensions_
    top = model.top_columns(n_top)
    took = time.perf_counter() - start
    start = time.perf_counter()
    std = model.embedding_std_
    took_std = time.perf_counter() - start
    with pd.option_context("display.width", 200, "display.max_colwidth", 120, "display.max_rows", 500):
        print(dims.round(3).to_string())
        print(f"dimensions_ and top_columns: {took:.2f} s; embedding_std_: {took_std:.2f} s "
              f"({std.shape[1]} coordinates)")
    return top


def cancer(sweeps: int, seed: int) -> None:
    from sklearn.preprocessing import StandardScaler

    ds = load("cancer")
    Y = StandardScaler().fit_transform(ds.data)
    rng = np.random.default_rng(seed)
    # A quarter of the rows lose 50-90% of their entries (never all).
    N, J = Y.shape
    rows = rng.choice(N, N // 4, replace=False)
    share = rng.uniform(0.5, 0.9, rows.size)
    Ym = Y.copy()
    for i, s in zip(rows, share, strict=True):
        Ym[i, rng.choice(J, int(round(s * J)), replace=False)] = np.nan
    frame = pd.DataFrame(Ym, columns=ds.feature_names)
    start = time.perf_counter()
    model = IBPRFLVM(n_iter=sweeps, random_state=seed).fit(frame)
    print(f"cancer {N} x {J}, {sweeps} sweeps: fit {time.perf_counter() - start:.0f} s")
    top = report(model, 5)
    with pd.option_context("display.width", 200, "display.max_rows", 500):
        print(top.round(3).to_string(index=False))
    sd = np.linalg.norm(model.embedding_std_, axis=1)
    masked = np.zeros(N, dtype=bool)
    masked[rows] = True
    a, b = sd[masked], sd[~masked]
    se = np.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    print(f"embedding sd (norm over {model.embedding_dims_} coordinates): masked rows median "
          f"{np.median(a):.3f} mean {a.mean():.3f}; observed rows median {np.median(b):.3f} "
          f"mean {b.mean():.3f}; "
          f"ratio of means {a.mean() / b.mean():.2f}, difference {(a.mean() - b.mean()) / se:.1f} SE")
    print(f"spread of embedding_ (sd of the first 2 coordinates): {model.embedding_[:, :2].std(axis=0)}")
    print(model.summary().loc[["k_plus", "effective_dims", "embedding_dims"], ["mean", "counts"]].to_string())


def pbmc(sweeps: int, seed: int) -> None:
    import anndata
    import scanpy

    from ibp_rflvm.adata import ibp_rflvm

    path = scanpy.__path__[0] + "/datasets/10x_pbmc68k_reduced.h5ad"
    ad = anndata.read_h5ad(path)
    counts = ad.raw.X if ad.raw is not None else ad.X
    genes = ad.raw.var_names if ad.raw is not None else ad.var_names
    counts = np.rint(np.expm1(counts.toarray() if hasattr(counts, "toarray") else counts))
    adc = anndata.AnnData(X=counts, obs=ad.obs[["bulk_labels"]].copy())
    adc.var_names = list(genes)
    model = IBPRFLVM(likelihood="negbinom", n_iter=sweeps, random_state=seed,
                     likelihood_params={"size_factors": "total"})  # fmt: skip
    start = time.perf_counter()
    ibp_rflvm(adc, model=model)
    took = time.perf_counter() - start
    print(f"pbmc {adc.n_obs} x {adc.n_vars}, {sweeps} sweeps: fit and write {took:.0f} s")
    top = report(model, 20)
    every = {g: cell for cell, gs in MARKERS.items() for g in gs}
    for dim, rows in top.groupby("dimension", sort=False):
        hits = [f"{g} ({every[g]}, {e:+.2f})" for g, e in zip(rows["column"], rows["effect"], strict=True)
                if g in every]  # fmt: skip
        print(f"{dim}: top 8 {', '.join(rows['column'][:8])}; markers in top 20: {', '.join(hits) or 'none'}")
    usage = model.dimension_usage_
    usage.index = adc.obs_names
    by_type = usage.groupby(adc.obs["bulk_labels"].to_numpy()).mean()
    with pd.option_context("display.width", 200):
        print("mean usage by cell type:")
        print(by_type.round(2).to_string())


def congress(sweeps: int, seed: int, size_factors: str | None = None) -> None:
    ds = load("congress")
    frame = pd.DataFrame(ds.data, columns=ds.feature_names)
    start = time.perf_counter()
    params = {"size_factors": size_factors} if size_factors else None
    model = IBPRFLVM(likelihood="negbinom", n_iter=sweeps, random_state=seed, likelihood_params=params)
    model.fit(frame)
    took = time.perf_counter() - start
    print(f"congress {ds.data.shape[0]} x {ds.data.shape[1]}, {sweeps} sweeps: fit {took:.0f} s")
    top = report(model, 10)
    for dim, rows in top.groupby("dimension", sort=False):
        words = [f"{w} {e:+.1f}" for w, e in zip(rows["column"], rows["effect"], strict=True)]
        print(f"{dim}: {', '.join(words)}")


def blocks(sweeps: int, seed: int) -> None:
    """The test's simulated blocks (tests/test_latent_summaries.py) under seeds 1-5."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from test_latent_summaries import N_MASKED, PER_BLOCK, block_data

    for s in range(1, 6):
        model = IBPRFLVM(n_iter=sweeps, n_frequencies=20, init_dims=6, random_state=s).fit(block_data())
        top = model.top_columns(PER_BLOCK)
        hits = pd.crosstab(top["dimension"], top["column"].str.slice(5, 6).astype(int))
        sd = np.linalg.norm(model.embedding_std_, axis=1)
        a, b = sd[:N_MASKED], sd[N_MASKED:]
        se = np.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
        print(f"seed {s}: {len(model.dimensions_)} dimensions; best block recovery (of 5) "
              f"{hits.max(axis=0).tolist()}; sd masked {a.mean():.3f}, observed {b.mean():.3f}, "
              f"ratio {a.mean() / b.mean():.2f}, difference {(a.mean() - b.mean()) / se:.1f} SE")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", choices=["cancer", "pbmc", "congress", "blocks"])
    parser.add_argument("--sweeps", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--size-factors", default=None, help='congress: e.g. "total" (default: none)')
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    if args.data == "congress":
        congress(args.sweeps, args.seed, args.size_factors)
        return
    run = {"cancer": cancer, "pbmc": pbmc, "blocks": blocks}[args.data]
    run(args.sweeps, args.seed)


if __name__ == "__main__":
    main()
