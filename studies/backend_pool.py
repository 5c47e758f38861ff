"""Chains as replicates: the two backends' chain-level figures pooled over several runs (by hand).

``python studies/backend_pool.py --start 2 --numba a.json b.json --jax c.json d.json``

`studies/mixing.py --out` runs (plain or gzipped JSON) of one data set and mask. For each
backend, every chain from `--start` dimensions is one replicate: its held-out LPD per entry, its
mean training log-likelihood and median ``K+`` over the kept second half, and its median
effective dimensions. Reported: each backend's mean and standard deviation over its chains, the
difference (jax minus numba) with its Welch standard error, and, for ``K+``, the Mann-Whitney
p-value of the chains' medians. While chains are still moving, two runs of one backend differ by
more than the paired standard error over held-out entries says; the spread between chains is
the yardstick here.

A one-off study (``studies/``, not maintained): its result and command are in
docs/record/jax_backend.md.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math

import numpy as np
from scipy import stats


def _load(path: str) -> dict:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as fh:
        return json.load(fh)


def chain_figures(paths: list[str], start: int) -> dict[str, np.ndarray]:
    rows = []
    for path in paths:
        for c in _load(path)["chains"]:
            if c["init_dims"] != start:
                continue
            half = len(c["k_plus"]) // 2
            rows.append((c["score"], float(np.mean(c["loglik"][half:])), float(np.median(c["k_plus"][half:])),
                         float(np.median(c["effective_dims"]))))  # fmt: skip
    names = ("LPD/entry", "train loglik", "K+ median", "eff. dims median")
    return {n: np.array([r[k] for r in rows]) for k, n in enumerate(names)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--start", type=int, default=2)
    p.add_argument("--numba", nargs="+", required=True)
    p.add_argument("--jax", nargs="+", required=True)
    a = p.parse_args()
    nb, jx = chain_figures(a.numba, a.start), chain_figures(a.jax, a.start)
    n_nb, n_jx = len(nb["LPD/entry"]), len(jx["LPD/entry"])
    print(f"chains from {a.start} dimensions: numba {n_nb}, jax {n_jx}")
    print(f"{'figure':18s} {'numba mean (sd)':>22s} {'jax mean (sd)':>22s} {'jax - numba (SE)':>22s}  t")
    for name in nb:
        x, y = nb[name], jx[name]
        se = math.sqrt(x.var(ddof=1) / x.size + y.var(ddof=1) / y.size)
        diff = y.mean() - x.mean()
        t = diff / se if se > 0 else float("nan")
        print(f"{name:18s} {x.mean():12.4f} ({x.std(ddof=1):7.4f}) {y.mean():12.4f} ({y.std(ddof=1):7.4f}) "
              f"{diff:+12.4f} ({se:7.4f})  {t:+.2f}")  # fmt: skip
    u = stats.mannwhitneyu(nb["K+ median"], jx["K+ median"])
    print(f"K+ medians: numba {sorted(nb['K+ median'].tolist())}, jax {sorted(jx['K+ median'].tolist())}; "
          f"Mann-Whitney p = {u.pvalue:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
