"""The JAX backend: the sweep of the factorising likelihoods on an accelerator (or the CPU).

``IBPRFLVM(..., backend="jax")`` and ``RFLVM(..., backend="jax")`` choose it. The chain's
state, its record and its checkpoints are the numba backend's; what moves to the device is the
work over all ``N x J`` entries: the feature map, the linear predictors ``psi = Phi beta``, the
row log-likelihoods, the Polya-gamma and CRT draws and the weights' Gaussian draws. Shapes are
fixed (the latent dimensions padded to a cap), so one compiled program serves a whole fit.

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

__all__ = ["jax"]
