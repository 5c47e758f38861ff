"""Posterior agreement of two `studies/mixing.py --out` runs that differ only in `--backend` (by hand).

``python studies/backend_agreement.py results/jax_agreement/congress_numba.json
results/jax_agreement/congress_jax.json``

Issue 43's criteria for ``backend="jax"`` against ``backend="numba"``: the posteriors of ``K+``
and of the effective dimensions overlap, and the held-out LPD per entry agrees within 2 paired
standard errors. The two backends' chains are different random streams (the same seed does not
give the same chain), so distributions are compared, not values. Printed: per chain and backend
``K+`` over the kept half (min/median/max), the effective dimensions (min/median/max over the
kept samples), the held-out LPD per entry and the seconds per sweep (the chain's fit time over
its sweeps, start and compilation included); then the pairs of `paired_lpd.py` (b minus a) and,
per criterion, whether it holds: for ``K+`` and the effective dimensions, whether the pooled
ranges of the two runs overlap. `--by-start` pairs chains by start (and rank) instead of seed:
the control, two numba runs with different `--seed-offset`, shows how far two runs of the same
backend differ in the same units.

A one-off study (``studies/``, not maintained): its result and command are in
docs/record/jax_backend.md.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from paired_lpd import load_report, paired  # noqa: E402


def chain_rows(report: dict, run: str) -> list[dict]:
    half = report["n_iter"] // 2
    rows = []
    for c in report["chains"]:
        k = np.asarray(c["k_plus"][half:])
        eff = np.asarray(c["effective_dims"])
        rows.append({
            "run": run, "backend": report.get("backend", "numba"), "start": c["init_dims"], "seed": c["seed"],
            "k": (int(k.min()), float(np.median(k)), int(k.max())),
            "eff": (float(eff.min()), float(np.median(eff)), float(eff.max())),
            "lpd": float(c["score"]), "s_per_sweep": c["seconds"] / report["n_iter"],
            "k_all": k, "eff_all": eff,
        })  # fmt: skip
    return rows


def _overlap(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(max(a.min(), b.min()) <= min(a.max(), b.max()))


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("a", help="the numba run")
    p.add_argument("b", help="the jax run")
    p.add_argument("--by-start", action="store_true", help="pair chains by start and rank, not seed")
    args = p.parse_args(argv)
    ra, rb = load_report(args.a), load_report(args.b)
    rows = chain_rows(ra, "a") + chain_rows(rb, "b")
    print(f"{ra['dataset']}: {ra['n_iter']} and {rb['n_iter']} sweeps, K+ and eff. dims over the second half")
    print("run backend start  seed  K+ min/med/max   eff. dims min/med/max  LPD/entry  s/sweep")
    for r in rows:
        k, e = r["k"], r["eff"]
        print(
            f"{r['run']:3s} {r['backend']:7s} {r['start']:5d} {r['seed']:5d}  {k[0]:3d}/{k[1]:5.1f}/{k[2]:3d}"
            f"    {e[0]:4.0f}/{e[1]:5.1f}/{e[2]:4.0f}        {r['lpd']:.4f}   {r['s_per_sweep']:.2f}"
        )
    pairs = paired(ra, rb, args.by_start)
    print("start  seed  LPD a    LPD b    b - a (paired SE)  |diff|/SE")
    for r in pairs:
        print(
            f"{r['start']:5d} {r['seed']:5d}  {r['lpd_a']:.4f}  {r['lpd_b']:.4f}"
            f"  {r['diff']:+.4f} ({r['se']:.4f})  {abs(r['diff']) / r['se']:.2f}"
        )
    pool = {
        name: [np.concatenate([r[key] for r in rows if r["run"] == run]) for run in "ab"]
        for name, key in (("K+", "k_all"), ("effective dims", "eff_all"))
    }
    verdict = {name: _overlap(*v) for name, v in pool.items()}
    verdict["LPD within 2 paired SE"] = bool(pairs) and all(abs(r["diff"]) <= 2 * r["se"] for r in pairs)
    for name, ok in verdict.items():
        print(f"{name}: {'met' if ok else 'NOT met'}")
    return {"rows": rows, "pairs": pairs, "verdict": verdict}


if __name__ == "__main__":
    main()
