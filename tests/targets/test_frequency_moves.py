"""Elliptical slice sampling of the frequencies (``frequency_update="ess"``, issue 56).

* the prior check: with a flat likelihood (the generic update, the prior target's, and the
  factorised target's with weights ``beta = 0``) the frequencies come out ``N(mu_k, Sigma_k)``;
* the move's joint-distribution test for every likelihood family: alternate
  ``Y ~ p(Y | W, rest)`` and one update of every ``w_m`` given ``Y`` (the rest fixed); both
  leave ``p(W, Y | rest)`` invariant, so ``W`` stays ``N(mu_k, Sigma_k)`` (each
  ``L_k^-1 (w_m - mu_k)`` standard normal). Three thousand updates of 3 frequencies at
  ``N = 12`` take a few seconds per likelihood;
* and the update's gain ``log p(Y | W_new) - log p(Y | W_old)``, whose mean is 0: ``W_old``
  generated ``Y`` and ``W_new`` is a posterior draw given ``Y``, so ``(W_old, Y)`` and
  ``(W_new, Y)`` have the same joint law. A move that ignores part of the likelihood leaves
  ``W``'s marginal nearly right but fits ``Y`` worse than the ``W`` that made it, and the
  difference has none of the noise of ``Y`` itself;
* power checks: an ellipse not centred on ``mu_k`` and a slice level off by a factor in
  ``log u`` (a tempered likelihood) both fail the same test;
* the bound's screen leaves the chain unchanged bit for bit, and the caches stay equal to a
  fresh computation.
"""

import math

import numpy as np
import pytest

from ibp_rflvm.features import feature_map
from ibp_rflvm.likelihoods import make_likelihood
from ibp_rflvm.likelihoods.base import LikelihoodParams
from ibp_rflvm.likelihoods.gaussian import GaussianPrior
from ibp_rflvm.summaries.diagnostics import batch_mean_se
from ibp_rflvm.targets import frequency_moves
from ibp_rflvm.targets.collapsed_frequencies import ess_frequencies_collapsed
from ibp_rflvm.targets.factorised_state import FactorisedState, ess_w
from ibp_rflvm.targets.frequency_moves import ess_frequencies, ess_frequencies_prior
from ibp_rflvm.targets.row_cache import build_cache

from ..likelihoods.test_likelihood_joint import CASES

N, J, M, K = 12, 3, 3, 2
# Two components, means well away from 0 and correlated covariances, so that an update that
# ignores either shows in the moments.
ZETA = np.array([0, 1, 1])
MU = np.array([[1.5, -1.0], [-0.5, 0.8]])
SIGMA = np.array([[[1.0, 0.6], [0.6, 0.8]], [[0.5, -0.2], [-0.2, 0.4]]])
CHOL = np.linalg.cholesky(SIGMA)


def _standardised(W: np.ndarray) -> np.ndarray:
    """``L_k^-1 (w_m - mu_k)`` for each frequency: standard normal under the prior."""
    return np.stack([np.linalg.solve(CHOL[k], W[m] - MU[k]) for m, k in enumerate(ZETA)])


def _moments(draws: np.ndarray) -> dict[str, np.ndarray]:
    """Per-draw test functions with prior mean 0: the standardised coordinates summed, their
    squares minus 1 summed, and the products of the two coordinates summed."""
    z = np.stack([_standardised(W) for W in draws])
    return {
        "z": z.sum(axis=(1, 2)),
        "z2": (z**2 - 1.0).sum(axis=(1, 2)),
        "zz": (z[:, :, 0] * z[:, :, 1]).sum(axis=1),
    }


def _z_scores(draws: np.ndarray) -> dict[str, float]:
    out = {}
    for name, values in _moments(draws).items():
        mean, se = batch_mean_se(values)
        out[name] = mean / se
    return out


class _Flat:
    """A block with no likelihood: every point is in the slice."""

    ll = 0.0

    def __init__(self, W):
        self.W = W

    def evaluate(self, m, w, floor=-math.inf):
        return 0.0, None

    def commit(self, m, w, pieces):
        self.W[m] = w


