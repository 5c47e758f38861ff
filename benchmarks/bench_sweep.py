"""Seconds per MCMC sweep of the Gaussian IBP-RFLVM and dense RFLVM.

Run by ``make bench``, or ``python benchmarks/bench_sweep.py [--quick]``; the current figures are
in BENCHMARKS.md, earlier ones in docs/record/benchmarks-history.md. Each case times whole
sweeps after a warm-up sweep (which also compiles the kernels), with BLAS limited to one thread
as ``fit`` does. Both models start from 2 dimensions, so the IBP's ``K+`` stays small: the
seconds of a default fit, which starts from 12, are ``bench_moves.py``'s.
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
from threadpoolctl import threadpool_limits

from ibp_rflvm import model
from ibp_rflvm.features import feature_map
from ibp_rflvm.likelihoods import make_likelihood
from ibp_rflvm.priors import IndianBuffet


def breast_cancer() -> np.ndarray:
    from sklearn.datasets import load_breast_cancer

    Y = load_breast_cancer().data
    return (Y - Y.mean(axis=0)) / Y.std(axis=0)


def olivetti_like() -> tuple[np.ndarray, str]:
    try:
        from ibp_rflvm.datasets import load

        return load("olivetti").data, "olivetti (real file)"
    except Exception:  # no data files here: same size, synthetic
        return synthetic(400, 4096, seed=1), "400 x 4096 synthetic (olivetti file not found)"


def synthetic(n: int, j: int, seed: int = 0, k: int = 3, m: int = 30) -> np.ndarray:
    """Data drawn from a sparse RFLVM: useful sizes without any file."""
    rng = np.random.default_rng(seed)
    H = rng.standard_normal((n, k)) * (rng.random((n, k)) < 0.6)
    Phi = feature_map(H, rng.standard_normal((m, k)))
    Y = Phi @ rng.standard_normal((2 * m, j)) + 0.3 * rng.standard_normal((n, j))
    return (Y - Y.mean(axis=0)) / Y.std(axis=0)


def time_sweeps(
    Y: np.ndarray, ibp_on: bool, n_sweeps: int, seed: int = 0, n_dims: int = 2, likelihood: str = "gaussian",
    frequency_update: str = "ess",
) -> tuple[float, float, int, dict]:
    """Median wall and CPU seconds per sweep, final K+ and the last sweep's info.

    CPU seconds show the code's own cost when other work shares the cores (wall > CPU).
    """
    rng = np.random.default_rng(seed)
    Y = Y.copy()
    Y[rng.random(Y.shape) < 0.2] = np.nan  # the evaluation protocol's 20% hold-out
    lik = make_likelihood(likelihood)
    data = model.Data.from_array(Y, lik)
    spec = model.ModelSpec(
        n_frequencies=50, z_prior=IndianBuffet() if ibp_on else None, n_dims=n_dims, bias=lik.default_bias,
        likelihood=lik, frequency_update=frequency_update,
    )
    with threadpool_limits(limits=1, user_api="blas"):
        state = model.init_state(rng, data, spec)
        state, _ = model.sweep(rng, state, data, spec)  # warm-up and compilation
        wall, cpu = [], []
        for _ in range(n_sweeps):
            t0, c0 = time.perf_counter(), time.process_time()
            state, info = model.sweep(rng, state, data, spec)
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    return float(np.median(wall)), float(np.median(cpu)), state.k_plus, info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer sweeps per case")
    parser.add_argument("--frequency-update", choices=["ess", "mh"], default="ess",
                        help="ess (the default sampler's) or mh (the paper's step)")  # fmt: skip
    args = parser.parse_args()
    reps = 3 if args.quick else 10
    oli, oli_name = olivetti_like()
    cases = [
        ("breast cancer 569 x 30", breast_cancer(), reps * 2),
        (oli_name, oli, max(2, reps // 3)),
        ("synthetic N=1,000 x 50", synthetic(1000, 50), reps),
        ("synthetic N=10,000 x 50", synthetic(10000, 50), max(2, reps // 3)),
    ]
    print(
        f"python {platform.python_version()}, {platform.machine()}, M = 50 frequencies, "
        f"20% entries unobserved, frequencies by {args.frequency_update}"
    )
    print(f"{'data':<45} {'model':<10} {'s/sweep':>9} {'K+':>4}")
    results = {}
    for name, Y, n in cases:
        for label, ibp_on in (("IBP-RFLVM", True), ("RFLVM", False)):
            sec, _, k, _ = time_sweeps(Y, ibp_on, n, frequency_update=args.frequency_update)
            results[(name, label)] = sec
            print(f"{name:<45} {label:<10} {sec:>9.4f} {k:>4}", flush=True)
    for label in ("IBP-RFLVM", "RFLVM"):
        ratio = results[(cases[3][0], label)] / results[(cases[2][0], label)]
        print(f"{label}: sweep time ratio N=10,000 / N=1,000 = {ratio:.1f} (linear would be 10)")


if __name__ == "__main__":
    main()
