"""The count likelihood plug-ins: exact densities, input errors, masking, reproducibility, extremes."""

import numpy as np
import pytest
from scipy import stats
from scipy.special import expit, logsumexp

from ibp_rflvm import IBPRFLVM, RFLVM, model
from ibp_rflvm.likelihoods import REGISTRY, make_likelihood
from ibp_rflvm.likelihoods.base import LikelihoodParams

NAMES = ["negbinom", "poisson", "multinomial", "bernoulli", "binomial"]
HYPER = {"binomial": {"n_trials": 4}}


def _lik(name, **extra):
    return make_likelihood(name, **{**HYPER.get(name, {}), **extra})


def _counts(name, rng, shape, n_trials=4):
    if name == "bernoulli":
        return (rng.random(shape) < 0.4).astype(float)
    if name == "binomial":
        return rng.binomial(n_trials, 0.3, size=shape).astype(float)
    return rng.poisson(2.0, size=shape).astype(float)


def _params(name, rng, L, J):
    beta = rng.standard_normal((L, J))
    if name == "multinomial":
        beta[:, -1] = 0.0
    if name == "negbinom":
        return LikelihoodParams(beta=beta, r=rng.gamma(2.0, 1.0, size=J))
    return LikelihoodParams(beta=beta)


def _scipy_entry_logpmf(name, Y, psi, params, n_trials):
    if name == "negbinom":
        return stats.nbinom.logpmf(Y, params.r[None, :], expit(-psi))
    if name == "poisson":
        return stats.poisson.logpmf(Y, np.exp(psi))
    if name == "bernoulli":
        return stats.bernoulli.logpmf(Y, expit(psi))
    return stats.binom.logpmf(Y, n_trials, expit(psi))


def test_registry_has_every_count_likelihood():
    assert set(NAMES) <= set(REGISTRY)
    for name in NAMES:
        lik = _lik(name)
        assert lik.name == name and not lik.collapsed and lik.default_bias and lik.kind == "counts"


@pytest.mark.parametrize("name", NAMES)
def test_loglik_rows_is_the_exact_log_likelihood_of_observed_entries(name):
    rng = np.random.default_rng(0)
    N, J, L = 7, 5, 4
    Y = _counts(name, rng, (N, J))
    Y[rng.random((N, J)) < 0.25] = np.nan
    Y[0, :] = np.nan
    Y[0, 2] = 1.0  # a row with a single observed category
    lik = _lik(name)
    prep = lik.prepare(Y)
    params = _params(name, rng, L, J)
    psi = rng.standard_normal((N, L)) @ params.beta
    rows = np.array([3, 0, 6, 1])
    got = lik.loglik_rows(psi[rows], rows, params, prep)
    obs = ~np.isnan(Y)
    if name == "multinomial":
        expected = []
        for i in rows:
            c = obs[i]
            p = np.exp(psi[i, c] - logsumexp(psi[i, c]))
            expected.append(stats.multinomial.logpmf(Y[i, c], Y[i, c].sum(), p))
        expected = np.array(expected)
    else:
        per_entry = _scipy_entry_logpmf(name, np.where(obs, Y, 0.0), psi, params, 4)
        expected = np.where(obs, per_entry, 0.0)[rows].sum(axis=1)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-9)


@pytest.mark.parametrize("name", NAMES)
def test_heldout_densities_and_means(name):
    rng = np.random.default_rng(1)
    n_rows, J, L = 4, 6, 3
    lik = _lik(name)
    params = _params(name, rng, L, J)
    psi_u = rng.standard_normal((n_rows, L)) @ params.beta
    row_pos = np.array([0, 0, 2, 3, 1])
    cols = np.array([1, 4, 0, 5, 3])
    y = _counts(name, rng, row_pos.shape)
    rows = np.array([5, 2, 7, 0])  # training-row index of each psi row
    got = lik.logpdf_entries(y, psi_u, row_pos, cols, params, None, rows=rows)
    mean = lik.mean(psi_u, params, rows=rows)
    psi = psi_u[row_pos, cols]
    if name == "multinomial":
        logp = psi_u - logsumexp(psi_u, axis=1, keepdims=True)
        np.testing.assert_allclose(got, y * logp[row_pos, cols], rtol=1e-12)
        np.testing.assert_allclose(mean, np.exp(logp), rtol=1e-12)
        return
    if name == "negbinom":
        expected = stats.nbinom.logpmf(y, params.r[cols], expit(-psi))
        expected_mean = params.r[None, :] * np.exp(psi_u)
    else:
        expected = _scipy_entry_logpmf(name, y, psi, params, 4)
        means = {"poisson": np.exp(psi_u), "bernoulli": expit(psi_u), "binomial": 4 * expit(psi_u)}
        expected_mean = means[name]
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(mean, expected_mean, rtol=1e-12)


