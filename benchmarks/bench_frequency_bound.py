"""The frequency update with and without its rejection bound, on the 10,000 x 2,000 NB benchmark.

Run by hand::

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src:benchmarks python benchmarks/bench_frequency_bound.py [--threads T]

Builds :mod:`bench_scale`'s data and model, runs 3 sweeps, then on that state times
``factorised.update_w`` with ``bounded=True`` and ``bounded=False`` (twice each, from copies of
the same state and seed: both must accept the same proposals), counts the exact passes the
bound let through, times the bound's products alone, and compares, for proposals shrunk towards
the current frequency by 1, 0.1, 0.02 and 0.005, the bound and its second-order part with the
exact change (:mod:`ibp_rflvm.targets.frequency_bound`).
"""

from __future__ import annotations

import argparse
import copy
import time

import numpy as np

from bench_scale import simulate
from ibp_rflvm import IBPRFLVM, model
from ibp_rflvm.features import frequency_columns
from ibp_rflvm.plumbing import blocks
from ibp_rflvm.targets import factorised_state as factorised
from ibp_rflvm.targets.frequency_bound import FrequencyBound


def _copy(fs):
    out = copy.copy(fs)
    out.psi, out.Phi, out.ll = fs.psi.copy(), fs.Phi.copy(), fs.ll.copy()
    return out


def main() -> None:
    fmt = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=fmt)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    Y = simulate(10_000, 2_000)
    spec = IBPRFLVM(likelihood="negbinom", random_state=0)._spec()
    rng = np.random.default_rng(0)
    data = model.Data.from_array(Y, spec.likelihood)
    with blocks.active(blocks.Blocks(n_threads=args.threads)):
        state = model.init_state(rng, data, spec)
        for _ in range(3):
            state, _info = model.sweep(rng, state, data, spec)
        lik, H = spec.likelihood, state.X * state.Z
        fs0 = factorised.FactorisedState(
            state.X, state.Z, state.W, spec.bias, state.params.beta, lik, state.params, data.prep
        )
        print(f"state after 3 sweeps: K+ {state.k_plus}, {args.threads} thread(s)")
        exact_passes = 0
        inner = lik.loglik_rows

        def counted(*a, **k):
            nonlocal exact_passes
            exact_passes += 1
            return inner(*a, **k)

        lik.loglik_rows = counted
        results = {}
        for bounded in (True, False, True, False):
            fs, W = _copy(fs0), state.W.copy()
            exact_passes = 0
            t0 = time.perf_counter()
            args_w = (H, W, state.zeta, state.mu, state.Sigma, fs, bounded)
            acc = factorised.update_w(np.random.default_rng(1), *args_w)
            dt = time.perf_counter() - t0
            results.setdefault(bounded, []).append(W)
            print(f"bounded={bounded}: {dt:.3f} s, accepted {acc} of 50, exact passes {exact_passes}")
        lik.loglik_rows = inner
        same = all(np.array_equal(a, b) for a, b in zip(results[True], results[False], strict=True))
        print(f"same frequencies with and without the bound: {same}")
        t0 = time.perf_counter()
        bound = FrequencyBound(fs0, state.W.shape[0])
        print(f"the bound's products alone: {time.perf_counter() - t0:.3f} s")
        M, K = state.W.shape
        chols = np.linalg.cholesky(state.Sigma)
        r = np.random.default_rng(5)
        spare = np.empty_like(fs0.psi)
        ll0 = float(np.sum(fs0.ll))
        print("m, shrink: bound B, its second-order part, exact change D")
        for m in range(0, M, 10):
            for shrink in (1.0, 0.1, 0.02, 0.005):
                k = state.zeta[m]
                prop = state.mu[k] + chols[k] @ r.standard_normal(K)
                prop = state.W[m] + shrink * (prop - state.W[m])
                D = frequency_columns(H, prop, M) - fs0.Phi[:, [m, m + M]]
                first, second, cubic = bound.terms(m, D)
                B = first - 0.5 * second + cubic
                factorised._low_rank_rows(fs0.psi, D, fs0.beta[[m, m + M]], spare)
                exact = float(np.sum(lik.loglik_rows(spare, fs0.all_rows, fs0.params, fs0.prep))) - ll0
                print(f"{m:2d}, {shrink:5.3f}: {B:12.3f} {B - cubic:12.3f} {exact:12.3f}")


if __name__ == "__main__":
    main()
