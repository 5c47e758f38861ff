"""Power of the count joint-distribution tests against wrong Polya-gamma draws (issue 29).

Run by hand from the repository root (about a minute per run; one core)::

    PYTHONPATH=src:. python studies/pg_joint_power.py [--case negbinom] [--sweeps 4000]
        [--samplers exact,polyagamma,scale1.1,scale1.3] [--seeds 0]

Runs the successive-conditional simulation of ``tests/likelihoods/test_likelihood_joint.py`` (negative
binomial: ``r_j ~ Gamma(2, 2)``, so ``b = y + r`` sits in 0.3-8, the range where
``polyagamma``'s default was biased) with the weight update's ``draw_pg`` replaced by

* ``exact``: this library's sampler;
* ``polyagamma``: ``polyagamma`` 2.0.2's default method (what ``draw_pg`` used before);
* ``scaleS``: the exact draw times ``S`` (mean off by ``S - 1``, variance by ``S^2 - 1``),

and prints each test function's batch-means Z-score against its prior expectation: the test
fails a run when any ``|Z| > 4``.

A one-off study (``studies/``, not maintained): its result and command are in
docs/record/polya_gamma.md.
"""

from __future__ import annotations

import argparse

import numpy as np
from tests import test_likelihood_joint as joint

from ibp_rflvm.likelihoods import polya_gamma
from ibp_rflvm.summaries.diagnostics import batch_mean_se


def sampler(name: str):
    exact = polya_gamma.draw_pg_exact
    if name == "exact":
        return exact
    if name == "polyagamma":
        from polyagamma import random_polyagamma

        def old(rng, b, c):
            b = np.asarray(b, dtype=np.float64)
            c = np.broadcast_to(np.asarray(c, dtype=np.float64), b.shape)
            out = np.zeros(b.shape)
            pos = b > 0
            out[pos] = random_polyagamma(b[pos], c[pos], random_state=rng)
            return out

        return old
    if name.startswith("scale"):
        s = float(name[5:])
        return lambda rng, b, c: s * exact(rng, b, c)
    raise ValueError(f"unknown sampler {name!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--case", default="negbinom")
    parser.add_argument("--sweeps", type=int, default=4000)
    parser.add_argument("--samplers", default="exact,polyagamma,scale1.1,scale1.3")
    parser.add_argument("--seeds", default="0")
    args = parser.parse_args()
    expected = joint._expected(args.case.split("+")[0], True)
    print(f"{args.case}, IBP on, {args.sweeps} sweeps (300 burned); batch-means Z per test function")
    print("| sampler | seed | " + " | ".join(expected) + " | max abs Z |")
    for name in args.samplers.split(","):
        polya_gamma.draw_pg = sampler(name)
        for seed in (int(s) for s in args.seeds.split(",")):
            draws = joint._successive_conditional(args.case, True, args.sweeps, seed=seed)
            zs = []
            for key, target in expected.items():
                mean, se = batch_mean_se(draws[key])
                zs.append((mean - target) / se)
            cells = " | ".join(f"{z:+.2f}" for z in zs)
            print(f"| {name} | {seed} | {cells} | {max(abs(z) for z in zs):.2f} |", flush=True)


if __name__ == "__main__":
    main()
