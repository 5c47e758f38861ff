"""The dimension moves (docs/sampler.md, section 2): acceptance ratios, and the row caches they keep.

The moves' exactness is checked where the whole sweep is: the IBP prior check
(tests/samplers/test_ibp.py) and the joint-distribution tests (tests/test_joint_distribution.py,
tests/likelihoods/test_likelihood_joint.py).
"""

import math

import numpy as np
import pytest
from scipy import stats

from ibp_rflvm import model
from ibp_rflvm.features import feature_map
from ibp_rflvm.likelihoods import make_likelihood
from ibp_rflvm.priors import IndianBuffet
from ibp_rflvm.samplers import dimension_moves as dm
from ibp_rflvm.targets import factorised_state as factorised
from ibp_rflvm.targets.collapsed import CollapsedRows
from ibp_rflvm.targets.factorised import FactorisedRows
from ibp_rflvm.targets.row_cache import build_cache, row_cache

IBP = IndianBuffet()


def _flip_log_ratio(z_cur, x_cur, x_prop, m, n, q):
    return dm.entry_log_ratio(IBP.hyper, z_cur, 1 - z_cur, x_cur, x_prop, m, n, q)


def test_flip_log_ratio_is_prior_odds_times_proposal_ratio():
    n, m, q = 10, 3, 0.2
    # Switching on: x' ~ q, the reverse draws the old x from N(0, 1).
    on = _flip_log_ratio(0, 1.7, 0.05, m, n, q)
    expected = math.log(m / (n - m)) + stats.norm.logpdf(0.05) - stats.norm.logpdf(0.05, scale=q)
    assert on == pytest.approx(expected)
    # Switching off: x' ~ N(0, 1); the reverse would propose the current x from q.
    off = _flip_log_ratio(1, 0.3, -1.2, m, n, q)
    expected = math.log((n - m) / m) + stats.norm.logpdf(0.3, scale=q) - stats.norm.logpdf(0.3)
    assert off == pytest.approx(expected)
    # A flip on and the flip back off with the same values have reciprocal prior ratios.
    assert _flip_log_ratio(0, 0.0, 0.4, m, n, q) == pytest.approx(-_flip_log_ratio(1, 0.4, 0.0, m, n, q))


def _gaussian_problem(seed=0, n=30, j=4, k=3, m=5):
    rng = np.random.default_rng(seed)
    Y = rng.standard_normal((n, j))
    Y[2, 1] = np.nan
    data = model.Data.from_array(Y)
    spec = model.ModelSpec(n_frequencies=m, n_dims=k)
    state = model.init_state(rng, data, spec)
    Z = (rng.random((n, k)) < 0.5).astype(np.int8)
    Z[:, 0] = 0
    Z[0, 0] = 1  # column 0 is row 0's singleton
    return rng, spec, state, Z


def test_collapsed_moves_keep_the_row_cache_exact():
    """After many accepted flips, births and deaths, the carried cache equals a rebuild."""
    rng, spec, state, Z = _gaussian_problem()
    X, W, Y = state.X.copy(), state.W.copy(), state.Y
    prior = spec.likelihood.prior
    Phi = feature_map(X * Z, W, False)
    cache = build_cache(Phi, Y, prior)
    dims = dm.Dimensions(X, Z, W, state.zeta, state.mu, state.Sigma)
    n_flips = births = deaths = 0
    for _ in range(20):
        counts = dims.Z.sum(axis=0).astype(np.int64)
        rows = row_cache(Phi, Y, cache, prior)
        args = (dims.X, dims.Z, dims.W, False, rows)
        n_flips += dm.flip_rows(rng, *args, counts, 0.5, IBP.hyper)[1]
        target = CollapsedRows(rows, False)
        dims, info = dm.singleton_birth_death(rng, dims, 3.0, 0.5, 1.0, target, IBP)
        births += info["births"]
        deaths += info["deaths"]
    assert n_flips > 20 and births > 5 and deaths > 5, (n_flips, births, deaths)
    assert np.allclose(Phi, feature_map(dims.X * dims.Z, dims.W, False), atol=1e-12)
    fresh = build_cache(Phi, Y, prior)
    assert cache.loglik == pytest.approx(fresh.loglik, abs=1e-7)
    assert np.allclose(cache.A, fresh.A, atol=1e-8)
    assert np.allclose(cache.Q, fresh.Q, atol=1e-7)
    # Every represented dimension is used: deaths removed the columns they emptied.
    assert np.all(dims.Z.sum(axis=0) > 0)
    assert dims.W.shape[1] == dims.X.shape[1] == dims.mu.shape[1] == dims.Sigma.shape[1]