def test_binomial_with_per_entry_trials():
    rng = np.random.default_rng(2)
    N, J = 30, 6
    n = rng.integers(0, 6, size=(N, J))
    Y = rng.binomial(n, 0.4).astype(float)
    lik = make_likelihood("binomial", n_trials=n)
    lik.validate(Y)
    prep = lik.prepare(Y)
    params = _params("binomial", rng, 3, J)
    psi = rng.standard_normal((N, 3)) @ params.beta
    ll = lik.loglik_rows(psi, np.arange(N), params, prep)
    np.testing.assert_allclose(ll, stats.binom.logpmf(Y, n, expit(psi)).sum(axis=1), rtol=1e-10)
    rows = np.array([4, 9])
    np.testing.assert_allclose(lik.mean(psi[rows], params, rows=rows), n[rows] * expit(psi[rows]))
    pos, cols = np.array([0, 1]), np.array([1, 1])
    got = lik.logpdf_entries(Y[rows, 1], psi[rows], pos, cols, params, prep, rows=rows)
    np.testing.assert_allclose(got, stats.binom.logpmf(Y[rows, 1], n[rows, 1], expit(psi[rows, 1])))
    # Through the estimator: per-entry trials reach the held-out densities and the perplexity.
    Y_train = Y.copy()
    Y_test = np.full_like(Y, np.nan)
    Y_test[::3, 2] = Y[::3, 2]
    Y_train[::3, 2] = np.nan
    m = IBPRFLVM(likelihood="binomial", likelihood_params={"n_trials": n}, n_iter=4, n_frequencies=4)
    m.set_params(random_state=0).fit(Y_train)
    assert np.isfinite(m.log_predictive_density(Y_test))
    with pytest.raises(ValueError, match="shape"):
        make_likelihood("binomial", n_trials=n[:, :3]).validate(Y)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("negbinom", -1.0, "negative"),
        ("poisson", 2.5, "non-integer"),
        ("multinomial", 0.5, "non-integer"),
        ("negbinom", np.inf, "infinite"),
        ("bernoulli", 2.0, "other than 0 and 1"),
        ("bernoulli", -1.0, "other than 0 and 1"),
        ("binomial", 5.0, "above the number of trials"),
        ("binomial", 1.5, "non-integer"),
    ],
)
def test_bad_counts_get_a_clear_error(name, value, message):
    Y = _counts(name, np.random.default_rng(0), (6, 4))
    Y[2, 3] = value
    with pytest.raises(ValueError, match=message):
        _lik(name).validate(Y)
    if np.isfinite(value):
        with pytest.raises(ValueError, match=message):
            IBPRFLVM(likelihood=name, likelihood_params=HYPER.get(name), n_iter=2, n_frequencies=3).fit(Y)


@pytest.mark.parametrize(
    ("name", "hyper", "message"),
    [
        ("negbinom", {"e0": 0.0}, "e0"),
        ("negbinom", {"f0": -1.0}, "f0"),
        ("poisson", {"prior_scale": 0.0}, "prior_scale"),
        ("binomial", {}, "n_trials"),
        ("binomial", {"n_trials": -2}, "n_trials"),
        ("binomial", {"n_trials": 2.5}, "n_trials"),
        ("multinomial", {"alpha": 1.0}, "alpha"),
    ],
)
def test_bad_hyperparameters_get_a_clear_error(name, hyper, message):
    with pytest.raises((ValueError, TypeError), match=message):
        make_likelihood(name, **hyper)


