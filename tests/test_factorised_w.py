"""The frequency (W) update of the count likelihoods keeps its cached ``Phi``, ``psi`` and row
log-likelihoods equal to a fresh computation, whether proposals are accepted or rejected."""

import numpy as np
import pytest

from ibp_rflvm.features import feature_map
from ibp_rflvm.likelihoods import base, make_likelihood
from ibp_rflvm.likelihoods.low_rank import low_rank_add
from ibp_rflvm.samplers.factorised import FactorisedState, update_w


def test_low_rank_update_matches_numpy():
    rng = np.random.default_rng(0)
    psi, D, B = rng.normal(size=(30, 17)), rng.normal(size=(30, 2)), rng.normal(size=(2, 17))
    out = np.empty_like(psi)
    low_rank_add(psi, D, B, out)
    np.testing.assert_allclose(out, psi + D @ B, rtol=0, atol=1e-14)
    low_rank_add(psi, D, B, psi)  # in place, as an accepted proposal is stored
    assert np.array_equal(psi, out)


_LIKELIHOODS = [
    ("poisson", {}), ("negbinom", {}), ("negbinom", {"size_factors": "total"}), ("multinomial", {}),
    ("bernoulli", {}), ("binomial", {"n_trials": 4}),
]  # fmt: skip


@pytest.mark.parametrize(("name", "hyper"), _LIKELIHOODS, ids=lambda v: str(v))
def test_shifted_loglik_equals_forming_the_predictor_first(name, hyper, monkeypatch):
    """The W update's proposal log-likelihood, formed row by row, is bit for bit the one of the
    materialised ``psi + D B`` (what the chain computed before), so chains do not change."""
    rng = np.random.default_rng(2)
    N, J = 37, 23
    lik = make_likelihood(name, **hyper)
    Y = rng.binomial(1 if name == "bernoulli" else 4, 0.4, size=(N, J)).astype(float)
    Y[rng.random((N, J)) < 0.2] = np.nan
    prep = lik.prepare(Y)
    params = {"beta": rng.normal(size=(5, J)), "r": rng.gamma(1.0, 1.0, size=J)}
    psi, D, B = rng.normal(size=(N, J)), rng.normal(size=(N, 2)), rng.normal(size=(2, J))
    formed = np.empty_like(psi)
    low_rank_add(psi, D, B, formed)
    want = lik.loglik_rows(formed, np.arange(N), params, prep)
    assert np.array_equal(lik.loglik_rows_shifted(psi, D, B, params, prep), want)
    # Several blocks of rows, the last one short.
    monkeypatch.setattr(base, "_SHIFT_BLOCK", 4 * J)
    assert np.array_equal(lik.loglik_rows_shifted(psi, D, B, params, prep), want)


@pytest.mark.parametrize("spread", [1e-3, 3.0], ids=["mostly-accepted", "mostly-rejected"])
def test_update_w_keeps_the_cache_consistent(spread):
    rng = np.random.default_rng(1)
    N, J, M, K = 40, 12, 6, 2
    X, Z = rng.normal(size=(N, K)), np.ones((N, K))
    W = rng.normal(size=(M, K))
    lik = make_likelihood("poisson")
    Y = rng.poisson(2.0, size=(N, J)).astype(float)
    prep = lik.prepare(Y)
    beta = rng.normal(size=(2 * M + 1, J)) * 0.3
    fs = FactorisedState(X, Z, W, True, beta, lik, {"beta": beta}, prep)
    # One mixture component centred on the current frequencies: a small spread makes nearly
    # every proposal acceptable, a large one nearly none.
    zeta = np.zeros(M, dtype=np.int64)
    mu, Sigma = W.mean(axis=0, keepdims=True), np.eye(K)[None] * spread**2
    accepted = sum(update_w(rng, X * Z, W, zeta, mu, Sigma, fs) for _ in range(5))
    assert (accepted > 0) if spread < 1 else (accepted < 5 * M)
    Phi = feature_map(X * Z, W, True)
    np.testing.assert_allclose(fs.Phi, Phi, atol=1e-12)
    np.testing.assert_allclose(fs.psi, Phi @ beta, atol=1e-10)
    fresh = lik.loglik_rows(Phi @ beta, np.arange(N), {"beta": beta}, prep)
    np.testing.assert_allclose(fs.ll, fresh, rtol=1e-10)
