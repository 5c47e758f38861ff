"""How fast does ``K+`` mix once a chain is in the right mode? (run by hand)

``python studies/stationary_kplus.py cambridge --warm 700 --chains 8 --n-iter 300``

One chain of the default sampler runs `--warm` sweeps from ``init_dims``; `--chains` chains then
continue from its final state with their own seeds. If even chains that start together disagree
after `--n-iter` sweeps, the stationary chain is too slow for any start to bring R-hat down. If
they agree, the fast parts of the state mix within that many sweeps, and what keeps chains from
different starts apart is slow and shared by chains started together: here, the surplus columns
a start leaves, whose draining the warm chain shows (its rows per column are printed every
`--report-every` sweeps). Reported: split R-hat and bulk ESS of ``K+`` and of the training
log-likelihood over the second half, the integrated autocorrelation time that ESS implies, and
each chain's ``K+`` counts.

A one-off study (``studies/``, not maintained): its result and command are in
docs/record/sampler.md.
"""

from __future__ import annotations

import argparse
import json
import time

import arviz as az
import numpy as np
from joblib import Parallel, delayed

from ibp_rflvm import holdout_mask
from ibp_rflvm.datasets import load
from ibp_rflvm.model import Data, ModelSpec, init_state, sweep


def _run(rng: np.random.Generator, state, data: Data, spec: ModelSpec, n: int, every: int = 0):
    k, ll = [], []
    for t in range(n):
        state, _ = sweep(rng, state, data, spec)
        k.append(state.k_plus)
        ll.append(state.loglik)
        if every and (t + 1) % every == 0:
            sizes = np.sort(state.Z.sum(axis=0))[::-1]
            print(f"  warm sweep {t + 1}: rows per column {sizes.tolist()}", flush=True)
    return state, np.array(k), np.array(ll)


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dataset")
    p.add_argument("--init-dims", type=int, default=12)
    p.add_argument("--warm", type=int, default=700)
    p.add_argument("--chains", type=int, default=8)
    p.add_argument("--n-iter", type=int, default=300)
    p.add_argument("--seed", type=int, default=12000)
    p.add_argument("--n-jobs", type=int, default=2)
    p.add_argument("--report-every", type=int, default=100, help="print the warm chain's column sizes")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    ds = load(args.dataset)
    Y_train, _ = holdout_mask(ds.data, fraction=0.2, random_state=0)
    data = Data.from_array(Y_train)
    spec = ModelSpec(n_dims=args.init_dims)
    t0 = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    warm, k_warm, _ = _run(rng, init_state(rng, data, spec), data, spec, args.warm, args.report_every)
    t_warm = time.perf_counter() - t0
    seeds = np.random.SeedSequence(args.seed).spawn(args.chains)
    runs = Parallel(n_jobs=args.n_jobs)(
        delayed(_run)(np.random.default_rng(s), warm, data, spec, args.n_iter) for s in seeds
    )
    half = args.n_iter // 2
    k = np.array([r[1][half:] for r in runs], dtype=float)
    ll = np.array([r[2][half:] for r in runs])
    draws = k.size
    report = {
        "dataset": args.dataset, "init_dims": args.init_dims, "warm": args.warm,
        "warm_k_plus_last": int(k_warm[-1]), "warm_seconds": t_warm, "n_iter": args.n_iter,
        "rhat_k_plus": float(az.rhat(k)), "rhat_loglik": float(az.rhat(ll)),
        "ess_k_plus": float(az.ess(k)), "ess_loglik": float(az.ess(ll)),
        "k_plus_counts": [np.bincount(r[1][half:]).tolist() for r in runs],
    }  # fmt: skip
    report["tau_k_plus"] = draws / report["ess_k_plus"]
    report["tau_loglik"] = draws / report["ess_loglik"]
    print(
        f"{args.dataset}: {args.chains} chains from one state after {args.warm} sweeps (K+ "
        f"{report['warm_k_plus_last']}), {args.n_iter} sweeps each, second half:\n"
        f"  R-hat K+ {report['rhat_k_plus']:.2f} (ESS {report['ess_k_plus']:.0f}, tau "
        f"{report['tau_k_plus']:.0f} sweeps); R-hat loglik {report['rhat_loglik']:.3f} (ESS "
        f"{report['ess_loglik']:.0f}, tau {report['tau_loglik']:.0f} sweeps)"
    )
    for c in report["k_plus_counts"]:
        print("  K+ counts from 0:", c)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(report, fh, indent=1)
    return report


if __name__ == "__main__":
    main()
