"""Seconds per sweep and peak memory of NB IBP-RFLVM on 10,000 x 2,000 counts (about 90% zeros).

Run by hand::

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_scale.py [--rows N] [--cols J]
        [--sweeps S] [--threads T] [--likelihood gaussian] [--profile] [--chains C [--only-chains]]

The data are negative binomial counts simulated from a sparse RFLVM (3 latent dimensions,
intercept tuned to about 90% zeros). The model is the estimator's default: ``IBPRFLVM(
likelihood="negbinom")`` with ``init_dims = 12``, M = 50 frequencies and the default sampler,
started by ``model.init_state`` exactly as ``fit`` starts it; all entries observed. The first
sweep (which also compiles the kernels) is reported apart; the median of the following
`--sweeps` sweeps is the figure. Peak memory is the process's peak resident set size
(``ru_maxrss``), which includes the interpreter and compiled code (measured before the data are
made, too). `--profile` runs one more sweep under cProfile and prints the top entries by
cumulative and by own time. `--chains C` runs C chains of `--sweeps` sweeps in parallel
through the estimator and reports each worker's peak RSS. `--threads T` runs each sweep's
blocked work on T threads (``n_threads``; default 1; :mod:`ibp_rflvm.plumbing.blocks`): the chain is the
same whatever T, so wall seconds per sweep with 1 and 2 threads compare like for like. Speedups
mean something only on an otherwise idle machine: the load average is printed at both ends.
`--likelihood gaussian` times the collapsed Gaussian instead (issue 30's 10,000 x 50 figure), on
standardised data from a 3-dimensional latent through random sines with noise sd 0.3
(:func:`simulate_gaussian`); its sweep is not threaded yet, so `--threads` changes nothing there.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import platform
import pstats
import resource
import time

import numpy as np

from ibp_rflvm import IBPRFLVM, model
from ibp_rflvm.features import feature_map
from ibp_rflvm.plumbing import blocks


def peak_rss_mib() -> float:
    """This process's peak resident set size so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def simulate(n: int, j: int, seed: int = 0, k: int = 3, m: int = 30) -> np.ndarray:
    """NB counts from a sparse RFLVM; the intercept -2.2 gives about 90% zeros."""
    rng = np.random.default_rng(seed)
    H = rng.standard_normal((n, k)) * (rng.random((n, k)) < 0.6)
    Phi = feature_map(H, rng.standard_normal((m, k)), bias=True)
    beta = 0.5 * rng.standard_normal((2 * m + 1, j))
    beta[-1] = -2.2
    r = rng.gamma(2.0, 0.5, size=j)
    lam = rng.gamma(r, np.exp(Phi @ beta) / r)  # mean exp(psi), NB dispersion r_j
    return rng.poisson(lam).astype(np.float64)


def simulate_gaussian(n: int, j: int, seed: int = 0, k: int = 3) -> np.ndarray:
    """Real data with a non-linear 3-dimensional latent structure, each column standardised."""
    rng = np.random.default_rng(seed)
    H = rng.standard_normal((n, k))
    Y = np.sin(H @ rng.standard_normal((k, j))) + 0.3 * rng.standard_normal((n, j))
    return (Y - Y.mean(axis=0)) / Y.std(axis=0)


def one_chain(
    Y: np.ndarray,
    n_sweeps: int,
    profile: bool,
    seed: int = 0,
    n_threads: int = 1,
    likelihood: str = "negbinom",
) -> None:
    est = IBPRFLVM(likelihood=likelihood, random_state=seed)
    spec = est._spec()  # the estimator's defaults, so the benchmark times what fit runs
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    data = model.Data.from_array(Y, spec.likelihood)
    # As fit runs it: BLAS on one thread, the sweep's blocks on `n_threads`.
    with blocks.active(blocks.Blocks(n_threads=n_threads)):
        state = model.init_state(rng, data, spec)
        print(f"prepare + init_state: {time.perf_counter() - t0:.1f} s; peak RSS {peak_rss_mib():.0f} MiB")
        t0 = time.perf_counter()
        state, info = model.sweep(rng, state, data, spec)
        print(f"first sweep (compiles kernels): {time.perf_counter() - t0:.1f} s, K+ {state.k_plus}")
        wall, cpu = [], []
        for s in range(n_sweeps):
            t0, c0 = time.perf_counter(), time.process_time()
            state, info = model.sweep(rng, state, data, spec)
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
            msg = f"  sweep {s + 2}: {wall[-1]:.2f} s wall, {cpu[-1]:.2f} s CPU, K+ {state.k_plus}"
            print(msg, flush=True)
        print(
            f"median over {n_sweeps} sweeps: {np.median(wall):.2f} s wall, {np.median(cpu):.2f} s CPU; "
            f"peak RSS {peak_rss_mib():.0f} MiB"
        )
        if profile:
            prof = cProfile.Profile()
            prof.enable()
            state, info = model.sweep(rng, state, data, spec)
            prof.disable()
            for key in ("cumulative", "tottime"):
                out = io.StringIO()
                pstats.Stats(prof, stream=out).sort_stats(key).print_stats(18)
                print(f"--- cProfile, one sweep, by {key} ---")
                print(out.getvalue())


def chains(Y: np.ndarray, n_sweeps: int, n_chains: int, n_threads: int = 1) -> None:
    """Several chains through the estimator (joblib worker processes): each worker's peak RSS."""
    from joblib import Parallel, delayed

    def run(seed: int) -> tuple[float, float]:
        t0 = time.perf_counter()
        IBPRFLVM(likelihood="negbinom", n_iter=n_sweeps, random_state=seed, n_threads=n_threads).fit(Y)
        return time.perf_counter() - t0, peak_rss_mib()

    res = Parallel(n_jobs=n_chains)(delayed(run)(s) for s in range(n_chains))
    for c, (sec, rss) in enumerate(res):
        print(f"chain {c}: {n_sweeps} sweeps in {sec:.0f} s, worker peak RSS {rss:.0f} MiB")
    print(f"parent peak RSS {peak_rss_mib():.0f} MiB (holds the data once)")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--cols", type=int, default=2_000)
    parser.add_argument("--sweeps", type=int, default=3, help="timed sweeps after the first")
    parser.add_argument("--threads", type=int, default=1, help="threads per chain (n_threads)")
    parser.add_argument("--likelihood", choices=("negbinom", "gaussian"), default="negbinom")
    parser.add_argument("--profile", action="store_true", help="profile one more sweep")
    parser.add_argument("--chains", type=int, default=0, help="also run this many chains in parallel")
    parser.add_argument("--only-chains", action="store_true", help="skip the single-chain timing")
    args = parser.parse_args()
    print(
        f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.2f} at the start; {args.threads} thread(s) per chain"
    )
    print(f"peak RSS before the data: {peak_rss_mib():.0f} MiB")
    if args.likelihood == "gaussian":
        Y = simulate_gaussian(args.rows, args.cols)
        print(f"data: {args.rows} x {args.cols} simulated real data, standardised")
    else:
        Y = simulate(args.rows, args.cols)
        zeros = np.mean(Y == 0)
        print(f"data: {args.rows} x {args.cols} simulated NB counts, {zeros:.1%} zeros, max {Y.max():.0f}")
    if not args.only_chains:
        one_chain(Y, args.sweeps, args.profile, n_threads=args.threads, likelihood=args.likelihood)
    if args.chains:
        chains(Y, args.sweeps, args.chains, n_threads=args.threads)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
