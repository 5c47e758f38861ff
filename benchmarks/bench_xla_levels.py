"""XLA's CPU optimisation level for the test suite's device programs: compile time against run
time, at the sizes the suite's JAX tests use (docs/record/test_suite.md).

Run by hand::

    PYTHONPATH=src python benchmarks/bench_xla_levels.py --levels 0 1 2

Each level runs in its own process (XLA reads its flags once), always with the fusion emitters
off, as ``tests/conftest.py`` sets them. The process measures two things:

* an NB fit at 70 x 16, 120 sweeps, with the device agreement test's settings: the first fit
  (compile and run) and a second fit of the compiled program;
* a 10 x 2 chain of the prior check with every entry unobserved: the first step (compile), then
  seconds per sweep over 300 sweeps in one device loop (``run``) and over 300 kept sweeps taken
  one call at a time (``step``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import sys, time
import numpy as np
sys.path.insert(0, sys.argv[1])
import ibp_rflvm.jax_backend.kernel  # noqa: F401  (registers the device target)
from ibp_rflvm import IBPRFLVM, holdout_mask, model
from ibp_rflvm.likelihoods import make_likelihood
from ibp_rflvm.targets import make_target
from jax_backend.test_agreement import SWEEPS, _simulated

Y_train, _ = holdout_mask(_simulated(), fraction=0.2, random_state=0)
fit_s = []
for _ in range(2):
    t = time.perf_counter()
    IBPRFLVM(likelihood="negbinom", n_iter=SWEEPS, n_frequencies=8, init_dims=2, max_dims=12,
             random_state=100, backend="jax", frequency_update="mh").fit(Y_train)
    fit_s.append(time.perf_counter() - t)

lik, n = make_likelihood("negbinom"), 10
spec = model.ModelSpec(n_frequencies=3, fixed_alpha=2.0, likelihood=lik, max_dims=30, backend="jax")
rng = np.random.default_rng(0)
state = model.init_state(rng, model.Data.from_array(np.zeros((n, 2)), lik), spec)
kernel = model.build_sweep(spec, make_target(spec, model.Data.from_array(np.full((n, 2), np.nan), lik)))
t = time.perf_counter()
state, _ = kernel.step(rng, state)
first = time.perf_counter() - t
t = time.perf_counter()
state, _ = kernel.run(rng, state, 300)
loop_ms = (time.perf_counter() - t) / 300 * 1e3
t = time.perf_counter()
for _ in range(300):
    state, _ = kernel.step(rng, state)
step_ms = (time.perf_counter() - t) / 300 * 1e3
print(f"70x16 fit: first {fit_s[0]:.1f} s, compiled {fit_s[1]:.2f} s | 10x2 chain: first step "
      f"{first:.1f} s, {loop_ms:.2f} ms/sweep in one loop, {step_ms:.2f} ms/sweep one call each")
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    tests = str(Path(__file__).resolve().parents[1] / "tests")
    for level in args.levels:
        flags = f"--xla_backend_optimization_level={level} --xla_cpu_use_fusion_emitters=false"
        env = {**os.environ, "XLA_FLAGS": flags, "OPENBLAS_NUM_THREADS": "1"}
        done = subprocess.run([sys.executable, "-c", CHILD, tests], env=env, capture_output=True, text=True)
        line = done.stdout.strip().splitlines()[-1] if done.returncode == 0 else done.stderr[-2000:]
        print(f"level {level}: {line}", flush=True)


if __name__ == "__main__":
    main()
