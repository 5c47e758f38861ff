"""Effective number of latent dimensions: importance by removal, threshold, estimator and summary."""

import warnings

import numpy as np
import pytest
from scipy.stats import poisson

from ibp_rflvm import IBPRFLVM, RFLVM
from ibp_rflvm.datasets import make_cambridge
from ibp_rflvm.features import feature_map
from ibp_rflvm.likelihoods import make_likelihood
from ibp_rflvm.likelihoods.base import LikelihoodParams
from ibp_rflvm.mcmc.driver import run_chain
from ibp_rflvm.mcmc.effective import (
    DEFAULT_THRESHOLD,
    dimension_importance,
    effective_dimensions,
    effective_share,
    importance_and_gain,
)
from ibp_rflvm.model import Data, ModelSpec
from ibp_rflvm.summaries.dimensions import effective_draws, effective_scores
from ibp_rflvm.targets.collapsed import loglik_direct


def _gaussian_problem(seed: int = 0):
    """Data generated from 2 latent dimensions, and an ``H`` with a third, near-zero column."""
    rng = np.random.default_rng(seed)
    N, M, J = 60, 10, 5
    H = np.column_stack([rng.standard_normal((N, 2)), 1e-4 * rng.standard_normal(N)])
    W = rng.standard_normal((M, 3))
    Y = 3.0 * feature_map(H[:, :2], W[:, :2]) @ rng.standard_normal((2 * M, J))
    Y += 0.05 * rng.standard_normal((N, J))
    Y[rng.random(Y.shape) < 0.1] = np.nan
    data = Data.from_array(Y)
    Phi = feature_map(H, W)
    beta = np.linalg.solve(Phi.T @ Phi + np.eye(2 * M), Phi.T @ np.where(data.observed, Y, 0.0))
    return H, W, LikelihoodParams(beta=beta), data, ModelSpec(n_frequencies=M)


def test_near_zero_dimension_is_not_effective():
    H, W, params, data, spec = _gaussian_problem()
    imp = dimension_importance(H, W, params, data, spec)
    n_obs = int(data.observed.sum())
    assert imp.shape == (3,)
    assert abs(imp[2]) < 1e-2, "a column of x ~ 1e-4 barely changes the features"
    assert np.all(imp[:2] > 20 * DEFAULT_THRESHOLD * n_obs), imp
    assert effective_dimensions(imp, n_obs) == 2
    # Removal is deletion: the collapsed marginal without a dimension, on the completed data.
    Yc = np.where(data.observed, data.Y, feature_map(H, W) @ params.beta)
    full = loglik_direct(feature_map(H, W), Yc, spec.likelihood.prior)
    without0 = loglik_direct(feature_map(H[:, 1:], W[:, 1:]), Yc, spec.likelihood.prior)
    assert imp[0] == pytest.approx(full - without0, rel=1e-10)


def test_unused_dimension_scores_exactly_zero():
    H, W, params, data, spec = _gaussian_problem()
    H[:, 2] = 0.0
    assert dimension_importance(H, W, params, data, spec)[2] == 0.0
    assert dimension_importance(H[:, :0], W[:, :0], params, data, spec).shape == (0,)


def test_importance_is_the_difference_of_direct_logliks_for_counts():
    rng = np.random.default_rng(1)
    N, M, K, J = 40, 6, 3, 4
    H = rng.standard_normal((N, K)) * (rng.random((N, K)) < 0.7)
    W = rng.standard_normal((M, K))
    beta = 2.0 * rng.standard_normal((2 * M + 1, J))
    Y = rng.poisson(np.exp(feature_map(H, W, True) @ beta)).astype(float)
    Y[rng.random(Y.shape) < 0.15] = np.nan
    lik = make_likelihood("poisson")
    data = Data.from_array(Y, lik)
    spec = ModelSpec(n_frequencies=M, bias=True, likelihood=lik)
    obs = data.observed

    def brute(H_, W_):
        rate = np.exp(feature_map(H_, W_, True) @ beta)
        return poisson.logpmf(np.where(obs, Y, 0), rate)[obs].sum()

    expected = [brute(H, W) - brute(np.delete(H, d, 1), np.delete(W, d, 1)) for d in range(K)]
    imp = dimension_importance(H, W, LikelihoodParams(beta=beta), data, spec)
    np.testing.assert_allclose(imp, expected, rtol=1e-9, atol=1e-8)
    assert np.all(imp > 0)  # the data were generated from all three dimensions
    # The threshold is per observed entry, and strict.
    n_obs = int(obs.sum())
    t = float(np.sort(imp)[1]) / n_obs
    assert effective_dimensions(imp, n_obs, threshold=t) == 1
    assert effective_dimensions(imp, n_obs, threshold=0.0) == 3
    with pytest.raises(ValueError, match="threshold"):
        effective_dimensions(imp, n_obs, threshold=-1.0)


def test_thinning_is_even_and_keeps_the_last_sample():
    np.testing.assert_array_equal(effective_draws(7), np.arange(7))
    idx = effective_draws(500)
    assert idx.size == 50 and idx[0] == 0 and idx[-1] == 499
    assert np.ptp(np.diff(idx)) <= 1
    np.testing.assert_array_equal(effective_draws(500, 1), [499])


