"""The bound that rejects frequency proposals without scoring them
(:mod:`ibp_rflvm.targets.frequency_bound`), and the likelihood derivatives it is made from."""

import functools

import numpy as np
import pytest
from scipy.special import expit

from ibp_rflvm import model
from ibp_rflvm.likelihoods import make_likelihood
from ibp_rflvm.likelihoods.base import LikelihoodParams
from ibp_rflvm.mcmc.driver import run_chain
from ibp_rflvm.targets import factorised_state as factorised
from ibp_rflvm.targets.frequency_bound import FrequencyBound

_ORIGINAL_UPDATE_W = factorised.update_w  # before any test patches it
_ORIGINAL_ESS_W = factorised.ess_w
CASES = [
    ("negbinom", False), ("negbinom", True), ("binomial", False), ("bernoulli", False), ("poisson", True)
]


def _data(name: str, rng, n: int = 30, j: int = 7, offsets: bool = False):
    hyper = {"n_trials": 5} if name == "binomial" else {}
    if offsets:
        hyper["size_factors"] = rng.uniform(0.5, 2.0, n)
    lik = make_likelihood(name, **hyper)
    Y = rng.binomial(1 if name == "bernoulli" else 5, 0.4, (n, j)).astype(float)
    Y[rng.random((n, j)) < 0.15] = np.nan
    return lik, model.Data.from_array(Y, lik)


def _params(name, rng, j):
    return {"r": rng.gamma(2.0, 1.0, j)} if name == "negbinom" else {}


@pytest.mark.parametrize(("name", "offsets"), CASES)
def test_psi_derivatives_are_those_of_the_entry_log_densities(name, offsets):
    """``g, h``: central differences of ``logpdf_entries`` at every observed entry, 0 elsewhere;
    ``t``: the Taylor remainder of every entry stays below ``t |d|^3`` for steps up to 8."""
    rng = np.random.default_rng(1)
    lik, data = _data(name, rng, offsets=offsets)
    n, j = data.Y.shape
    psi = rng.normal(0.0, 2.0, (n, j))
    psi[0, 0], psi[1, 1] = 30.0, -30.0  # far tails: no overflow, no cancellation
    params = LikelihoodParams(beta=np.zeros((1, j)), **_params(name, rng, j))  # beta: not read here
    rows = np.arange(n)
    g, h, t = lik.psi_derivatives(psi, rows, params, data.prep)
    obs = data.observed
    for arr in (g, h, t):
        assert np.all(arr[~obs] == 0.0)
    assert np.all(h[obs] >= 0.0) and np.all(t[obs] >= 0.0)
    ii, jj = np.nonzero(obs)
    y = data.Y[ii, jj]

    def logpdf(x):
        return lik.logpdf_entries(y, x, ii, jj, params, data.prep, rows)

    eps = 1e-4
    up = np.zeros((n, j))
    up[ii, jj] = eps
    f0, fp, fm = logpdf(psi), logpdf(psi + up), logpdf(psi - up)
    # Differences lose digits to the O(y) log-densities: errors are compared in units of 1 + y.
    scale = 1.0 + np.abs(y)
    assert np.max(np.abs(g[ii, jj] - (fp - fm) / (2 * eps)) / scale) < 1e-6
    assert np.max(np.abs(h[ii, jj] + (fp - 2 * f0 + fm) / eps**2) / scale) < 1e-3
    for step in (1e-2, 0.3, 1.0, 3.0, 8.0):
        for sign in (1.0, -1.0):
            d = np.zeros((n, j))
            d[ii, jj] = sign * step * rng.random(ii.size)
            rest = logpdf(psi + d) - (f0 + g[ii, jj] * d[ii, jj] - 0.5 * h[ii, jj] * d[ii, jj] ** 2)
            room = t[ii, jj] * np.abs(d[ii, jj]) ** 3 - rest
            assert np.min(room / scale) > -1e-9, (step, sign, np.min(room))


def _state(name, offsets, rng, n=40, j=9, M=4, K=2, beta_sd=0.8):
    lik, data = _data(name, rng, n=n, j=j, offsets=offsets)
    X, Z = rng.standard_normal((n, K)), (rng.random((n, K)) < 0.7).astype(float)
    W = rng.standard_normal((M, K))
    params = LikelihoodParams(beta=rng.normal(0, beta_sd, (2 * M + 1, j)), **_params(name, rng, j))
    fs = factorised.FactorisedState(X, Z, W, True, params.beta, lik, params, data.prep)
    return fs, X * Z, W


