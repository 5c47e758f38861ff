"""Seconds per sweep of the reproduction's expensive cells, in exactly the cell's configuration.

Run by hand (``IBP_RFLVM_DATA`` must point at the data sets)::

    python benchmarks/bench_cells.py spam nb-ibp-rflvm
    python benchmarks/bench_cells.py spam multinomial-rflvm --dims 2 --profile /tmp/prof.out

The data, hold-out mask, model seed and settings are the harness's for trial `--trial`
(``RunConfig()`` defaults: the paper's sweep, M = 50, 100 sweeps per cell); a finite model
takes ``--dims`` dimensions (its parent's final ``K+`` in the committed cells: 2 for the count
models on spam and newsgroups, 41 on Olivetti). The chain runs `--warmup` sweeps from the
cell's start, then the same `--sweeps` sweeps are timed `--repeats` times from that state, each
with the generator restored, so every repetition does identical work. Reported: median wall and
CPU (``time.process_time``) seconds per sweep; CPU is the code's own cost when other work
shares the cores. ``--profile`` writes a cProfile of one more repetition.
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import hashlib
import statistics
import time

import numpy as np
from threadpoolctl import threadpool_limits

from ibp_rflvm.evaluation.cells import build_estimator, dataset_arrays, split_for
from ibp_rflvm.evaluation.experiments import METHODS, RunConfig, model_seed
from ibp_rflvm.model import Data, init_state, sweep


def run(state, rng_state, data, spec, n: int, bit_generator) -> tuple[float, float, object]:
    rng = np.random.Generator(type(bit_generator)())
    rng.bit_generator.state = copy.deepcopy(rng_state)
    w0, c0 = time.perf_counter(), time.process_time()
    for _ in range(n):
        state, _ = sweep(rng, state, data, spec)
    return time.perf_counter() - w0, time.process_time() - c0, state


def digest(state) -> str:
    """A short digest of the final state, to check that a change leaves the chain bit-identical."""
    h = hashlib.sha256()
    for a in (state.X, state.Z, state.W, state.zeta, *sorted(state.params.arrays().items())):
        h.update(np.ascontiguousarray(a[1] if isinstance(a, tuple) else a).tobytes())
    h.update(np.float64(state.loglik).tobytes())
    return h.hexdigest()[:12]


def main() -> None:
    fmt = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=fmt)
    parser.add_argument("dataset")
    parser.add_argument("method", choices=sorted(k for k, m in METHODS.items() if m.family == "rflvm"))
    parser.add_argument("--trial", type=int, default=0)
    parser.add_argument("--dims", type=int, default=2, help="D of a finite model (default 2)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--sweeps", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sampler", default="paper", choices=["paper", "default"])
    parser.add_argument("--profile", default=None, help="write a cProfile of one more repetition here")
    args = parser.parse_args()

    cfg = RunConfig(sampler=args.sampler)
    with threadpool_limits(limits=1, user_api="blas"):
        Y, _, _ = dataset_arrays(args.dataset, cfg.sqrt, cfg.data_home, cfg.max_rows)
        Y_train, _, _, _ = split_for(Y, args.dataset, args.trial, cfg.seed)
        seed = model_seed(args.dataset, args.method, args.trial, cfg.seed)
        est = build_estimator(args.method, None if METHODS[args.method].ibp else args.dims, seed, cfg)
        spec = est._spec()
        data = Data.from_array(np.asarray(Y_train, dtype=np.float64), spec.likelihood)
        rng = np.random.default_rng(seed)
        state = init_state(rng, data, spec)
        for _ in range(args.warmup):
            state, _ = sweep(rng, state, data, spec)
        saved = copy.deepcopy(rng.bit_generator.state)
        walls, cpus, lls = [], [], []
        for _ in range(args.repeats):
            wall, cpu, end = run(state, saved, data, spec, args.sweeps, rng.bit_generator)
            walls.append(wall / args.sweeps)
            cpus.append(cpu / args.sweeps)
            lls.append(f"loglik {end.loglik!r}, state {digest(end)}")
        if args.profile:
            prof = cProfile.Profile()
            prof.enable()
            run(state, saved, data, spec, args.sweeps, rng.bit_generator)
            prof.disable()
            prof.dump_stats(args.profile)
    same = all(ll == lls[0] for ll in lls)
    print(
        f"{args.dataset} {args.method} (trial {args.trial}, {Y.shape[0]} x {Y.shape[1]}, "
        f"K = {state.X.shape[1]}, K+ = {state.k_plus}): wall {statistics.median(walls):.3f} s/sweep, "
        f"CPU {statistics.median(cpus):.3f} s/sweep (median of {args.repeats} x {args.sweeps} sweeps "
        f"after {args.warmup}); final {lls[0]}{'' if same else ' (repeats DIFFER)'}"
    )


if __name__ == "__main__":
    main()
