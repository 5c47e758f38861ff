"""Seconds per ``draw_pg`` call on a negative binomial model's shapes: exact sampler vs ``polyagamma``.

Run by hand from the repository root::

    PYTHONPATH=src:benchmarks python benchmarks/bench_pg.py [--rows 10000] [--cols 2000] [--reps 3]

The shapes are those of one weight update of the NB likelihood on the simulated counts of
``bench_scale.py`` (10,000 x 2,000 by default, about 90% zeros): ``b = y + r_j`` with
``r_j ~ Gamma(2, 0.5)`` (mean 1, most between 0.1 and 3: the range where ``polyagamma``'s default
was biased) and ``c = log((y + 0.5) / r_j)``, the log-odds a fitted model puts near such counts.
The two samplers run alternately in one process (``--reps`` times each), so they share the
machine's load; the medians and their ratio are printed. ``polyagamma`` is called as ``draw_pg``
called it before issue 29 (entries with ``b = 0`` excluded; none here).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from polyagamma import random_polyagamma

from bench_scale import simulate
from ibp_rflvm.likelihoods.polya_gamma import draw_pg


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--cols", type=int, default=2_000)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    Y = simulate(args.rows, args.cols)
    rng = np.random.default_rng(1)
    r = rng.gamma(2.0, 0.5, size=Y.shape[1])
    b = Y + r[None, :]
    c = np.log((Y + 0.5) / r[None, :])
    zeros = np.mean(Y == 0)
    print(f"{Y.shape[0]} x {Y.shape[1]} NB shapes: {zeros:.1%} zeros, b from {b.min():.3f} to {b.max():.1f}")
    draw_pg(rng, b[:2, :2], c[:2, :2])  # compile
    new, old = [], []
    for _ in range(args.reps):
        t0 = time.process_time()
        draw_pg(rng, b, c)
        new.append(time.process_time() - t0)
        t0 = time.process_time()
        random_polyagamma(b.ravel(), c.ravel(), random_state=rng)
        old.append(time.process_time() - t0)
        print(f"  exact {new[-1]:.2f} s CPU, polyagamma {old[-1]:.2f} s CPU", flush=True)
    ratio = np.median(np.array(new) / np.array(old))
    n = b.size
    print(
        f"median CPU s per call: exact {np.median(new):.2f} ({np.median(new) / n * 1e9:.0f} ns/draw), "
        f"polyagamma {np.median(old):.2f} ({np.median(old) / n * 1e9:.0f} ns/draw); paired ratio {ratio:.2f}"
    )


if __name__ == "__main__":
    main()
