"""Settings of the whole suite, made before any test module imports JAX."""

import os

#: Compiling the device programs is most of the JAX tests' time on a CPU. At XLA's backend
#: optimisation level 0, with the CPU's loop-fusion emitters off (the older emitter is much
#: quicker to build), a sweep compiles in less than half the default's time and runs as fast at
#: the tests' sizes (docs/record/test_suite.md). Bits may differ from the default build; no test
#: compares a device chain with one compiled under other flags.
FAST_COMPILE = "--xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false"

if FAST_COMPILE not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {FAST_COMPILE}".strip()

#: The suite runs two workers on two cores, so a BLAS call that spreads over both only waits for
#: the other worker: a triangular solve of the Gaussian sweep took 3.9 ms with OpenBLAS's threads
#: and microseconds without (docs/record/test_suite.md). Fits already hold BLAS to one thread
#: (estimator/fitting.py); this holds the tests that call the sweep directly, and, through the
#: environment, their subprocesses. OpenMP's threads (scikit-learn's t-SNE and neighbours) are
#: held to one for the same reason; the suite's timings in the record were taken so.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

from threadpoolctl import threadpool_limits  # noqa: E402

_ONE_BLAS_THREAD = threadpool_limits(limits=1, user_api="blas")
