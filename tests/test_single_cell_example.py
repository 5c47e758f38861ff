"""The single-cell example on a corner of its data (skipped when scanpy's file is absent)."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture(scope="module")
def single_cell():
    sys.path.insert(0, str(EXAMPLES))
    try:
        import single_cell as module
    finally:
        sys.path.remove(str(EXAMPLES))
    try:
        module.bundled_path()
    except FileNotFoundError as err:
        pytest.skip(str(err))
    return module


def test_counts_are_recovered_as_integers(single_cell):
    counts, labels, names = single_cell.load_pbmc()
    assert counts.shape == (700, 765)
    assert np.all(counts >= 0) and np.all(counts == np.round(counts))
    assert len(names) == 10 and set(np.unique(labels)) == set(range(10))
    # Every cell has counts, so every cell gets a size factor.
    assert np.all(counts.sum(axis=1) > 0)


def test_example_runs_on_a_corner_of_the_data(single_cell, tmp_path):
    out = tmp_path / "embedding.png"
    result = single_cell.run(sweeps=3, seed=0, out=out, cells=120, genes=150)
    assert result["D"] >= 2 and out.exists()
    assert 0.0 <= result["knn_latent"] <= 1.0 and 0.0 <= result["knn_pca"] <= 1.0


def test_missing_file_is_a_clear_error(single_cell, monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(FileNotFoundError, match="--no-deps scanpy"):
        single_cell.bundled_path()
