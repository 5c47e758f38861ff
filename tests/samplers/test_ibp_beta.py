"""The two-parameter IBP: its closed form, the update of ``beta`` and the prior checks.

The guide's account: docs/sampler.md, section 10.

With the likelihood off, a fixed ``beta`` gives ``K+ ~ Poisson(alpha sum_i beta / (beta + i - 1))``
and each row's count ``~ Poisson(alpha)``; a learned ``beta`` must come back with its prior.
Tolerances come from batch-means Monte Carlo standard errors.
"""

import math
import warnings

import numpy as np
import pytest
from scipy import integrate, special, stats

from ibp_rflvm import IBPRFLVM, model
from ibp_rflvm.baselines import IBPLinearFactorModel
from ibp_rflvm.datasets import make_cambridge
from ibp_rflvm.priors import IndianBuffet
from ibp_rflvm.samplers import ibp, ibp_beta
from ibp_rflvm.summaries.diagnostics import batch_mean_se

Z_SMALL = np.array(
    [[1, 1, 0, 0, 0], [1, 0, 1, 0, 0], [0, 1, 0, 0, 0], [1, 0, 0, 1, 1], [1, 1, 0, 0, 0], [0, 0, 0, 0, 0]]
)


def _log_sequential(Z: np.ndarray, alpha: float, beta: float) -> float:
    """Log probability that the sequential two-parameter buffet serves `Z` (columns in order of
    first use): row ``i`` takes a dish ``m`` earlier rows took with probability ``m / (beta + i)``
    (rows counted from 0) and ``Poisson(alpha beta / (beta + i))`` new ones. Its factor for the
    order of the new dishes does not depend on ``beta``."""
    lp, seen = 0.0, 0
    for i in range(Z.shape[0]):
        p = Z[:i, :seen].sum(axis=0) / (beta + i)
        lp += float(np.sum(np.where(Z[i, :seen] == 1, np.log(p), np.log1p(-p))))
        new = int(Z[i, seen:].sum())
        lp += float(stats.poisson.logpmf(new, alpha * beta / (beta + i)))
        seen += new
    return lp


@pytest.mark.parametrize(("beta1", "beta2"), [(0.3, 1.0), (1.0, 4.0), (0.05, 2.5)])
def test_closed_form_matches_the_sequential_buffet_in_beta(beta1, beta2):
    """``log_z_prior`` leaves out only terms free of ``beta``: its differences between two values
    of ``beta`` are those of the buffet's own probability."""
    counts, n = Z_SMALL.sum(axis=0), Z_SMALL.shape[0]
    closed = ibp_beta.log_z_prior(counts, n, 1.7, beta1) - ibp_beta.log_z_prior(counts, n, 1.7, beta2)
    buffet = _log_sequential(Z_SMALL, 1.7, beta1) - _log_sequential(Z_SMALL, 1.7, beta2)
    assert closed == pytest.approx(buffet, rel=1e-10, abs=1e-10)


@pytest.mark.parametrize("beta", [0.2, 1.0, 3.5])
def test_share_odds_are_the_conditionals_of_the_closed_form(beta):
    """Switching ``z_ik`` on in a column other rows use multiplies ``p(Z)`` by the odds every move
    uses (the matrices compared have the same ``prod_h K_h!``: no two columns become equal)."""
    n = Z_SMALL.shape[0]
    for i, k in [(2, 0), (0, 1), (5, 1), (1, 0)]:
        on, off = Z_SMALL.copy(), Z_SMALL.copy()
        on[i, k], off[i, k] = 1, 0
        m_other = int(off[:, k].sum())
        assert m_other > 0
        diff = ibp_beta.log_z_prior(on.sum(0), n, 2.0, beta) - ibp_beta.log_z_prior(off.sum(0), n, 2.0, beta)
        assert diff == pytest.approx(ibp.log_share_odds(m_other, n, beta), rel=1e-12)


def test_one_parameter_odds_and_rates_are_unchanged_at_beta_one():
    """At ``beta = 1`` the two-parameter expressions are the one-parameter ones bit for bit (the
    sweep of a ``beta = 1`` chain must not move)."""
    for m, n in [(1, 2), (3, 10), (399, 400)]:
        assert ibp.log_share_odds(m, n, 1.0) == math.log(m) - math.log(n - m)
    assert ibp.new_dims_rate(2.3, 400, 1.0) == 2.3 / 400
    assert ibp.sharing_sum(400, 1.0) == ibp.harmonic(400)
    assert ibp.sharing_sum(400, 0.1) == pytest.approx(float(np.sum(0.1 / (0.1 + np.arange(400)))), rel=1e-12)


