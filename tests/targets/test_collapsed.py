"""The collapsed Gaussian target: closed forms, and every low-rank path against the direct one."""

import numpy as np
import pytest
from scipy.stats import multivariate_t

from ibp_rflvm.features import feature_map
from ibp_rflvm.likelihoods.gaussian import GaussianPrior
from ibp_rflvm.samplers import dp_mixture, ibp
from ibp_rflvm.samplers.ess import ess_rows
from ibp_rflvm.samplers.ibp import gibbs_z_rows
from ibp_rflvm.targets.collapsed import impute, loglik_direct
from ibp_rflvm.targets.collapsed_frequencies import mh_frequencies
from ibp_rflvm.targets.row_cache import build_cache, row_cache

PRIOR = GaussianPrior(a0=1.3, b0=0.7)


def _problem(seed=0, N=40, J=5, M=8, K=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N, K))
    Z = (rng.random((N, K)) < 0.6).astype(np.int8)
    W = rng.standard_normal((M, K))
    Y = rng.standard_normal((N, J))
    return rng, X, Z, W, Y


def _kernel_args(X, Z, W, Phi, Y, cache):
    return X, Z, W, False, row_cache(Phi, Y, cache, PRIOR)


def _assert_cache_matches(cache, Phi, Y):
    direct = build_cache(Phi, Y, PRIOR)
    assert cache.loglik == pytest.approx(direct.loglik, rel=1e-10, abs=1e-8)
    assert cache.logdet == pytest.approx(direct.logdet, rel=1e-10, abs=1e-8)
    np.testing.assert_allclose(cache.A, direct.A, atol=1e-8)
    np.testing.assert_allclose(cache.P, direct.P, atol=1e-8)
    np.testing.assert_allclose(cache.Q, direct.Q, atol=1e-8)


def test_collapsed_marginal_is_multivariate_student_t():
    _, X, Z, W, Y = _problem(N=12, J=4)
    Phi = feature_map(X * Z, W)
    N = Y.shape[0]
    # y_j ~ t_{2 a0}(0, (b0 / a0) (Phi Phi^T + I)), independently over columns.
    shape = (PRIOR.b0 / PRIOR.a0) * (Phi @ Phi.T + np.eye(N))
    brute = sum(multivariate_t(np.zeros(N), shape, df=2 * PRIOR.a0).logpdf(y) for y in Y.T)
    assert loglik_direct(Phi, Y, PRIOR) == pytest.approx(brute, rel=1e-12, abs=1e-8)


def test_ess_rank_two_updates_match_direct():
    rng, X, Z, W, Y = _problem()
    Phi = feature_map(X * Z, W)
    cache = build_cache(Phi, Y, PRIOR)
    X0 = X.copy()
    n_evals = ess_rows(rng, *_kernel_args(X, Z, W, Phi, Y, cache))
    assert n_evals >= Z.any(axis=1).sum()
    assert not np.array_equal(X, X0)
    np.testing.assert_allclose(Phi, feature_map(X * Z, W), atol=1e-12)
    _assert_cache_matches(cache, Phi, Y)


def test_z_kernel_rank_two_updates_match_direct():
    rng, X, Z, W, Y = _problem(seed=1)
    Phi = feature_map(X * Z, W)
    cache = build_cache(Phi, Y, PRIOR)
    pi = np.array([0.7, 0.5, 0.3])
    counts = Z.sum(axis=0).astype(np.int64)
    Z0 = Z.copy()
    room = ibp.room(int(np.count_nonzero(counts)), None)
    flips = gibbs_z_rows(rng, *_kernel_args(X, Z, W, Phi, Y, cache), ibp.Sticks(pi), counts, room)
    assert flips == np.count_nonzero(Z != Z0) or flips >= np.count_nonzero(Z != Z0)
    assert flips > 0
    np.testing.assert_array_equal(counts, Z.sum(axis=0))
    np.testing.assert_allclose(Phi, feature_map(X * Z, W), atol=1e-12)
    _assert_cache_matches(cache, Phi, Y)


def _frequency_problem():
    """A state for the frequency updates: rng, ``H``, ``W``, mixture, ``Phi``, ``Y`` and cache."""
    rng, X, Z, W, Y = _problem(seed=2)
    H = X * Z
    Phi = feature_map(H, W)
    cache = build_cache(Phi, Y, PRIOR)
    zeta = rng.integers(0, 2, W.shape[0])
    mu, Sigma = dp_mixture.sample_components(rng, W, zeta, 1.0)
    return rng, H, W, zeta, mu, Sigma, Phi, Y, cache


def test_frequency_rank_four_updates_match_direct():
    rng, H, W, zeta, mu, Sigma, Phi, Y, cache = _frequency_problem()
    W0 = W.copy()
    accepted, carried = mh_frequencies(rng, H, W, zeta, mu, Sigma, Phi, Y, cache, PRIOR)
    assert accepted == np.count_nonzero(np.any(W != W0, axis=1))
    assert accepted > 0
    np.testing.assert_allclose(Phi, feature_map(H, W), atol=1e-12)
    _assert_cache_matches(cache, Phi, Y)
    assert carried == pytest.approx(cache.loglik, rel=1e-12, abs=1e-8)


def test_frequency_updates_stay_accurate_at_large_n():
    """Carrying S^-1 across accepted proposals amplifies round-off by ~||A_II^-1|| per step (a
    rank-4 Woodbury version was off by 73 nats at N = 10,000); the decisions must use an
    accurate likelihood whatever N."""
    rng = np.random.default_rng(4)
    N, J, M, K = 3000, 20, 50, 2
    X = rng.standard_normal((N, K))
    W = rng.standard_normal((M, K))
    Phi = feature_map(X, W)
    Y = Phi @ rng.standard_normal((2 * M, J)) + 0.3 * rng.standard_normal((N, J))
    cache = build_cache(Phi, Y, PRIOR)
    zeta = np.zeros(M, dtype=np.int64)
    mu, Sigma = dp_mixture.sample_components(rng, W, zeta, 1.0)
    accepted, carried = mh_frequencies(rng, X, W, zeta, mu, Sigma, Phi, Y, cache, PRIOR)
    assert accepted >= 5
    direct = build_cache(feature_map(X, W), Y, PRIOR)
    assert carried == pytest.approx(direct.loglik, rel=1e-10, abs=1e-6)


def test_imputation_draws_from_the_model_not_zeros():
    rng = np.random.default_rng(3)
    N, J = 300, 3
    Phi = feature_map(rng.standard_normal((N, 2)), rng.standard_normal((10, 2)))
    truth = Phi @ (3.0 * rng.standard_normal((Phi.shape[1], J))) + 0.05 * rng.standard_normal((N, J))
    rows, cols = np.nonzero(rng.random((N, J)) < 0.3)
    Y_start = truth.copy()
    Y_start[rows, cols] = 0.0  # a poor starting completion; the draw must not depend on it much
    cache = build_cache(Phi, Y_start, PRIOR)
    Y_new, beta, sigma2, _ = impute(rng, Phi, Y_start, (rows, cols), cache, PRIOR)
    observed = np.ones((N, J), bool)
    observed[rows, cols] = False
    np.testing.assert_array_equal(Y_new[observed], Y_start[observed])
    err_model = np.mean((Y_new[rows, cols] - truth[rows, cols]) ** 2)
    err_zero = np.mean(truth[rows, cols] ** 2)
    assert err_model < 0.5 * err_zero, (err_model, err_zero)
    assert beta.shape == (Phi.shape[1], J) and np.all(sigma2 > 0)
