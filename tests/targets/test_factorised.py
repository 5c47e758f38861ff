"""The frequency (W) update of the count likelihoods keeps its cached ``Phi``, ``psi`` and row
log-likelihoods equal to a fresh computation, whether proposals are accepted or rejected."""

import numpy as np
import pytest

from ibp_rflvm.features import feature_map, n_features
from ibp_rflvm.likelihoods import make_likelihood
from ibp_rflvm.likelihoods.base import LikelihoodParams
from ibp_rflvm.targets.factorised_state import FactorisedState, _low_rank_update, update_w


def test_low_rank_update_matches_numpy():
    rng = np.random.default_rng(0)
    psi, D, B = rng.normal(size=(30, 17)), rng.normal(size=(30, 2)), rng.normal(size=(2, 17))
    out = np.empty_like(psi)
    _low_rank_update(psi, D, B, out)
    np.testing.assert_allclose(out, psi + D @ B, rtol=0, atol=1e-14)


def test_low_rank_update_sums_in_the_documented_order():
    # psi + ((0 + D_0 B_0) + D_1 B_1), bit for bit: the proposals' psi (and so the chains) must
    # not change when the kernel's loops are rearranged for speed. NumPy's elementwise ops round
    # each product and sum separately, as the kernel (compiled without fast-math) does.
    rng = np.random.default_rng(3)
    psi, D, B = rng.normal(size=(9, 301)), rng.normal(size=(9, 2)), rng.normal(size=(2, 301))
    out = np.empty_like(psi)
    _low_rank_update(psi, D, B, out)
    acc = (0.0 + D[:, :1] * B[:1]) + D[:, 1:] * B[1:]
    np.testing.assert_array_equal(out, psi + acc)


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
    fs = FactorisedState(X, Z, W, True, beta, lik, LikelihoodParams(beta=beta), prep)
    # One mixture component centred on the current frequencies: a small spread makes nearly
    # every proposal acceptable, a large one nearly none.
    zeta = np.zeros(M, dtype=np.int64)
    mu, Sigma = W.mean(axis=0, keepdims=True), np.eye(K)[None] * spread**2
    accepted = sum(update_w(rng, X * Z, W, zeta, mu, Sigma, fs) for _ in range(5))
    assert (accepted > 0) if spread < 1 else (accepted < 5 * M)
    Phi = feature_map(X * Z, W, True)
    np.testing.assert_allclose(fs.Phi, Phi, atol=1e-12)
    np.testing.assert_allclose(fs.psi, Phi @ beta, atol=1e-10)
    fresh = lik.loglik_rows(Phi @ beta, np.arange(N), LikelihoodParams(beta=beta), prep)
    np.testing.assert_allclose(fs.ll, fresh, rtol=1e-10)


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize(("n", "m", "k"), [(0, 3, 2), (4, 1, 0), (5, 7, 3)])
def test_n_features_is_the_feature_maps_width(n, m, k, bias):
    """The blocked feature pass sizes its output by n_features, not by a call of feature_map."""
    rng = np.random.default_rng(0)
    Phi = feature_map(rng.standard_normal((n, k)), rng.standard_normal((m, k)), bias)
    assert Phi.shape == (n, n_features(m, bias))
