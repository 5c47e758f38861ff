"""LDA baseline: agreement with the `lda` package, held-out metrics, NaN handling, input checks."""

from __future__ import annotations

import numpy as np
import pytest

from ibp_rflvm.baselines.lda import LDA, collapsed_log_joint
from ibp_rflvm.datasets.holdout import holdout_mask
from ibp_rflvm.summaries.scoring import heldout_entries, perplexity

from ..masked_checks import assert_masked_entries_unobserved, factor_data_with_frequent_column


def _simulate(rng, N, J, K, alpha, eta, mean_length=100):
    """LDA with Poisson document lengths: ``y_ij ~ Poisson(length_i p_ij)``."""
    theta = rng.dirichlet(np.full(K, alpha), size=N)
    phi = rng.dirichlet(np.full(J, eta), size=K)
    P = theta @ phi
    Y = rng.poisson(mean_length * P).astype(np.float64)
    return Y, P


def test_heldout_perplexity_beats_column_means_and_approaches_truth():
    rng = np.random.default_rng(21)
    N, J, K = 100, 50, 3
    Y, P = _simulate(rng, N, J, K, alpha=0.3, eta=0.1)
    Y_train, Y_held = holdout_mask(Y, 0.2, random_state=22)
    model = LDA(n_components=K, n_iter=200, alpha=0.3, eta=0.1, random_state=23).fit(Y_train)
    rows, cols, vals = heldout_entries(Y_held)

    # Jeffreys-smoothed word frequencies, so an unseen word does not get probability zero.
    freq = np.nansum(Y_train, axis=0) + 0.5
    base = perplexity(vals, (freq / freq.sum())[cols])
    truth = perplexity(vals, P[rows, cols])
    perp = model.perplexity(Y_held)
    # At least half of the gap between a structureless model and the generating probabilities
    # (perplexity about 20 against 14 here, far beyond the metric's sampling noise).
    assert perp < base - 0.5 * (base - truth), (perp, base, truth)

    lpd = model.log_predictive_density(Y_held)
    assert lpd == pytest.approx(-np.log(perp) * vals.sum(), rel=1e-10)
    assert model.score(Y_held) == pytest.approx(lpd / rows.size)

    S = model.n_iter - model.n_iter // 2
    assert model.theta_samples_.shape == (S, N, K)
    assert model.phi_samples_.shape == (S, K, J)
    assert model.latent_.shape == (N, K)
    np.testing.assert_allclose(model.latent_.sum(axis=1), 1.0)
    np.testing.assert_allclose(model.predict_proba().sum(axis=1), 1.0)
    assert model.topic_assignments_.size == int(np.nansum(Y_train))
    pred = model.predict()
    assert pred.shape == (N, J)
    # Observed row totals are reproduced by construction of the length estimate.
    np.testing.assert_allclose(np.where(np.isnan(Y_train), 0.0, pred).sum(axis=1), np.nansum(Y_train, axis=1))


def test_collapsed_log_joint_formula_matches_lda_package():
    lda = pytest.importorskip("lda")
    rng = np.random.default_rng(31)
    Y, _ = _simulate(rng, 30, 20, 3, alpha=0.5, eta=0.2, mean_length=40)
    ref = lda.LDA(3, n_iter=20, alpha=0.1, eta=0.01, random_state=1, refresh=10**6).fit(Y.astype(np.int64))
    ours = collapsed_log_joint(ref.ndz_, ref.nzw_, 0.1, 0.01)
    assert ours == pytest.approx(ref.loglikelihood(), rel=1e-10)


def test_stationary_log_joint_agrees_with_lda_package():
    """Both samplers target the same posterior over topic assignments, so the `lda` package's
    final log p(w, z) is a draw from the distribution our chain's trace settles into."""
    lda = pytest.importorskip("lda")
    rng = np.random.default_rng(41)
    Y, _ = _simulate(rng, 100, 50, 3, alpha=0.3, eta=0.1)
    ours = LDA(n_components=3, n_iter=300, alpha=0.1, eta=0.01, random_state=42).fit(Y)
    trace = ours.log_likelihood_[150:]
    center, spread = trace.mean(), trace.std()
    z = []
    for seed in range(5):
        ref = lda.LDA(3, n_iter=300, alpha=0.1, eta=0.01, random_state=seed, refresh=10**6)
        ref.fit(Y.astype(np.int64))
        z.append((ref.loglikelihood() - center) / spread)
    z = np.array(z)
    # Each value: beyond 4 stationary standard deviations is a ~1e-4 event. Their mean: its
    # standard deviation is about sqrt(1/5 + 1/30) ~ 0.48 (five independent draws plus the
    # uncertainty of our trace mean with ~30 effective samples), so 2.0 is over 4 of those.
    assert np.all(np.abs(z) < 4.0), z
    assert abs(z.mean()) < 2.0, z


