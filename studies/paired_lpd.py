"""Paired comparison of two `studies/mixing.py --out` runs on the same data and mask (by hand).

``python studies/paired_lpd.py results/a.json results/b.json``

Chains are matched by (start, seed), so two runs of the same chains with different settings or
backends (`mixing.py --backend numba` and `--backend jax`, issue 43) pair up; the two runs must
score the same held-out entries (same data set and `--mask-seed`), which is checked. For each
pair, the difference of the held-out LPD per entry
(b minus a) with its paired standard error: the standard deviation over held-out entries of the
entry-wise difference, over the square root of their number. Entries are scored by the same
samples within a run, so the pairing removes the variation between entries that both runs share.
For counts (runs whose chains carry ``pointwise_ylogp``) also the paired difference of the log
perplexity, ``-sum_j y_j (log p_bj - log p_aj) / sum_j y_j``, with its standard error over
entries (positive: b's perplexity is higher, worse).

A one-off study (``studies/``, not maintained): its result and command are in
docs/record/sampler.md.
"""

from __future__ import annotations

import argparse
import json

import numpy as np


def check_same_entries(a: dict, b: dict) -> None:
    """Raise unless the two runs scored the same held-out entries (same data, same mask)."""
    for key in ("dataset", "mask_seed"):
        if key in a and key in b and a[key] != b[key]:
            raise ValueError(f"the runs differ in {key}: {a[key]!r} and {b[key]!r}")
    sizes = {len(c["pointwise_lpd"]) for c in a["chains"] + b["chains"]}
    if len(sizes) > 1:
        raise ValueError(f"the runs scored different numbers of held-out entries: {sorted(sizes)}")


def paired(a: dict, b: dict, by_start: bool = False) -> list[dict]:
    """The pairs of chains of `a` and `b` with the same (start, seed), or with `by_start` the same
    start and rank among that start's chains (for two runs with different `--seed-offset`)."""
    check_same_entries(a, b)

    def keys(report):
        seen: dict[int, int] = {}
        for c in report["chains"]:
            rank = seen[c["init_dims"]] = seen.get(c["init_dims"], -1) + 1
            yield (c["init_dims"], rank if by_start else c["seed"]), c

    by_key = dict(keys(a))
    rows = []
    for key, cb in keys(b):
        ca = by_key.get(key)
        if ca is None:
            continue
        d = np.asarray(cb["pointwise_lpd"]) - np.asarray(ca["pointwise_lpd"])
        row = {
            "start": cb["init_dims"], "seed": cb["seed"], "seed_a": ca["seed"],
            "lpd_a": float(np.mean(ca["pointwise_lpd"])),
            "lpd_b": float(np.mean(cb["pointwise_lpd"])), "diff": float(d.mean()),
            "se": float(d.std(ddof=1) / np.sqrt(d.size)),
        }  # fmt: skip
        if "pointwise_ylogp" in ca and "pointwise_ylogp" in cb:
            # log perplexity is -sum y log p / sum y: its paired difference is a ratio of sums
            # over the same entries, with the standard error of the numerator's mean.
            e = np.asarray(cb["pointwise_ylogp"]) - np.asarray(ca["pointwise_ylogp"])
            total = ca["heldout_total"]
            row.update({
                "perplexity_a": ca["perplexity"], "perplexity_b": cb["perplexity"],
                "log_perplexity_diff": float(-e.sum() / total),
                "log_perplexity_se": float(e.std(ddof=1) * np.sqrt(e.size) / total),
            })  # fmt: skip
        rows.append(row)
    return rows


def load_report(path: str) -> dict:
    """A `mixing.py --out` report, gzipped when its name ends in ``.gz``."""
    import gzip

    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        return json.load(f)


def main(argv=None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--by-start", action="store_true", help="pair chains by start and rank, not seed")
    args = p.parse_args(argv)
    ra, rb = load_report(args.a), load_report(args.b)
    rows = paired(ra, rb, args.by_start)
    backends = [r.get("backend", "numba") for r in (ra, rb)]
    print(f"a: {args.a} (backend {backends[0]}), b: {args.b} (backend {backends[1]})")
    print("start seed  LPD a    LPD b    b - a (paired SE)")
    for r in rows:
        extra = ""
        if "log_perplexity_diff" in r:
            extra = (
                f"  perplexity {r['perplexity_a']:.2f} -> {r['perplexity_b']:.2f},"
                f" log ratio {r['log_perplexity_diff']:+.4f} ({r['log_perplexity_se']:.4f})"
            )
        print(
            f"{r['start']:5d} {r['seed']:5d}  {r['lpd_a']:.4f}  {r['lpd_b']:.4f}"
            f"  {r['diff']:+.4f} ({r['se']:.4f}){extra}"
        )
    return rows


if __name__ == "__main__":
    main()
