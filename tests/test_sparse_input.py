"""Sparse input and the explicit missing-entry mask: the same entries give the same chain."""

import numpy as np
import pytest
import scipy.sparse as sp

from ibp_rflvm import IBPRFLVM, RFLVM, holdout_mask

FAST = {"n_iter": 6, "n_frequencies": 8, "random_state": 3}


@pytest.fixture(scope="module")
def counts():
    rng = np.random.default_rng(0)
    Y = rng.negative_binomial(2, 0.6, size=(40, 15)).astype(np.float64)
    Y[rng.random(Y.shape) < 0.4] = 0.0  # sparse enough for the zeros to matter
    return Y


def _same_chain(a, b) -> None:
    np.testing.assert_array_equal(a.log_likelihood_, b.log_likelihood_)
    np.testing.assert_array_equal(a.n_active_, b.n_active_)
    np.testing.assert_array_equal(a.latent_, b.latent_)
    np.testing.assert_array_equal(a.reconstruction_, b.reconstruction_)


@pytest.mark.parametrize("fmt", [sp.csr_matrix, sp.csc_matrix, sp.csr_array])
@pytest.mark.parametrize("likelihood", ["negbinom", "poisson"])
def test_sparse_and_dense_give_bit_identical_chains(counts, fmt, likelihood):
    dense = IBPRFLVM(likelihood, **FAST).fit(counts)
    sparse = IBPRFLVM(likelihood, **FAST).fit(fmt(counts))
    _same_chain(dense, sparse)
    other = IBPRFLVM(likelihood, **{**FAST, "random_state": 4}).fit(fmt(counts))
    assert not np.array_equal(other.log_likelihood_, dense.log_likelihood_)


@pytest.mark.parametrize("fmt", ["coo", "lil", "dok", "dia", "bsr"])
def test_every_sparse_format_and_64_bit_indices_are_read_alike(counts, fmt):
    S = sp.csr_matrix(counts).asformat(fmt)
    fast = {**FAST, "n_iter": 2}
    dense = IBPRFLVM("negbinom", **fast).fit(counts)
    _same_chain(dense, IBPRFLVM("negbinom", **fast).fit(S))
    big = sp.csr_matrix(counts)
    big.indices = big.indices.astype(np.int64)
    big.indptr = big.indptr.astype(np.int64)
    _same_chain(dense, IBPRFLVM("negbinom", **fast).fit(big))


def test_explicit_mask_equals_nan_marking(counts):
    rng = np.random.default_rng(1)
    mask = rng.random(counts.shape) < 0.15
    with_nan = np.where(mask, np.nan, counts)
    by_nan = IBPRFLVM("negbinom", **FAST).fit(with_nan)
    # The masked entries may hold anything, even values the likelihood would refuse.
    garbage = np.where(mask, -7.5, counts)
    by_mask = IBPRFLVM("negbinom", **FAST).fit(garbage, missing_mask=mask)
    by_sparse_mask = IBPRFLVM("negbinom", **FAST).fit(sp.csr_matrix(counts), missing_mask=mask)
    _same_chain(by_nan, by_mask)
    _same_chain(by_nan, by_sparse_mask)
    # NaN and the mask combine: an entry is unobserved when either says so.
    half = mask & (rng.random(counts.shape) < 0.5)
    both = IBPRFLVM("negbinom", **FAST).fit(np.where(half, np.nan, counts), missing_mask=mask & ~half)
    _same_chain(by_nan, both)
    # A sparse boolean mask is the same mask.
    sparse_mask = sp.csr_matrix(mask)
    by_sparse_sparse = IBPRFLVM("negbinom", **FAST).fit(sp.csr_matrix(counts), missing_mask=sparse_mask)
    _same_chain(by_nan, by_sparse_sparse)


def test_gaussian_dense_model_takes_sparse_input_too():
    rng = np.random.default_rng(2)
    Y = rng.standard_normal((30, 6))
    Y[rng.random(Y.shape) < 0.5] = 0.0
    fast = {"n_iter": 4, "n_frequencies": 6, "random_state": 0}
    _same_chain(RFLVM(**fast).fit(Y), RFLVM(**fast).fit(sp.csc_matrix(Y)))


