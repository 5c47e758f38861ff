"""Poisson factor analysis baseline: sampler correctness, held-out metrics, input handling."""

from __future__ import annotations

import numpy as np
import pytest

from ibp_rflvm.baselines.pfa import PoissonFactorAnalysis, _crt_totals, gibbs_sweep
from ibp_rflvm.datasets.holdout import holdout_mask
from ibp_rflvm.summaries.scoring import heldout_entries, perplexity, poisson_logpmf

from ..masked_checks import assert_masked_entries_unobserved, factor_data_with_frequent_column


def _simulate(rng, N, J, K, theta_shape=0.3, theta_scale=30.0, phi_conc=0.1):
    # Small gamma shape and Dirichlet concentration: rows lean on one or two distinct factors,
    # so there is real structure for a factor model to find (and a column-mean model to miss).
    theta = rng.gamma(theta_shape, theta_scale, size=(N, K))
    phi = rng.dirichlet(np.full(J, phi_conc), size=K)
    rate = theta @ phi
    return rng.poisson(rate).astype(np.float64), rate


@pytest.mark.parametrize(("m", "r"), [(40, 0.7), (3000, 0.7), (3000, 25.0)])
def test_crt_matches_closed_form_moments(m, r):
    # (40, .) exercises the Bernoulli-sum branch, (3000, .) the skip-ahead branch.
    rng = np.random.default_rng(11)
    reps = 4000
    # One row, `reps` columns: the per-column totals are independent single CRT draws.
    draws = _crt_totals(rng, np.full((1, reps), m, dtype=np.int64), np.full(reps, r))
    probs = r / (r + np.arange(m))
    mean, var = probs.sum(), (probs * (1 - probs)).sum()
    # Sample mean is within 4 standard errors; the sample variance within 4 of its own standard
    # errors (var of s^2 ~ 2 var^2 / n for a near-normal count), so failures are ~1e-4 events.
    assert abs(draws.mean() - mean) < 4 * np.sqrt(var / reps)
    assert abs(draws.var() - var) < 4 * var * np.sqrt(2.0 / reps)


def test_geweke_joint_distribution_with_missing_entries():
    """Getting it right (Geweke 2004): prior draws of (parameters, data) against a chain that
    alternates one Gibbs sweep with regenerating the observed data. Three of twelve entries are
    unobserved, so the imputation step is checked too."""
    prm = {"a_phi": 1.0, "c": 20.0, "eps": 0.5, "e0": 5.0, "f0": 5.0}
    N, J, K, n = 4, 3, 2, 20000
    missing = np.zeros((N, J), dtype=bool)
    missing[0, 0] = missing[2, 1] = missing[3, 2] = True
    obs = ~missing
    miss_i, miss_j = np.nonzero(missing)
    rng = np.random.default_rng(2024)

    def prior(size):
        r = rng.gamma(prm["e0"], 1.0 / prm["f0"], size=(size, K))
        p = rng.beta(prm["c"] * prm["eps"], prm["c"] * (1 - prm["eps"]), size=(size, K))
        theta = rng.gamma(r[:, None, :], (p / (1 - p))[:, None, :], size=(size, N, K))
        phi = rng.dirichlet(np.full(J, prm["a_phi"]), size=(size, K))
        return theta, phi, p, r

    def stats(theta, phi, p, r, Y):
        rate = np.einsum("...nk,...kj->...nj", theta, phi)
        return np.stack(
            [
                p.mean(-1),
                r.mean(-1),
                theta.mean((-2, -1)),
                phi[..., 0].mean(-1),
                (Y * obs).sum((-2, -1)),
                (Y**2 * obs).sum((-2, -1)),
                (rate * obs).sum((-2, -1)),
            ],
            axis=-1,
        )

    theta, phi, p, r = prior(n)
    Y = rng.poisson(np.einsum("snk,skj->snj", theta, phi))
    marginal = stats(theta, phi, p, r, Y)

    theta, phi, p, r = (a[0] for a in prior(1))
    Y = rng.poisson(theta @ phi)
    m_ik = np.zeros((N, K), dtype=np.int64)
    n_kj = np.zeros((K, J), dtype=np.int64)
    chain = np.empty_like(marginal)
    for s in range(n):
        nz_i, nz_j = np.nonzero(obs & (Y > 0))
        data = (nz_i, nz_j, Y[nz_i, nz_j].astype(np.int64), miss_i, miss_j)
        theta, phi, p, r = gibbs_sweep(rng, theta, phi, r, data, prm, m_ik, n_kj)
        Y = rng.poisson(theta @ phi)
        chain[s] = stats(theta, phi, p, r, Y)

    # Batch means give the chain's Monte Carlo error despite autocorrelation.
    batches = chain.reshape(50, -1, chain.shape[1]).mean(axis=1)
    se = np.sqrt(marginal.var(axis=0) / n + batches.var(axis=0, ddof=1) / batches.shape[0])
    z = (marginal.mean(axis=0) - chain.mean(axis=0)) / se
    # Seven statistics; |z| > 4 has probability ~2e-4 each under a t with 49 df.
    assert np.all(np.abs(z) < 4.0), z


def _column_mean_baseline(Y_train, rows, cols, vals):
    # Jeffreys-smoothed per-column mean rate, so a column with no training counts is not p = 0.
    obs = ~np.isnan(Y_train)
    col_rate = (np.nansum(Y_train, axis=0) + 0.5) / (obs.sum(axis=0) + 1.0)
    share = col_rate / col_rate.sum()
    return perplexity(vals, share[cols]), np.sum(poisson_logpmf(vals, np.log(col_rate[cols])))


