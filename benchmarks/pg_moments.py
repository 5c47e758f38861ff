"""Moments of ``draw_pg`` over the full grid of issue 29, at the issue's 2 million draws per cell.

Run by hand (several minutes; one core)::

    PYTHONPATH=src python benchmarks/pg_moments.py [--draws 2000000] [--old] [--b 12,30,80,300]

For every ``b`` in {0.005, 0.05, 0.5, 1, 1.5, 2.5, 3.5, 6, 12, 30, 80, 300} and ``c`` in
{0, 0.1, 1, 4, 10} it prints the Z-scores of the sample mean, variance and third central
moment against the exact cumulants (``kappa_n = b (n-1)! sum_k d_k^-n``,
``d_k = 2 pi^2 (k - 1/2)^2 + c^2 / 2``), the relative errors of mean and variance, the cost per
draw, and how many draws put a 0.5% error of the mean at 4.5 standard errors
(``(4.5 sd / (0.005 mean))^2``). ``--old`` adds the same columns for ``polyagamma``'s default
method (the sampler ``draw_pg`` used before issue 29) on the same grid.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from ibp_rflvm.likelihoods.polya_gamma import draw_pg

B_GRID = (0.005, 0.05, 0.5, 1.0, 1.5, 2.5, 3.5, 6.0, 12.0, 30.0, 80.0, 300.0)
C_GRID = (0.0, 0.1, 1.0, 4.0, 10.0)


def cumulants(b: float, c: float, terms: int = 2_000_000) -> list[float]:
    k = np.arange(1, terms + 1, dtype=np.float64)
    d = 2.0 * math.pi**2 * (k - 0.5) ** 2 + 0.5 * c * c
    out = [b * math.factorial(n - 1) * float(np.sum(d**-n)) for n in (1, 2, 3, 4)]
    out[0] += b / (2.0 * math.pi**2 * terms)  # the first sum's remainder beyond `terms`
    return out


def scores(x: np.ndarray, b: float, c: float) -> tuple[float, ...]:
    """Z of mean, variance, third central moment; relative errors of mean and variance."""
    n = x.size
    k1, k2, k3, k4 = cumulants(b, c)
    dx = x - x.mean()
    var = float(np.mean(dx * dx))
    m3 = float(np.mean(dx**3))
    z_mean = (x.mean() - k1) / math.sqrt(k2 / n)
    z_var = (var - k2) / math.sqrt((k4 + 2.0 * k2 * k2) / n)
    z_m3 = (m3 - k3) / (float(np.std(dx**3)) / math.sqrt(n))
    return z_mean, z_var, z_m3, x.mean() / k1 - 1.0, var / k2 - 1.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--draws", type=int, default=2_000_000)
    parser.add_argument("--old", action="store_true", help="also polyagamma's default method")
    parser.add_argument("--b", default=None, help="comma-separated shapes of the grid to run (default all)")
    args = parser.parse_args()
    n = args.draws
    rng = np.random.default_rng(2029)
    draw_pg(rng, np.ones(4), np.zeros(4))  # compile
    samplers = [("new", lambda b, c: draw_pg(rng, np.full(n, b), np.full(n, c)))]
    if args.old:
        from polyagamma import random_polyagamma

        samplers.append(("polyagamma", lambda b, c: random_polyagamma(b, c, size=n, random_state=rng)))
    print(f"{n} draws per cell; Z = (estimate - exact) / SE")
    head = "| b | c | draws for 0.5% of the mean |"
    for name, _ in samplers:
        head += f" {name}: Z mean, Z var, Z m3 | {name}: mean, var rel. error | {name} ns/draw |"
    print(head)
    worst = {name: 0.0 for name, _ in samplers}
    shapes = B_GRID if args.b is None else tuple(float(v) for v in args.b.split(","))
    for b in shapes:
        for c in C_GRID:
            k1, k2, _, _ = cumulants(b, c)
            need = (4.5 * math.sqrt(k2) / (0.005 * k1)) ** 2
            row = f"| {b:g} | {c:g} | {need:.3g} |"
            for name, draw in samplers:
                t0 = time.perf_counter()
                x = draw(b, c)
                ns = (time.perf_counter() - t0) / n * 1e9
                zm, zv, z3, em, ev = scores(x, b, c)
                worst[name] = max(worst[name], abs(zm), abs(zv), abs(z3))
                row += f" {zm:+.1f}, {zv:+.1f}, {z3:+.1f} | {em:+.2%}, {ev:+.2%} | {ns:.0f} |"
            print(row, flush=True)
    for name, w in worst.items():
        print(f"{name}: largest |Z| over the grid {w:.2f}")


if __name__ == "__main__":
    main()
