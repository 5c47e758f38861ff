"""Seconds per L-BFGS-B iteration of the Bayesian GPLVM baseline, with 20% of entries missing.

Run by hand: ``python benchmarks/bench_gplvm.py [--iters N] [--gpy] [--threads]``. Two shapes:
Olivetti (400 x 4096) and mice protein (1080 x 77), real files when ``IBP_RFLVM_DATA`` points
at the data sets, otherwise synthetic matrices of the same size drawn from a sparse RFLVM
(``bench_sweep.synthetic``). Q = 2 latent dimensions, M = 50 inducing inputs, 20% of the
entries held out (unobserved) with ``holdout_mask``.

Reported per shape: wall and CPU seconds per optimiser iteration of one ``fit`` (which includes
setup and the final predictive, so slightly pessimistic), and the median seconds per objective
+ gradient evaluation (L-BFGS-B spends one to a few evaluations per iteration). ``--threads``
also times an evaluation with BLAS unrestricted, to show what the fit's single-thread limit
costs; ``--gpy`` times GPy's missing-data model for 5 iterations on the smaller shape.
``--profile Q`` instead profiles three evaluations on the Olivetti shape with ``Q`` latent
dimensions (the reproduction's GPLVM gets ``Q`` = the IBP-RFLVM's ``K+``, 50 on Olivetti) and
prints the functions that take the time.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from bench_sweep import synthetic
from ibp_rflvm.baselines import gplvm, gplvm_bound
from ibp_rflvm.datasets.holdout import holdout_mask

Q = 2
M = 50


def dataset(name: str, shape: tuple[int, int], seed: int) -> tuple[np.ndarray, str]:
    if os.environ.get("IBP_RFLVM_DATA"):
        from ibp_rflvm.datasets import load

        Y = load(name).data
        label = f"{name} {Y.shape[0]} x {Y.shape[1]} (real file)"
    else:
        Y = synthetic(*shape, seed=seed)
        label = f"{shape[0]} x {shape[1]} synthetic ({name}-shaped; IBP_RFLVM_DATA not set)"
    Y_train, _ = holdout_mask(Y, 0.2, random_state=seed)
    return Y_train, label


def _objective(Y: np.ndarray, q: int):
    """The bound's data constants and a starting parameter vector with `q` latent dimensions."""
    Yn, _, _ = gplvm.standardise(Y)
    obs = gplvm_bound.observed_data(Yn)
    rng = np.random.default_rng(0)
    N = Y.shape[0]
    theta = gplvm.pack_theta(
        rng.standard_normal((N, q)),
        rng.uniform(0.0, 0.1, (N, q)),
        rng.standard_normal((M, q)),
        1.0,
        np.ones(q),
        0.1,
    )
    return theta, obs


def time_evaluations(Y: np.ndarray, repeats: int = 3, blas_threads: int | None = 1) -> float:
    """Median wall seconds of one objective + gradient evaluation at the initial values."""
    theta, obs = _objective(Y, Q)
    times = []
    with threadpool_limits(limits=blas_threads, user_api="blas"):
        for _ in range(repeats):
            start = time.perf_counter()
            gplvm.negative_elbo(theta, obs, M, Q)
            times.append(time.perf_counter() - start)
    return float(np.median(times))


def profile_evaluations(Y: np.ndarray, q: int, repeats: int = 3) -> None:
    """CPU seconds per evaluation with `q` latent dimensions, and cProfile's top functions."""
    import cProfile
    import pstats

    theta, obs = _objective(Y, q)
    with threadpool_limits(limits=1, user_api="blas"):
        gplvm.negative_elbo(theta, obs, M, q)  # warm the index caches
        cpu = time.process_time()
        for _ in range(repeats):
            gplvm.negative_elbo(theta, obs, M, q)
        print(f"  Q = {q}: {(time.process_time() - cpu) / repeats:.3f} CPU s per evaluation", flush=True)
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(repeats):
            gplvm.negative_elbo(theta, obs, M, q)
        profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(10)


def time_fit(Y: np.ndarray, iters: int) -> tuple[float, float, int]:
    """Wall and CPU seconds of one fit, and the iterations it used."""
    model = gplvm.BayesianGPLVM(n_components=Q, num_inducing=M, max_iters=iters, random_state=0)
    wall, cpu = time.perf_counter(), time.process_time()
    model.fit(Y)
    return time.perf_counter() - wall, time.process_time() - cpu, model.n_iter_


def time_gpy(Y: np.ndarray, iters: int = 5) -> tuple[float, int]:
    """Wall seconds of `iters` GPy L-BFGS-B iterations and the function evaluations used."""
    import GPy
    from GPy.models.bayesian_gplvm_minibatch import BayesianGPLVMMiniBatch

    Yn, _, _ = gplvm.standardise(Y)
    rng = np.random.default_rng(0)
    X0 = rng.standard_normal((Y.shape[0], Q))
    with threadpool_limits(limits=1, user_api="blas"), warnings.catch_warnings():
        warnings.simplefilter("ignore", category=DeprecationWarning)
        model = BayesianGPLVMMiniBatch(
            Yn,
            Q,
            X=X0,
            X_variance=rng.uniform(0.0, 0.1, X0.shape),
            Z=X0[rng.choice(X0.shape[0], M, replace=False)].copy(),
            num_inducing=M,
            kernel=GPy.kern.RBF(Q, ARD=True),
            missing_data=True,
        )
        start = time.perf_counter()
        model.optimize(max_iters=iters, messages=False)
        wall = time.perf_counter() - start
    # GPy's optimize returns nothing; paramz keeps the optimiser run on the model.
    return wall, int(model.optimization_runs[-1].funct_eval)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iters", type=int, default=50, help="L-BFGS-B iterations per fit (default 50)")
    parser.add_argument("--gpy", action="store_true", help="also time GPy for 5 iterations on mice")
    parser.add_argument("--threads", action="store_true", help="also time evaluations with BLAS unrestricted")
    parser.add_argument("--profile", type=int, metavar="Q", help="profile Olivetti evaluations with Q dims")
    args = parser.parse_args()
    if args.profile:
        Y, label = dataset("olivetti", (400, 4096), 1)
        print(f"data: {label}, M = {M}, 20% entries unobserved, one BLAS thread", flush=True)
        profile_evaluations(Y, args.profile)
        return
    print(
        f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cores, "
        f"Q = {Q}, M = {M}, 20% entries unobserved, one fit of max_iters = {args.iters}"
    )
    cases = (("olivetti", (400, 4096), 1), ("mice", (1080, 77), 2))
    for name, shape, seed in cases:
        Y, label = dataset(name, shape, seed)
        print(f"data: {label}", flush=True)
        per_eval = time_evaluations(Y)
        wall, cpu, nit = time_fit(Y, args.iters)
        print(
            f"  fit: {wall:.1f} s wall, {cpu:.1f} s CPU, {nit} iterations -> {wall / max(nit, 1):.3f} s/iter "
            f"({cpu / max(nit, 1):.3f} CPU s/iter); one evaluation {per_eval:.3f} s",
            flush=True,
        )
        if args.threads:
            unrestricted = time_evaluations(Y, blas_threads=None)
            print(f"  one evaluation with BLAS unrestricted: {unrestricted:.3f} s", flush=True)
        if args.gpy and name == "mice":
            gwall, nfev = time_gpy(Y)
            print(f"  GPy missing_data, 5 iterations: {gwall:.1f} s wall, {nfev} evaluations", flush=True)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
