"""Validation messages: the scale warning's rule, and rows and columns named as a file shows them."""

import warnings

import numpy as np
import pandas as pd
import pytest

from ibp_rflvm import IBPRFLVM, UnscaledDataWarning
from ibp_rflvm.likelihoods.bernoulli import BernoulliLikelihood
from ibp_rflvm.plumbing.io import read_table
from ibp_rflvm.plumbing.validation import (
    as_data_matrix,
    check_counts,
    frame_labels,
    labelled,
    warn_if_unscaled,
)


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


def _frames():
    rng = np.random.default_rng(0)
    scaled = pd.DataFrame(
        rng.standard_normal((20, 3)) * [1.0, 1.0, 500.0],
        columns=["a", "b", "proline"],
        index=[f"s{i}" for i in range(20)],
    )
    binary = pd.DataFrame([[0.0, 1.0, 1.0], [1.0, 0.0, 2.0]], columns=["x", "y", "z"], index=["p", "q"])
    return scaled, binary


def test_dataframe_columns_and_rows_are_named_by_their_names():
    """Issue 63, item 7: where the user passed a DataFrame, messages name its columns (and its
    rows, by its index) as the user knows them, not by position."""
    scaled, binary = _frames()
    with frame_labels(scaled), pytest.warns(UnscaledDataWarning, match=r"\(column 'proline'\)") as rec:
        warn_if_unscaled(scaled.to_numpy())
    assert "counted from 1" not in str(rec[0].message)
    bernoulli = BernoulliLikelihood()
    with frame_labels(binary), pytest.raises(ValueError, match=r"\('q', 'z'\); the bernoulli"):
        bernoulli.validate(binary.to_numpy())
    # A default index and default columns are positions, counted from 0 as before.
    with frame_labels(binary.reset_index(drop=True)), pytest.raises(ValueError, match=r"\(1, 'z'\);"):
        bernoulli.validate(binary.to_numpy())
    with frame_labels(binary.to_numpy()), pytest.raises(ValueError, match=r"\(1, 2\);"):
        bernoulli.validate(binary.to_numpy())  # not a DataFrame: nothing changes
    # The reading of the data (fit, holdout_mask, transform) names them with no block around it.
    with_inf = scaled.copy()
    with_inf.iloc[2, 1] = np.inf
    with pytest.raises(ValueError, match=r"at \(row, column\) \('s2', 'b'\);"):
        as_data_matrix(with_inf)
    empty = scaled.assign(b=np.nan)
    with pytest.raises(ValueError, match=r"columns 'b';"):
        as_data_matrix(empty)


def test_fit_names_a_dataframes_columns_in_the_scale_warning_and_the_bernoulli_error():
    scaled, binary = _frames()
    with pytest.warns(UnscaledDataWarning, match=r"\(column 'proline'\)"):
        IBPRFLVM(n_iter=2, n_frequencies=2, random_state=0).fit(scaled)
    with pytest.raises(ValueError, match=r"\('q', 'z'\); the bernoulli"):
        IBPRFLVM("bernoulli", n_iter=2, n_frequencies=2, random_state=0).fit(binary)


def test_a_repeated_row_name_is_named_with_its_lines(tmp_path):
    """Issue 63, item 7: a first column of text with a repeated value is data, not row names;
    the message says which value repeats, and where."""
    path = tmp_path / "x.csv"
    path.write_text("name,a\nr1,1\nr2,2\nr1,3\nr2,4\n")
    with pytest.raises(ValueError, match=r"'r1' is on lines 2 and 4, and 1 other value\(s\) repeat\)"):
        read_table(path)
    path.write_text("r1,1\nr2,2\nr2,3\n")  # no header: lines count from the first
    with pytest.raises(ValueError, match=r"cells differ; 'r2' is on lines 2 and 3\)"):
        read_table(path)
