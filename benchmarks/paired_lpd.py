"""Paired comparison of two `benchmarks/mixing.py --out` runs on the same data and mask (by hand).

``python benchmarks/paired_lpd.py results/a.json results/b.json``

Chains are matched by (start, seed). For each pair, the difference of the held-out LPD per entry
(b minus a) with its paired standard error: the standard deviation over held-out entries of the
entry-wise difference, over the square root of their number. Entries are scored by the same
samples within a run, so the pairing removes the variation between entries that both runs share.
"""

from __future__ import annotations

import argparse
import json

import numpy as np


def paired(a: dict, b: dict) -> list[dict]:
    by_key = {(c["init_dims"], c["seed"]): c for c in a["chains"]}
    rows = []
    for cb in b["chains"]:
        ca = by_key.get((cb["init_dims"], cb["seed"]))
        if ca is None:
            continue
        d = np.asarray(cb["pointwise_lpd"]) - np.asarray(ca["pointwise_lpd"])
        rows.append(
            {
                "start": cb["init_dims"], "seed": cb["seed"], "lpd_a": float(np.mean(ca["pointwise_lpd"])),
                "lpd_b": float(np.mean(cb["pointwise_lpd"])), "diff": float(d.mean()),
                "se": float(d.std(ddof=1) / np.sqrt(d.size)),
            }
        )  # fmt: skip
    return rows


def main(argv=None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("a")
    p.add_argument("b")
    args = p.parse_args(argv)
    with open(args.a) as fa, open(args.b) as fb:
        rows = paired(json.load(fa), json.load(fb))
    print("start seed  LPD a    LPD b    b - a (paired SE)")
    for r in rows:
        print(
            f"{r['start']:5d} {r['seed']:5d}  {r['lpd_a']:.4f}  {r['lpd_b']:.4f}"
            f"  {r['diff']:+.4f} ({r['se']:.4f})"
        )
    return rows


if __name__ == "__main__":
    main()
