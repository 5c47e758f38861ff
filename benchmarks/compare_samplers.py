"""Compare two reproduction folders cell by cell: the paper's sampler against the default (run by hand).

``python benchmarks/compare_samplers.py results results/default [--datasets cambridge,cancer]``

Prints, as Markdown, what ``results/README.md`` reports about the rerun:

* every IBP-RFLVM chain's final ``K+``, its trace over the kept sweeps (min / median / max) and,
  where the cell recorded it, the final sample's effective dimensions;
* how many IBP-RFLVM chains ever left their starting number of dimensions;
* per data set and folder, the first method and by how many standard errors of the paired
  per-trial difference it leads the runner-up (held-out LPD per entry for real-valued data,
  perplexity for counts), and where the IBP-RFLVM (on counts, the NB IBP-RFLVM) stands.

Only data sets present in both folders are compared, and only trials every method finished.
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict

import numpy as np

from ibp_rflvm.evaluation.experiments import METHODS, _dataset_kind
from ibp_rflvm.evaluation.store import load_records


def _by_cell(folder: str) -> dict[tuple[str, str], dict[int, dict]]:
    out: dict[tuple[str, str], dict[int, dict]] = defaultdict(dict)
    for r in load_records(folder):
        out[(r["dataset"], r["method"])][r["trial"]] = r
    return out


def _metric(r: dict) -> tuple[float, bool]:
    """The table's figure of a cell and whether higher is better."""
    m = r["metrics"]
    if m.get("perplexity") is not None:
        return float(m["perplexity"]), False
    return float(m["lpd_per_entry"]), True


def chain_rows(cells: dict, datasets: list[str]) -> tuple[list[str], int, int]:
    """Markdown rows for the IBP-RFLVM chains, and (chains that left their start, chains)."""
    rows, moved, total = [], 0, 0
    for (ds, method), trials in sorted(cells.items()):
        m = METHODS[method]
        if ds not in datasets or not (m.family == "rflvm" and m.ibp):
            continue
        for t, r in sorted(trials.items()):
            trace = np.asarray(r["k_plus_trace"])
            kept = trace[trace.size // 2 :]
            left = bool(np.any(trace != r["init_dims"]))
            moved += left
            total += 1
            eff = r.get("effective_dims_final")
            rows.append(
                f"| {ds} | {m.name} | {t} | {r['init_dims']} | {r['k_plus_final']} | "
                f"{kept.min()} / {np.median(kept):g} / {kept.max()} | {'-' if eff is None else eff} | "
                f"{'yes' if left else 'no'} |"
            )
    return rows, moved, total


def ranking(cells: dict, ds: str) -> tuple[list[tuple[str, float, float]], list[int], bool]:
    """Methods by mean figure over the trials all of them finished (best first)."""
    methods = [m for (d, m) in cells if d == ds]
    trials = sorted(set.intersection(*(set(cells[(ds, m)]) for m in methods)))
    if not trials:
        return [], [], True
    higher = _metric(cells[(ds, methods[0])][trials[0]])[1]
    rows = []
    for m in methods:
        v = np.array([_metric(cells[(ds, m)][t])[0] for t in trials])
        se = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else math.nan
        rows.append((m, float(v.mean()), se))
    rows.sort(key=lambda x: -x[1] if higher else x[1])
    return rows, trials, higher


def paired_se(cells: dict, ds: str, a: str, b: str, trials: list[int], higher: bool) -> tuple[float, float]:
    """Mean advantage of `a` over `b` per trial (positive: `a` better) and its standard errors."""
    sign = 1.0 if higher else -1.0
    d = np.array([sign * (_metric(cells[(ds, a)][t])[0] - _metric(cells[(ds, b)][t])[0]) for t in trials])
    if d.size < 2:
        return float(d.mean()), math.nan
    se = d.std(ddof=1) / math.sqrt(d.size)
    return float(d.mean()), float(d.mean() / se) if se > 0 else math.inf


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("paper")
    p.add_argument("default")
    p.add_argument("--datasets", default=None, help="comma-separated subset")
    args = p.parse_args()
    folders = {"paper's sampler": _by_cell(args.paper), "default sampler": _by_cell(args.default)}
    present = [{ds for ds, _ in c} for c in folders.values()]
    datasets = sorted(set.intersection(*present))
    if args.datasets:
        datasets = [d for d in datasets if d in args.datasets.split(",")]

    for label, cells in folders.items():
        rows, moved, total = chain_rows(cells, datasets)
        print(f"\n### IBP-RFLVM chains, {label}: {moved} of {total} left their start\n")
        print("| data | method | trial | start | final K+ | K+ kept (min / median / max) | effective (final) "
              "| left start |")  # fmt: skip
        print("|---|---|---|---|---|---|---|---|")
        print("\n".join(rows))

    print("\n### First per data set\n")
    print("| data | sampler | first (mean) | lead over second, SE of paired difference | IBP-RFLVM's place |")
    print("|---|---|---|---|---|")
    for ds in datasets:
        for label, cells in folders.items():
            rows, trials, higher = ranking(cells, ds)
            if len(rows) < 2:
                continue
            (first, v1, _), (second, _, _) = rows[0], rows[1]
            lead, z = paired_se(cells, ds, first, second, trials, higher)
            ranked = [m for m, _, _ in rows]
            ibp = "nb-ibp-rflvm" if _dataset_kind(ds) == "counts" else "ibp-rflvm"
            if ibp not in ranked:  # a folder part way through a data set
                note = "not computed yet"
            elif (place := ranked.index(ibp) + 1) == 1:
                note = "first"
            else:
                gap, zg = paired_se(cells, ds, first, ibp, trials, higher)
                note = f"{place} of {len(rows)}, {gap:.3g} behind ({zg:.1f} SE)"
            print(
                f"| {ds} | {label} | {METHODS[first].name} ({v1:.4g}) | {lead:.3g} ({z:.1f} SE) over "
                f"{METHODS[second].name} | {METHODS[ibp].name}: {note} |"
            )


if __name__ == "__main__":
    main()
