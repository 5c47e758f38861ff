"""The device likelihoods against the host ones: row log-likelihoods to rounding, and each
``update`` by a joint-distribution ("getting it right", Geweke 2004) test.

The joint test alternates ``y ~ p(y | beta)`` and ``beta ~ update(beta | y)`` with ``Phi`` fixed;
if the update leaves ``p(beta | y)`` invariant, ``beta`` stays distributed as its prior
``N(0, s^2 I)`` (the chain starts from a prior draw, so no burn-in is needed). Each coordinate's
mean and second moment are compared with ``0`` and ``s^2`` by z-scores from batch-means standard
errors; the whole chain runs as one compiled ``lax.scan``.
"""

import math

import numpy as np
import pytest

pytest.importorskip("jax")

from scipy import special, stats  # noqa: E402

from ibp_rflvm.jax_backend import jax  # noqa: E402
from ibp_rflvm.jax_backend.likelihoods import DeviceData  # noqa: E402
from ibp_rflvm.jax_backend.likelihoods_more import for_likelihood  # noqa: E402
from ibp_rflvm.likelihoods import (  # noqa: E402
    BernoulliLikelihood,
    BinomialLikelihood,
    GaussianLikelihood,
    MultinomialLikelihood,
    NegBinomLikelihood,
    PoissonLikelihood,
)
from ibp_rflvm.likelihoods.base import LikelihoodParams  # noqa: E402
from ibp_rflvm.summaries.diagnostics import batch_mean_se  # noqa: E402

jnp = jax.numpy
lax = jax.lax

N_ROWS, N_COLS = 40, 6
N_BATCHES = 40
#: Family-wise level of each joint test: a statistic fails past the Bonferroni quantile of the t
#: distribution with ``N_BATCHES - 1`` degrees of freedom (the batch means' spread estimates the
#: standard error).
FAMILY_ALPHA = 0.01


def _threshold(n_stats: int) -> float:
    return float(stats.t.ppf(1.0 - FAMILY_ALPHA / (2 * n_stats), N_BATCHES - 1))


# --------------------------------------------------------------------------------------------
# row log-likelihoods
# --------------------------------------------------------------------------------------------


def _counts(rng, shape, high=12, missing=0.15):
    Y = rng.integers(0, high, size=shape).astype(float)
    Y[rng.random(shape) < missing] = np.nan
    return Y


def _multinomial_counts(rng):
    Y = _counts(rng, (N_ROWS, N_COLS), high=30)
    Y[0] = np.nan  # nothing observed: likelihood 1
    Y[1, 1:] = np.nan  # one category observed: likelihood 1
    Y[2, :-1] = np.nan  # only the reference observed
    Y[3, -1] = np.nan  # the reference unobserved
    Y[4, 2] = 1e4  # a dominant category (where the host's running total would cancel)
    return Y


def _cases(rng):
    trials = rng.integers(0, 15, size=(N_ROWS, N_COLS)).astype(float)
    Yb = np.floor(rng.random((N_ROWS, N_COLS)) * (trials + 1))
    Yb[rng.random(Yb.shape) < 0.15] = np.nan
    Ybern = (rng.random((N_ROWS, N_COLS)) < 0.4).astype(float)
    Ybern[rng.random(Ybern.shape) < 0.15] = np.nan
    sizes = rng.uniform(0.3, 3.0, N_ROWS)
    r = rng.uniform(0.2, 5.0, N_COLS)
    return {
        "poisson": (PoissonLikelihood(size_factors=sizes), _counts(rng, (N_ROWS, N_COLS)), {}),
        "multinomial": (MultinomialLikelihood(), _multinomial_counts(rng), {}),
        "negbinom": (NegBinomLikelihood(size_factors="total"), _counts(rng, (N_ROWS, N_COLS)), {"r": r}),
        "binomial": (BinomialLikelihood(n_trials=trials), Yb, {}),
        "bernoulli": (BernoulliLikelihood(), Ybern, {}),
    }