def test_holdout_masks_on_sparse_input_match_the_dense_split(counts):
    Y_train, Y_test = holdout_mask(counts, 0.2, random_state=5)
    train_missing, test_missing = holdout_mask(sp.csr_matrix(counts), 0.2, random_state=5, return_mask=True)
    np.testing.assert_array_equal(train_missing, np.isnan(Y_train))
    np.testing.assert_array_equal(test_missing, np.isnan(Y_test))
    # Zeros are observed, so they are held out as often as any other entry.
    held = ~test_missing
    assert abs(held.sum() - 0.2 * counts.size) <= 2
    assert np.any(held & (counts == 0))
    # Entries already missing are never held out, whichever way they are marked.
    missing = np.zeros(counts.shape, dtype=bool)
    missing[::3, 1] = True
    tr, te = holdout_mask(sp.csr_matrix(counts), 0.2, random_state=5, missing_mask=missing, return_mask=True)
    assert np.all(te[missing]) and np.all(tr[missing])
    tr_dense, te_dense = holdout_mask(np.where(missing, np.nan, counts), 0.2, random_state=5)
    np.testing.assert_array_equal(tr, np.isnan(tr_dense))
    np.testing.assert_array_equal(te, np.isnan(te_dense))
    with pytest.raises(ValueError, match="return_mask=True"):
        holdout_mask(sp.csr_matrix(counts), 0.2)


def test_scores_of_sparse_heldout_with_mask_equal_the_dense_ones(counts):
    S = sp.csr_matrix(counts)
    train_missing, test_missing = holdout_mask(S, 0.2, random_state=7, return_mask=True)
    m = IBPRFLVM("negbinom", **FAST).fit(S, missing_mask=train_missing)
    Y_test = np.where(test_missing, np.nan, counts)
    assert m.score(S, missing_mask=test_missing) == m.score(Y_test)
    assert m.log_predictive_density(S.tocsc(), missing_mask=test_missing) == m.log_predictive_density(Y_test)
    assert m.perplexity(S, missing_mask=test_missing) == m.perplexity(Y_test)
    assert m.score(counts, missing_mask=test_missing) == m.score(Y_test)
    # Without a mask every entry of a sparse matrix is scored, zeros included.
    assert m.pointwise_log_predictive(S).shape[1] == counts.size


def test_transform_and_predict_take_sparse_rows(counts):
    m = IBPRFLVM("negbinom", **FAST).fit(counts)
    rows = counts[:5]
    np.testing.assert_array_equal(m.transform(sp.csr_matrix(rows)), m.transform(rows))
    mask = np.zeros(rows.shape, dtype=bool)
    mask[0, 0] = mask[2, 3] = True
    np.testing.assert_array_equal(
        m.predict(sp.csr_matrix(rows), missing_mask=mask), m.predict(np.where(mask, np.nan, rows))
    )


@pytest.mark.parametrize(
    ("data", "mask", "message"),
    [
        (sp.csr_matrix(np.array([[1.0, -2.0], [0.0, 3.0]])), None, "negative value"),
        (sp.csr_matrix(np.array([[1.0, 2.5], [0.0, 3.0]])), None, "non-integer value"),
        (sp.csr_matrix(np.array([[1.0, np.inf], [0.0, 3.0]])), None, "infinite value"),
        (sp.csr_matrix(np.array([[1.0 + 1j, 2.0], [0.0, 3.0]])), None, "real-valued"),
        (sp.csr_matrix(np.eye(2)), np.zeros((3, 2), dtype=bool), "missing_mask has shape"),
        (np.eye(2), np.zeros((2, 3), dtype=bool), "missing_mask has shape"),
        (np.eye(2), np.zeros((2, 2)), "must be a boolean array"),
        (sp.csr_matrix(np.eye(2)), np.array([[True, True], [False, False]]), "row"),
    ],
)
def test_bad_sparse_input_or_mask_gets_a_clear_error(data, mask, message):
    with pytest.raises(ValueError, match=message):
        IBPRFLVM("negbinom", n_iter=2, n_frequencies=3).fit(data, missing_mask=mask)


def test_bad_heldout_mask_gets_a_clear_error(counts):
    m = IBPRFLVM("negbinom", n_iter=2, n_frequencies=3, random_state=0).fit(counts)
    with pytest.raises(ValueError, match="missing_mask has shape"):
        m.score(sp.csr_matrix(counts), missing_mask=np.zeros((2, 2), dtype=bool))
    with pytest.raises(ValueError, match="training shape"):
        m.score(sp.csr_matrix(counts[:5]))
