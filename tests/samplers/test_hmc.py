"""The continuous block's HMC move (:mod:`ibp_rflvm.samplers.hmc`) and the collapsed Gaussian's
gradient it follows (:mod:`ibp_rflvm.targets.gradients`).

The move is checked for invariance where the target is known exactly: a Gaussian likelihood of
``H`` and ``W`` times the priors gives a Gaussian posterior, each replicate starts from an
exact draw of it, and one move must return an exact draw. The check must see a move whose
acceptance ratio leaves out the frequencies' prior."""

import numpy as np
import pytest

from ibp_rflvm.features import feature_map
from ibp_rflvm.likelihoods.gaussian import GaussianPrior
from ibp_rflvm.samplers import hmc
from ibp_rflvm.targets.collapsed import loglik_direct
from ibp_rflvm.targets.gradients import collapsed_value_and_grad, factorised_value_and_grad

N, K, M = 6, 2, 4
TAU_X, TAU_W = 3.0, 2.0  # the toy likelihood's precisions of H and W
REPLICATES = 3000


@pytest.mark.parametrize("bias", [False, True])
def test_gradients_matches_central_differences(bias):
    rng = np.random.default_rng(0)
    H, W, Y = rng.standard_normal((9, 3)), rng.standard_normal((5, 3)), rng.standard_normal((9, 4))
    prior = GaussianPrior(1.5, 0.7)
    ll, d_h, d_w = collapsed_value_and_grad(H, W, Y, prior, bias)
    assert ll == pytest.approx(loglik_direct(feature_map(H, W, bias), Y, prior), rel=1e-12)

    def numeric(A, which):
        out, eps = np.zeros_like(A), 1e-6
        for idx in np.ndindex(A.shape):
            up, down = A.copy(), A.copy()
            up[idx] += eps
            down[idx] -= eps
            args_up = (up, W) if which == "H" else (H, up)
            args_down = (down, W) if which == "H" else (H, down)
            f_up = collapsed_value_and_grad(*args_up, Y, prior, bias)[0]
            f_down = collapsed_value_and_grad(*args_down, Y, prior, bias)[0]
            out[idx] = (f_up - f_down) / (2 * eps)
        return out

    # Central differences at 1e-6 are accurate to about 1e-8 on values of this size.
    np.testing.assert_allclose(d_h, numeric(H, "H"), atol=1e-6)
    np.testing.assert_allclose(d_w, numeric(W, "W"), atol=1e-6)


def _toy(c_x, c_w):
    """A Gaussian likelihood ``-TAU_X |H - c_x|^2 / 2 - TAU_W |W - c_w|^2 / 2`` and its gradient."""

    def value_and_grad(H, W):
        dx, dw = H - c_x, W - c_w
        return -0.5 * TAU_X * np.sum(dx * dx) - 0.5 * TAU_W * np.sum(dw * dw), -TAU_X * dx, -TAU_W * dw

    return value_and_grad


def _posterior_draw(rng, Z, c_x, c_w, zeta, mu, Sigma):
    """The exact posterior of the toy: the used ``x`` (prior N(0, 1)) and each ``w_m``
    (prior N(mu_k, Sigma_k)) are Gaussian given the likelihood's precision."""
    X = np.zeros((N, K))
    on = Z != 0
    X[on] = (TAU_X * c_x[on]) / (1 + TAU_X) + rng.standard_normal(on.sum()) / np.sqrt(1 + TAU_X)
    W = np.empty((M, K))
    for m in range(M):
        prec = np.linalg.inv(Sigma[zeta[m]]) + TAU_W * np.eye(K)
        cov = np.linalg.inv(prec)
        mean = cov @ (np.linalg.solve(Sigma[zeta[m]], mu[zeta[m]]) + TAU_W * c_w[m])
        W[m] = rng.multivariate_normal(mean, cov)
    return X, W


def _replicates(seed, steps=(0.35, 0.35), n_leapfrog=4):
    rng = np.random.default_rng(seed)
    Z = (rng.random((N, K)) < 0.6).astype(np.int8)
    c_x, c_w = rng.standard_normal((N, K)), rng.standard_normal((M, K))
    zeta = np.array([0, 0, 1, 1])
    mu = np.array([[0.5, -0.5], [-1.0, 0.2]])
    Sigma = np.array([[[1.0, 0.3], [0.3, 0.5]], [[0.4, -0.1], [-0.1, 0.8]]])
    f = _toy(c_x, c_w)
    before, after, accepted = [], [], 0
    for _ in range(REPLICATES):
        X, W = _posterior_draw(rng, Z, c_x, c_w, zeta, mu, Sigma)
        before.append(np.concatenate([X[Z != 0], W.ravel(), W.ravel() ** 2]))
        accepted += hmc.hmc_block(rng, X, Z, W, zeta, mu, Sigma, f, *steps, n_leapfrog)[0]
        after.append(np.concatenate([X[Z != 0], W.ravel(), W.ravel() ** 2]))
    return np.array(before), np.array(after), accepted / REPLICATES


def _z(before, after):
    se = np.sqrt(before.var(axis=0, ddof=1) / len(before) + after.var(axis=0, ddof=1) / len(after))
    return (after.mean(axis=0) - before.mean(axis=0)) / se


def test_one_move_from_an_exact_draw_is_an_exact_draw():
    before, after, rate = _replicates(0)
    z = _z(before, after)
    # About 20 statistics; each |z| above 4.3 has probability 2e-5 under invariance.
    assert np.all(np.abs(z) < 4.3), z
    assert 0.3 < rate < 0.98, rate  # the move moves, so the check tests it
    assert np.mean(np.abs(after - before).max(axis=1) > 0) > 0.3


