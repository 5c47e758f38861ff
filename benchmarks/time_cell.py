"""Run one whole reproduction cell (trial 0) in this process and print its seconds and results.

Run by hand: ``python benchmarks/time_cell.py DATASET METHOD [D]`` (D for a finite model), e.g.
``python benchmarks/time_cell.py olivetti rflvm 41``. It calls the harness's own
``compute_cell`` (fit, scoring; nothing written), so the seconds are a cell's worker seconds
and the final log-likelihood and held-out LPD can be compared with the committed cell file.
"""

from __future__ import annotations

import sys
import time

from ibp_rflvm.evaluation.cells import CellTask, compute_cell
from ibp_rflvm.evaluation.experiments import Cell, RunConfig


def main() -> None:
    ds, method = sys.argv[1], sys.argv[2]
    dims = int(sys.argv[3]) if len(sys.argv) > 3 else None
    cpu = time.process_time()
    rec, _ = compute_cell(CellTask(Cell(ds, method, 0), RunConfig(), dims))
    trace = rec["k_plus_trace"] or [0]
    print(
        f"{ds} {method}: fit {rec['fit_seconds']} s, cell {rec['seconds']} s wall, "
        f"{time.process_time() - cpu:.1f} s CPU; max K+ {max(trace)}; final loglik "
        f"{rec['log_likelihood_final']!r}; LPD {rec['metrics']['lpd_sum']!r}"
    )


if __name__ == "__main__":
    main()
