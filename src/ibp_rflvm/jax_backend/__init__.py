"""The JAX backend: the whole sweep of the factorising likelihoods as one compiled device step.

``IBPRFLVM(..., backend="jax")`` and ``RFLVM(..., backend="jax")`` choose it; the chain's
record and checkpoints are the numba backend's. Every update of the sweep runs on the device
(:mod:`.sweep`), rows in parallel given the sticks (:mod:`.ibp_device`), the rows sharded over
the devices given (:mod:`.kernel`, :mod:`.rowsum`). Shapes are fixed (the latent dimensions in
slots up to the cap), so one compiled program serves a whole fit. :func:`sweep_kernel` gives
the step to users who drive their own loop.

JAX runs in float64 here (``jax_enable_x64``): every sum that enters an acceptance ratio must be
a float64 sum. Importing this package switches that setting on for the process.
"""

from __future__ import annotations

import os

# Same seed, same chain on a GPU too: XLA's scatters and some reductions there use atomics whose
# order varies between runs unless it is asked for deterministic kernels. Read when JAX first
# starts its backend, so it must be set before any array is made (the CPU ignores it).
if "xla_gpu_deterministic_ops" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_gpu_deterministic_ops=true").strip()

try:
    import jax
except ImportError as err:  # pragma: no cover - depends on the environment
    raise ImportError(
        "backend='jax' needs JAX: pip install 'ibp-rflvm[jax]' (or jax[cuda12] for an NVIDIA GPU)"
    ) from err

jax.config.update("jax_enable_x64", True)


def __getattr__(name: str):
    # The user's kernel builder reads an estimator's parameters, so it lives with the estimators
    # a floor above this package; it is looked up by name when asked for (the one way up from
    # here), so that importing the backend never imports the estimators.
    if name == "sweep_kernel":
        import importlib

        return importlib.import_module("ibp_rflvm.estimator.device").sweep_kernel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["jax", "sweep_kernel"]