@pytest.mark.parametrize("name", ["poisson", "multinomial", "negbinom", "binomial", "bernoulli"])
def test_row_loglik_matches_host(name):
    rng = np.random.default_rng(11)
    lik, Y, params = _cases(rng)[name]
    lik.validate(Y)
    prep = lik.prepare(Y)
    dlik = for_likelihood(lik)
    data = dlik.device_data(lik, prep)
    psi = rng.normal(0.0, 1.5, size=Y.shape)
    psi[:, -1] *= name != "multinomial"  # the multinomial's reference has psi = 0
    params = LikelihoodParams(beta=np.zeros((3, N_COLS)), **params)
    dparams = dlik.device_params(params)
    const = dlik.row_constants(dparams, data)
    for rows in (np.arange(N_ROWS), np.array([3, 0, 17, 4, 1, 2, 39])):
        host = lik.loglik_rows(psi[rows], rows, params, prep)
        dev = np.asarray(dlik.row_loglik(jnp.asarray(psi[rows]), jnp.asarray(rows), const, dparams, data))
        assert dev.dtype == np.float64
        np.testing.assert_allclose(dev, host, rtol=1e-9, atol=1e-12)


def test_for_likelihood_names_the_backend_for_the_gaussian():
    with pytest.raises(ValueError, match="backend='numba'") as err:
        for_likelihood(GaussianLikelihood())
    assert "gaussian" in str(err.value)


# --------------------------------------------------------------------------------------------
# joint-distribution tests of the updates
# --------------------------------------------------------------------------------------------

N, J, L = 30, 3, 4
SCALE = 0.8
#: The joint chain's autocorrelation grows with the ratio of the data's information about
#: ``beta`` to the prior's (in a Gaussian model its lag-1 autocorrelation is ``1 - posterior
#: variance / prior variance``); features scaled by 1/3 keep that ratio near one, so a few
#: thousand iterations give batch means of nearly independent batches.
FEATURE_SCALE = 1.0 / 3.0


def _design(seed=0):
    """A fixed random-feature ``Phi`` (``[cos, sin] / sqrt(M)`` of 2 frequencies in 2-D, and a
    bias column), a fixed unobserved pattern (~15%) and row offsets spanning 4-fold."""
    rng = np.random.default_rng(seed)
    H, W = rng.standard_normal((N, 2)), rng.standard_normal((2, 2))
    proj = H @ W.T
    Phi = np.concatenate([np.cos(proj), np.sin(proj)], axis=1) / math.sqrt(2.0)
    Phi = FEATURE_SCALE * np.concatenate([Phi[:, : L - 1], np.ones((N, 1))], axis=1)
    observed = rng.random((N, J)) > 0.15
    offset = np.log(rng.uniform(0.5, 2.0, N))
    totals = rng.integers(5, 21, N).astype(float)
    return jnp.asarray(Phi), jnp.asarray(observed), jnp.asarray(offset), jnp.asarray(totals)


def _draw_poisson(key, psi, params, totals):
    return jax.random.poisson(key, jnp.exp(psi)).astype(jnp.float64)


def _draw_negbinom(key, psi, params, totals):
    # NB(r, logistic(psi)) as the Gamma-Poisson mixture with mean r e^psi.
    k_g, k_p = jax.random.split(key)
    lam = jax.random.gamma(k_g, jnp.broadcast_to(params.r, psi.shape)) * jnp.exp(psi)
    return jax.random.poisson(k_p, lam).astype(jnp.float64)


def _make_draw_multinomial(observed):
    def draw(key, psi, params, totals):
        # Over each row's observed categories only, n_i fixed (the model conditions on it).
        logits = jnp.where(observed, psi, -jnp.inf)
        p = jax.nn.softmax(logits, axis=1)
        return jax.random.multinomial(key, totals, p).astype(jnp.float64)

    return draw


def _joint_chain(dlik, draw_y, n_iter, seed, design, with_offset, free=J, extra_stats=None):
    """``(draws, number of weights)``: each iteration's weights over ``SCALE``, their squares
    and `extra_stats`; the columns from `free` on stay 0 (the multinomial's reference)."""
    Phi, observed, offset, totals = design
    offset = offset if with_offset else jnp.zeros(N)
    key = jax.random.key(seed)
    k0, k_r, k_chain = jax.random.split(key, 3)
    beta0 = SCALE * jax.random.normal(k0, (L, J))
    beta0 = beta0.at[:, free:].set(0.0)
    r0 = None if extra_stats is None else jax.random.gamma(k_r, jnp.full(J, E0)) / F0
    params = LikelihoodParams(beta=beta0, r=r0)

    @jax.jit
    def run(params, key):
        def step(params, k):
            k_y, k_u = jax.random.split(k)
            psi = Phi @ params.beta + offset[:, None]
            y = jnp.where(observed, draw_y(k_y, psi, params, totals), jnp.nan)
            params = dlik.update(k_u, Phi, params, DeviceData(y, offset))
            b = params.beta[:, :free].ravel() / SCALE
            out = [b, b**2]
            if extra_stats is not None:
                out.append(extra_stats(params))
            return params, jnp.concatenate(out)

        return lax.scan(step, params, jax.random.split(key, n_iter))[1]

    return np.asarray(run(params, k_chain)), free * L