def test_unobserved_entries_are_not_read_as_zeros():
    rng = np.random.default_rng(51)
    N, J, K, alpha, eta = 80, 30, 3, 0.5, 0.3
    theta = rng.dirichlet(np.full(K, alpha), size=N)
    phi = rng.dirichlet(np.full(J, eta), size=K)
    # Word shares: 100 expected tokens per row, scored against the shares themselves.
    Y, share, masked = factor_data_with_frequent_column(rng, N, J, theta, phi, scale=100.0)

    def masked_mean_share(Y_fit):
        m = LDA(n_components=K, n_iter=200, alpha=alpha, eta=eta, random_state=52).fit(Y_fit)
        return np.einsum("snk,skj->snj", m.theta_samples_, m.phi_samples_)[:, masked].mean(axis=1)

    assert_masked_entries_unobserved(Y, share, masked, masked_mean_share, zero_fill_ratio=0.6)


def test_same_seed_gives_identical_chain_and_different_seed_differs():
    rng = np.random.default_rng(61)
    Y, _ = _simulate(rng, 30, 20, 2, alpha=0.5, eta=0.2, mean_length=30)
    Y_train, _ = holdout_mask(Y, 0.2, random_state=1)
    a = LDA(n_components=3, n_iter=20, random_state=7).fit(Y_train)
    b = LDA(n_components=3, n_iter=20, random_state=7).fit(Y_train)
    c = LDA(n_components=3, n_iter=20, random_state=8).fit(Y_train)
    np.testing.assert_array_equal(a.theta_samples_, b.theta_samples_)
    np.testing.assert_array_equal(a.phi_samples_, b.phi_samples_)
    np.testing.assert_array_equal(a.topic_assignments_, b.topic_assignments_)
    np.testing.assert_array_equal(a.log_likelihood_, b.log_likelihood_)
    assert not np.array_equal(a.theta_samples_, c.theta_samples_)


_GOOD = np.array([[1.0, 0.0, 3.0], [2.0, 5.0, 0.0], [0.0, 1.0, 1.0]])


@pytest.mark.parametrize(
    ("Y", "message"),
    [
        (np.where(np.eye(3, dtype=bool), -1.0, _GOOD), "negative"),
        (_GOOD + 0.5, "non-integer"),
        (np.array([1.0, 2.0, 3.0]), "2-D"),
        (np.vstack([_GOOD, np.full(3, np.nan)]), "no observed entry"),
        (np.where(np.eye(3, dtype=bool), np.inf, _GOOD), "infinite"),
        (np.array([["a", "b"], ["c", "d"]]), "numeric"),
        (np.zeros((3, 3)), "no observed tokens"),
    ],
)
def test_bad_input_raises_clear_value_error(Y, message):
    with pytest.raises(ValueError, match=message):
        LDA(n_components=2, n_iter=4).fit(Y)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_components": 0}, "n_components"),
        ({"n_iter": 5, "burn_in": 7}, "burn_in"),
        ({"alpha": 0.0}, "alpha"),
        ({"eta": float("nan")}, "eta"),
    ],
)
def test_bad_parameters_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LDA(**kwargs).fit(_GOOD)


def test_heldout_matrix_checks():
    model = LDA(n_components=2, n_iter=6, random_state=0)
    with pytest.raises(RuntimeError, match="not fitted"):
        model.perplexity(_GOOD)
    model.fit(np.where(np.eye(3, dtype=bool), np.nan, _GOOD))
    with pytest.raises(ValueError, match="training shape"):
        model.log_predictive_density(_GOOD[:, :2])
    with pytest.raises(ValueError, match="non-integer"):
        model.perplexity(np.where(np.eye(3, dtype=bool), 1.5, np.nan))
