"""Joint-distribution ("getting it right", Geweke 2004) test of the whole Gaussian sweep.

Alternate ``Y ~ p(Y | theta)`` and one sweep ``theta ~ T(theta | Y)``. If every step leaves the
posterior invariant, ``theta`` is distributed as the prior, so test functions with known prior
expectations must match within their Monte Carlo error (batch means).
"""

import math
from dataclasses import replace
from typing import NamedTuple

import numpy as np
import pytest
from numba import njit
from scipy import special, stats

from ibp_rflvm import model
from ibp_rflvm.priors import GammaPoisson, IndianBuffet
from ibp_rflvm.priors.gamma_poisson import count_log_ratio, count_prior_ratio, propose_walk, walk_log_q_ratio
from ibp_rflvm.samplers import hmc, ibp, z_prior
from ibp_rflvm.summaries.diagnostics import batch_mean_se

from .samplers.test_ibp import capped_prior_moments
from .samplers.test_ibp_beta import learned_beta_moments

N, J, M = 5, 2, 3
P_W_INSIDE = float(stats.t(df=3).cdf(math.sqrt(1.5)) - stats.t(df=3).cdf(-math.sqrt(1.5)))


def _successive_conditional(spec, n_sweeps, seed=0):
    rng = np.random.default_rng(seed)
    Y = rng.standard_normal((N, J))
    Y[0, 1] = np.nan  # one unobserved entry exercises the data augmentation
    data = model.Data.from_array(Y)
    state = model.init_state(rng, data, spec)
    keys = ("alpha", "eta", "k_plus", "x2", "logsig", "beta2", "w_in", "births", "deaths", "transfers")
    keys += ("absorbs", "ibp_beta", "log_ibp_beta", "z_row")
    out = {k: [] for k in keys}
    for _ in range(n_sweeps):
        Phi = state.phi(spec.bias)
        beta, sigma2 = state.params.beta, state.params.sigma2
        fresh = Phi @ beta + np.sqrt(sigma2) * rng.standard_normal((N, J))
        Y_new = np.where(data.observed, fresh, np.nan)
        data = model.Data.from_array(Y_new)
        state = replace(state, Y=np.where(data.observed, fresh, state.Y))
        state, info = model.sweep(rng, state, data, spec)
        out["births"].append(info.births)
        out["deaths"].append(info.deaths)
        out["transfers"].append(info.transfers)
        out["absorbs"].append(info.absorbs)
        out["alpha"].append(state.alpha)
        ibp_beta = state.z_state.get("ibp_beta", 1.0)
        out["ibp_beta"].append(ibp_beta)
        out["log_ibp_beta"].append(math.log(ibp_beta))
        out["eta"].append(state.eta)
        out["k_plus"].append(state.k_plus)
        out["z_row"].append(state.Z.sum(axis=1).mean())
        out["x2"].append(np.sum(state.X**2 - 1.0))
        out["logsig"].append(np.mean(np.log(sigma2)))
        beta, sigma2 = state.params.beta, state.params.sigma2
        out["beta2"].append(np.sum(beta**2 / sigma2 - 1.0))
        out["w_in"].append(np.sum((np.abs(state.W) < 1.0) - P_W_INSIDE))
    return {k: np.asarray(v[500:], dtype=float) for k, v in out.items()}


def _expected(spec):
    a0, b0 = spec.gaussian_prior.a0, spec.gaussian_prior.b0
    exp = {
        "eta": spec.eta_prior[0] / spec.eta_prior[1],
        "x2": 0.0,
        "logsig": math.log(b0) - special.digamma(a0),
        "beta2": 0.0,
        "w_in": 0.0,
    }
    if isinstance(spec.z_prior, GammaPoisson):
        exp["alpha"] = spec.alpha_prior[0] / spec.alpha_prior[1]
        exp["k_plus"] = exp["alpha"] * math.log1p(N / spec.z_prior.rate)
        exp["z_row"] = exp["alpha"] / spec.z_prior.rate
    elif spec.ibp and spec.z_prior.learned_traces:
        exp.update(learned_beta_moments(spec.alpha_prior, spec.z_prior.beta_prior, N))
    elif spec.ibp and spec.max_dims is not None:
        exp["alpha"], exp["k_plus"] = capped_prior_moments(*spec.alpha_prior, N, spec.max_dims)
    elif spec.ibp:
        mean_alpha = spec.alpha_prior[0] / spec.alpha_prior[1]
        exp["alpha"] = mean_alpha
        exp["k_plus"] = mean_alpha * ibp.harmonic(N)
    return exp


