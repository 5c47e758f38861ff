"""No loop of the device step spins on a NaN or infinite state, and the driver names the row
and column (issue 53). The checks run in a subprocess under a timeout: a loop that never ends
fails the test instead of hanging the suite."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("jax")

PROGRAM = Path(__file__).with_name("nonfinite_program.py")


@pytest.fixture(scope="module")
def results():
    src = Path(__file__).resolve().parents[2] / "src"
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1",
           "PYTHONPATH": f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}  # fmt: skip
    try:
        out = subprocess.run(
            [sys.executable, str(PROGRAM)], env=env, capture_output=True, text=True, timeout=300
        )
    except subprocess.TimeoutExpired as err:
        pytest.fail(f"a device loop did not end on a non-finite input; output so far:\n{err.stdout}")
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.splitlines()[-1])


@pytest.mark.parametrize("which", ["ess", "ess_rows"])
def test_slice_sampler_stops_on_a_nan_unit_and_moves_the_others(results, which):
    assert results[which]["ll_nan"] == [3]  # the unit that cannot be scored, and only it
    assert results[which]["moved"] == 199  # every other unit took a new point


def test_polya_gamma_and_crt_loops_give_nan_for_nan_input(results):
    assert math.isnan(results["series"][0]) and math.isnan(results["series"][2])
    assert results["series"][1] > 0.0
    assert math.isnan(results["exact"][0]) and results["exact"][1] > 0.0
    assert math.isnan(results["pg"][0]) and math.isnan(results["pg"][2]) and results["pg"][1] > 0.0
    assert math.isnan(results["crt"][0]) and math.isnan(results["crt"][2])
    assert 1.0 <= results["crt"][1] <= 3.0  # tables of the finite column: between 1 and its 3 customers


def test_driver_names_the_row_of_a_nan_position(results):
    assert results["x_row"].startswith("backend='jax': the log-likelihood is not finite at row 7,")


def test_driver_names_the_column_of_a_nan_dispersion(results):
    assert "column(s) [4]" in results["r_column"]


def test_device_counts_the_proposals_as_the_host_does(results):
    # 40 rows propose a joint flip in each of the start's 3 active columns.
    assert results["counts"]["flips_proposed"] == 40 * 3
    assert 0 <= results["counts"]["singletons"] <= results["counts"]["singletons_proposed"] <= 40