def test_beta_update_draws_its_conditional():
    """The slice update of ``log beta`` leaves ``p(beta | Z, alpha)`` invariant: its draws given a
    fixed ``Z`` follow the numerically normalised target (Kolmogorov-Smirnov on thinned draws)."""
    counts, n, alpha, prior = np.array([5, 1, 1, 2]), 10, 2.0, (1.0, 1.0)
    rng = np.random.default_rng(0)
    beta, draws = 1.0, []
    for _ in range(6000):
        beta = ibp_beta.update_beta(rng, counts, n, alpha, beta, prior)
        draws.append(beta)
    density = np.vectorize(lambda u: math.exp(ibp_beta.log_target(u, counts, n, alpha, prior)))
    grid = np.linspace(-12.0, 6.0, 4001)
    cdf = integrate.cumulative_trapezoid(density(grid), grid, initial=0.0)
    cdf /= cdf[-1]
    result = stats.kstest(np.log(draws[::3]), lambda t: np.interp(t, grid, cdf))
    assert result.pvalue > 1e-3, result


def learned_beta_moments(alpha_prior, beta_prior, n: int) -> dict[str, float]:
    """Prior expectations when ``alpha ~ Gamma(alpha_prior)`` and ``beta ~ Gamma(beta_prior)``
    (shape, rate), independent: ``E[alpha]``, ``E[beta]``, ``E[log beta]`` and
    ``E[K+] = E[alpha] E[sum_i beta / (beta + i - 1)]`` (by quadrature over the prior of beta)."""
    a, b = beta_prior
    gamma = stats.gamma(a, scale=1.0 / b)
    e_share = integrate.quad(lambda x: ibp.sharing_sum(n, x) * gamma.pdf(x), 0.0, np.inf)[0]
    mean_alpha = alpha_prior[0] / alpha_prior[1]
    return {
        "alpha": mean_alpha, "ibp_beta": a / b, "log_ibp_beta": float(special.digamma(a)) - math.log(b),
        "k_plus": mean_alpha * e_share,
    }  # fmt: skip


def _prior_chain(
    data_cols, n_sweeps, beta, n=10, alpha=2.0, seed=0, beta_prior=(1.0, 1.0), burn=200, max_dims=None
):
    """The real sweep with no information in the data (``data_cols``: see tests/samplers/test_ibp.py).
    Returns the traces after `burn` sweeps and the summed move counts."""
    rng = np.random.default_rng(seed)
    use_lik = data_cols is not None
    data = model.Data.from_array(np.zeros((n, data_cols if use_lik else 1)))
    spec = model.ModelSpec(
        n_frequencies=3, fixed_alpha=alpha, use_likelihood=use_lik, z_prior=IndianBuffet(beta, beta_prior),
        max_dims=max_dims,
    )
    state = model.init_state(rng, data, spec)
    out = {"k_plus": [], "rows": [], "beta": [], "x2": []}
    moved = dict.fromkeys(("births", "deaths", "flips", "transfers", "absorbs"), 0)
    for _ in range(n_sweeps):
        state, info = model.sweep(rng, state, data, spec)
        assert math.isnan(info.slice)  # no stick-breaking step under the two-parameter IBP
        out["k_plus"].append(state.k_plus)
        out["rows"].append(state.Z.sum(axis=1).mean())
        out["beta"].append(state.z_state["ibp_beta"])
        out["x2"].append(np.mean(state.X**2) if state.X.size else 1.0)
        for key in moved:
            moved[key] += getattr(info, key, 0)
    return {k: np.asarray(v[burn:], dtype=float) for k, v in out.items()}, moved


def _assert_close(failures, name, values, target):
    mean, se = batch_mean_se(values)
    if abs(mean - target) > 4 * se:
        failures.append(f"{name}: {mean:.4f} vs {target:.4f} (MCSE {se:.4f})")
    return se


@pytest.mark.parametrize(
    ("beta", "data_cols"),
    [(0.3, None), (0.3, 0), (3.0, None)],
    ids=["beta0.3-factorised-z-pass", "beta0.3-gaussian-kernels", "beta3-factorised-z-pass"],
)
def test_two_parameter_prior_matches_poisson(beta, data_cols):
    n, alpha = 10, 2.0
    draws, moved = _prior_chain(data_cols, 4000, beta, n=n, alpha=alpha)
    assert min(moved.values()) > 300, moved  # the check speaks for the moves only if they ran
    target = alpha * ibp.sharing_sum(n, beta)  # 3.47 at beta = 0.3 (5.86 at 1), 9.62 at 3
    failures = []
    se = _assert_close(failures, "K+", draws["k_plus"], target)
    _assert_close(failures, "Var K+", (draws["k_plus"] - target) ** 2, target)
    _assert_close(failures, "dims per row", draws["rows"], alpha)
    _assert_close(failures, "x^2", draws["x2"], 1.0)
    assert not failures, failures
    # The one-parameter IBP's K+ would be 5.86: the check must be able to tell the two apart.
    assert 4 * se < abs(alpha * ibp.harmonic(n) - target)


