"""Absorb/emit moves (samplers/absorb.py): the shear, its ratio, and the caches it carries.

Exactness inside the whole sweep: the IBP prior check (tests/test_ibp.py) and the
joint-distribution tests run with the moves on and require accepted absorbs and emits.
"""

import math

import numpy as np
import pytest
from scipy import stats

from ibp_rflvm import model
from ibp_rflvm.features import feature_map
from ibp_rflvm.likelihoods import gaussian, make_likelihood
from ibp_rflvm.samplers import absorb as ab
from ibp_rflvm.samplers import dimension_moves as dm
from ibp_rflvm.samplers import factorised


def test_ordered_pairs_keep_the_phase_of_a_row_using_both_parallel_columns():
    rng = np.random.default_rng(0)
    w = rng.standard_normal(6)
    W = np.column_stack([w, rng.standard_normal(6), 1.7 * w])
    keep, toggle, c = ab.ordered_pairs(W, 0.99)
    assert sorted(zip(keep.tolist(), toggle.tolist(), strict=True)) == [(0, 2), (2, 0)]
    x = np.array([0.4, 0.0, -1.1])
    for k, t, cc in zip(keep, toggle, c, strict=True):
        # Absorbing `t` into `k`: x_k + c x_t on `k` alone gives the same phase.
        assert np.allclose((x[k] + cc * x[t]) * W[:, k], x[k] * W[:, k] + x[t] * W[:, t])


def test_absorb_log_ratio_is_ibp_odds_times_the_coordinate_prior_and_emit_reverses_it():
    n, m, x_a, x_b, c = 15, 4, 0.6, -0.9, 0.8
    new_a = x_a + c * x_b
    got = ab.absorb_log_ratio(1, x_a, new_a, m, n)
    expected = math.log((n - m) / m) + stats.norm.logpdf(new_a) - stats.norm.logpdf(x_a)
    assert got == pytest.approx(expected)
    # The emit from the absorbed state, same other rows: x_a' - c x_b = x_a, reciprocal ratio.
    back = ab.absorb_log_ratio(0, new_a, new_a - c * x_b, m, n)
    assert new_a - c * x_b == pytest.approx(x_a)
    assert back == pytest.approx(-got)


def test_collapsed_absorbs_keep_the_row_cache_exact():
    rng = np.random.default_rng(1)
    n, j, k, m = 40, 4, 3, 5
    Y = rng.standard_normal((n, j))
    spec = model.ModelSpec(n_frequencies=m, n_dims=k)
    state = model.init_state(rng, model.Data.from_array(Y), spec)
    X, W, Y = state.X.copy(), state.W.copy(), state.Y
    W[:, 2] = 0.8 * W[:, 0] + 0.05 * rng.standard_normal(m)
    Z = (rng.random((n, k)) < 0.6).astype(np.int8)
    prior = spec.likelihood.prior
    Phi = feature_map(X * Z, W, False)
    cache = gaussian.build_cache(Phi, Y, prior)
    args = (X, Z, W, False, Phi, Y, cache.A, cache.P, cache.Q, cache.yy, cache.state,
            prior.a0 + 0.5 * n, prior.b0, prior.constant(n, j))  # fmt: skip
    tried = acc = 0
    for _ in range(20):
        counts = Z.sum(axis=0).astype(np.int64)
        t, a = ab.absorb_rows_collapsed(rng, *args, counts, *ab.ordered_pairs(W, 0.3))
        tried, acc = tried + t, acc + a
        assert np.array_equal(counts, Z.sum(axis=0))
    assert acc > 20 and tried > acc, (tried, acc)
    assert np.all(Z.sum(axis=0) > 0)
    assert np.allclose(Phi, feature_map(X * Z, W, False), atol=1e-12)
    fresh = gaussian.build_cache(Phi, Y, prior)
    assert cache.loglik == pytest.approx(fresh.loglik, abs=1e-7)
    assert np.allclose(cache.A, fresh.A, atol=1e-8)


def test_factorised_absorbs_keep_phi_psi_and_row_logliks():
    rng = np.random.default_rng(4)
    lik = make_likelihood("poisson")
    n, j, k, m = 30, 6, 3, 4
    Y = rng.poisson(2.0, size=(n, j)).astype(float)
    data = model.Data.from_array(Y, lik)
    spec = model.ModelSpec(n_frequencies=m, n_dims=k, likelihood=lik, bias=True)
    state = model.init_state(rng, data, spec)
    X, W = state.X.copy(), state.W.copy()
    W[:, 1] = -1.2 * W[:, 0] + 0.05 * rng.standard_normal(m)
    Z = (rng.random((n, k)) < 0.6).astype(np.int8)
    fs = factorised.FactorisedState(X, Z, W, True, state.params["beta"], lik, state.params, data.prep)
    target = dm.FactorisedRows(fs)
    tried = acc = 0
    for _ in range(20):
        counts = Z.sum(axis=0).astype(np.int64)
        t, a = ab.absorb_pairs(rng, X, Z, W, counts, 0.3, target)
        tried, acc = tried + t, acc + a
        assert np.array_equal(counts, Z.sum(axis=0))
    assert acc > 20 and tried > acc, (tried, acc)
    Phi = feature_map(X * Z, W, True)
    assert np.allclose(fs.Phi, Phi, atol=1e-12)
    assert np.allclose(fs.psi, Phi @ fs.beta, atol=1e-10)
    assert np.allclose(fs.ll, lik.loglik_rows(Phi @ fs.beta, np.arange(n), state.params, data.prep))


def test_sweep_reports_absorbs_and_the_option_switches_them_off():
    rng = np.random.default_rng(0)
    data = model.Data.from_array(rng.standard_normal((40, 5)))
    for min_cos, ran in ((0.0, True), (None, False)):
        spec = model.ModelSpec(n_frequencies=5, n_dims=4, absorb_min_cos=min_cos)
        state = model.init_state(np.random.default_rng(1), data, spec)
        _, info = model.sweep(np.random.default_rng(2), state, data, spec)
        assert (info["absorbs_proposed"] > 0) == ran