def test_gain_is_the_drop_to_no_latent_dimensions():
    H, W, params, data, spec = _gaussian_problem()
    imp, gain = importance_and_gain(H, W, params, data, spec)
    np.testing.assert_array_equal(imp, dimension_importance(H, W, params, data, spec))
    Yc = np.where(data.observed, data.Y, feature_map(H, W) @ params.beta)
    full = loglik_direct(feature_map(H, W), Yc, spec.likelihood.prior)
    none = loglik_direct(feature_map(np.zeros_like(H), W), Yc, spec.likelihood.prior)
    assert gain == pytest.approx(full - none, rel=1e-10)
    # The two generating dimensions each carry a large share of it, the near-zero one none.
    assert effective_share(imp, gain) == 2
    assert effective_share(imp, gain, share=0.0) == 3 - int(imp[2] <= 0.0)
    assert effective_share(imp, 0.0) == 0  # no gain: nothing counts
    with pytest.raises(ValueError, match="share"):
        effective_share(imp, gain, share=1.5)


def test_share_counts_dimensions_of_sparse_counts_the_absolute_threshold_misses():
    """Counts so sparse that the whole log-likelihood is a few hundredths of a nat per entry (as
    on SMS spam): no dimension reaches 0.01 nats per entry, but the dimensions the data were
    generated from each carry a large share of the fit's gain; scaling the weights' effect on
    the rate does not move the share."""
    rng = np.random.default_rng(4)
    N, M, K, J = 200, 6, 3, 30
    H = rng.standard_normal((N, K))
    H[:, 2] *= 1e-3  # a dimension the features barely notice
    W = rng.standard_normal((M, K))
    beta = 0.8 * rng.standard_normal((2 * M + 1, J))
    beta[-1] = -6.0  # bias: rates near exp(-6), 99.7% zeros
    lik = make_likelihood("poisson")
    spec = ModelSpec(n_frequencies=M, bias=True, likelihood=lik)
    Y = rng.poisson(np.exp(feature_map(H, W, True) @ beta)).astype(float)
    data = Data.from_array(Y, lik)
    imp, gain = importance_and_gain(H, W, LikelihoodParams(beta=beta), data, spec)
    n_obs = int(data.observed.sum())
    assert effective_dimensions(imp, n_obs) == 0
    assert effective_share(imp, gain) == 2


@pytest.fixture(scope="module")
def fitted():
    Y = make_cambridge(50, random_state=0)["Y"][:, :10]
    return IBPRFLVM(n_iter=6, n_frequencies=10, random_state=0).fit(Y)


def test_fitted_effective_dims(fitted):
    m = fitted
    eff = m.effective_dims_
    samples = m.posterior_.chain_samples(0)
    assert eff.shape == (1, len(samples)) and eff.dtype.kind == "i"
    for e, s in zip(eff[0], samples, strict=True):
        assert 0 <= e <= s.H.shape[1]
    # Scored once per posterior: a second call returns the stored scores, not new ones.
    assert effective_scores(m.posterior_) is effective_scores(m.posterior_)
    post = m.effective_dims_posterior_
    assert sum(post.values()) == pytest.approx(1.0)
    assert set(post) == set(eff.ravel().tolist())
    # A stricter threshold never counts more dimensions.
    assert np.all(m.effective_dimensions(threshold=10.0) <= eff)


def test_final_sample_alone_gives_the_last_thinned_count(fitted):
    m = fitted
    every = m.effective_dimensions()
    final = m.effective_dimensions(max_draws=1)
    assert final.shape == (1, 1)
    assert final[0, 0] == every[0, -1]  # the thinned draws always end with the final sample
    # The one-draw scores did not reuse the full set's: each number of draws is scored apart.
    one, full = effective_scores(m.posterior_, 1), effective_scores(m.posterior_)
    assert len(one[0]) == 1 and one is not full and len(full[0]) == every.shape[1]


def test_summary_reports_effective_dims_for_one_chain(fitted):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = fitted.summary()
    assert "effective_dims" in table.index
    # ArviZ rounds its summary to 3 decimals.
    assert table.loc["effective_dims", "mean"] == pytest.approx(fitted.effective_dims_.mean(), abs=5e-4)
    assert "loglik" in table.index and "r_hat" in table.columns


def test_unfitted_estimator_has_no_effective_dims():
    assert not hasattr(RFLVM(), "effective_dims_")


class _Progress:
    def __init__(self):
        self.postfixes = []

    def set_postfix(self, refresh=True, **kw):
        self.postfixes.append(kw)

    def update(self, n):
        pass


def test_progress_bar_shows_effective_dims_every_ten_sweeps():
    Y = make_cambridge(30, random_state=0)["Y"][:, :6]
    data = Data.from_array(Y)
    spec = ModelSpec(n_frequencies=6)
    bar = _Progress()
    res = run_chain(np.random.default_rng(0), data, spec, n_iter=12, burn_in=6, progress=bar)
    shown = [p["k_eff"] for p in bar.postfixes]
    assert shown[:9] == ["?"] * 9 and isinstance(shown[9], int) and isinstance(shown[11], int)
    s = res.state
    # The progress bar counts by the default, the share of the gain over no latent dimensions.
    assert shown[11] == effective_share(*importance_and_gain(s.H, s.W, s.params, data, spec))
    # Scoring draws no random numbers: the chain is the one run without a progress bar.
    quiet = run_chain(np.random.default_rng(0), data, spec, n_iter=12, burn_in=6)
    np.testing.assert_array_equal(quiet.record.loglik, res.record.loglik)
