"""The device step where its batched factorisations cross jaxlib's 200,000-flop threshold: M = 50
frequencies (the weights' precisions are J matrices of 101 x 101) and 30 latent slots (the
mixture's 50 matrices of 30 x 30). Run by ``test_lapack_stop.py`` in a subprocess under a
timeout; prints DONE when every call returned. ``--batched`` hands the batched calls back to
LAPACK on the CPU (the power check: on jaxlib 0.10.0-0.11.0 with two or more cores it stops).

Usage: OPENBLAS_NUM_THREADS=1 python lapack_stop_program.py [--batched] [steps=6] [scans=2]
"""

import sys
import time

import numpy as np

from ibp_rflvm.jax_backend import jax, linalg

args = [a for a in sys.argv[1:] if not a.startswith("--")]
steps, scans = (int(v) for v in (args + ["6", "2"][len(args) :]))
if "--batched" in sys.argv:
    linalg.PER_MATRIX_ON_CPU = False

from ibp_rflvm.jax_backend import sweep_kernel  # noqa: E402

Y = np.random.default_rng(0).negative_binomial(2, 0.4, size=(120, 30)).astype(float)
state, step = sweep_kernel(
    Y, likelihood="negbinom", n_frequencies=50, init_dims=25, max_dims=30, random_state=0
)
step = jax.jit(step)
scan = jax.jit(lambda s, ks: jax.lax.scan(lambda c, k: step(k, c), s, ks))
keys = jax.random.split(jax.random.key(1), steps + 3 * scans)
t0 = time.perf_counter()
for i in range(steps):
    state, info = jax.block_until_ready(step(keys[i], state))
    print(f"step {i} {time.perf_counter() - t0:.1f}s K+ {int(info.k_plus)}", flush=True)
for j in range(scans):
    state, infos = jax.block_until_ready(scan(state, keys[steps + 3 * j : steps + 3 * j + 3]))
    print(f"scan {j} {time.perf_counter() - t0:.1f}s", flush=True)
print("DONE", flush=True)
