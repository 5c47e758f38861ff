"""The gamma-Poisson feature model (Titsias 2007) as the prior on ``Z`` (src/ibp_rflvm/priors).

Its moves' ratios against the closed-form prior of ``[Z]``, its singleton law against the limit
of the finite model, its logarithmic draws against their moments, and the whole sweep without a
likelihood against the prior's closed forms (``K+ ~ Poisson(alpha log(1 + N / b))``, a row's
used dimensions ``~ Poisson(alpha log(1 + 1 / b))``, a row's total of mean ``alpha / b``), with
a power check. Its joint-distribution tests are beside the IBP's (tests/test_joint_distribution.py,
tests/likelihoods/test_likelihood_joint.py).
"""

import math

import numpy as np
import pytest
from scipy import special

from ibp_rflvm import IBPRFLVM, model
from ibp_rflvm.priors import GammaPoisson, make_prior
from ibp_rflvm.priors.gamma_poisson import GammaPoissonHyper, count_log_ratio, logarithmic, walk_log_q_ratio


def log_prior_classes(Z: np.ndarray, alpha: float, b: float) -> float:
    """``log p([Z])`` of the infinite gamma-Poisson model without the ``1 / prod_h K_h!`` term
    (the labelled columns the moves work on), written from the formula in Titsias (2007)."""
    n = Z.shape[0]
    m = Z.sum(axis=0)
    act = m > 0
    out = act.sum() * math.log(alpha) + alpha * (math.log(b) - math.log(n + b))
    out += np.sum(special.gammaln(m[act]) - m[act] * math.log(n + b))
    out -= np.sum(special.gammaln(Z[:, act] + 1.0))
    return float(out)


@pytest.mark.parametrize("b", [1.0, 0.5, 3.0])
def test_entry_ratio_is_the_conditional_of_the_closed_form(b):
    rng = np.random.default_rng(0)
    Z = rng.poisson(1.2, size=(7, 4)).astype(np.int8)
    Z[1:, 0] = np.maximum(Z[1:, 0], 1)  # column 0: other rows use it
    n = Z.shape[0]
    checked = 0
    for z_cur in range(4):
        for z_new in (z_cur - 1, z_cur + 1):
            if z_new < 0:
                continue
            a, c = Z.copy(), Z.copy()
            a[0, 0], c[0, 0] = z_cur, z_new
            m_other = int(Z[1:, 0].sum())
            want = log_prior_classes(c, 2.0, b) - log_prior_classes(a, 2.0, b)
            hyper = GammaPoissonHyper(b)
            got = count_log_ratio(z_cur, z_new, m_other, n, hyper) - walk_log_q_ratio(z_cur, z_new)
            assert got == pytest.approx(want, abs=1e-12), (z_cur, z_new)
            checked += 1
    assert checked == 7
    assert count_log_ratio(127, 128, 5, n, GammaPoissonHyper(b)) == -math.inf  # int8's support


def test_walk_proposal_ratio_is_its_transition_probabilities():
    # 0 -> 1 with probability 1; from z >= 1 up or down with probability 1/2.
    assert walk_log_q_ratio(0, 1) == pytest.approx(math.log(0.5))
    assert walk_log_q_ratio(1, 0) == pytest.approx(math.log(2.0))
    assert walk_log_q_ratio(3, 4) == 0.0 and walk_log_q_ratio(4, 3) == 0.0
    prior = GammaPoisson()
    draws = prior.propose_column(np.random.default_rng(1), np.array([0] * 4000 + [3] * 4000))
    assert np.all(draws[:4000] == 1)
    up = np.mean(draws[4000:] == 4)
    assert set(np.unique(draws[4000:])) == {2, 4} and abs(up - 0.5) < 4 * math.sqrt(0.25 / 4000)


@pytest.mark.parametrize(("n", "b"), [(1, 1.0), (10, 1.0), (200, 2.0)])
def test_singleton_law_is_the_limit_of_the_finite_model(n, b):
    """``K`` columns with ``lambda ~ Gamma(alpha / K, b)`` and zeros in the other ``n - 1`` rows:
    ``K P(z >= 1)`` is the singleton rate and ``K P(z)`` the logarithmic law times it."""
    alpha, K = 2.0, 1e9
    a, r = alpha / K, n - 1 + b
    z = np.arange(1, 30)
    log_pk = special.gammaln(a + z) - special.gammaln(a) - special.gammaln(z + 1) + a * math.log(r / (r + 1))
    log_pk -= z * math.log(r + 1)
    finite = K * np.exp(log_pk)
    prior = GammaPoisson(b)
    rate = prior.singleton_rate(n, alpha)
    assert finite.sum() == pytest.approx(rate, rel=1e-6)
    p = 1.0 / (n + b)
    log_series = -(p**z) / (z * math.log1p(-p))
    np.testing.assert_allclose(finite / rate, log_series, rtol=1e-6, atol=1e-300)