def _z_scores(draws, n_beta, expected_extra=()):
    expected = np.concatenate([np.zeros(n_beta), np.ones(n_beta), np.asarray(expected_extra)])
    z = []
    for col, target in zip(draws.T, expected, strict=True):
        mean, se = batch_mean_se(col, N_BATCHES)
        z.append((mean - target) / se)
    return np.asarray(z)


E0, F0 = 2.0, 2.0


def _run(lik_name, dlik, n_iter, seed=0):
    design = _design()
    if lik_name == "poisson":
        return _joint_chain(dlik, _draw_poisson, n_iter, seed, design, True), ()
    if lik_name == "multinomial":
        return _joint_chain(dlik, _make_draw_multinomial(design[1]), n_iter, seed, design, False, J - 1), ()

    def r_stats(params):
        return jnp.stack([jnp.mean(params.r), jnp.mean(jnp.log(params.r))])

    expected = (E0 / F0, special.digamma(E0) - math.log(F0))
    return _joint_chain(dlik, _draw_negbinom, n_iter, seed, design, True, J, r_stats), expected


def _device(lik_name, prior_scale):
    if lik_name == "poisson":
        return for_likelihood(PoissonLikelihood(prior_scale=prior_scale))
    if lik_name == "multinomial":
        return for_likelihood(MultinomialLikelihood(prior_scale=prior_scale))
    return for_likelihood(NegBinomLikelihood(e0=E0, f0=F0, prior_scale=prior_scale))


#: Iterations of each joint chain (40 batches of 50-75: beyond ten times the weights' integrated
#: autocorrelation times, at most about 5 here; the NB dispersions' about 20) and of the power
#: checks, whose mis-set chains sit tens of standard errors off within a few hundred.
N_ITER = {"poisson": 3000, "multinomial": 3000, "negbinom": 2000}
N_ITER_POWER = 800


@pytest.mark.parametrize("lik_name", ["poisson", "multinomial", "negbinom"])
def test_update_gets_it_right(lik_name):
    (draws, n_beta), extra = _run(lik_name, _device(lik_name, SCALE), N_ITER[lik_name])
    z = _z_scores(draws, n_beta, extra)
    assert np.all(np.abs(z) < _threshold(z.size)), np.round(z, 2)


@pytest.mark.parametrize("lik_name", ["poisson", "multinomial", "negbinom"])
def test_joint_test_has_power(lik_name):
    """The same test with the update's prior scale mis-set must fail: the chain's ``beta`` then
    settles to a narrower law than the prior the data were drawn under."""
    (draws, n_beta), extra = _run(lik_name, _device(lik_name, 0.5 * SCALE), N_ITER_POWER)
    z = _z_scores(draws, n_beta, extra)
    assert np.max(np.abs(z)) > _threshold(z.size), np.round(z, 2)


def test_poisson_start_is_the_laplace_draw():
    """The start runs the first update from the Laplace draw: large counts put the start's
    ``psi`` near ``log y`` at once."""
    rng = np.random.default_rng(3)
    Phi, observed, _, _ = _design()
    Phi = Phi / FEATURE_SCALE
    y = np.where(np.asarray(observed), rng.poisson(500.0, (N, J)), np.nan)
    lik = PoissonLikelihood(prior_scale=10.0)
    prep = lik.prepare(y)
    dlik = for_likelihood(lik)
    data = dlik.device_data(lik, prep)
    params = dlik.start(jax.random.key(0), Phi, dlik.initial(lik, prep, L, J), data)
    assert sorted(params.arrays()) == ["beta"]
    psi = np.asarray(Phi @ params.beta)
    obs = np.asarray(observed)
    assert np.all(np.abs(psi - np.log(np.where(obs, y, 1.0)))[obs] < 0.5)