def _same_chain(name, cls, **kw):
    rng = np.random.default_rng(4)
    Y = _counts(name, rng, (25, 6))
    Y[rng.random(Y.shape) < 0.15] = np.nan
    Y[:, 0] = np.where(np.isnan(Y[:, 0]), 1.0, Y[:, 0])
    args = dict(likelihood=name, likelihood_params=HYPER.get(name), n_iter=5, n_frequencies=5, **kw)
    a = cls(random_state=11, **args).fit(Y)
    b = cls(random_state=11, **args).fit(Y)
    c = cls(random_state=12, **args).fit(Y)
    return a, b, c


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_gives_bit_identical_chain(name):
    a, b, c = _same_chain(name, IBPRFLVM)
    np.testing.assert_array_equal(a.log_likelihood_, b.log_likelihood_)
    np.testing.assert_array_equal(a.latent_, b.latent_)
    for key, value in a.state_.params.arrays().items():
        np.testing.assert_array_equal(value, b.state_.params.arrays()[key])
    assert not np.array_equal(a.log_likelihood_, c.log_likelihood_)
    assert np.all(np.isfinite(a.log_likelihood_))


def test_dense_model_same_seed_and_shape():
    a, b, _ = _same_chain("negbinom", RFLVM, n_components=2)
    np.testing.assert_array_equal(a.log_likelihood_, b.log_likelihood_)
    assert np.all(a.n_active_ == 2) and a.state_.params.r.shape == (6,)


@pytest.mark.parametrize("name", NAMES)
def test_unobserved_entries_have_no_effect(name):
    """Two data sets that differ only in what ``Y0`` holds where ``observed`` is false."""
    rng = np.random.default_rng(5)
    Y = _counts(name, rng, (12, 5))
    Y[rng.random(Y.shape) < 0.3] = np.nan
    Y[:, -1] = np.where(np.isnan(Y[:, -1]), 1.0, Y[:, -1])
    lik = _lik(name)
    observed = ~np.isnan(Y)
    garbage = rng.integers(1, 1000, size=Y.shape).astype(float)
    chains = []
    for fill in (np.zeros_like(Y), garbage):
        prep = lik._prepare(Y, np.where(observed, Y, fill), observed)
        data = model.Data(Y=Y, observed=observed, missing=np.nonzero(~observed), prep=prep)
        spec = model.ModelSpec(n_frequencies=4, n_dims=2, bias=True, likelihood=lik)
        r = np.random.default_rng(9)
        state = model.init_state(r, data, spec)
        trace = [state.loglik]
        for _ in range(4):
            state, _ = model.sweep(r, state, data, spec)
            trace.append(state.loglik)
        chains.append((trace, state))
    (t0, s0), (t1, s1) = chains
    assert t0 == t1
    for key, value in s0.params.arrays().items():
        np.testing.assert_array_equal(value, s1.params.arrays()[key])
    np.testing.assert_array_equal(s0.X, s1.X)


@pytest.mark.parametrize("name", ["negbinom", "poisson", "multinomial", "binomial"])
def test_huge_counts_and_empty_rows_stay_finite(name):
    rng = np.random.default_rng(6)
    N, J = 20, 5
    Y = rng.poisson(3.0, size=(N, J)).astype(float)
    Y[3] = 0.0  # an all-zero row
    Y[5, 1] = 1e6
    Y[8, :] = 2e6
    hyper = {}
    if name == "binomial":
        hyper = {"n_trials": 3_000_000}
    m = IBPRFLVM(likelihood=name, likelihood_params=hyper, n_iter=6, n_frequencies=5, random_state=0).fit(Y)
    assert np.all(np.isfinite(m.log_likelihood_))
    for value in m.state_.params.arrays().values():
        assert np.all(np.isfinite(value))
    assert np.all(np.isfinite(m.predict()))
    Y_test = np.full_like(Y, np.nan)
    Y_test[5, 1] = 1e6
    Y_test[3, 2] = 0.0
    assert np.isfinite(m.log_predictive_density(Y_test))