@pytest.mark.parametrize("p", [0.5, 1 / 11, 1 / 101, 1 / 1001])
def test_logarithmic_draws_match_their_moments(p):
    x = logarithmic(np.random.default_rng(2), p, 100_000).astype(float)
    L = -math.log1p(-p)
    mean = p / ((1 - p) * L)
    var = p * (L - p) / ((1 - p) ** 2 * L**2)
    assert x.min() >= 1
    assert abs(x.mean() - mean) < 4 * math.sqrt(var / x.size)
    # The variance's standard error from the sample's fourth central moment.
    m4 = np.mean((x - mean) ** 4)
    assert abs(x.var() - var) < 4 * math.sqrt(max(m4 - var**2, 1e-300) / x.size)


class _TooManyBirths(GammaPoisson):
    """A wrong sampler for the power check: births proposed at 1.5 times the prior's rate."""

    def singleton_rate(self, n, alpha):
        return 1.5 * super().singleton_rate(n, alpha)


def _prior_means(data_cols, n_chains, n_sweeps, n=10, alpha=2.0, wrong=False):
    """Per-chain means of ``K+``, a row's used dimensions and a row's total, without a likelihood
    (``data_cols=None``) or with one that carries none (the collapsed Gaussian on 0 columns)."""
    use_lik = data_cols is not None
    data = model.Data.from_array(np.zeros((n, data_cols if use_lik else 1)))
    spec = model.ModelSpec(
        n_frequencies=3, fixed_alpha=alpha, use_likelihood=use_lik,
        z_prior=_TooManyBirths() if wrong else "gamma-poisson",
    )
    means, moved = [], {"births": 0, "deaths": 0, "flips": 0, "transfers": 0, "absorbs": 0}
    for seed in range(n_chains):
        rng = np.random.default_rng(seed)
        state = model.init_state(rng, data, spec)
        rows = []
        for t in range(n_sweeps):
            state, info = model.sweep(rng, state, data, spec)
            for k in moved:
                moved[k] += getattr(info, k)
            if t >= 200:
                rows.append([state.k_plus, (state.Z > 0).sum(axis=1).mean(), state.Z.sum(axis=1).mean()])
        means.append(np.mean(rows, axis=0))
    return np.array(means), moved


def _z_scores(means, n=10, alpha=2.0, b=1.0):
    """Each statistic's distance from its prior value in standard errors between chains."""
    target = np.array([alpha * math.log1p(n / b), alpha * math.log1p(1 / b), alpha / b])
    se = means.std(axis=0, ddof=1) / math.sqrt(means.shape[0])
    return (means.mean(axis=0) - target) / se


@pytest.mark.parametrize("data_cols", [None, 0], ids=["factorised-moves", "gaussian-row-kernel"])
def test_gamma_poisson_prior_check(data_cols):
    """Sixteen chains from different seeds; the bound of 3.54 standard errors between chains is
    the t distribution's (15 degrees of freedom) two-sided 0.3%. (Eight chains of 1,200 sweeps
    put seeds 0-7 at z = 3.9, 4.7, 3.2 once the scale move joined the sweep, while 24 chains
    gave 1.1, 0.7, 0.7: the standard error between 8 chains is itself that noisy.)"""
    means, moved = _prior_means(data_cols, 16, 700)
    assert min(moved.values()) > 500, moved  # every move ran
    z = _z_scores(means)
    assert np.all(np.abs(z) < 3.54), z


def test_gamma_poisson_prior_check_has_power():
    """Births at 1.5 times the prior's rate must be seen, far beyond the check's bound."""
    means, _ = _prior_means(None, 8, 900, wrong=True)
    assert _z_scores(means)[0] > 6.0


def test_estimator_fits_counts_in_z_and_reports_them():
    rng = np.random.default_rng(3)
    Y = rng.standard_normal((40, 6))
    est = IBPRFLVM(n_iter=30, init_dims=3, z_prior="gamma-poisson", random_state=0).fit(Y)
    Z = est.posterior_.state.Z
    assert Z.dtype == np.int8 and Z.min() >= 0
    assert np.isfinite(est.score(Y))


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"z_prior": "beta-bernoulli"}, "z_prior must be one of"),
        ({"z_prior": "gamma-poisson", "sampler": "paper"}, "needs sampler='default'"),
        ({"z_prior": "gamma-poisson", "ibp_beta": 2.0}, "ibp_beta=1.0"),
    ],
)
def test_bad_z_prior_settings_raise(params, match):
    with pytest.raises(ValueError, match=match):
        IBPRFLVM(n_iter=2, **params).fit(np.zeros((5, 2)))


def test_make_prior_names_and_rates():
    assert make_prior("ibp").max_value == 1 and make_prior("gamma-poisson").max_value == 127
    assert make_prior("gamma-poisson", rate=2.5) == GammaPoisson(2.5)
    with pytest.raises(ValueError, match="z_prior_rate"):
        make_prior("ibp", rate=2.0)
    with pytest.raises(ValueError, match="rate must be a positive number"):
        GammaPoisson(0.0)


def test_jax_backend_refuses_the_gamma_poisson_prior():
    pytest.importorskip("jax")
    Y = np.random.default_rng(0).poisson(2.0, size=(20, 4)).astype(float)
    est = IBPRFLVM(likelihood="negbinom", backend="jax", z_prior="gamma-poisson", n_iter=2)
    with pytest.raises(ValueError, match="z_prior='gamma-poisson' runs on backend='numba'"):
        est.fit(Y)
