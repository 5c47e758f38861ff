"""Rough edges a first trial met (issue 54, item 6): the baselines take masks and sparse input as
the estimators do, the hold-out masks say which is which, and messages name what to fix."""

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from numpydoc.docscrape import NumpyDocString

from ibp_rflvm import IBPRFLVM, RFLVM, holdout_mask
from ibp_rflvm.baselines import LDA, IBPLinearFactorModel
from ibp_rflvm.summaries.dimensions import weighted_posterior


def test_count_baseline_takes_sparse_counts_and_masks_like_the_nan_form():
    Y = np.random.default_rng(0).poisson(2, size=(30, 12)).astype(float)
    masks = holdout_mask(sp.csr_matrix(Y), fraction=0.2, random_state=0, return_mask=True)
    train, test = holdout_mask(Y, fraction=0.2, random_state=0)
    a = LDA(n_components=3, n_iter=10, random_state=0).fit(sp.csr_matrix(Y), missing_mask=masks.train_missing)
    b = LDA(n_components=3, n_iter=10, random_state=0).fit(train)
    assert a.perplexity(sp.csr_matrix(Y), missing_mask=masks.test_missing) == b.perplexity(test)
    assert a.score(Y, missing_mask=masks.test_missing) == b.score(test)


def test_real_baseline_takes_masks_like_the_nan_form():
    Z = np.random.default_rng(1).standard_normal((25, 5))
    masks = holdout_mask(Z, fraction=0.2, random_state=0, return_mask=True)
    train, test = holdout_mask(Z, fraction=0.2, random_state=0)
    a = IBPLinearFactorModel(n_iter=6, random_state=0).fit(Z, missing_mask=masks.train_missing)
    b = IBPLinearFactorModel(n_iter=6, random_state=0).fit(train)
    assert a.log_predictive_density(Z, missing_mask=masks.test_missing) == b.log_predictive_density(test)


def test_holdout_masks_are_named():
    masks = holdout_mask(np.ones((6, 5)), fraction=0.2, random_state=0, return_mask=True)
    train_missing, test_missing = masks  # still a pair
    assert masks.train_missing is train_missing and masks.test_missing is test_missing
    assert not (~masks.train_missing & ~masks.test_missing).any()  # no entry both trained on and scored


def test_unknown_likelihood_param_lists_the_valid_ones():
    valid = r"\['e0', 'f0', 'prior_scale', 'size_factors'\]"
    with pytest.raises(TypeError, match=r"\['nope'\].*'negbinom'.*" + valid):
        IBPRFLVM(likelihood="negbinom", likelihood_params={"nope": 1}).fit(np.ones((5, 3)))


def test_non_numeric_dataframe_column_is_named():
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0], "label": ["x", "y", "z"], "c": [1, 2, 3]})
    with pytest.raises(ValueError, match=r"column\(s\) 'label'"):
        IBPRFLVM(n_iter=2).fit(frame)


def test_one_dimensional_input_gets_a_shape_fit_accepts():
    with pytest.raises(ValueError, match=r"reshape\(-1, 1\)"):
        IBPRFLVM(n_iter=2).fit(np.arange(10.0))


def test_integer_posteriors_print_rounded():
    post = weighted_posterior(np.array([[3, 3, 4]]), np.array([1.0]))
    assert repr(post) == "{3: 0.667, 4: 0.333}" and post[3] == pytest.approx(2 / 3, abs=0)


@pytest.mark.parametrize("cls", [IBPRFLVM, RFLVM])
def test_every_fitted_attribute_is_described_in_the_docstring(cls):
    """``help(IBPRFLVM)`` in a terminal shows the docstring as written: no blank entries."""
    blank = [p.name for p in NumpyDocString(cls.__doc__)["Attributes"] if not "".join(p.desc).strip()]
    assert blank == []


@pytest.mark.parametrize("cls", [IBPRFLVM, RFLVM])
def test_embedding_entry_says_why_it_is_wider_than_the_latent(cls):
    """Issue 63, item 7: ``RFLVM(n_components=5).embedding_`` had 35 columns; the entry says why
    (the width is the kernel's, set by 90% of its trace) and what to use for n_components-wide
    coordinates."""
    entry = {p.name: " ".join(p.desc) for p in NumpyDocString(cls.__doc__)["Attributes"]}["embedding_"]
    entry = " ".join(entry.split())
    for phrase in (
        "not the latent dimension",
        "90% of the kernel's trace",
        "RFLVM(n_components=5)",
        "``latent_``",
        "first columns of ``embedding_``",
    ):
        assert phrase in entry, phrase


def test_a_fit_without_column_names_forgets_earlier_ones():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = IBPRFLVM(n_iter=2, n_frequencies=3, random_state=0)
        model.fit(pd.DataFrame(np.random.default_rng(0).standard_normal((8, 3)), columns=["a", "b", "c"]))
        assert list(model.feature_names_in_) == ["a", "b", "c"]
        model.fit(np.random.default_rng(0).standard_normal((8, 3)))
    assert not hasattr(model, "feature_names_in_")


def test_holdout_mask_of_a_dataframe_gives_dataframes_and_a_fit_keeps_the_names():
    """Issue 63, item 7: a DataFrame's split keeps its index and columns, so that the fit on
    the training table names its columns; arrays and sparse input return as before."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        rng.standard_normal((24, 4)), index=[f"r{i}" for i in range(24)], columns=["a", "b", "c", "d"]
    )
    train, test = holdout_mask(frame, fraction=0.2, random_state=0)
    array_train, array_test = holdout_mask(frame.to_numpy(), fraction=0.2, random_state=0)
    assert type(array_train) is np.ndarray and type(array_test) is np.ndarray
    for got, want in ((train, array_train), (test, array_test)):
        assert isinstance(got, pd.DataFrame) and got.dtypes.eq(np.float64).all()
        assert got.index.equals(frame.index) and got.columns.equals(frame.columns)
        np.testing.assert_array_equal(got.to_numpy(), want)  # the same draw as the array's
    masks = holdout_mask(frame, fraction=0.2, random_state=0, return_mask=True)
    assert type(masks.train_missing) is np.ndarray  # masks stay arrays
    np.testing.assert_array_equal(masks.train_missing, np.isnan(array_train))
    sparse = holdout_mask(sp.csr_matrix(frame.to_numpy()), fraction=0.2, random_state=0, return_mask=True)
    np.testing.assert_array_equal(sparse.test_missing, masks.test_missing)
    model = IBPRFLVM(n_iter=4, n_frequencies=4, random_state=0).fit(train)
    assert list(model.feature_names_in_) == ["a", "b", "c", "d"]
    assert set(model.top_columns()["column"]) <= {"a", "b", "c", "d"}
    assert np.isfinite(model.score(test))