def test_the_move_keeps_the_prior_without_a_likelihood():
    rng = np.random.default_rng(0)
    W = np.zeros((M, K))  # far from the prior's mean: the chain must forget it
    block = _Flat(W)
    draws, fast = [], []
    Wp = W.copy()
    for _ in range(3000):
        ess_frequencies(rng, W, ZETA, MU, SIGMA, block)
        Wp = ess_frequencies_prior(rng, Wp, ZETA, MU, SIGMA)
        draws.append(W.copy())
        fast.append(Wp.copy())
    for z in (_z_scores(np.array(draws[200:])), _z_scores(np.array(fast[200:]))):
        assert max(abs(v) for v in z.values()) < 4.0, z


def test_the_factorised_move_keeps_the_prior_when_the_weights_are_zero():
    """The real count-data path (the bound's screen included) with ``beta = 0``: ``psi`` does
    not depend on ``W``, so the likelihood is flat and ``W`` must come out as the prior."""
    rng = np.random.default_rng(1)
    lik = make_likelihood("negbinom")
    X, Z = rng.standard_normal((N, K)), np.ones((N, K))
    Y = rng.poisson(2.0, size=(N, J)).astype(float)
    prep = lik.prepare(Y)
    beta = np.zeros((2 * M + 1, J))
    W = np.zeros((M, K))
    fs = FactorisedState(X, Z, W, True, beta, lik, LikelihoodParams(beta=beta, r=np.ones(J)), prep)
    draws = []
    for _ in range(2000):
        _, moved = ess_w(rng, X * Z, W, ZETA, MU, SIGMA, fs)
        assert moved == M
        draws.append(W.copy())
    z = _z_scores(np.array(draws[200:]))
    assert max(abs(v) for v in z.values()) < 4.0, z


# ------------------------------------------------------------------------------------------
# The move's joint-distribution test, every likelihood family


def _count_move_chain(name: str, n_updates: int, seed: int = 0, j: int = J, scale: float = 1.0):
    """Alternate ``Y ~ p(Y | W, rest)`` and :func:`ess_w`; the rest (``X``, ``Z``, ``beta`` with
    entries ``N(0, scale^2)``, the likelihood's own variables, the mixture) fixed; one entry
    unobserved. Returns the ``W`` after each update and the update's log-likelihood gain."""
    hyper, draw = CASES[name]
    lik = make_likelihood(name.split("+")[0], **hyper)
    offset = np.log(hyper["size_factors"])[:, None] if "size_factors" in hyper else 0.0
    rng = np.random.default_rng(seed)
    n = hyper["size_factors"].size if "size_factors" in hyper else N
    X, Z = rng.standard_normal((n, K)), (rng.random((n, K)) < 0.8).astype(float)
    observed = np.ones((n, j), dtype=bool)
    observed[0, 1] = False
    beta = rng.standard_normal((2 * M + 1, j)) * scale  # weights of a likelihood that is not flat
    if name == "multinomial":
        beta[:, -1] = 0.0
    params = LikelihoodParams(beta=beta, r=np.full(j, 1.5) if name.startswith("negbinom") else None)
    W = MU[ZETA] + np.einsum("mab,mb->ma", CHOL[ZETA], rng.standard_normal((M, K)))
    H = X * Z
    draws, gains = [], []
    for _ in range(n_updates):
        psi = feature_map(H, W, True) @ beta + offset
        Y = np.where(observed, draw(rng, psi, params, observed), np.nan)
        fs = FactorisedState(X, Z, W, True, beta, lik, params, lik.prepare(Y))
        before = float(np.sum(fs.ll))
        ess_w(rng, H, W, ZETA, MU, SIGMA, fs)
        draws.append(W.copy())
        gains.append(float(np.sum(fs.ll)) - before)
    return np.array(draws), np.array(gains)


def _prior_draw(rng) -> np.ndarray:
    return MU[ZETA] + np.einsum("mab,mb->ma", CHOL[ZETA], rng.standard_normal((M, K)))


def _gaussian_move_chain(n_updates: int, seed: int = 0, compiled: bool = True):
    """The same test on the collapsed Gaussian: ``Y`` from the model with ``beta`` and
    ``sigma^2`` drawn afresh (the collapsed likelihood integrates them out); `compiled` false
    runs the NumPy reference block instead of the compiled pass."""
    prior = GaussianPrior()
    rng = np.random.default_rng(seed)
    X, Z = rng.standard_normal((N, K)), (rng.random((N, K)) < 0.8).astype(float)
    H = X * Z
    W = _prior_draw(rng)
    draws, gains = [], []
    for _ in range(n_updates):
        Phi = feature_map(H, W, False)
        sigma2 = prior.b0 / rng.gamma(prior.a0, size=J)
        beta = rng.standard_normal((2 * M, J)) * np.sqrt(sigma2)
        Y = Phi @ beta + np.sqrt(sigma2) * rng.standard_normal((N, J))
        cache = build_cache(Phi, Y, prior)
        before = float(cache.state[1])
        _, _, after = ess_frequencies_collapsed(
            rng, H, W, ZETA, MU, SIGMA, Phi, Y, cache, prior, compiled=compiled
        )
        draws.append(W.copy())
        gains.append(after - before)
    return np.array(draws), np.array(gains)