def test_factorised_moves_keep_phi_psi_and_row_logliks():
    rng = np.random.default_rng(3)
    lik = make_likelihood("poisson")
    n, j, k, m = 25, 6, 3, 4
    Y = rng.poisson(2.0, size=(n, j)).astype(float)
    Y[1, 2] = np.nan
    data = model.Data.from_array(Y, lik)
    spec = model.ModelSpec(n_frequencies=m, n_dims=k, likelihood=lik, bias=True)
    state = model.init_state(rng, data, spec)
    Z = (rng.random((n, k)) < 0.5).astype(np.int8)
    Z[:, 0] = 0
    Z[3, 0] = 1
    X, W = state.X.copy(), state.W.copy()
    fs = factorised.FactorisedState(X, Z, W, True, state.params.beta, lik, state.params, data.prep)
    dims = dm.Dimensions(X, Z, W, state.zeta, state.mu, state.Sigma)
    target = FactorisedRows(fs)
    flips = births = deaths = 0
    for _ in range(20):
        counts = dims.Z.sum(axis=0).astype(np.int64)
        flips += dm.flip_columns(rng, dims.X, dims.Z, dims.W, counts, 0.5, target, IBP)[1]
        assert np.array_equal(counts, dims.Z.sum(axis=0))
        dims, info = dm.singleton_birth_death(rng, dims, 3.0, 0.5, 1.0, target, IBP)
        births += info["births"]
        deaths += info["deaths"]
    assert flips > 20 and births > 5 and deaths > 5, (flips, births, deaths)
    Phi = feature_map(dims.X * dims.Z, dims.W, True)
    assert np.allclose(fs.Phi, Phi, atol=1e-12)
    assert np.allclose(fs.psi, Phi @ fs.beta, atol=1e-10)
    assert np.allclose(fs.ll, lik.loglik_rows(Phi @ fs.beta, np.arange(n), state.params, data.prep))


def test_paper_sampler_runs_no_moves_and_default_does():
    rng = np.random.default_rng(0)
    Y = rng.standard_normal((40, 5))
    data = model.Data.from_array(Y)
    for moves in (False, True):
        spec = model.ModelSpec(n_frequencies=5, moves=moves)
        state = model.init_state(np.random.default_rng(1), data, spec)
        _, info = model.sweep(np.random.default_rng(2), state, data, spec)
        # 20 rows x 2 dimensions: the default sweep's flips are proposed (and some accepted);
        # the paper's sweep has no such move.
        assert (info.flips > 0) == moves and (info.seconds_moves.flips > 0) == moves


def test_scaled_start_gives_the_projection_a_fixed_variance():
    rng = np.random.default_rng(0)
    Y = rng.standard_normal((200, 30))
    data = model.Data.from_array(Y)
    for k in (2, 8, 20):
        X = model.init_state(np.random.default_rng(1), data, model.ModelSpec(n_dims=k)).X
        # Unit-variance frequencies: var(h . w) = sum of the coordinates' variances.
        assert np.sum(X.var(axis=0)) == pytest.approx(2.0, rel=1e-6)
        X_paper = model.init_state(
            np.random.default_rng(1), data, model.ModelSpec(n_dims=k, scaled_start=False)
        ).X
        assert np.sum(X_paper.var(axis=0)) == pytest.approx(k, rel=1e-6)
