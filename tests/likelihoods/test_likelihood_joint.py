"""Joint-distribution ("getting it right", Geweke 2004) tests of the sweep with each count likelihood.

Alternate ``Y ~ p(Y | theta)`` and one sweep ``theta ~ T(theta | Y)``. If every step leaves the
posterior invariant, ``theta`` is distributed as the prior, so test functions with known prior
expectations must match within their Monte Carlo error (batch means). Each run keeps one entry
unobserved, so the masked paths are exercised too.
"""

import math

import numpy as np
import pytest
from scipy import special
from scipy.special import expit

from ibp_rflvm import model
from ibp_rflvm.likelihoods import make_likelihood
from ibp_rflvm.priors import IndianBuffet, make_prior
from ibp_rflvm.samplers import ibp
from ibp_rflvm.summaries.diagnostics import batch_mean_se

from ..samplers.test_ibp import capped_prior_moments
from ..samplers.test_ibp_beta import learned_beta_moments
from ..test_joint_distribution import P_W_INSIDE

N, J, M = 6, 3, 3
SCALE = 0.7  # prior sd of beta: keeps counts small
# r_j ~ Gamma(2, 2) (mean 1, mostly 0.2-3): the NB's PG shapes b = y + r fall where polyagamma's
# default was biased (0.3 < b < 8; issue 29). 60 trials put the binomial's shapes in the large-b
# series regime of draw_pg (formerly polyagamma's normal approximation above b = 50).
E0, F0 = 2.0, 2.0
N_TRIALS = 3
MANY_TRIALS = 60
ROW_TOTAL = 3
# Per-row size factors spanning 6-fold, fixed across the run (the offsets are data constants).
SIZE_FACTORS = np.array([0.5, 1.0, 3.0, 0.7, 1.5, 2.0])


def _draw_negbinom(rng, psi, params, observed):
    r = np.broadcast_to(params.r, psi.shape)
    # numpy's NB counts failures with success probability 1 - p, so its mean is r p / (1 - p).
    return rng.negative_binomial(r, expit(-psi)).astype(float)


def _draw_poisson(rng, psi, params, observed):
    return rng.poisson(np.exp(psi)).astype(float)


def _draw_bernoulli(rng, psi, params, observed):
    return (rng.random(psi.shape) < expit(psi)).astype(float)


def _draw_binomial(rng, psi, params, observed):
    return rng.binomial(N_TRIALS, expit(psi)).astype(float)


def _draw_binomial_many(rng, psi, params, observed):
    return rng.binomial(MANY_TRIALS, expit(psi)).astype(float)


def _draw_multinomial(rng, psi, params, observed):
    Y = np.zeros(psi.shape)
    for i in range(psi.shape[0]):  # test code: a handful of rows
        cats = np.flatnonzero(observed[i])
        p = np.exp(psi[i, cats] - psi[i, cats].max())
        Y[i, cats] = rng.multinomial(ROW_TOTAL, p / p.sum())
    return Y


CASES = {
    "negbinom": ({"e0": E0, "f0": F0, "prior_scale": SCALE}, _draw_negbinom),
    "poisson": ({"prior_scale": SCALE}, _draw_poisson),
    "bernoulli": ({"prior_scale": SCALE}, _draw_bernoulli),
    "binomial": ({"n_trials": N_TRIALS, "prior_scale": SCALE}, _draw_binomial),
    "binomial+many": ({"n_trials": MANY_TRIALS, "prior_scale": SCALE}, _draw_binomial_many),
    "multinomial": ({"prior_scale": SCALE}, _draw_multinomial),
    "negbinom+offset": (
        {"e0": E0, "f0": F0, "prior_scale": SCALE, "size_factors": SIZE_FACTORS},
        _draw_negbinom,
    ),
    "poisson+offset": ({"prior_scale": SCALE, "size_factors": SIZE_FACTORS}, _draw_poisson),
}


def _z_prior(name, beta_prior):
    return make_prior(name) if beta_prior is None else IndianBuffet(None, beta_prior)


