"""Whole-dimension birth/death (reversible jump) on a chain from few dimensions (run by hand).

``python studies/whole_dimension_trial.py cambridge --proposal informed --init-dims 2 --n-iter 200``

Runs the default sweep plus one whole-dimension birth or death per sweep and prints, every 50
sweeps, ``K+``, the training log-likelihood and the whole-dimension births and deaths accepted.
With `--diagnose N`, after the run it draws N birth proposals from the final state and prints the
parts of their log acceptance ratios (docs/sampler.md, section 4).

A one-off study (``studies/``, not maintained): its result and command are in
docs/record/sampler.md.
It uses the whole-dimension moves (``ModelSpec(whole_move=...)``), measured and not adopted
and being removed from the library; it ran on commit 73e55d5 and earlier: check that commit out
to rerun it.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from threadpoolctl import threadpool_limits

from ibp_rflvm import holdout_mask, model
from ibp_rflvm.datasets import load
from ibp_rflvm.features import feature_map
from ibp_rflvm.likelihoods import gaussian
from ibp_rflvm.samplers import dp_mixture
from ibp_rflvm.samplers import whole_dimension as wd


def diagnose(rng, state, spec, n: int) -> None:
    N, K = state.Z.shape
    Phi = feature_map(state.H, state.W, spec.bias)
    cache = gaussian.build_cache(Phi, state.Y, spec.likelihood.prior)
    target = wd.CollapsedTarget(Phi.copy(), state.Y, cache, spec.likelihood.prior, spec.bias)
    prop = wd.PROPOSALS[spec.whole_move]()
    for _ in range(n):
        W_ext, _, _ = dp_mixture.add_dimension(rng, state.W, state.zeta, state.mu, state.Sigma, spec.lam0)
        curves = target.curves(state.H, state.W, W_ext[:, K])
        z, x, log_q = prop.draw(rng, curves)
        m = int(z.sum())
        if m == 0:
            continue
        log_lam = wd.log_intensity(state.alpha, N, m)
        log_x = float(np.sum(-0.5 * (math.log(2 * math.pi) + x[z == 1] ** 2)))
        d_l = target.delta(np.hstack([state.H, (x * z)[:, None]]), W_ext)
        total = log_lam + log_x - math.log(K + 1) - log_q + d_l
        print(f"m={m} log lambda={log_lam:.1f} x prior={log_x:.1f} log q={log_q:.1f} "
              f"likelihood={d_l:.1f} log ratio={total:.1f}")  # fmt: skip


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dataset")
    p.add_argument("--proposal", choices=sorted(wd.PROPOSALS), default="informed")
    p.add_argument("--init-dims", type=int, default=2)
    p.add_argument("--n-iter", type=int, default=200)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--diagnose", type=int, default=0)
    args = p.parse_args(argv)
    Y_train, _ = holdout_mask(load(args.dataset).data, fraction=0.2, random_state=0)
    data = model.Data.from_array(Y_train)
    spec = model.ModelSpec(n_dims=args.init_dims, whole_move=args.proposal)
    rng = np.random.default_rng(args.seed)
    births = deaths = 0
    with threadpool_limits(limits=1, user_api="blas"):
        state = model.init_state(rng, data, spec)
        for t in range(args.n_iter):
            state, info = model.sweep(rng, state, data, spec)
            births += info.get("whole_birth", 0)
            deaths += info.get("whole_death", 0)
            if (t + 1) % 50 == 0:
                print(f"sweep {t + 1}: K+ {state.k_plus}, loglik {state.loglik:.0f}, "
                      f"whole-dimension births {births}, deaths {deaths}", flush=True)  # fmt: skip
        if args.diagnose:
            diagnose(rng, state, spec, args.diagnose)


if __name__ == "__main__":
    main()
