"""The scale move (:mod:`ibp_rflvm.samplers.scale`): it leaves the prior of ``X`` and ``W`` given
``Z`` and the assignments invariant (each replicate starts from an exact prior draw, so one move
must return an exact prior draw), the check has power against a move that forgets the
frequencies' prior, and the products ``H W^T`` it claims to keep are kept."""

import numpy as np

from ibp_rflvm.samplers import scale

N, K, M, LAM0 = 8, 2, 6, 1.0
REPLICATES = 4000


def _prior_state(rng):
    """``X ~ N(0, 1)``, ``Z`` Bernoulli(0.6), two mixture components with ``(mu, Sigma)`` from
    the normal-inverse-Wishart of :mod:`ibp_rflvm.samplers.dp_mixture` and ``W`` from them."""
    X = rng.standard_normal((N, K))
    Z = (rng.random((N, K)) < 0.6).astype(np.int8)
    zeta = rng.integers(0, 2, M)
    W = np.empty((M, K))
    for k in range(2):
        G = rng.standard_normal((K, K + 2))  # Wishart(K + 2, I) is G G^T: integer degrees of freedom
        Sigma = np.linalg.inv(G @ G.T)
        mu = rng.multivariate_normal(np.zeros(K), Sigma / LAM0)
        members = zeta == k
        W[members] = rng.multivariate_normal(mu, Sigma, size=int(members.sum()))
    return X, Z, W, zeta


def _statistics(X, Z, W):
    """Per dimension: the log of the used coordinates' sum of squares and of the frequencies'."""
    on = Z != 0
    return np.concatenate([np.log(np.sum((X * on) ** 2, axis=0) + 1e-300), np.log(np.sum(W**2, axis=0))])


def _before_and_after(seed, move=scale.scale_moves):
    rng = np.random.default_rng(seed)
    before, after, accepted = [], [], 0
    for _ in range(REPLICATES):
        X, Z, W, zeta = _prior_state(rng)
        before.append(_statistics(X, Z, W))
        accepted += move(rng, X, Z, W, zeta, LAM0)[1]
        after.append(_statistics(X, Z, W))
    return np.array(before), np.array(after), accepted / (REPLICATES * K * scale.SCALE_STEPS)


def _z_scores(before, after):
    """Two-sample z of the statistics' means (independent replicates: exact standard errors).
    Rows where a dimension has no used row give log(1e-300) in both and are left out."""
    keep = np.all(before > -600, axis=1) & np.all(after > -600, axis=1)
    b, a = before[keep], after[keep]
    se = np.sqrt(b.var(axis=0, ddof=1) / len(b) + a.var(axis=0, ddof=1) / len(a))
    return (a.mean(axis=0) - b.mean(axis=0)) / se


def test_one_move_from_a_prior_draw_is_a_prior_draw():
    before, after, rate = _before_and_after(0)
    z = _z_scores(before, after)
    # Four statistics; each |z| above 4 has probability 6e-5 under invariance.
    assert np.all(np.abs(z) < 4.0), z
    assert 0.2 < rate < 0.95, rate  # the move moves, so the check tests it
    moved = np.abs(after - before).max(axis=1) > 0
    assert moved.mean() > 0.5


def test_the_check_sees_a_move_that_forgets_the_frequencies_prior(monkeypatch):
    monkeypatch.setattr(scale, "_log_evidence_terms", lambda G, nu, s: 0.0)
    before, after, _ = _before_and_after(1)
    z = _z_scores(before, after)
    assert np.max(np.abs(z)) > 6.0, z


def test_products_are_kept_and_only_used_coordinates_move():
    rng = np.random.default_rng(2)
    X, Z, W, zeta = _prior_state(rng)
    X0, W0 = X.copy(), W.copy()
    for _ in range(20):
        scale.scale_moves(rng, X, Z, W, zeta, LAM0)
    np.testing.assert_allclose((X * Z) @ W.T, (X0 * Z) @ W0.T, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(X[Z == 0], X0[Z == 0])
    assert not np.allclose(W, W0)