def _successive_conditional(
    name,
    ibp_on,
    n_sweeps,
    seed=0,
    burn=300,
    max_dims=None,
    beta_prior=None,
    backend="numba",
    z_prior="ibp",
    **settings,
):
    hyper, draw = CASES[name]
    name = name.split("+")[0]
    lik = make_likelihood(name, **hyper)
    offset = np.log(hyper["size_factors"])[:, None] if "size_factors" in hyper else 0.0
    spec = model.ModelSpec(
        n_frequencies=M,
        n_dims=2,
        alpha_prior=(2.0, 2.0),
        bias=True,
        likelihood=lik,
        max_dims=max_dims,
        backend=backend,
        z_prior=_z_prior(z_prior, beta_prior) if ibp_on else None,
        **settings,
    )
    rng = np.random.default_rng(seed)
    observed = np.ones((N, J), dtype=bool)
    observed[0, 1] = False
    Y = np.where(observed, 1.0, np.nan)
    data = model.Data.from_array(Y, lik)
    state = model.init_state(rng, data, spec)
    free = J - 1 if name == "multinomial" else J
    keys = ("alpha", "eta", "k_plus", "x2", "w_in", "beta1", "beta2", "r", "logr", "births", "flips")
    keys += ("transfers", "absorbs", "ibp_beta", "log_ibp_beta")
    out = {k: [] for k in keys}
    for _ in range(n_sweeps):
        psi = state.phi(spec.bias) @ state.params.beta + offset
        Y = np.where(observed, draw(rng, psi, state.params, observed), np.nan)
        data = model.Data.from_array(Y, lik)
        state, info = model.sweep(rng, state, data, spec)
        if ibp_on:
            out["births"].append(info.births)
            out["flips"].append(info.flips)
            out["transfers"].append(info.transfers)
            out["absorbs"].append(info.absorbs)
        beta = state.params.beta[:, :free] / SCALE
        out["alpha"].append(state.alpha)
        ibp_beta = state.z_state.get("ibp_beta", 1.0)
        out["ibp_beta"].append(ibp_beta)
        out["log_ibp_beta"].append(math.log(ibp_beta))
        out["eta"].append(state.eta)
        out["k_plus"].append(state.k_plus)
        out["x2"].append(np.sum(state.X**2 - 1.0))
        out["w_in"].append(np.sum((np.abs(state.W) < 1.0) - P_W_INSIDE))
        out["beta1"].append(np.sum(beta))
        out["beta2"].append(np.sum(beta**2 - 1.0))
        if name == "negbinom":
            out["r"].append(np.mean(state.params.r))
            out["logr"].append(np.mean(np.log(state.params.r)))
        if name == "multinomial":
            assert np.all(state.params.beta[:, -1] == 0.0)
    return {k: np.asarray(v[burn:], dtype=float) for k, v in out.items() if v}


def _expected(name, ibp_on, max_dims=None, beta_prior=None, z_prior="ibp"):
    exp = {"eta": 1.0, "x2": 0.0, "w_in": 0.0, "beta1": 0.0, "beta2": 0.0}
    if ibp_on and z_prior == "gamma-poisson":
        exp["alpha"] = 1.0
        exp["k_plus"] = 1.0 * math.log1p(N)
    elif ibp_on and beta_prior is not None:
        exp.update(learned_beta_moments((2.0, 2.0), beta_prior, N))
    elif ibp_on and max_dims is not None:
        exp["alpha"], exp["k_plus"] = capped_prior_moments(2.0, 2.0, N, max_dims)
    elif ibp_on:
        exp["alpha"] = 1.0
        exp["k_plus"] = 1.0 * ibp.harmonic(N)
    if name == "negbinom":
        exp["r"] = E0 / F0
        exp["logr"] = special.digamma(E0) - math.log(F0)
    return exp


