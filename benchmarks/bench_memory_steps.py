"""Where a negative binomial fit's memory peaks: the peak RSS of each step of the start and of a
sweep, on the counts of ``bench_scale.py`` (Linux only).

Run by hand::

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src:benchmarks python benchmarks/bench_memory_steps.py \\
        [--rows N] [--cols J] [--sweeps S] [--fit [--threads T]]

Before each step the kernel's record of the peak resident set size is reset
(``/proc/self/clear_refs``, value 5) and after it ``VmHWM`` is read, so every row is the largest
RSS the process reached during that step, the arrays held from before included. Steps are
wrapped where ``model.py`` calls them (a step inside a wrapped step is not reported apart). One
*unit* is one ``N x J`` float64 array. The model is ``IBPRFLVM(likelihood="negbinom")`` with
its defaults, started as ``fit`` starts it, as in ``bench_scale.py``. With ``--fit`` the whole
``IBPRFLVM(likelihood="negbinom", n_iter=S).fit(Y)`` runs instead (one chain, in this process),
on `--threads` threads (default: the estimator's, all CPUs), and the process's peak RSS over
the fit and each sweep's seconds are reported besides the steps (the peak is the largest
``VmHWM`` over the steps and between them).
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from bench_scale import simulate
from ibp_rflvm import IBPRFLVM, model
from ibp_rflvm.samplers import ibp
from ibp_rflvm.targets import factorised as factorised_target
from ibp_rflvm.targets import factorised_state as factorised
from ibp_rflvm.targets.base import Work

_STATUS = Path("/proc/self/status")
_CLEAR = Path("/proc/self/clear_refs")


def _kib(field: str) -> int:
    for line in _STATUS.read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def reset_peak() -> None:
    _CLEAR.write_text("5")


def peak_mib() -> float:
    return _kib("VmHWM") / 1024.0


def rss_mib() -> float:
    return _kib("VmRSS") / 1024.0


class Steps:
    """Peak RSS of each wrapped call, by name (the largest over calls)."""

    def __init__(self, unit_mib: float):
        self.unit = unit_mib
        self.peaks: dict[str, float] = {}
        self.seconds: dict[str, float] = {}
        self.depth = 0
        self.overall = 0.0  # the process's peak: resetting the kernel's record also resets ru_maxrss

    def reset(self) -> None:
        self.overall = max(self.overall, peak_mib())
        reset_peak()

    def wrap(self, owner, name: str, label: str | None = None) -> None:
        fn = getattr(owner, name)
        label = label or name

        @functools.wraps(fn)
        def measured(*args, **kwargs):
            if self.depth:  # inside another measured step: that one's figure covers it
                return fn(*args, **kwargs)
            self.depth += 1
            self.reset()
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.depth -= 1
                self.seconds[label] = self.seconds.get(label, 0.0) + time.perf_counter() - t0
                self.peaks[label] = max(self.peaks.get(label, 0.0), peak_mib())

        setattr(owner, name, measured)

    def report(self, title: str) -> None:
        print(f"--- {title}: peak RSS during each step (MiB, units; wall s) ---")
        for label, peak in sorted(self.peaks.items(), key=lambda kv: -kv[1]):
            secs = self.seconds[label]
            print(f"  {label:32s} {peak:9.0f} MiB  {peak / self.unit:6.2f} units  {secs:7.1f} s")
        self.peaks.clear()
        self.seconds.clear()


def whole_fit(Y: np.ndarray, n_sweeps: int, steps: Steps, n_threads: int | None = None) -> None:
    times: list[float] = []
    real_sweep = model.sweep

    def timed_sweep(*args, **kwargs):
        t0, c0 = time.perf_counter(), time.process_time()
        out = real_sweep(*args, **kwargs)
        times.append(time.perf_counter() - t0)
        cpu = time.process_time() - c0
        k_plus = out[0].k_plus
        print(f"  sweep {len(times)}: {times[-1]:.1f} s wall, {cpu:.1f} s CPU, K+ {k_plus}", flush=True)
        return out

    import ibp_rflvm.chain as chain_module

    chain_module.sweep = timed_sweep
    t0 = time.perf_counter()
    kw = {"n_iter": n_sweeps, "burn_in": n_sweeps - 1, "random_state": 0, "n_threads": n_threads}
    IBPRFLVM(likelihood="negbinom", **kw).fit(Y)
    total = time.perf_counter() - t0
    peak = max(steps.overall, peak_mib())
    print(
        f"fit: {total:.0f} s wall, sweeps median {np.median(times):.1f} s; peak RSS of the process "
        f"{peak:.0f} MiB = {peak / 1024:.2f} GiB ({peak / steps.unit:.2f} units)"
    )
    steps.report("the fit (largest over its calls)")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--cols", type=int, default=2_000)
    parser.add_argument("--sweeps", type=int, default=1)
    parser.add_argument("--fit", action="store_true", help="run the estimator's whole fit")
    parser.add_argument("--threads", type=int, default=None, help="n_threads of --fit (default: all CPUs)")
    args = parser.parse_args()
    unit = 8.0 * args.rows * args.cols / 2**20
    print(
        f"python {platform.python_version()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; "
        f"{args.rows} x {args.cols}: one unit = {unit:.0f} MiB"
    )
    print(f"RSS before the data {rss_mib():.0f} MiB")
    Y = simulate(args.rows, args.cols)
    print(f"RSS with the data {rss_mib():.0f} MiB ({np.mean(Y == 0):.1%} zeros)")
    reset_peak()  # the simulation's own temporaries are not the fit's
    spec = IBPRFLVM(likelihood="negbinom", random_state=0)._spec()
    lik = type(spec.likelihood)
    steps = Steps(unit)
    steps.wrap(model, "_dimension_moves")
    # Wrapped where they are called from: the factorised target's own module.
    steps.wrap(factorised_target, "pca_start")
    steps.wrap(factorised, "features_and_predictor")
    steps.wrap(Work, "resize", "Work.resize")
    steps.wrap(factorised_target.FactorisedTarget, "loglik", "FactorisedTarget.loglik")
    steps.wrap(ibp, "gibbs_z", "ibp.gibbs_z (the Gibbs pass of Z)")
    for name in ("update_x", "update_w"):
        steps.wrap(factorised, name)
    steps.wrap(factorised, "FactorisedState", "FactorisedState (Phi, psi)")
    for name in ("prepare", "init_params", "update_params"):
        steps.wrap(lik, name, f"{lik.__name__}.{name}")
    if args.fit:
        whole_fit(Y, args.sweeps, steps, args.threads)
        return
    rng = np.random.default_rng(0)
    with threadpool_limits(limits=1, user_api="blas"):
        steps.reset()
        data = model.Data.from_array(Y, spec.likelihood)
        print(f"Data.from_array: RSS {rss_mib():.0f} MiB, peak {peak_mib():.0f} MiB")
        state = model.init_state(rng, data, spec)
        print(f"init_state: RSS after {rss_mib():.0f} MiB")
        steps.report("init_state")
        for s in range(args.sweeps):
            t0, c0 = time.perf_counter(), time.process_time()
            state, _ = model.sweep(rng, state, data, spec)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            print(f"sweep {s + 1}: {wall:.1f} s wall, {cpu:.1f} s CPU, K+ {state.k_plus}, "
                  f"RSS after {rss_mib():.0f} MiB")
            steps.report(f"sweep {s + 1}")
    peak = max(steps.overall, peak_mib())
    print(f"peak RSS of the process over the run: {peak:.0f} MiB = {peak / 1024:.2f} GiB")


if __name__ == "__main__":
    main()
