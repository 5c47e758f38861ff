"""The IBP prior check of tests/samplers/test_ibp.py, longer and over several seeds (run by hand).

``python benchmarks/prior_check_long.py --sweeps 12000 --seeds 20 21 22 23 [--absorb-min-cos none]``

The real sweep with a likelihood that carries no information (the collapsed Gaussian's kernels
on data with no columns), ``N = 10``, ``alpha = 2`` fixed, ``M = 3`` frequencies (so most pairs
of dimensions are aligned and the pair moves run often). With no data the chain must sample the
IBP prior: ``E[K+] = alpha H_N = 5.858`` and each row uses ``alpha`` dimensions on average.
Printed per seed: the chain's mean ``K+`` and the z-scores of ``K+`` and of the row count
against those values (batch-means standard errors over 40 batches, the first 200 sweeps
dropped). A correct sampler gives z-scores that look standard normal across seeds.
"""

from __future__ import annotations

import argparse

import numpy as np
from joblib import Parallel, delayed

from ibp_rflvm import model
from ibp_rflvm.samplers import ibp
from ibp_rflvm.summaries.diagnostics import batch_mean_se


def _off_or_float(value: str) -> float | None:
    return None if value == "none" else float(value)


def run(seed: int, n_sweeps: int, settings: dict, n: int = 10, alpha: float = 2.0) -> tuple:
    rng = np.random.default_rng(seed)
    data = model.Data.from_array(np.zeros((n, 0)))
    spec = model.ModelSpec(n_frequencies=3, fixed_alpha=alpha, **settings)
    state = model.init_state(rng, data, spec)
    k_plus, rows = [], []
    for _ in range(n_sweeps):
        state, _ = model.sweep(rng, state, data, spec)
        k_plus.append(state.k_plus)
        rows.append(state.Z.sum(axis=1).mean())
    k, se = batch_mean_se(np.array(k_plus[200:], dtype=float))
    r, rse = batch_mean_se(np.array(rows[200:]))
    return seed, k, (k - alpha * ibp.harmonic(n)) / se, (r - alpha) / rse


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sweeps", type=int, default=12000)
    p.add_argument("--seeds", type=int, nargs="+", default=[20, 21, 22, 23])
    p.add_argument("--transfer-min-cos", type=_off_or_float, default=0.3)
    p.add_argument("--absorb-min-cos", type=_off_or_float, default=0.3)
    p.add_argument("--pairs-per-dim", type=_off_or_float, default=1.0)
    p.add_argument("--paper-sweep", action="store_true", help="the paper's sweep (no moves), as a control")
    p.add_argument("--n-jobs", type=int, default=2)
    args = p.parse_args()
    settings = {
        "transfer_min_cos": args.transfer_min_cos, "absorb_min_cos": args.absorb_min_cos,
        "pairs_per_dim": args.pairs_per_dim, "moves": not args.paper_sweep,
    }  # fmt: skip
    out = Parallel(n_jobs=args.n_jobs)(delayed(run)(s, args.sweeps, settings) for s in args.seeds)
    print(f"{settings}, {args.sweeps} sweeps; E[K+] = {2 * ibp.harmonic(10):.3f}")
    for seed, k, zk, zr in out:
        print(f"  seed {seed}: mean K+ {k:.3f}, z(K+) {zk:+.2f}, z(row count) {zr:+.2f}")
    print(f"  mean z(K+) {np.mean([o[2] for o in out]):+.2f} over {len(out)} seeds")


if __name__ == "__main__":
    main()
