"""Size of a chain's checkpoint file: multinomial IBP-RFLVM on the SMS spam counts.

The reproduction's settings (``ibp-rflvm reproduce``: 50 frequencies, the paper's sampler and
its start at 2 dimensions, 20% of the entries held out, burn-in the first half of 100 sweeps),
run for a few sweeps only: the file holds a fixed part (state, running sums) and a part that
grows by one kept sample per sweep after burn-in, so two short runs give both, and the size
at the end of a 100-sweep chain (50 kept samples) follows.

Run from the repository root, e.g.::

    IBP_RFLVM_DATA=../shared/datasets OPENBLAS_NUM_THREADS=1 PYTHONPATH=src \
        .venv/bin/python benchmarks/checkpoint_size.py

Works with any version of the library that has ``checkpoint_path`` (to compare formats, point
PYTHONPATH at another checkout).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from ibp_rflvm import IBPRFLVM, holdout_mask
from ibp_rflvm.datasets import load


def checkpoint_bytes(Y, n_iter: int, burn_in: int, folder: Path, seed: int) -> tuple[int, float, float]:
    path = folder / f"spam_{n_iter}_{burn_in}.ckpt"
    est = IBPRFLVM(
        likelihood="multinomial", n_frequencies=50, n_iter=n_iter, burn_in=burn_in, init_dims=2,
        sampler="paper", random_state=seed, checkpoint_path=str(path), checkpoint_every=n_iter,
    )  # fmt: skip
    t0 = time.perf_counter()
    est.fit(Y)
    fit_s = time.perf_counter() - t0
    # Time one resume of the finished chain: reading the file is all it does.
    t0 = time.perf_counter()
    est.fit(Y, resume=True)
    load_s = time.perf_counter() - t0
    return path.stat().st_size, fit_s, load_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--burn-in", type=int, default=3)
    parser.add_argument("--kept", type=int, nargs=2, default=(1, 3), help="kept samples of the two runs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--final-kept", type=int, default=50, help="kept samples to extrapolate to")
    args = parser.parse_args()
    Y = load("spam").data
    Y_train = holdout_mask(Y, 0.2, random_state=0)[0]
    print(f"spam {Y.shape[0]} x {Y.shape[1]}, multinomial, 50 frequencies, paper sampler")
    sizes = []
    with tempfile.TemporaryDirectory() as tmp:
        for kept in args.kept:
            n_iter = args.burn_in + kept
            size, fit_s, load_s = checkpoint_bytes(Y_train, n_iter, args.burn_in, Path(tmp), args.seed)
            sizes.append(size)
            print(f"{n_iter} sweeps, {kept} kept: {size / 1e6:.2f} MB", end=" ")
            print(f"(fit {fit_s:.1f} s, resume {load_s:.2f} s)")
    per_sample = (sizes[1] - sizes[0]) / (args.kept[1] - args.kept[0])
    fixed = sizes[0] - per_sample * args.kept[0]
    final = fixed + per_sample * args.final_kept
    print(f"fixed part {fixed / 1e6:.2f} MB, per kept sample {per_sample / 1e6:.3f} MB")
    print(f"at {args.final_kept} kept samples: {final / 1e6:.1f} MB")


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    main()