def _move_z_scores(name: str, n_updates: int, **kw) -> dict[str, float]:
    """The z-scores of the successive-conditional chain's test functions (burn-in 100 dropped):
    the moments of ``W`` and the updates' log-likelihood gain."""
    if name == "gaussian":
        draws, gains = _gaussian_move_chain(n_updates, **kw)
    else:
        draws, gains = _count_move_chain(name, n_updates, **kw)
    z = _z_scores(draws[100:])
    mean, se = batch_mean_se(gains[100:])
    z["gain"] = mean / se
    return z


N_UPDATES = 3000
FAMILIES = ["gaussian", "negbinom", "poisson", "bernoulli", "binomial", "multinomial", "negbinom+offset"]


@pytest.mark.slow
@pytest.mark.parametrize("name", FAMILIES)
def test_the_move_gets_it_right(name):
    z = _move_z_scores(name, N_UPDATES)
    print(name, {k: round(float(v), 1) for k, v in z.items()})
    assert max(abs(v) for v in z.values()) < 4.0, z


class _OffCentre:
    """Wrong: the ellipse around 0 instead of the component's mean (the move then keeps
    ``N(0, Sigma_k) L`` invariant)."""

    def __init__(self, real):
        self.real = real

    def __call__(self, rng, W, zeta, mu, Sigma, block):
        return self.real(rng, W, zeta, np.zeros_like(mu), Sigma, block)


class _HalfSlice:
    """Wrong: the slice level at ``log L + 2 log u``, which samples ``N(mu_k, Sigma_k) L^(1/2)``
    (as if the likelihood ratio of the acceptance were square-rooted)."""

    def __init__(self, block):
        self.block = block

    @property
    def ll(self):
        return self.block.ll

    def evaluate(self, m, w, floor=-math.inf):
        # floor = ll + log u; the wrong level ll + 2 log u is met when (ll' + ll) / 2 > floor.
        ll_new, pieces = self.block.evaluate(m, w)
        return 0.5 * (ll_new + self.block.ll), (ll_new, pieces)

    def commit(self, m, w, pieces):
        self.block.commit(m, w, pieces[1])


