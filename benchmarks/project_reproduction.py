"""Projected worker seconds of the reproduction (Tables 1-3) from per-sweep measurements.

Run by hand::

    python benchmarks/project_reproduction.py BEFORE.txt AFTER.txt [--timings results/tables/timings.md]

BEFORE and AFTER hold ``bench_cells.py`` output lines (one per cell type, same machine and
settings). Two projections are printed, each summing every (data set, method) row of the
committed timings table and replacing the measured cell types only:

* ``scaled``: the committed seconds times the measured after/before ratio of CPU s/sweep;
* ``sweeps``: ``cells x n_iter x`` the measured CPU s/sweep (the chain alone: no scoring or
  data loading), so it shows what the current code costs independently of the committed run.

Rows that were not measured (GPLVM, the small data sets, the baselines) keep their committed
seconds in both.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from ibp_rflvm.evaluation.experiments import METHODS

LINE = re.compile(r"^(\w+) ([\w-]+) \(.*?CPU ([0-9.]+) s/sweep")
ROW = re.compile(r"^\| (\w+) \| ([^|]+?) \| (\d+) \| ([0-9.]+) \| ([0-9.]+) \|$")


def cpu_per_sweep(path: str) -> dict[tuple[str, str], float]:
    out = {}
    for line in Path(path).read_text().splitlines():
        m = LINE.match(line)
        if m:
            out[(m[1], m[2])] = float(m[3])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--timings", default="results/tables/timings.md")
    parser.add_argument("--n-iter", type=int, default=100)
    args = parser.parse_args()
    before, after = cpu_per_sweep(args.before), cpu_per_sweep(args.after)
    key_of = {m.name: k for k, m in METHODS.items()}
    committed = scaled = sweeps = 0.0
    heads = ("committed s", "before s/sw", "after s/sw", "scaled s", "sweeps s")
    print(f"{'cell type':<36} " + " ".join(f"{h:>11}" for h in heads))
    for line in Path(args.timings).read_text().splitlines():
        m = ROW.match(line)
        if not m:
            continue
        ds, name, cells, total = m[1], m[2], int(m[3]), float(m[5])
        key = (ds, key_of[name])
        committed += total
        if key in before and key in after:
            s_scaled = total * after[key] / before[key]
            s_sweeps = cells * args.n_iter * after[key]
            print(f"{ds + ' ' + name:<36} {total:>11.0f} {before[key]:>11.3f} {after[key]:>11.3f} "
                  f"{s_scaled:>11.0f} {s_sweeps:>11.0f}")  # fmt: skip
        else:
            s_scaled = s_sweeps = total
        scaled += s_scaled
        sweeps += s_sweeps
    print(f"total worker seconds: committed {committed:.0f}, projected (scaled) {scaled:.0f}, "
          f"projected (sweeps) {sweeps:.0f}")  # fmt: skip


if __name__ == "__main__":
    main()