def _check(draws, expected):
    failures, report = [], []
    for key, target in expected.items():
        mean, se = batch_mean_se(draws[key])
        report.append(f"{key}: {mean:.3f} vs {target:.3f} (MCSE {se:.3f})")
        if abs(mean - target) > 4.0 * se:
            failures.append(report[-1])
    assert not failures, failures
    return report


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "ibp_on", "n_sweeps"),
    [
        ("negbinom", True, 4000),
        ("negbinom", False, 3000),
        ("poisson", True, 4000),
        ("poisson", False, 3000),
        ("bernoulli", True, 4000),
        ("binomial", True, 4000),
        ("binomial+many", True, 4000),
        ("multinomial", True, 4000),
        # 12,000 sweeps: at 4,000 the chain of seed 0 under issue 29's exact PG draws sat 4.2 MCSE
        # off on w_in (the frequencies; 0.9 when continued to 12,000, seeds 1-3 under 2.1 at
        # 4,000): the batch-means MCSE of this slower-mixing case needs the longer run.
        ("negbinom+offset", True, 12000),
        ("poisson+offset", True, 4000),
    ],
)
def test_count_sweep_gets_it_right(name, ibp_on, n_sweeps):
    _run_and_check(name, ibp_on, n_sweeps)


@pytest.mark.slow
def test_capped_count_sweep_gets_it_right():
    """The cap on K+ (max_dims) on the factorised path: the joint prior conditioned on K+ <= 2.

    12,000 sweeps: at 4,000, once shapes from 9 on came from the eighth-order series (stop 35; 6%
    of this chain's NB shapes), seed 0 sat 4.02 MCSE off on x2 (the latent second moment; 1.64
    when run to 12,000, seeds 1-3 at 4,000 under 2.6 on every statistic), as the offset case above.
    """
    _run_and_check("negbinom", True, 12000, max_dims=2)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "n_sweeps"), [("negbinom", 12000), ("poisson", 4000)])
def test_count_sweep_gets_it_right_with_beta_learned(name, n_sweeps):
    """The two-parameter IBP with ``beta`` learned (exchangeable moves only, no slice step).

    Negative binomial at 12,000 sweeps: with the frequencies moved by elliptical slice sampling
    (issue 56), seed 0 at 4,000 sat 4.0 MCSE off on ``log r`` (1.3 when run to 12,000, every
    statistic under 2; seeds 1 and 2 at 4,000 passed, ``log r`` at 1.6 and 0.6), as the offset
    and capped cases above."""
    _run_and_check(name, True, n_sweeps, beta_prior=(2.0, 2.0))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["negbinom", "poisson+offset", "bernoulli"])
def test_count_sweep_gets_it_right_with_the_hmc_move(name):
    """The continuous block's HMC move given the weights (:mod:`ibp_rflvm.samplers.hmc`), its
    gradient from each likelihood's derivatives in the linear predictor (offsets included)."""
    _run_and_check(name, True, 4000, hmc_leapfrog=4, hmc_steps=(0.3, 0.3))


@pytest.mark.slow
def test_count_sweep_gets_it_right_under_gamma_poisson():
    """The negative binomial sweep with the gamma-Poisson prior on ``Z`` (counts in ``Z``)."""
    _run_and_check("negbinom", True, 4000, z_prior="gamma-poisson")


def _run_and_check(
    name, ibp_on, n_sweeps, max_dims=None, beta_prior=None, backend="numba", seed=0, z_prior="ibp", **settings
):
    draws = _successive_conditional(
        name,
        ibp_on,
        n_sweeps,
        seed=seed,
        max_dims=max_dims,
        beta_prior=beta_prior,
        backend=backend,
        z_prior=z_prior,
        **settings,
    )
    if ibp_on:  # the default sweep's dimension moves must have run for the test to cover them
        assert draws["births"].sum() > 300 and draws["flips"].sum() > 300
        assert draws["transfers"].sum() > 300 and draws["absorbs"].sum() > 300
    if max_dims is not None:
        assert draws["k_plus"].max() <= max_dims
    expected = _expected(name.split("+")[0], ibp_on, max_dims, beta_prior, z_prior)
    report = _check({k: draws[k] for k in expected}, expected)
    print(name, "ibp" if ibp_on else "dense", "; ".join(report))
