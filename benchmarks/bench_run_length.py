"""Sweeps per device call (``jax_backend.kernel.RUN_LENGTH``): seconds per sweep of the driver's
``run`` path with one sweep per call against several, paired and alternated in one process so
that both see the same machine load.

Run by hand::

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_run_length.py \\
        --size 2000x500 --lengths 1 10 --sweeps 10 --pairs 3

The data and start are :mod:`bench_jax`'s (NB counts of :func:`bench_scale.simulate`, 25
starting dimensions, the estimator's defaults). Each length compiles its own program first
(not timed); then each pair runs `--sweeps` sweeps with each length, in alternating order. The
chains are the same whatever the length (the keys are drawn the same way), which is checked.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scale import simulate  # noqa: E402
from ibp_rflvm import IBPRFLVM, model  # noqa: E402
from ibp_rflvm.jax_backend import kernel as device  # noqa: E402
from ibp_rflvm.targets import make_target  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", default="2000x500")
    p.add_argument("--lengths", type=int, nargs=2, default=[1, 10])
    p.add_argument("--sweeps", type=int, default=10)
    p.add_argument("--pairs", type=int, default=3)
    a = p.parse_args()
    n, j = (int(v) for v in a.size.split("x"))
    Y = simulate(n, j)
    spec = replace(IBPRFLVM(likelihood="negbinom", random_state=0)._spec(), backend="jax", n_dims=25)
    kernel = model.build_sweep(spec, make_target(spec, model.Data.from_array(Y, spec.likelihood)))
    start = kernel.init(np.random.default_rng(0))
    times: dict[int, list[float]] = {k: [] for k in a.lengths}
    finals = {}
    for k in a.lengths:  # compile each program
        device.RUN_LENGTH = k
        kernel.run(np.random.default_rng(1), start, 1)
    for pair in range(a.pairs):
        for k in a.lengths if pair % 2 == 0 else a.lengths[::-1]:
            device.RUN_LENGTH = k
            t0 = time.perf_counter()
            state, _ = kernel.run(np.random.default_rng(2), start, a.sweeps)
            times[k].append((time.perf_counter() - t0) / a.sweeps)
            finals[k] = state
            print(f"pair {pair} run length {k}: {times[k][-1]:.3f} s per sweep", flush=True)
    same = all(np.array_equal(getattr(finals[a.lengths[0]], f), getattr(finals[a.lengths[1]], f))
               for f in ("X", "Z", "W"))  # fmt: skip
    k0, k1 = a.lengths
    m0, m1 = statistics.median(times[k0]), statistics.median(times[k1])
    print(f"{a.size}: median s per sweep, run length {k0}: {m0:.3f}, run length {k1}: {m1:.3f}; "
          f"ratio {m0 / m1:.3f}; same chain: {same}")  # fmt: skip


if __name__ == "__main__":
    main()
