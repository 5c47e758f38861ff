"""The device step never stops on a CPU (issue 53).

jaxlib 0.10.0-0.11.0 run a batched Cholesky or triangular solve of at least 200,000 flops on
XLA's intra-op pool and wait for it there; two such calls at once can leave every worker
waiting, and the process stops at 0% CPU for good. ``lapack_stop_program.py`` runs the
project's own step (jitted, several calls) and a ``lax.scan`` of three sweeps (two calls) at a
size where the weights' and the mixture's batched factorisations cross that threshold. With
the batched calls handed back to LAPACK (``--batched``) it stopped in 5 of 5 runs on this
project's 2-core machine under jax 0.10.2 at XLA's default flags, and in 3 of 3 runs under
the suite's faster-compiling flags (conftest.py), which the test uses: the stop is the runtime's,
not the compiler's (docs/record/jax_backend.md, docs/record/test_suite.md). With the library's
:mod:`ibp_rflvm.jax_backend.linalg` it must print DONE.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("jax")

PROGRAM = Path(__file__).with_name("lapack_stop_program.py")
#: The two programs compile in about 30 s on 2 cores; a stop waits forever.
TIMEOUT_S = 420


@pytest.mark.slow
def test_device_step_and_scan_at_batched_lapack_sizes_run_to_the_end():
    src = Path(__file__).resolve().parents[2] / "src"
    path = f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": path}
    try:
        out = subprocess.run([sys.executable, str(PROGRAM), "10", "3"], env=env, capture_output=True,
                             text=True, timeout=TIMEOUT_S)  # fmt: skip
    except subprocess.TimeoutExpired as err:
        pytest.fail(f"the device step stopped (no DONE within {TIMEOUT_S} s); output so far:\n{err.stdout}")
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    assert lines[-1] == "DONE"
    assert sum(line.startswith("step ") for line in lines) == 10
    assert sum(line.startswith("scan ") for line in lines) == 3