@pytest.mark.slow
@pytest.mark.parametrize("wrong", ["off-centre", "half-slice"])
@pytest.mark.parametrize("name", ["gaussian", "negbinom"])
def test_the_move_test_has_power(monkeypatch, name, wrong):
    """Each wrong move must be seen beyond 6 standard errors (the test's bound is 4)."""
    real = frequency_moves.ess_frequencies
    if wrong == "off-centre":
        fake = _OffCentre(real)
    else:

        def fake(rng, W, zeta, mu, Sigma, block):
            return real(rng, W, zeta, mu, Sigma, _HalfSlice(block))

    module = "collapsed_frequencies" if name == "gaussian" else "factorised_state"
    monkeypatch.setattr(f"ibp_rflvm.targets.{module}.ess_frequencies", fake)
    # The Gaussian's compiled pass has no Python loop to swap: the wrong moves run through the
    # NumPy reference block, which tests/targets/test_frequency_kernels.py holds the pass to.
    kw = {"compiled": False} if name == "gaussian" else {}
    z = _move_z_scores(name, N_UPDATES // 2, **kw)
    print(name, wrong, {k: round(float(v), 1) for k, v in z.items()})
    assert max(abs(v) for v in z.values()) > 6.0, z


@pytest.mark.slow
def test_the_move_test_sees_an_off_centre_compiled_pass(monkeypatch):
    """The compiled Gaussian pass itself, given the wrong centre, fails the test too."""
    from ibp_rflvm.targets import collapsed_frequencies

    real = collapsed_frequencies.ess_pass

    def off_centre(rng, W, zeta, mu, chols, blocks):
        return real(rng, W, zeta, np.zeros_like(mu), chols, blocks)

    monkeypatch.setattr(collapsed_frequencies, "ess_pass", off_centre)
    z = _move_z_scores("gaussian", N_UPDATES // 2)
    print("gaussian compiled off-centre", {k: round(float(v), 1) for k, v in z.items()})
    assert max(abs(v) for v in z.values()) > 6.0, z


# ------------------------------------------------------------------------------------------
# The bound's screen, and the caches


def _count_state(seed: int, spread: float = 1.0):
    rng = np.random.default_rng(seed)
    n, j = 60, 8
    lik = make_likelihood("negbinom")
    X, Z = rng.standard_normal((n, K)), np.ones((n, K))
    W = MU[ZETA] + spread * rng.standard_normal((M, K))
    beta = rng.standard_normal((2 * M + 1, j))
    Y = rng.negative_binomial(2.0, 0.5, size=(n, j)).astype(float)
    params = LikelihoodParams(beta=beta, r=np.full(j, 2.0))
    return X, Z, W, beta, lik, params, lik.prepare(Y)


def test_the_screen_changes_nothing_and_the_cache_stays_consistent():
    X, Z, W, beta, lik, params, prep = _count_state(3)
    W_a, W_b = W.copy(), W.copy()
    fs_a = FactorisedState(X, Z, W_a, True, beta, lik, params, prep)
    fs_b = FactorisedState(X, Z, W_b, True, beta, lik, params, prep)
    for seed in range(4):
        ev_a = ess_w(np.random.default_rng(seed), X * Z, W_a, ZETA, MU, SIGMA, fs_a, bounded=True)
        ev_b = ess_w(np.random.default_rng(seed), X * Z, W_b, ZETA, MU, SIGMA, fs_b, bounded=False)
        assert ev_a == ev_b
        np.testing.assert_array_equal(W_a, W_b)
        np.testing.assert_array_equal(fs_a.psi, fs_b.psi)
    Phi = feature_map(X * Z, W_a, True)
    np.testing.assert_allclose(fs_a.Phi, Phi, atol=1e-12)
    np.testing.assert_allclose(fs_a.psi, Phi @ beta, atol=1e-10)
    fresh = lik.loglik_rows(Phi @ beta, np.arange(X.shape[0]), params, prep)
    np.testing.assert_allclose(fs_a.ll, fresh, rtol=1e-10)


def test_the_collapsed_move_carries_the_likelihood_of_a_fresh_cache():
    rng = np.random.default_rng(4)
    prior = GaussianPrior()
    X, Z = rng.standard_normal((40, K)), np.ones((40, K))
    W = MU[ZETA] + rng.standard_normal((M, K))
    Phi = feature_map(X * Z, W, False)
    Y = rng.standard_normal((40, 5))
    cache = build_cache(Phi, Y, prior)
    _, moved, carried = ess_frequencies_collapsed(rng, X * Z, W, ZETA, MU, SIGMA, Phi, Y, cache, prior)
    assert moved == M
    fresh = build_cache(feature_map(X * Z, W, False), Y, prior)
    np.testing.assert_allclose(Phi, feature_map(X * Z, W, False), atol=1e-12)
    assert carried == pytest.approx(fresh.loglik, rel=1e-9)
    assert cache.state[1] == pytest.approx(fresh.loglik, rel=1e-9)


def test_the_estimator_chooses_and_checks_the_frequency_move():
    from ibp_rflvm import IBPRFLVM, RFLVM
    from ibp_rflvm.state import ModelSpec

    assert ModelSpec().frequency_update == "ess"
    assert IBPRFLVM()._spec().frequency_update == "ess"
    assert RFLVM()._spec().frequency_update == "ess"
    assert IBPRFLVM(sampler="paper")._spec().frequency_update == "mh"  # the paper's sweep, unchanged
    # The device runs the numba sweep's default moves since issue 65.
    assert IBPRFLVM(backend="jax")._spec().frequency_update == "ess"
    assert IBPRFLVM(backend="jax")._spec().scale_move and not IBPRFLVM(sampler="paper")._spec().scale_move
    assert RFLVM(backend="jax", sampler="paper")._spec().frequency_update == "mh"
    assert IBPRFLVM(sampler="paper", frequency_update="ess")._spec().frequency_update == "ess"
    with pytest.raises(ValueError, match="frequency_update"):
        IBPRFLVM(frequency_update="slice")._spec()
    with pytest.raises(ValueError, match="frequency_update"):
        ModelSpec(frequency_update="hmc")
