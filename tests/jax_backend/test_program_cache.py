"""JAX's on-disk program cache, as ``make test`` and ``make docs`` set it, writes programs.

A size bound (``JAX_COMPILATION_CACHE_MAX_SIZE``) needs the ``filelock`` package; without it
JAX turns the cache off with no message, and every process of the suite compiled every device
program again (docs/record/test_suite.md)."""

import os
import subprocess
import sys

import pytest

pytest.importorskip("jax")

PROGRAM = """
import jax, jax.numpy as jnp
print(float(jax.jit(lambda x: jnp.sum(jnp.cos(x)))(jnp.arange(3.0))))
"""


def test_the_bounded_program_cache_writes(tmp_path):
    cache = tmp_path / "jax-cache"
    env = {
        **os.environ,
        "JAX_COMPILATION_CACHE_DIR": str(cache),
        # the Makefile's bound, or any bound: the bound is what needs filelock
        "JAX_COMPILATION_CACHE_MAX_SIZE": os.environ.get("JAX_COMPILATION_CACHE_MAX_SIZE", "1000000000"),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
    }
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    written = [p.name for p in cache.glob("*-cache")] if cache.exists() else []
    assert any(name.startswith("jit_") for name in written), f"nothing written to {cache}: {written}"
