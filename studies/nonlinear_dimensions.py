"""Does the IBP-RFLVM recover known non-linear sparse structure (issue 63, item 5)?

Data: :func:`ibp_rflvm.datasets.make_bumps`, three true coordinates, each used by a row with
probability ``--usage`` and uniform on [-2, 2] where used (0 where not), each driving its own
block of columns through Gaussian bumps whose centres are spread over the range. For each seed
(the data's and the chain's), one chain of ``IBPRFLVM(n_iter=--sweeps, random_state=seed)``
and, for each true coordinate ``b``:

* ``dim``: the reported dimension ``d`` whose ``dimension_usage_ >= 0.5`` best matches
  ``Z[:, b]`` (Jaccard, ``jac``);
* ``pos``: |Spearman| of ``dimension_positions_[d]`` against ``X[:, b]`` over the rows that use
  ``b`` (goal >= 0.9);
* ``peaks``: |Spearman| of where each block-``b`` column's ``profile(d)`` mean peaks against
  the columns' bump centres (goal >= 0.9);
* ``prec_var``, ``prec_eff``: the share of ``d``'s top ``|block b|`` columns that are in block
  ``b``, ranked by ``top_columns(by="variation")`` and ``by="effect"``;
* ``latent``: the final-sample check, before the summaries existed: the column of ``latent_``
  whose nonzero pattern best matches ``Z[:, b]`` (Jaccard) and its |Spearman| with ``X[:, b]``.

Times: the fit, then the summaries (``dimension_usage_``, which matches dimensions across
samples, then ``dimension_positions_`` and the profiles).

Run::

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src .venv/bin/python studies/nonlinear_dimensions.py \\
        --seeds 0 1 2 3 4                    # 300 rows, blocks of 8, 12, 16 columns, 400 sweeps
    ... studies/nonlinear_dimensions.py --rows 150 --sweeps 100 --seeds 0   # the test's size
    ... studies/nonlinear_dimensions.py --cols 10 10 10    # equal blocks: see make_bumps

A one-off study (``studies/``, not maintained); the test at a small size is
tests/test_nonlinear_recovery.py.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from ibp_rflvm import IBPRFLVM
from ibp_rflvm.datasets import make_bumps


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    union = (a | b).sum()
    return float((a & b).sum() / union) if union else 0.0


def abs_spearman(a, b) -> float:
    rho = spearmanr(a, b)[0]
    return float(abs(rho)) if np.isfinite(rho) else 0.0


def best_match(on: np.ndarray, z: np.ndarray) -> tuple[int, float]:
    """The column of the boolean `on` (rows x dimensions) whose rows best match `z` (Jaccard)."""
    scores = [jaccard(on[:, k], z) for k in range(on.shape[1])]
    if not scores:
        return -1, 0.0
    k = int(np.argmax(scores))
    return k, scores[k]


def final_sample_check(model: IBPRFLVM, data) -> list[tuple[int, float, float]]:
    """Per true coordinate: the matched column of ``latent_``, its Jaccard and |Spearman|."""
    latent = np.asarray(model.latent_)
    out = []
    for b in range(data.Z.shape[1]):
        k, jac = best_match(latent != 0, data.Z[:, b])
        rows = data.Z[:, b]
        rho = abs_spearman(latent[rows, k], data.X[rows, b]) if k >= 0 else 0.0
        out.append((k, jac, rho))
    return out


def peak_spearman(model: IBPRFLVM, dim: str, cols: np.ndarray, centres: np.ndarray) -> float:
    """|Spearman| of where each column's profile mean along `dim` peaks against its centre."""
    table = model.profile(dim, columns=[int(j) for j in cols])
    peaks = table.loc[table.groupby("column", sort=False)["mean"].idxmax()]
    where = dict(zip(peaks["column"].astype(int), peaks["position"], strict=True))
    return abs_spearman([where[int(j)] for j in cols], centres)