def _assert_prior_moments(spec, draws: dict) -> None:
    """Every statistic's chain mean within 4 Monte Carlo standard errors of its prior value."""
    failures = []
    for name, target in _expected(spec).items():
        mean, se = batch_mean_se(draws[name])
        if abs(mean - target) > 4.0 * se:
            failures.append(f"{name}: chain {mean:.4f} prior {target:.4f} (MCSE {se:.4f})")
    assert not failures, failures


@pytest.mark.slow
@pytest.mark.parametrize(
    ("ibp_on", "max_dims", "pairs_per_dim"),
    [(True, None, 1.0), (False, None, 1.0), (True, 2, 1.0), (True, None, 0.01)],
    ids=["ibp-rflvm", "dense-rflvm", "ibp-rflvm-capped", "ibp-rflvm-one-pair-per-sweep"],
)
def test_gaussian_sweep_gets_it_right(ibp_on, max_dims, pairs_per_dim):
    # pairs_per_dim=0.01: the pair moves visit one aligned pair per sweep, a random one of the
    # several that M = 3 frequencies usually give, so the subset draw is part of the test.
    spec = model.ModelSpec(
        n_frequencies=M,
        z_prior=IndianBuffet() if ibp_on else None,
        n_dims=2,
        alpha_prior=(2.0, 2.0),
        max_dims=max_dims,
        pairs_per_dim=pairs_per_dim,
    )
    draws = _successive_conditional(spec, 8000 if ibp_on else 5000)
    if ibp_on:  # the default sweep's dimension moves must have run for the test to cover them
        assert draws["births"].sum() > 500 and draws["deaths"].sum() > 500
        assert draws["transfers"].sum() > 500 and draws["absorbs"].sum() > 500
    if max_dims is not None:
        assert draws["k_plus"].max() <= max_dims
    _assert_prior_moments(spec, draws)


@pytest.mark.slow
def test_gaussian_sweep_gets_it_right_with_beta_learned():
    """The whole default sweep under the two-parameter IBP with ``beta`` learned (no slice step:
    the exchangeable moves update ``Z`` alone), alpha and beta both drawn from their priors."""
    spec = model.ModelSpec(
        n_frequencies=M, n_dims=2, alpha_prior=(2.0, 2.0), z_prior=IndianBuffet(None, (2.0, 2.0))
    )
    draws = _successive_conditional(spec, 8000)
    assert draws["births"].sum() > 500 and draws["deaths"].sum() > 500
    assert draws["transfers"].sum() > 500 and draws["absorbs"].sum() > 500
    _assert_prior_moments(spec, draws)


@pytest.mark.slow
def test_gaussian_sweep_gets_it_right_under_gamma_poisson():
    """The whole default sweep with the gamma-Poisson prior on ``Z`` (counts; no slice step; the
    pair moves carry counts): ``alpha ~ Gamma(2, 2)`` and ``K+ | alpha ~ Poisson(alpha log(1 +
    N))`` come back, and a row's total count ``sum_k z_nk`` has the prior mean ``E[alpha] = 1``."""
    spec = model.ModelSpec(n_frequencies=M, n_dims=2, alpha_prior=(2.0, 2.0), z_prior="gamma-poisson")
    draws = _successive_conditional(spec, 8000)
    assert draws["births"].sum() > 500 and draws["deaths"].sum() > 500
    assert draws["transfers"].sum() > 500 and draws["absorbs"].sum() > 500
    _assert_prior_moments(spec, draws)


