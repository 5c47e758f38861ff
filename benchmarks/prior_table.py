"""The IBP against the gamma-Poisson feature model as the prior on ``Z`` (issue 49), run by hand.

``python benchmarks/prior_table.py run [--trials 5] [--n-iter 100] [--jobs 2]``
    Fits the IBP-RFLVM and the gamma-Poisson RFLVM (the library's default sampler; NB on the
    count sets) on the harness's training matrices of Cambridge, breast cancer and mice
    (Gaussian) and Montreal and Congress (negative binomial), trial by trial, with the masks and
    seeds of ``ibp-rflvm reproduce`` (:func:`ibp_rflvm.evaluation.cells.compute_cell`), and
    stores each cell's record in ``results/priors/CELL.json``; a stored cell is not refitted.
``python benchmarks/prior_table.py table``
    Prints held-out log density per entry, perplexity (counts), final ``K+`` and effective
    dimensions: mean (standard error over trials), and each method's wins over the trials.

``IBP_RFLVM_DATA`` names the data.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from ibp_rflvm.evaluation.cells import CellTask, compute_cell
from ibp_rflvm.evaluation.experiments import Cell, RunConfig

OUT = Path("results/priors")
PAIRS = {
    "cambridge": ("ibp-rflvm", "gp-rflvm"),
    "cancer": ("ibp-rflvm", "gp-rflvm"),
    "mice": ("ibp-rflvm", "gp-rflvm"),
    "montreal": ("nb-ibp-rflvm", "nb-gp-rflvm"),
    "congress": ("nb-ibp-rflvm", "nb-gp-rflvm"),
}
COMMAND = "PYTHONPATH=src OPENBLAS_NUM_THREADS=1 python benchmarks/prior_table.py"


def _run_one(args: tuple[Cell, RunConfig]) -> str:
    cell, cfg = args
    record, _ = compute_cell(CellTask(cell, cfg, None))
    (OUT / f"{cell.id}.json").write_text(json.dumps(record, indent=1))
    m = record["metrics"]
    lpd, k = m["lpd_per_entry"], record["k_plus_final"]
    return f"{cell.id}: lpd/entry {lpd:.4f}, K+ {k}, {record['seconds']:.0f} s"


def run(trials: int, n_iter: int, jobs: int) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    cfg = RunConfig(n_iter=n_iter, sampler="default", data_home=os.environ.get("IBP_RFLVM_DATA"))
    todo = [
        (Cell(d, m, t), cfg)
        for t in range(trials)
        for d, methods in PAIRS.items()
        for m in methods
        if not (OUT / f"{Cell(d, m, t).id}.json").exists()
    ]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for line in pool.map(_run_one, todo):
            print(line, flush=True)


def _mean_se(values: list[float]) -> str:
    v = np.asarray([x for x in values if x is not None], dtype=float)
    if v.size == 0:
        return "-"
    se = v.std(ddof=1) / math.sqrt(v.size) if v.size > 1 else float("nan")
    return f"{v.mean():.3f} ({se:.3f})"


def table() -> None:
    records = [json.loads(p.read_text()) for p in sorted(OUT.glob("*.json"))]
    print(f"$ {COMMAND} table")
    print("| data | prior on Z | trials | LPD/entry | perplexity | K+ | effective dims | LPD wins |")
    print("|---|---|---|---|---|---|---|---|")
    for d, methods in PAIRS.items():
        by = {m: {r["trial"]: r for r in records if r["dataset"] == d and r["method"] == m} for m in methods}
        common = sorted(set(by[methods[0]]) & set(by[methods[1]]))
        for m in methods:
            rs = [by[m][t] for t in common]
            other = by[methods[1] if m == methods[0] else methods[0]]
            lpd = "lpd_per_entry"
            wins = sum(by[m][t]["metrics"][lpd] > other[t]["metrics"][lpd] for t in common)
            prior = "gamma-Poisson" if "gp-" in m else "IBP"
            print(
                f"| {d} | {prior} | {len(rs)} | {_mean_se([r['metrics']['lpd_per_entry'] for r in rs])} | "
                f"{_mean_se([r['metrics'].get('perplexity') for r in rs])} | "
                f"{_mean_se([r['k_plus_final'] for r in rs])} | "
                f"{_mean_se([r['effective_dims_final'] for r in rs])} | {wins}/{len(common)} |"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="stage", required=True)
    r = sub.add_parser("run")
    r.add_argument("--trials", type=int, default=5)
    r.add_argument("--n-iter", type=int, default=100)
    r.add_argument("--jobs", type=int, default=2)
    sub.add_parser("table")
    a = ap.parse_args()
    if a.stage == "run":
        run(a.trials, a.n_iter, a.jobs)
    else:
        table()


if __name__ == "__main__":
    main()