def test_the_check_sees_a_ratio_without_the_frequencies_prior(monkeypatch):
    real = hmc._prior_and_grad

    def forgetful(x_on, W, zeta, mu, precision):
        _, gx, gw = real(x_on, W, zeta, mu, precision)
        return -0.5 * float(np.dot(x_on, x_on)), gx, gw

    monkeypatch.setattr(hmc, "_prior_and_grad", forgetful)
    before, after, _ = _replicates(1, steps=(0.6, 0.6), n_leapfrog=6)
    assert np.max(np.abs(_z(before, after))) > 6.0


def test_only_used_coordinates_move_and_a_rejection_changes_nothing():
    rng = np.random.default_rng(3)
    Z = (rng.random((N, K)) < 0.5).astype(np.int8)
    X, W = rng.standard_normal((N, K)), rng.standard_normal((M, K))
    zeta, mu, Sigma = np.zeros(M, dtype=np.int64), np.zeros((1, K)), np.eye(K)[None]
    X0, W0 = X.copy(), W.copy()
    accepted, _ = hmc.hmc_block(rng, X, Z, W, zeta, mu, Sigma, _toy(X0, W0), 0.1, 0.1, 3)
    assert accepted
    np.testing.assert_array_equal(X[Z == 0], X0[Z == 0])
    assert not np.allclose(X[Z != 0], X0[Z != 0])
    # A likelihood that is NaN everywhere off the start rejects and leaves the state alone.
    X1, W1 = X.copy(), W.copy()

    def nan_away(H, W_):
        return (0.0 if np.array_equal(W_, W1) else np.nan), np.zeros_like(H), np.zeros_like(W_)

    accepted, _ = hmc.hmc_block(rng, X, Z, W, zeta, mu, Sigma, nan_away, 0.1, 0.1, 3)
    assert not accepted
    np.testing.assert_array_equal(X, X1)
    np.testing.assert_array_equal(W, W1)


def test_the_warm_up_steers_the_step_towards_the_target_acceptance():
    # Accepting everything grows the factor, rejecting everything shrinks it, and the gains shrink.
    assert hmc.adapt_factor(1.0, 0.0, 0) > 1.0 > hmc.adapt_factor(1.0, -50.0, 0)
    assert hmc.adapt_factor(1.0, float("nan"), 0) < 1.0
    early = hmc.adapt_factor(1.0, 0.0, 0)
    late = hmc.adapt_factor(1.0, 0.0, 999)
    assert 1.0 < late < early
    # On the toy, a factor adapted from far too large a step ends where the move accepts
    # TARGET_ACCEPTANCE of its trajectories (within the binomial error of 400 moves).
    rng = np.random.default_rng(5)
    Z = np.ones((N, K), dtype=np.int8)
    c_x, c_w = rng.standard_normal((N, K)), rng.standard_normal((M, K))
    zeta, mu, Sigma = np.zeros(M, dtype=np.int64), np.zeros((1, K)), np.eye(K)[None]
    X, W = rng.standard_normal((N, K)), rng.standard_normal((M, K))
    f, factor = _toy(c_x, c_w), 8.0
    for sweep in range(1500):
        _, log_r = hmc.hmc_block(rng, X, Z, W, zeta, mu, Sigma, f, 0.3 * factor, 0.3 * factor, 4)
        factor = hmc.adapt_factor(factor, log_r, sweep)
    accepted = [
        hmc.hmc_block(rng, X, Z, W, zeta, mu, Sigma, f, 0.3 * factor, 0.3 * factor, 4)[0] for _ in range(400)
    ]
    se = np.sqrt(hmc.TARGET_ACCEPTANCE * (1 - hmc.TARGET_ACCEPTANCE) / 400)
    assert abs(np.mean(accepted) - hmc.TARGET_ACCEPTANCE) < 4 * se + 0.05, (np.mean(accepted), factor)


@pytest.mark.parametrize("name", ["negbinom", "poisson", "binomial"])
def test_factorised_gradient_matches_central_differences(name):
    from ibp_rflvm.likelihoods import make_likelihood

    rng = np.random.default_rng(1)
    H, W = rng.standard_normal((7, 2)), rng.standard_normal((4, 2))
    Y = rng.poisson(2.0, (7, 3)).astype(float)
    Y[1, 2] = np.nan  # an unobserved entry adds nothing, to the value or the gradient
    lik = make_likelihood(name, **({"n_trials": 6} if name == "binomial" else {}))
    if name == "binomial":
        Y = np.minimum(Y, 6.0)
    prep = lik.prepare(Y)
    params = lik.init_params(rng, feature_map(H, W, True), prep)
    beta = rng.standard_normal(params.beta.shape) * 0.5
    f = lambda H_, W_: factorised_value_and_grad(H_, W_, beta, lik, params, prep, True)  # noqa: E731
    _, d_h, d_w = f(H, W)
    for A, grad, which in ((H, d_h, 0), (W, d_w, 1)):
        numeric, eps = np.zeros_like(A), 1e-6
        for idx in np.ndindex(A.shape):
            up, down = A.copy(), A.copy()
            up[idx] += eps
            down[idx] -= eps
            args_up, args_down = ((up, W), (down, W)) if which == 0 else ((H, up), (H, down))
            numeric[idx] = (f(*args_up)[0] - f(*args_down)[0]) / (2 * eps)
        np.testing.assert_allclose(grad, numeric, atol=1e-6)
