"""Seconds per sweep of the NB sweep on ``backend="jax"`` against ``backend="numba"``, in one call.

Run by hand (a GPU machine, or this one's CPU)::

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_jax.py \\
        --sizes 10000x2000 100000x2000 --sweeps 5 --numba-threads 16 [--numba-sweeps 2] [--no-numba]

For each size: the data of :func:`bench_scale.simulate` (NB counts from a sparse RFLVM, about
90% zeros) and the estimator's defaults (``IBPRFLVM(likelihood="negbinom")``: ``max_dims`` 50,
M = 50, the default sampler) started from ``--init-dims`` dimensions (25: ``K+`` 20-30, as
issue 47 asks), started as ``fit`` starts them. The first sweep (which compiles) is reported
apart; the figure is the median of the next `--sweeps`, each a ``kernel.step`` (for the JAX
backend: the state crossing to the host and back each sweep, as for a kept sample). For the
JAX backend also ``s_per_sweep_run``: `--sweeps` sweeps in one device call (``kernel.run``,
as the driver runs the burn-in), the compiled programs after the first sweep and after the
last (equal: no compilation inside the fit), and on a GPU the device's peak memory and that
peak per ``N x J`` entry. The numba backend runs the same chain start on
`--numba-threads` threads (the chain is the same whatever the thread count). Everything is
printed as ``key: value`` lines, so one call measures it all; nothing is installed.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scale import simulate  # noqa: E402
from ibp_rflvm import IBPRFLVM, model  # noqa: E402
from ibp_rflvm.plumbing import blocks  # noqa: E402
from ibp_rflvm.targets import make_target  # noqa: E402


def run(
    Y: np.ndarray, backend: str, n_sweeps: int, threads: int, seed: int = 0, init_dims: int = 25,
    same_twice: bool = True,
) -> dict:
    spec = IBPRFLVM(likelihood="negbinom", random_state=seed)._spec()
    spec = replace(spec, backend=backend, n_dims=init_dims)
    rng = np.random.default_rng(seed)
    out: dict = {}
    t0 = time.perf_counter()
    data = model.Data.from_array(Y, spec.likelihood)
    with blocks.active(blocks.Blocks(n_threads=threads)):
        target = make_target(spec, data)
        kernel = model.build_sweep(spec, target)
        state = kernel.init(rng)
        out["start_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        state, _ = kernel.step(rng, state)
        out["first_sweep_s"] = time.perf_counter() - t0
        if backend == "jax":
            from ibp_rflvm.jax_backend import kernel as device

            out["compiled_after_first"] = device.compiled_count()
        times, k_plus = [], []
        for _ in range(n_sweeps):
            t0 = time.perf_counter()
            state, info = kernel.step(rng, state)
            times.append(time.perf_counter() - t0)
            k_plus.append(info.k_plus)
        if backend == "jax":
            t0 = time.perf_counter()
            state, steps = kernel.run(rng, state, n_sweeps)
            out["s_per_sweep_run"] = (time.perf_counter() - t0) / n_sweeps
            k_plus += [info.k_plus for _, info in steps]
    out["s_per_sweep_median"] = statistics.median(times)
    out["s_per_sweep_all"] = " ".join(f"{t:.3f}" for t in times)
    out["k_plus"] = " ".join(map(str, k_plus))
    if backend == "jax":
        out["compiled_after_last"] = device.compiled_count()
        out.update(_device_memory(Y.size))
        if same_twice:
            out["same_seed_same_chain"] = _same_twice(kernel, seed)
    return out


def _same_twice(kernel, seed: int) -> bool:
    """Two sweeps from the same seed, twice: the same X, Z, W and weights, bit for bit."""
    finals = []
    for _ in range(2):
        rng = np.random.default_rng(seed + 1)
        state = kernel.init(rng)
        for _ in range(2):
            state, _ = kernel.step(rng, state)
        finals.append((state.X, state.Z, state.W, state.params.beta))
    return all(np.array_equal(a, b) for a, b in zip(*finals, strict=True))


def _device_memory(entries: int) -> dict:
    from ibp_rflvm.jax_backend import jax

    dev = jax.devices()[0]
    stats = dev.memory_stats() or {}
    peak = stats.get("peak_bytes_in_use")
    if peak is None:
        return {"device_peak_bytes": "n/a (no memory_stats on this device)"}
    return {"device_peak_GiB": peak / 2**30, "device_peak_bytes_per_entry": peak / entries}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", nargs="+", default=["2000x500"], help="N x J sizes, e.g. 10000x2000")
    p.add_argument("--sweeps", type=int, default=5)
    p.add_argument("--numba-threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--numba-sweeps", type=int, default=None, help="default: --sweeps")
    p.add_argument("--no-numba", action="store_true")
    p.add_argument("--no-jax", action="store_true")
    p.add_argument("--init-dims", type=int, default=25, help="the start's dimensions (K+ 20-30 at 25)")
    p.add_argument("--no-same-twice", action="store_true", help="skip the same-seed check (large N)")
    p.add_argument("--run-length", type=int, default=None, help="sweeps per device call (default: library's)")
    a = p.parse_args()
    from ibp_rflvm.jax_backend import jax
    from ibp_rflvm.jax_backend import kernel as device

    if a.run_length is not None:
        device.RUN_LENGTH = a.run_length
    print(f"run length: {device.RUN_LENGTH} sweeps per device call")
    print(f"host: {platform.node()} {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs")
    print(f"jax: {jax.__version__} devices {jax.devices()}")
    for size in a.sizes:
        n, j = (int(v) for v in size.lower().split("x"))
        t0 = time.perf_counter()
        Y = simulate(n, j)
        made = time.perf_counter() - t0
        print(f"\n== {n} x {j} NB counts ({np.mean(Y == 0):.0%} zeros; simulated in {made:.1f} s)")
        results = {}
        if not a.no_jax:
            results["jax"] = run(Y, "jax", a.sweeps, 1, init_dims=a.init_dims, same_twice=not a.no_same_twice)
        if not a.no_numba:
            n_numba = a.numba_sweeps or a.sweeps
            results["numba"] = run(Y, "numba", n_numba, a.numba_threads, init_dims=a.init_dims)
        for backend, res in results.items():
            threads = f", {a.numba_threads} threads" if backend == "numba" else ""
            for key, value in res.items():
                text = f"{value:.4g}" if isinstance(value, float) else value
                print(f"{size} {backend}{threads} {key}: {text}")
        if len(results) == 2:
            ratio = results["numba"]["s_per_sweep_median"] / results["jax"]["s_per_sweep_median"]
            print(f"{size} speedup (numba median / jax median): {ratio:.2f}")


if __name__ == "__main__":
    main()
