"""Held-out comparison: IBP-RFLVM (default sampler) against the dense RFLVM and the Bayesian GPLVM.

``python benchmarks/heldout.py cambridge --n-iter 300 --init-dims 12 [--n-chains 4]``

One mask (20% of the observed entries held out), one chain per model (`--n-chains`: that many
per RFLVM, their samples pooled for the predictive density; `D = K+` is then their median).
The IBP-RFLVM is compared with the dense RFLVM at ``D = 2`` and at ``D`` = the IBP's final
``K+`` (both with the default, scaled start), and with the Bayesian GPLVM at ``D = 2`` and
matched ``D``. For each pair: the mean per-entry difference of held-out log predictive
densities and its standard error over entries (paired), and how many standard errors that is.
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

from ibp_rflvm import IBPRFLVM, RFLVM, holdout_mask
from ibp_rflvm.datasets import load
from ibp_rflvm.summaries.scoring import log_mean_exp


def per_entry(est, Y_test) -> np.ndarray:
    if hasattr(est, "pointwise_log_predictive"):
        return log_mean_exp(est.pointwise_log_predictive(Y_test), axis=0)
    return np.asarray(est.pointwise_log_density(Y_test))


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dataset")
    p.add_argument("--n-iter", type=int, default=300)
    p.add_argument("--init-dims", type=int, default=12)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-gplvm", action="store_true")
    p.add_argument("--n-chains", type=int, default=1, help="chains of each RFLVM, pooled for the LPD")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    ds = load(args.dataset)
    Y_train, Y_test = holdout_mask(ds.data, fraction=0.2, random_state=args.seed)
    models = {}
    t0 = time.perf_counter()
    ibp = IBPRFLVM(
        n_iter=args.n_iter, init_dims=args.init_dims, random_state=args.seed, n_chains=args.n_chains
    ).fit(Y_train)
    k = int(np.median(ibp.traces_["n_active"][:, -1]))  # the chains' final K+ (median)
    models[f"IBP-RFLVM (K+ = {k})"] = (ibp, time.perf_counter() - t0)
    for d in sorted({2, k}):
        t0 = time.perf_counter()
        est = RFLVM(n_components=d, n_iter=args.n_iter, random_state=args.seed, n_chains=args.n_chains)
        est = est.fit(Y_train)
        models[f"RFLVM (D = {d})"] = (est, time.perf_counter() - t0)
    if not args.no_gplvm:
        from ibp_rflvm.baselines import BayesianGPLVM

        for d in sorted({2, k}):
            t0 = time.perf_counter()
            est = BayesianGPLVM(n_components=d, random_state=args.seed).fit(Y_train)
            models[f"GPLVM (D = {d})"] = (est, time.perf_counter() - t0)
    lpd = {name: per_entry(est, Y_test) for name, (est, _) in models.items()}
    ref = next(iter(lpd))
    rows = []
    for name, values in lpd.items():
        diff = lpd[ref] - values
        se = float(diff.std(ddof=1) / math.sqrt(diff.size)) if name != ref else float("nan")
        rows.append({
            "model": name, "lpd_per_entry": float(values.mean()), "seconds": models[name][1],
            "ibp_minus_this": float(diff.mean()), "se": se,
            "n_se": float(diff.mean() / se) if name != ref else float("nan"),
        })  # fmt: skip
    n_test = int(np.count_nonzero(~np.isnan(Y_test)))
    print(f"{args.dataset}: {n_test} held-out entries, {args.n_iter} sweeps")
    print(f"{'model':<22} {'LPD/entry':>10} {'IBP - this':>11} {'(se)':>8} {'n se':>6} {'s':>6}")
    for r in rows:
        print(f"{r['model']:<22} {r['lpd_per_entry']:>10.4f} {r['ibp_minus_this']:>11.4f} "
              f"{r['se']:>8.4f} {r['n_se']:>6.1f} {r['seconds']:>6.0f}")  # fmt: skip
    report = {"dataset": args.dataset, "n_iter": args.n_iter, "init_dims": args.init_dims, "rows": rows}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1)
    return report


if __name__ == "__main__":
    main()