@pytest.mark.parametrize("data_cols", [None, 0], ids=["factorised-z-pass", "gaussian-kernels"])
def test_capped_two_parameter_prior_is_the_truncated_poisson(data_cols):
    """Under a cap the two-parameter sweep samples the prior conditioned on ``K+ <= cap``, whose
    only births are the singleton births (the flips and pair moves keep ``K+``). At ``beta = 3``
    (``E[K+] = 9.62``) a cap of 8 removes 62% of the mass and moves the mean to 6.5: a birth past
    the cap accepted, or rejected as anything but outside the support, would show."""
    n, alpha, beta, cap = 10, 2.0, 3.0, 8
    draws, moved = _prior_chain(data_cols, 4000, beta, n=n, alpha=alpha, max_dims=cap)
    assert min(moved.values()) > 300, moved
    assert draws["k_plus"].max() <= cap
    pmf = stats.poisson(alpha * ibp.sharing_sum(n, beta)).pmf(np.arange(cap + 1))
    pmf /= pmf.sum()
    failures = []
    _assert_close(failures, "mean", draws["k_plus"], float(pmf @ np.arange(cap + 1)))
    _assert_close(failures, "P(K+ = cap)", draws["k_plus"] == cap, float(pmf[cap]))
    _assert_close(failures, "P(K+ <= 5)", draws["k_plus"] <= 5, float(pmf[:6].sum()))
    _assert_close(failures, "x^2", draws["x2"], 1.0)
    assert not failures, failures


@pytest.mark.slow
@pytest.mark.parametrize("data_cols", [None, 0], ids=["factorised-z-pass", "gaussian-kernels"])
def test_learned_beta_returns_its_prior(data_cols):
    """``beta`` learned with the likelihood off: its draws follow its Gamma prior, and ``K+`` the
    prior mixture ``E[K+] = alpha E[sum_i beta / (beta + i - 1)]``. The prior Gamma(2, 2) has
    mean 1 and puts 16% of its mass below 0.3 and 9% above 2."""
    n, alpha, prior = 10, 2.0, (2.0, 2.0)
    draws, moved = _prior_chain(data_cols, 8000, None, n=n, alpha=alpha, beta_prior=prior)
    assert min(moved.values()) > 300, moved
    moments = learned_beta_moments((alpha, 1.0), prior, n)
    failures = []
    _assert_close(failures, "beta", draws["beta"], moments["ibp_beta"])
    _assert_close(failures, "log beta", np.log(draws["beta"]), moments["log_ibp_beta"])
    p_small = float(stats.gamma(prior[0], scale=1.0 / prior[1]).cdf(0.5))
    _assert_close(failures, "beta < 0.5", draws["beta"] < 0.5, p_small)
    _assert_close(failures, "K+", draws["k_plus"], moments["k_plus"])
    _assert_close(failures, "dims per row", draws["rows"], alpha)
    assert not failures, failures


def test_linear_factor_model_has_the_same_prior():
    """The IBP linear factor model under the two-parameter IBP, data off, ``beta = 0.3``:
    ``K+ ~ Poisson(alpha sum_i beta / (beta + i - 1))`` and rows ``Poisson(alpha)``."""
    n, alpha, beta, burn = 10, 2.0, 0.3, 200
    Y = np.random.default_rng(0).standard_normal((n, 2))
    m = IBPLinearFactorModel(
        n_iter=4200, burn_in=burn, init_dims=2, fixed_alpha=alpha, use_likelihood=False, random_state=3,
        ibp_beta=beta,
    ).fit(Y)
    target = alpha * ibp.sharing_sum(n, beta)
    failures = []
    k_plus = m.n_active_[burn:].astype(float)
    se = _assert_close(failures, "K+", k_plus, target)
    _assert_close(failures, "Var K+", (k_plus - target) ** 2, target)
    _assert_close(failures, "dims per row", m.mean_active_per_row_[burn:], alpha)
    assert not failures, failures
    assert 4 * se < abs(alpha * ibp.harmonic(n) - target)
    assert np.all(m.beta_trace_ == beta)


def test_linear_factor_model_learns_beta():
    Y = np.random.default_rng(1).standard_normal((30, 4))
    m = IBPLinearFactorModel(n_iter=30, init_dims=3, random_state=0, ibp_beta=None).fit(Y)
    assert np.all(m.beta_trace_ > 0) and np.unique(m.beta_trace_).size > 10
    again = IBPLinearFactorModel(n_iter=30, init_dims=3, random_state=0, ibp_beta=None).fit(Y)
    np.testing.assert_array_equal(m.beta_trace_, again.beta_trace_)
    with pytest.raises(ValueError, match="ibp_beta"):
        IBPLinearFactorModel(n_iter=3, ibp_beta=0.5, sampler="paper").fit(Y)
    with pytest.raises(ValueError, match="ibp_beta"):
        IBPLinearFactorModel(n_iter=3, ibp_beta=-1.0).fit(Y)