def precision(top: pd.DataFrame, dim: str, block_cols: np.ndarray) -> float:
    """The share of `dim`'s first ``len(block_cols)`` ranked columns that are in the block."""
    ranked = top[top["dimension"] == dim].sort_values("rank")["column"].astype(int).to_numpy()
    first = ranked[: len(block_cols)]
    return float(np.isin(first, block_cols).sum() / len(block_cols))


def run_seed(seed: int, args) -> pd.DataFrame:
    data = make_bumps(
        n_rows=args.rows, n_coords=len(args.cols), cols_per_coord=args.cols, usage=args.usage,
        noise=args.noise, width=args.width, random_state=seed,
    )  # fmt: skip
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a short chain's convergence warnings
        model = IBPRFLVM(n_iter=args.sweeps, random_state=seed).fit(data.Y)
    fit_s = time.perf_counter() - start

    start = time.perf_counter()
    usage = model.dimension_usage_
    match_s = time.perf_counter() - start
    start = time.perf_counter()
    positions = model.dimension_positions_
    on = usage.to_numpy() >= 0.5
    dims = [best_match(on, data.Z[:, b]) for b in range(data.Z.shape[1])]
    peaks = []
    for b, (k, _) in enumerate(dims):
        cols = np.flatnonzero(data.block == b)
        peaks.append(peak_spearman(model, usage.columns[k], cols, data.centres[cols]) if k >= 0 else 0.0)
    read_s = time.perf_counter() - start
    n_top = int(np.bincount(data.block).max())
    top_var = model.top_columns(n=n_top, by="variation")
    top_eff = model.top_columns(n=n_top, by="effect")
    latent = final_sample_check(model, data)

    rows = []
    for b, (k, jac) in enumerate(dims):
        cols = np.flatnonzero(data.block == b)
        d = usage.columns[k] if k >= 0 else None
        used = data.Z[:, b]
        rows.append({
            "seed": seed, "coord": b, "cols": len(cols), "dim": d, "jac": jac,
            "pos": abs_spearman(positions[d].to_numpy()[used], data.X[used, b]) if d else 0.0,
            "peaks": peaks[b],
            "prec_var": precision(top_var, d, cols) if d else 0.0,
            "prec_eff": precision(top_eff, d, cols) if d else 0.0,
            "latent": latent[b][2],
        })  # fmt: skip
    table = pd.DataFrame(rows)
    shared = table["dim"].duplicated(keep=False) & table["dim"].notna()
    print(
        f"seed {seed}: fit {fit_s:.1f} s ({args.rows} x {data.Y.shape[1]}, {args.sweeps} sweeps), "
        f"{len(usage.columns)} dimensions reported, latent_ K+ {model.latent_.shape[1]}; "
        f"dimension_usage_ {match_s:.2f} s, positions + profiles {read_s:.2f} s"
        + ("; two coordinates matched one dimension" if shared.any() else "")
    )
    print(table.drop(columns="seed").round(3).to_string(index=False), flush=True)
    return table.assign(fit_s=fit_s, read_s=read_s)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--rows", type=int, default=300)
    parser.add_argument("--cols", type=int, nargs="+", default=[8, 12, 16], help="columns per coordinate")
    parser.add_argument("--sweeps", type=int, default=400)
    parser.add_argument("--usage", type=float, default=0.5)
    parser.add_argument("--noise", type=float, default=0.2)
    parser.add_argument("--width", type=float, default=0.8)
    args = parser.parse_args()
    tables = [run_seed(seed, args) for seed in args.seeds]
    every = pd.concat(tables, ignore_index=True)
    passed = (every["pos"] >= 0.9) & (every["peaks"] >= 0.9)
    print(
        f"\n{passed.sum()} of {len(every)} (seed, coordinate) pairs have both Spearman figures >= 0.9; "
        f"minimum pos {every['pos'].min():.3f}, peaks {every['peaks'].min():.3f}; "
        f"mean precision variation {every['prec_var'].mean():.3f}, effect {every['prec_eff'].mean():.3f}; "
        f"fit {every.groupby('seed')['fit_s'].first().mean():.1f} s per seed"
    )


if __name__ == "__main__":
    main()
