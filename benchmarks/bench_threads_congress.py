"""Wall seconds per sweep of the default NB IBP-RFLVM on congress with 1 or 2 threads (run by hand).

``OPENBLAS_NUM_THREADS=1 IBP_RFLVM_DATA=../shared/datasets PYTHONPATH=src python
benchmarks/bench_threads_congress.py T`` fits 5 sweeps to compile the kernels, then times a fresh
40-sweep fit (its start spread over the sweeps) and prints the last log-likelihood, which is the
same for every T (the chain does not depend on the thread count).
"""

from __future__ import annotations

import sys
import time

from ibp_rflvm import IBPRFLVM
from ibp_rflvm.evaluation.cells import dataset_arrays


def main() -> None:
    threads = int(sys.argv[1])
    Y = dataset_arrays("congress", False, None, None)[0]
    IBPRFLVM(likelihood="negbinom", n_iter=5, random_state=0, n_threads=threads).fit(Y)  # compile
    wall, cpu = time.perf_counter(), time.process_time()
    m = IBPRFLVM(likelihood="negbinom", n_iter=40, random_state=0, n_threads=threads).fit(Y)
    wall, cpu = (time.perf_counter() - wall) / 40, (time.process_time() - cpu) / 40
    print(
        f"threads {threads}: {Y.shape}, {wall:.3f} s per sweep (CPU {cpu:.3f}), "
        f"last log-likelihood {m.log_likelihood_[-1]:.6f}, K+ {m.n_active_[-1]}"
    )


if __name__ == "__main__":
    main()