def _small_data():
    return make_cambridge(40, random_state=0)["Y"][:, :8]


def test_estimator_learns_beta_and_reports_it():
    Y = _small_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # two 12-sweep chains disagree, as they should
        est = IBPRFLVM(n_iter=12, n_frequencies=6, random_state=0, n_chains=2, n_jobs=1, ibp_beta=None)
        est.fit(Y)
    assert est.spec_.z_prior.learned and est.spec_.z_prior.learned_traces == ("ibp_beta",)
    assert est.traces_["ibp_beta"].shape == (2, 12) and np.all(est.traces_["ibp_beta"] > 0)
    np.testing.assert_array_equal(est.ibp_beta_, est.traces_["ibp_beta"][est.best_chain_])
    assert np.unique(est.ibp_beta_).size > 5  # it moves
    idata = est.to_inference_data()
    assert idata.posterior["ibp_beta"].shape == (2, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = est.summary()
    assert "ibp_beta" in table.index


def test_estimator_with_beta_one_is_the_one_parameter_sweep():
    """The default ``ibp_beta=1.0`` keeps the slice step and a constant trace; the summary then
    leaves ``beta`` out (a constant has no R-hat)."""
    Y = _small_data()
    est = IBPRFLVM(n_iter=6, n_frequencies=6, random_state=0).fit(Y)
    prior = est.spec_.z_prior
    assert prior == IndianBuffet(1.0) and prior.needs_moves() is None and np.all(est.ibp_beta_ == 1.0)
    assert "ibp_beta" not in est.to_inference_data().posterior


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"ibp_beta": 0.0}, "ibp_beta"),
        ({"ibp_beta": "small"}, "ibp_beta"),
        ({"ibp_beta_prior": (1.0,)}, "ibp_beta_prior"),
        ({"ibp_beta_prior": (1.0, -2.0)}, "ibp_beta_prior"),
        ({"ibp_beta": 0.5, "sampler": "paper"}, "ibp_beta"),
        ({"ibp_beta": None, "sampler": "paper"}, "ibp_beta"),
    ],
)
def test_bad_beta_parameters_raise(params, match):
    with pytest.raises(ValueError, match=match):
        IBPRFLVM(n_iter=2, **params).fit(_small_data())


def test_model_spec_checks_beta():
    with pytest.raises(ValueError, match="ibp_beta"):
        model.ModelSpec(z_prior=IndianBuffet(-0.1))
    with pytest.raises(ValueError, match="moves"):
        model.ModelSpec(z_prior=IndianBuffet(0.5), moves=False)
    with pytest.raises(ValueError, match="ibp_beta_prior"):
        model.ModelSpec(z_prior=IndianBuffet(None, (0.0, 1.0)))


def test_learned_beta_chain_resumes_bit_for_bit(tmp_path):
    Y = _small_data()
    path = tmp_path / "chain.zip"
    kw = {"n_frequencies": 6, "random_state": 4, "ibp_beta": None}
    full = IBPRFLVM(n_iter=10, **kw).fit(Y)
    IBPRFLVM(n_iter=6, burn_in=5, checkpoint_path=str(path), **kw).fit(Y)
    resumed = IBPRFLVM(n_iter=10, burn_in=5, checkpoint_path=str(path), **kw)
    resumed.fit(Y, resume=True)
    np.testing.assert_array_equal(full.ibp_beta_, resumed.ibp_beta_)
    np.testing.assert_array_equal(full.log_likelihood_, resumed.log_likelihood_)


def test_warm_up_holds_beta_at_one_with_the_slice_step():
    rng = np.random.default_rng(2)
    Y = _small_data()
    data = model.Data.from_array(Y)
    spec = model.ModelSpec(n_frequencies=5, n_dims=3, z_prior=IndianBuffet(None, beta_warmup=4))
    state = model.init_state(rng, data, spec)
    betas, sliced = [], []
    for _ in range(10):
        state, info = model.sweep(rng, state, data, spec)
        betas.append(state.z_state["ibp_beta"])
        sliced.append(not math.isnan(info.slice))
    assert betas[:4] == [1.0] * 4 and sliced == [True] * 4 + [False] * 6
    assert len(set(betas[4:])) == 6  # learned from the fifth sweep on
    with pytest.raises(ValueError, match="ibp_beta_warmup"):
        IndianBuffet(None, beta_warmup=-1)