def test_heldout_metrics_beat_column_means_and_approach_truth():
    rng = np.random.default_rng(5)
    N, J, K = 60, 40, 3
    Y, rate = _simulate(rng, N, J, K)
    Y_train, Y_held = holdout_mask(Y, 0.2, random_state=6)
    model = PoissonFactorAnalysis(n_components=K, n_iter=300, random_state=7).fit(Y_train)
    rows, cols, vals = heldout_entries(Y_held)

    base_perp, base_lpd = _column_mean_baseline(Y_train, rows, cols, vals)
    true_perp = perplexity(vals, (rate / rate.sum(axis=1, keepdims=True))[rows, cols])
    true_lpd = np.sum(poisson_logpmf(vals, np.log(rate[rows, cols])))
    perp = model.perplexity(Y_held)
    lpd = model.log_predictive_density(Y_held)
    # "Clearly better": the model closes at least half of the gap between a structureless
    # model and the generating rates, on both metrics. On these data the gap (perplexity about
    # 25 against 11) dwarfs the metric's sampling noise, so this is an effect-size requirement.
    assert perp < base_perp - 0.5 * (base_perp - true_perp), (perp, base_perp, true_perp)
    assert lpd > base_lpd + 0.5 * (true_lpd - base_lpd), (lpd, base_lpd, true_lpd)
    assert model.score(Y_held) == pytest.approx(lpd / rows.size)

    S = model.n_iter - model.n_iter // 2
    assert model.theta_samples_.shape == (S, N, K)
    assert model.phi_samples_.shape == (S, K, J)
    assert model.latent_.shape == (N, K)
    np.testing.assert_allclose(model.phi_samples_.sum(axis=2), 1.0)
    pred = model.predict()
    assert pred.shape == (N, J)
    # The posterior-mean rates track the generating rates far better than column means do.
    col_mean = np.nanmean(Y_train, axis=0)
    assert np.mean((pred - rate) ** 2) < 0.5 * np.mean((col_mean - rate) ** 2)


def test_unobserved_entries_are_not_read_as_zeros():
    rng = np.random.default_rng(8)
    N, J, K = 60, 25, 3
    theta = rng.gamma(2.0, 3.0, size=(N, K))
    phi = rng.dirichlet(np.full(J, 0.5), size=K)
    Y, rate, masked = factor_data_with_frequent_column(rng, N, J, theta, phi, scale=1.0)

    def masked_mean_rate(Y_fit):
        m = PoissonFactorAnalysis(n_components=K, n_iter=200, random_state=9).fit(Y_fit)
        return np.einsum("snk,skj->snj", m.theta_samples_, m.phi_samples_)[:, masked].mean(axis=1)

    assert_masked_entries_unobserved(Y, rate, masked, masked_mean_rate, zero_fill_ratio=0.5)


def test_same_seed_gives_identical_chain_and_different_seed_differs():
    rng = np.random.default_rng(10)
    Y, _ = _simulate(rng, 30, 15, 2)
    Y_train, _ = holdout_mask(Y, 0.2, random_state=1)
    a = PoissonFactorAnalysis(n_components=3, n_iter=30, random_state=123).fit(Y_train)
    b = PoissonFactorAnalysis(n_components=3, n_iter=30, random_state=123).fit(Y_train)
    c = PoissonFactorAnalysis(n_components=3, n_iter=30, random_state=124).fit(Y_train)
    np.testing.assert_array_equal(a.theta_samples_, b.theta_samples_)
    np.testing.assert_array_equal(a.phi_samples_, b.phi_samples_)
    np.testing.assert_array_equal(a.r_samples_, b.r_samples_)
    np.testing.assert_array_equal(a.log_likelihood_, b.log_likelihood_)
    assert not np.array_equal(a.theta_samples_, c.theta_samples_)
    # A Generator passed in is the chain's generator: same state, same chain.
    d = PoissonFactorAnalysis(n_components=3, n_iter=30, random_state=np.random.default_rng(123)).fit(Y_train)
    np.testing.assert_array_equal(a.theta_samples_, d.theta_samples_)


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
    ],
)
def test_bad_input_raises_clear_value_error(Y, message):
    with pytest.raises(ValueError, match=message):
        PoissonFactorAnalysis(n_components=2, n_iter=4).fit(Y)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_components": 0}, "n_components"),
        ({"n_iter": 10, "burn_in": 10}, "burn_in"),
        ({"a_phi": -1.0}, "a_phi"),
        ({"eps": 1.5}, "eps"),
        ({"random_state": "seed"}, "random_state"),
    ],
)
def test_bad_parameters_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        PoissonFactorAnalysis(**kwargs).fit(_GOOD)


def test_heldout_matrix_checks():
    model = PoissonFactorAnalysis(n_components=2, n_iter=6, random_state=0)
    with pytest.raises(RuntimeError, match="not fitted"):
        model.perplexity(_GOOD)
    model.fit(np.where(np.eye(3, dtype=bool), np.nan, _GOOD))
    with pytest.raises(ValueError, match="training shape"):
        model.perplexity(_GOOD[:2])
    with pytest.raises(ValueError, match="negative"):
        model.log_predictive_density(np.where(np.eye(3, dtype=bool), -2.0, np.nan))