@pytest.mark.parametrize(("name", "offsets"), CASES)
def test_bound_is_above_every_exact_change(name, offsets):
    """For proposals of every size, from a small step to a fresh draw, ``B >= D``; for a small
    step the bound is the change to second order."""
    rng = np.random.default_rng(2)
    M = 4
    for beta_sd in (0.3, 0.8, 2.0):
        fs, H, W = _state(name, offsets, rng, M=M, beta_sd=beta_sd)
        bound = FrequencyBound(fs, M)
        ll0 = fs.ll.sum()
        for m in range(M):
            for step in (1e-3, 0.1, 1.0, 3.0):
                w_new = W[m] + step * rng.standard_normal(W.shape[1])
                D = factorised.frequency_columns(H, w_new, M) - fs.Phi[:, [m, m + M]]
                psi_new = fs.psi + D @ fs.beta[[m, m + M]]
                exact = fs.lik.loglik_rows(psi_new, fs.all_rows, fs.params, fs.prep).sum() - ll0
                B, _ = bound.bound(m, D)
                assert B >= exact, (beta_sd, m, step, B, exact)
                if step < 0.01:  # second order in the step: the cubic term is negligible
                    assert B - exact < 1e-4 * (1.0 + abs(exact)), (B, exact)


def test_bounded_update_gives_the_unbounded_chain_bit_for_bit():
    """Both updates from the same state and seed, many times over: the same frequencies, ``psi``
    and log-likelihoods, with acceptances on the way; and the bound spares most exact passes."""
    rng = np.random.default_rng(4)
    fs_a, H, W_a = _state("negbinom", True, rng, n=60, j=12, M=6, beta_sd=0.5)
    fs_b, _, W_b = _state("negbinom", True, np.random.default_rng(4), n=60, j=12, M=6, beta_sd=0.5)
    zeta, mu, Sigma = np.zeros(6, dtype=np.int64), np.zeros((1, 2)), np.eye(2)[None] * 0.6
    calls = {"a": 0, "b": 0}

    def counting(fs, key):
        inner = fs.lik.loglik_rows

        def wrapped(*args, **kw):
            calls[key] += 1
            return inner(*args, **kw)

        fs.lik = _Wrap(fs.lik, wrapped)

    counting(fs_a, "a")
    counting(fs_b, "b")
    total = 0
    for seed in range(60):
        acc_a = factorised.update_w(np.random.default_rng(seed), H, W_a, zeta, mu, Sigma, fs_a, bounded=True)
        acc_b = factorised.update_w(np.random.default_rng(seed), H, W_b, zeta, mu, Sigma, fs_b, bounded=False)
        assert acc_a == acc_b
        total += acc_a
        np.testing.assert_array_equal(W_a, W_b)
        np.testing.assert_array_equal(fs_a.psi, fs_b.psi)
        np.testing.assert_array_equal(fs_a.ll, fs_b.ll)
    assert total >= 10  # acceptances happened, so the bound's refresh after one is covered
    assert calls["b"] == 60 * 6
    assert calls["a"] < 0.5 * calls["b"], calls


class _Wrap:
    """A likelihood whose ``loglik_rows`` is counted; everything else is the wrapped one's."""

    def __init__(self, lik, loglik_rows):
        self._lik, self.loglik_rows = lik, loglik_rows

    def __getattr__(self, name):
        return getattr(self._lik, name)


@pytest.mark.parametrize("update", ["mh", "ess"])
@pytest.mark.parametrize("name", ["negbinom", "poisson", "binomial"])
def test_whole_chain_is_the_same_without_the_bound(name, update, monkeypatch):
    """The default sweep (dimension moves, size factors off) with and without the bound, under
    either frequency move (the elliptical slice search screens its points by the same bound)."""
    rng = np.random.default_rng(5)
    hyper = {"n_trials": 6} if name == "binomial" else {}
    lik = make_likelihood(name, **hyper)
    psi = rng.normal(0.0, 1.0, (40, 10))
    Y = rng.binomial(6, expit(psi)).astype(float)
    Y[rng.random(Y.shape) < 0.1] = np.nan
    data = model.Data.from_array(Y, lik)
    spec = model.ModelSpec(n_frequencies=6, n_dims=3, likelihood=lik, bias=True, frequency_update=update)
    runs = []
    for bounded in (True, False):
        # The view calls the names it imported into ibp_rflvm.targets.factorised.
        monkeypatch.setattr(
            "ibp_rflvm.targets.factorised.update_w", functools.partial(_ORIGINAL_UPDATE_W, bounded=bounded)
        )
        monkeypatch.setattr(
            "ibp_rflvm.targets.factorised.ess_w", functools.partial(_ORIGINAL_ESS_W, bounded=bounded)
        )
        runs.append(run_chain(np.random.default_rng(3), data, spec, 12, 2))
    a, b = runs
    for key in ("X", "Z", "W", "pi", "mu", "Sigma"):
        np.testing.assert_array_equal(getattr(a.state, key), getattr(b.state, key), err_msg=key)
    assert a.record.loglik == b.record.loglik
    for key, value in a.state.params.arrays().items():
        np.testing.assert_array_equal(value, b.state.params.arrays()[key], err_msg=key)


def test_likelihoods_without_derivatives_use_the_exact_pass():
    assert not make_likelihood("multinomial").has_psi_derivatives
    assert make_likelihood("negbinom").has_psi_derivatives and make_likelihood("poisson").has_psi_derivatives
