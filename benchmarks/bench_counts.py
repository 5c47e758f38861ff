"""Seconds per MCMC sweep of a count IBP-RFLVM and dense RFLVM on congress109.

Run by hand: ``python benchmarks/bench_counts.py [--quick] [--sweeps N] [--likelihood L]``
(``negbinom`` by default; any count likelihood of the registry). Uses the real
529 x 1000 congress109 matrix when ``IBP_RFLVM_DATA`` points at the data sets, otherwise a
synthetic count matrix of the same size and sparsity (about 91% zeros). As in
``bench_sweep.py``: M = 50 frequencies, 20% of the entries held out (unobserved), BLAS limited
to one thread as ``fit`` does, and whole sweeps timed after a warm-up sweep (which also
compiles the kernels); the median is reported.
"""

from __future__ import annotations

import argparse
import os
import platform

import numpy as np

from bench_sweep import time_sweeps
from ibp_rflvm.features import feature_map


def congress_like() -> tuple[np.ndarray, str]:
    if os.environ.get("IBP_RFLVM_DATA"):
        from ibp_rflvm.datasets import load

        return load("congress").data, "congress109 529 x 1000 (real file)"
    return synthetic_counts(529, 1000), "529 x 1000 synthetic NB counts (IBP_RFLVM_DATA not set)"


def synthetic_counts(n: int, j: int, seed: int = 0, k: int = 3, m: int = 30) -> np.ndarray:
    """Negative binomial counts from a sparse RFLVM, tuned to about 91% zeros like congress109."""
    rng = np.random.default_rng(seed)
    H = rng.standard_normal((n, k)) * (rng.random((n, k)) < 0.6)
    Phi = feature_map(H, rng.standard_normal((m, k)), bias=True)
    beta = rng.standard_normal((2 * m + 1, j))
    beta[-1] = -1.9  # intercept: about 91% zeros
    r = rng.gamma(2.0, 0.25, size=j)
    lam = rng.gamma(r, np.exp(Phi @ beta))
    return rng.poisson(lam).astype(np.float64)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="3 timed sweeps per model instead of 10")
    parser.add_argument("--sweeps", type=int, default=None, help="timed sweeps per model")
    parser.add_argument("--likelihood", default="negbinom", help="count likelihood (default negbinom)")
    args = parser.parse_args()
    n = args.sweeps or (3 if args.quick else 10)
    Y, name = congress_like()
    print(
        f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cores, "
        f"M = 50 frequencies, 20% entries unobserved, median of {n} sweeps"
    )
    print(f"data: {name}, {np.mean(Y == 0):.1%} zeros")
    # CPU seconds show the code's own cost when other work shares the cores (wall > CPU).
    print(f"{'model':<16} {'s/sweep':>9} {'cpu s/sweep':>12} {'K+':>4} {'W accepted':>11}")
    short = {"negbinom": "NB", "poisson": "Poisson", "multinomial": "Multinomial"}
    name_ = short.get(args.likelihood, args.likelihood)
    for label, ibp_on in ((f"{name_} IBP-RFLVM", True), (f"{name_} RFLVM", False)):
        sec, cpu, k, info = time_sweeps(Y, ibp_on, n, likelihood=args.likelihood)
        print(f"{label:<16} {sec:>9.3f} {cpu:>12.3f} {k:>4} {info.w_accepted:>11}", flush=True)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
