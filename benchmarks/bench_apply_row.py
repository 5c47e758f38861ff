"""Seconds of one accepted row move of the collapsed Gaussian (``row_cache.apply_row``) on
Olivetti's cache at the start of the reproduction's RFLVM cell (L = 100, J = 4096).

Run by hand: ``python benchmarks/bench_apply_row.py`` (``IBP_RFLVM_DATA`` must point at the
data sets). Each repetition updates fresh copies of the cache, as a chain's next row would
find it; the median of 30 wall times is printed.
"""

from __future__ import annotations

import time

import numpy as np

from ibp_rflvm.evaluation.cells import build_estimator, dataset_arrays, split_for
from ibp_rflvm.evaluation.experiments import RunConfig
from ibp_rflvm.model import Data, init_state
from ibp_rflvm.targets.row_cache import apply_row, build_cache, eval_row, prepare_row, row_buffers


def main() -> None:
    cfg = RunConfig()
    Y, _, _ = dataset_arrays("olivetti", cfg.sqrt, cfg.data_home, None)
    Y_train, _, _, _ = split_for(Y, "olivetti", 0, cfg.seed)
    spec = build_estimator("rflvm", 41, 1, cfg)._spec()
    data = Data.from_array(Y_train, spec.likelihood)
    state = init_state(np.random.default_rng(1), data, spec)
    Phi = state.phi(spec.bias)
    prior = spec.likelihood.prior
    cache = build_cache(Phi, state.Y, prior)
    L, J = Phi.shape[1], state.Y.shape[1]
    phi_new, v, u, r, s, w1, w2, Qn, m2, _ = row_buffers(L, J, 41)
    prepare_row(Phi[0], cache.A, cache.P, v, r)
    a_n = prior.a0 + 0.5 * Phi.shape[0]
    const = prior.constant(Phi.shape[0], J)
    eval_row(
        Phi[1], Phi[0], v, r, state.Y[0], cache.A, cache.P, cache.Q, cache.yy, cache.state[0], a_n,
        prior.b0, const, u, s, w1, w2, Qn, m2,
    )  # fmt: skip
    times = []
    for _ in range(30):
        A, P, Q = cache.A.copy(), cache.P.copy(), cache.Q.copy()
        start = time.perf_counter()
        apply_row(state.Y[0], A, P, Q, u, v, w1, w2, Qn, m2)
        times.append(time.perf_counter() - start)
    print(f"apply_row, L = {L}, J = {J}: {np.median(times) * 1e3:.3f} ms (median of 30)")


if __name__ == "__main__":
    main()
