"""Validation messages: the scale warning's rule, and rows and columns named as a file shows them."""

import warnings

import numpy as np
import pytest

from ibp_rflvm import IBPRFLVM, UnscaledDataWarning
from ibp_rflvm.plumbing.validation import as_data_matrix, check_counts, labelled, warn_if_unscaled


def test_raw_wine_warns_and_standardised_wine_does_not():
    from sklearn.datasets import load_wine

    Y = load_wine().data  # column root-mean-squares 0.38 to 810, not centred
    with pytest.warns(UnscaledDataWarning, match="StandardScaler"):
        IBPRFLVM(n_iter=2, n_frequencies=2, random_state=0).fit(Y)
    Z = (Y - Y.mean(axis=0)) / Y.std(axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnscaledDataWarning)
        IBPRFLVM(n_iter=2, n_frequencies=2, random_state=0).fit(Z)


def test_scale_rule_on_other_data():
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnscaledDataWarning)
        warn_if_unscaled(3.0 * rng.standard_normal((50, 4)))  # a few units: fine
        warn_if_unscaled(np.c_[rng.standard_normal((50, 2)), np.zeros(50)])  # an all-zero column
        warn_if_unscaled(rng.standard_normal((50, 2)) * [0.2, 9.0])  # both in range
        warn_if_unscaled(2.0 + 0.5 * rng.standard_normal((50, 3)))  # uncentred but near unit scale
    with pytest.warns(UnscaledDataWarning, match="4 of 4 outside 0.1..10"):
        warn_if_unscaled(0.05 * rng.standard_normal((50, 4)))  # pre-scaled to norm 1, like diabetes
    with pytest.warns(UnscaledDataWarning, match="1 of 2 outside"):
        warn_if_unscaled(np.c_[rng.standard_normal(50), 40.0 + rng.standard_normal(50)])  # uncentred


def test_labelled_messages_use_names_or_count_from_one():
    Y = np.array([[1.0, 2.0], [np.nan, np.nan], [3.0, 4.0]])
    with pytest.raises(ValueError, match=r"rows 1;"):
        as_data_matrix(Y)  # Python's own index outside the command line
    with labelled(["a", "b", "c"], ["x", "y"]), pytest.raises(ValueError, match=r"rows 'b';"):
        as_data_matrix(Y)
    with labelled(), pytest.raises(ValueError, match=r"rows 2 \(data rows and columns counted from 1\)"):
        as_data_matrix(Y)
    counts = np.array([[1.0, -1.0], [2.0, 3.0]])
    with labelled(None, ["x", "y"]), pytest.raises(ValueError, match=r"\(1, 'y'\) \(data rows"):
        check_counts(counts)
    with labelled(["a", "b"], ["x", "y"]), pytest.raises(ValueError) as err:
        check_counts(counts)
    assert "('a', 'y')" in str(err.value) and "counted from 1" not in str(err.value)
    with labelled(None, ["x", "big"]), pytest.warns(UnscaledDataWarning, match=r"column 2 \('big'\)"):
        warn_if_unscaled(np.array([[1.0, 1e4], [-1.0, 2e4]]))
