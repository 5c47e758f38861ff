"""Paired per-trial comparison of rerun cells with committed ones (same data set, method, trial).

For each (data set, method) present in both folders: mean held-out LPD per entry and perplexity
of each, the mean paired difference (new minus committed) over the trials, its standard error
(sd of the per-trial differences / sqrt(trials)) and the difference in those SEs; also each
side's seconds and final ``K+``. Used to check whether a sampler change moves Table 1/2's cells.

    python benchmarks/compare_cells.py /tmp/congress-mult results/default
"""

from __future__ import annotations

import json
import math
import sys
from collections import defaultdict
from pathlib import Path


def load(folder: Path) -> dict[tuple[str, str], dict[int, dict]]:
    cells: dict[tuple[str, str], dict[int, dict]] = defaultdict(dict)
    for path in sorted((folder / "cells").glob("*.json")):
        rec = json.loads(path.read_text())
        cells[(rec["dataset"], rec["method"])][rec["trial"]] = rec
    return cells


def main() -> None:
    new, old = load(Path(sys.argv[1])), load(Path(sys.argv[2]))
    print("| data | method | trials | LPD/entry new / committed | diff (SE, z) | perplexity new / committed "
          "| K+ new / committed | s per cell new / committed |")
    print("|---|---|---|---|---|---|---|---|")
    for key in sorted(new):
        trials = sorted(set(new[key]) & set(old.get(key, {})))
        if not trials:
            continue
        a = [new[key][t]["metrics"]["lpd_per_entry"] for t in trials]
        b = [old[key][t]["metrics"]["lpd_per_entry"] for t in trials]
        d = [x - y for x, y in zip(a, b, strict=True)]
        n = len(d)
        mean = sum(d) / n
        se = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1) / n) if n > 1 else float("nan")
        pa = [new[key][t]["metrics"].get("perplexity", float("nan")) for t in trials]
        pb = [old[key][t]["metrics"].get("perplexity", float("nan")) for t in trials]
        ka = [new[key][t].get("k_plus_final") or new[key][t].get("D") for t in trials]
        kb = [old[key][t].get("k_plus_final") or old[key][t].get("D") for t in trials]
        sa = sum(new[key][t]["seconds"] for t in trials) / n
        sb = sum(old[key][t]["seconds"] for t in trials) / n
        z = mean / se if se > 0 else float("nan")
        print(f"| {key[0]} | {key[1]} | {n} | {sum(a) / n:.5f} / {sum(b) / n:.5f} | {mean:+.5f} ({se:.5f}, "
              f"{z:+.2f}) | {sum(pa) / n:.2f} / {sum(pb) / n:.2f} | {ka} / {kb} | {sa:.0f} / {sb:.0f} |")


if __name__ == "__main__":
    main()
