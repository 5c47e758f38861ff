"""Cost of the aligned-pair moves with and without their per-sweep budget (run by hand).

``python benchmarks/bench_pair_budget.py olivetti --warm 30``

A chain runs `--warm` default sweeps from the default start with every aligned pair visited
(``pairs_per_dim=None``); from that one state the paper's sweep, the default sweep with every
aligned pair, and the default sweep with at most ``K`` pairs per move (``pairs_per_dim=1``, the
default) are each timed `--reps` times in CPU seconds (each from the same state with its own
generator). Prints ``K+``, the number of aligned pairs, and per sweep the seconds of the
transfers, absorb/emit and flips and the proposals each pair move made.
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
from ibp_rflvm.samplers import transfer


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dataset")
    p.add_argument("--likelihood", default="gaussian")
    p.add_argument("--warm", type=int, default=30)
    p.add_argument("--reps", type=int, default=2)
    args = p.parse_args()
    ds = load(args.dataset)
    Y_train, _ = holdout_mask(ds.data, 0.2, random_state=0)
    lik = make_likelihood(args.likelihood)
    data = model.Data.from_array(Y_train, lik)
    every = model.ModelSpec(n_dims=12, bias=lik.default_bias, likelihood=lik, max_dims=50, pairs_per_dim=None)
    specs = {"paper": replace(every, moves=False), "all pairs": every}
    specs["K pairs"] = replace(every, pairs_per_dim=1.0)
    rng = np.random.default_rng(0)
    with threadpool_limits(limits=1, user_api="blas"):
        state = model.init_state(rng, data, every)
        for _ in range(args.warm):
            state, _ = model.sweep(rng, state, data, every)
        n_pairs = transfer.aligned_pairs(state.W[:, state.Z.any(axis=0)], 0.3)[0].size
        print(f"{args.dataset}: K+ {state.k_plus}, aligned pairs {n_pairs}")
        for rep in range(args.reps):
            for label, spec in specs.items():
                t0 = time.process_time()
                _, info = model.sweep(np.random.default_rng(rep + 1), state, data, spec)
                cpu = time.process_time() - t0
                sm = info.get("seconds_moves", {})
                print(
                    f"  {label:<9} CPU {cpu:6.2f} s  transfers {sm.get('transfers', 0.0):5.2f}  "
                    f"absorb {sm.get('absorbs', 0.0):5.2f}  flips {sm.get('flips', 0.0):5.2f}  proposals "
                    f"{info.get('transfers_proposed', 0)} / {info.get('absorbs_proposed', 0)}"
                )


if __name__ == "__main__":
    main()
