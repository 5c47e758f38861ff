"""Cost of the default sampler's dimension moves against the paper's sweep, at the same state.

Run by ``make bench``, or ``python benchmarks/bench_moves.py [--quick] [--datasets olivetti --warm
30]``; the current figures are in BENCHMARKS.md, earlier ones in docs/record/benchmarks-history.md.

For each data set a chain runs `--warm` default sweeps from the default start (with the
estimator's cap of 50 dimensions, so ``K+`` is what the default sampler reaches there); from
that one state, the paper's sweep (its frequency step included), the default sweep, the default
sweep with the paper's frequency step instead of elliptical slice sampling
(``frequency_update="mh"``), and the default sweep with every aligned pair visited by the pair
moves (``pairs_per_dim=None``, no budget) and the default sweep without the scale move
(``scale_move=False``, the default before issue 64) are then each timed `--reps` times (each repetition
restarts from the same state with its own generator), so all are
measured at the same ``K+``. The default sweep's info gives the wall seconds of the flips, of
the row transfers, of absorb/emit and of the singleton births and deaths. BLAS is limited to
one thread, as ``fit`` does.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np
from threadpoolctl import threadpool_limits

from ibp_rflvm import holdout_mask, model
from ibp_rflvm.datasets import load
from ibp_rflvm.likelihoods import make_likelihood


def bench(name: str, warm: int, reps: int, init_dims: int = 12) -> dict:
    """Median seconds per sweep; real-valued data use the Gaussian, counts the negative binomial."""
    ds = load(name)
    Y_train, _ = holdout_mask(ds.data, fraction=0.2, random_state=0)
    lik = make_likelihood("gaussian" if ds.kind == "real" else "negbinom")
    data = model.Data.from_array(Y_train, lik)
    spec = model.ModelSpec(n_dims=init_dims, bias=lik.default_bias, likelihood=lik, max_dims=50)
    paper = replace(spec, moves=False, frequency_update="mh")
    mh = replace(spec, frequency_update="mh")
    every_pair = replace(spec, pairs_per_dim=None)
    no_scale = replace(spec, scale_move=False)
    rng = np.random.default_rng(0)
    with threadpool_limits(limits=1, user_api="blas"):
        state = model.init_state(rng, data, spec)
        for _ in range(warm):
            state, _ = model.sweep(rng, state, data, spec)
        model.sweep(np.random.default_rng(0), state, data, paper)  # compile both paths
        times = {"paper": [], "default": [], "default mh": [], "every pair": [], "no scale": [], "flips": [],
                 "transfers": [], "absorbs": [], "singletons": []}  # fmt: skip
        for r in range(reps):
            cases = (("paper", paper), ("default", spec), ("default mh", mh), ("every pair", every_pair),
                     ("no scale", no_scale))  # fmt: skip
            for label, sp in cases:
                t0 = time.perf_counter()
                _, info = model.sweep(np.random.default_rng(r + 1), state, data, sp)
                times[label].append(time.perf_counter() - t0)
                if label == "default":
                    times["flips"].append(info.seconds_moves.flips)
                    times["transfers"].append(info.seconds_moves.transfers)
                    times["absorbs"].append(info.seconds_moves.absorbs)
                    times["singletons"].append(info.seconds_moves.singletons)
    med = {k: float(np.median(v)) for k, v in times.items()}
    med["k_plus"] = state.k_plus
    med["likelihood"] = lik.name
    return med


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--datasets", nargs="+", default=["cambridge", "cancer", "mice", "congress"],
                   help="data sets (count data sets use the negative binomial)")  # fmt: skip
    p.add_argument("--warm", type=int, default=None, help="default sweeps before timing")
    args = p.parse_args()
    warm, reps = (10, 3) if args.quick else (50, 7)
    warm = warm if args.warm is None else args.warm
    print(f"{'data':<10} {'likelihood':<9} {'K+':>3} {'paper s':>8} {'default s':>9} {'ratio':>6} "
          f"{'flips':>6} {'transf':>6} {'absorb':>6} {'single':>6} {'every pair s':>12} "
          f"{'default, mh s':>13} {'no scale s':>10}")  # fmt: skip
    for name in args.datasets:
        r = bench(name, warm, reps)
        print(f"{name:<10} {r['likelihood']:<9} {r['k_plus']:>3} {r['paper']:>8.3f} {r['default']:>9.3f} "
              f"{r['default'] / r['paper']:>6.2f} {r['flips']:>6.3f} {r['transfers']:>6.3f} "
              f"{r['absorbs']:>6.3f} {r['singletons']:>6.3f} {r['every pair']:>12.3f} "
              f"{r['default mh']:>13.3f} {r['no scale']:>10.3f}",
              flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