@pytest.mark.slow
def test_gaussian_sweep_gets_it_right_with_the_scale_move():
    """The default IBP sweep with the scale move of :mod:`ibp_rflvm.samplers.scale` before the
    mixture's step: the move integrates the components out, and the step after it draws them,
    so ``X`` (``x2``), the frequencies (``w_in``) and everything downstream keep their prior."""
    spec = model.ModelSpec(n_frequencies=M, n_dims=2, alpha_prior=(2.0, 2.0), scale_move=True)
    draws = _successive_conditional(spec, 8000)
    assert draws["births"].sum() > 500 and draws["deaths"].sum() > 500
    _assert_prior_moments(spec, draws)


#: Four leapfrog steps of 0.5: the move accepts about half its trajectories on this model.
HMC_SETTINGS = {"hmc_leapfrog": 4, "hmc_steps": (0.5, 0.5)}


@pytest.mark.slow
def test_gaussian_sweep_gets_it_right_with_the_hmc_move():
    """The default sweep with the continuous block's HMC move (:mod:`ibp_rflvm.samplers.hmc`)
    after the frequencies' move: ``X`` (``x2``), the frequencies (``w_in``) and everything
    downstream keep their prior."""
    spec = model.ModelSpec(n_frequencies=M, n_dims=2, alpha_prior=(2.0, 2.0), **HMC_SETTINGS)
    draws = _successive_conditional(spec, 8000)
    _assert_prior_moments(spec, draws)


@pytest.mark.slow
def test_hmc_joint_test_has_power(monkeypatch):
    """An HMC ratio that leaves out the kinetic energies (the classic slip: the trajectory
    is right, the acceptance compares potential energies only) must be seen beyond 6 standard
    errors on ``x2`` or ``w_in`` (the test's bound is 4)."""
    monkeypatch.setattr(hmc, "_kinetic", lambda r_x, r_w: 0.0)
    spec = model.ModelSpec(n_frequencies=M, n_dims=2, alpha_prior=(2.0, 2.0), **HMC_SETTINGS)
    draws = _successive_conditional(spec, 8000)
    z = [abs(batch_mean_se(draws[name])[0]) / batch_mean_se(draws[name])[1] for name in ("x2", "w_in")]
    assert max(z) > 6.0, z


@z_prior.hyper_class
class _NoWalkHyper(NamedTuple):
    rate: float


@njit(cache=False)
def _no_walk_ratio(z_cur, z_new, m_other, n, hyper):
    return count_log_ratio(z_cur, z_new, m_other, n, hyper) - walk_log_q_ratio(z_cur, z_new)


# The gamma-Poisson's compiled questions for the wrong sampler's hyper, but for its log_ratio.
z_prior.register(_NoWalkHyper, propose_walk, _no_walk_ratio, count_prior_ratio)


class _NoWalkRatio(GammaPoisson):
    """A wrong sampler: the count moves' acceptance without the walk's proposal ratio."""

    def __init__(self, rate=1.0):
        super().__init__(rate)
        self.hyper = _NoWalkHyper(self.rate)


@pytest.mark.slow
def test_gamma_poisson_joint_test_has_power():
    """Leaving out the walk's ``q(0 | 1) / q(1 | 0) = 1/2`` must be seen beyond 6 standard errors
    (the test's bound is 4) on ``K+``, ``alpha`` or a row's total, as long as the test runs."""
    spec = model.ModelSpec(n_frequencies=M, n_dims=2, alpha_prior=(2.0, 2.0), z_prior=_NoWalkRatio())
    draws = _successive_conditional(spec, 8000)
    expected = _expected(spec)
    z = []
    for name in ("k_plus", "alpha", "z_row"):
        mean, se = batch_mean_se(draws[name])
        z.append((mean - expected[name]) / se)
    assert max(z) > 6.0, z
