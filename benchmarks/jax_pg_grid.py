"""The JAX Polya-gamma draws on whatever device JAX sees: the moment grid and the draws' speed.

Run by hand (a GPU machine needs nothing beyond JAX, NumPy and SciPy; no pytest)::

    PYTHONPATH=src python benchmarks/jax_pg_grid.py [--draws 40000] [--speed 10000x2000]

The grid is the test suite's (``tests/jax_backend/test_pg_jax.py``): each shape ``b`` and tilt
``c``, the z-scores of the sample mean and variance of `--draws` draws against the exact
cumulants; ``|z| < 4.5`` in all 168 statistics is what an exact sampler gives with probability
about 0.999 once the statistics are near normal. At the smallest shapes (``b = 0.001``) the
sample variance is very skewed, and below the default 40,000 draws its z-score has heavier tails
than a normal one (20,000 draws gave 4.59 there once on the CPU, 40,000 at most 3.07); use at
least the default. Then the seconds of one jitted call of ``draw_pg`` on an array of NB-like shapes
(``b = y + 1``, ``y ~ Poisson(3)``, ``c ~ N(0, 2)``) of the `--speed` size, median of 3 after
the compiling call.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import numpy as np

from ibp_rflvm.jax_backend import jax
from ibp_rflvm.jax_backend.polya_gamma import draw_pg
from ibp_rflvm.likelihoods.pg_draws import pg_mean, pg_var

B_GRID = (0.001, 0.005, 0.05, 0.5, 1.0, 1.5, 2.5, 3.5, 6.0, 12.0, 30.0, 80.0, 300.0, 3000.0)
C_GRID = (0.0, 0.1, 1.0, 4.0, 10.0, 30.0)
Z_MAX = 4.5


def fourth_cumulant(b: float, c: float, terms: int = 200_000) -> float:
    """``kappa_4 = 6 b sum_k d_k^-4``, ``d_k = 2 pi^2 (k - 1/2)^2 + c^2 / 2``."""
    k = np.arange(1, terms + 1, dtype=np.float64)
    d = 2.0 * math.pi**2 * (k - 0.5) ** 2 + 0.5 * c * c
    return 6.0 * b * float(np.sum(d**-4))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--draws", type=int, default=40_000)
    p.add_argument("--speed", default="10000x2000")
    a = p.parse_args()
    print(f"jax {jax.__version__} on {jax.devices()[0]}")
    draw = jax.jit(draw_pg)
    worst, key = 0.0, jax.random.key(29)
    for b in B_GRID:
        for c in C_GRID:
            key, sub = jax.random.split(key)
            x = np.asarray(draw(sub, np.full(a.draws, b), np.full(a.draws, c)))
            k1, k2 = float(pg_mean(b, c)), float(pg_var(b, c))
            z_mean = (x.mean() - k1) / math.sqrt(k2 / x.size)
            z_var = (x.var() - k2) / math.sqrt((fourth_cumulant(b, c) + 2.0 * k2 * k2) / x.size)
            worst = max(worst, abs(z_mean), abs(z_var))
            if max(abs(z_mean), abs(z_var)) > Z_MAX:
                print(f"cell b={b} c={c}: z mean {z_mean:+.2f}, z var {z_var:+.2f}")
    print(f"moment grid: {len(B_GRID) * len(C_GRID)} cells x 2 statistics, largest |z| {worst:.2f} "
          f"({'pass' if worst <= Z_MAX else 'FAIL'} at {Z_MAX})")  # fmt: skip
    n, j = (int(v) for v in a.speed.lower().split("x"))
    rng = np.random.default_rng(0)
    b = rng.poisson(3.0, size=(n, j)) + 1.0
    c = rng.normal(0.0, 2.0, size=(n, j))
    b_dev, c_dev = jax.device_put(b), jax.device_put(c)
    times = []
    for i in range(4):
        t0 = time.perf_counter()
        draw(jax.random.key(i), b_dev, c_dev).block_until_ready()
        times.append(time.perf_counter() - t0)
    print(f"draw_pg on {n} x {j} NB-like shapes: first call {times[0]:.2f} s (compiles), "
          f"then median {statistics.median(times[1:]):.3f} s")  # fmt: skip


if __name__ == "__main__":
    main()
