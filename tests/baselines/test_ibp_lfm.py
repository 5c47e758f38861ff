"""IBP linear factor model baseline: IBP prior check, joint-distribution check of every
conditional, recovery of the linear Cambridge bars, held-out scoring and input handling.

Statistical tolerances are Monte Carlo standard errors (batch means for chains, plain standard
errors for independent draws); every test runs from a fixed seed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ibp_rflvm.baselines import IBPLinearFactorModel
from ibp_rflvm.baselines import ibp_lfm_gibbs as ibp_lfm
from ibp_rflvm.datasets import make_linear_cambridge
from ibp_rflvm.datasets.holdout import holdout_mask
from ibp_rflvm.datasets.synthetic import cambridge_shapes
from ibp_rflvm.samplers import ibp
from ibp_rflvm.summaries.diagnostics import batch_mean_se
from ibp_rflvm.summaries.scoring import gaussian_logpdf, heldout_entries, lpd_from_samples


def test_ibp_prior_through_the_model():
    """With the data switched off, ``K+ ~ Poisson(alpha H_N)`` and each row's number of active
    dimensions ``~ Poisson(alpha)`` (the prior check of docs/sampler.md)."""
    n, alpha, burn = 10, 2.0, 200
    Y = np.random.default_rng(0).standard_normal((n, 2))
    m = IBPLinearFactorModel(
        n_iter=4200, burn_in=burn, init_dims=2, fixed_alpha=alpha, use_likelihood=False, random_state=3
    ).fit(Y)
    assert m.sampler == "default"  # singleton birth/death included
    k_plus = m.n_active_[burn:].astype(float)
    target = alpha * ibp.harmonic(n)  # 5.858
    mean, se = batch_mean_se(k_plus)
    assert abs(mean - target) < 4 * se, (mean, target, se)
    var_mean, var_se = batch_mean_se((k_plus - target) ** 2)
    assert abs(var_mean - target) < 4 * var_se, (var_mean, target, var_se)
    row_mean, row_se = batch_mean_se(m.mean_active_per_row_[burn:])
    assert abs(row_mean - alpha) < 4 * row_se, (row_mean, alpha, row_se)
    # Enough power to see the pi*-start mistake of samplers/ibp.py (mean 2.7).
    assert 4 * se < 1.0
    # fixed_alpha holds alpha where it was put.
    assert np.all(m.alpha_trace_ == alpha)


def _ibp_draw(rng: np.random.Generator, n: int, alpha: float) -> np.ndarray:
    """One ``Z ~ IBP(alpha)`` by the buffet metaphor (row i takes dish k with probability
    ``m_k / i`` and ``Poisson(alpha / i)`` new dishes)."""
    Z = np.zeros((n, 0), dtype=np.int8)
    for i in range(n):
        m = Z[:i].sum(axis=0)
        Z[i] = rng.random(Z.shape[1]) < m / (i + 1)
        new = rng.poisson(alpha / (i + 1))
        block = np.zeros((n, new), dtype=np.int8)
        block[i] = 1
        Z = np.hstack([Z, block])
    return Z


def test_joint_distribution_with_missing_entries():
    """Getting it right (Geweke 2004): independent draws of (parameters, data) from the prior
    against a chain that alternates one sweep with redrawing the observed data. Three of twelve
    entries are unobserved, so the data augmentation is checked along with the z, X, A and
    variance conditionals."""
    N, J, alpha, n = 4, 3, 1.0, 10000
    prm = ibp_lfm.LFMParams(fixed_alpha=alpha, sigma2_prior=(3.0, 1.0), sigma_a2_prior=(3.0, 2.0))
    missing = np.zeros((N, J), dtype=bool)
    missing[0, 0] = missing[2, 1] = missing[3, 2] = True
    obs = ~missing
    miss = np.nonzero(missing)
    rng = np.random.default_rng(7)

    def stats(X, Z, A, s2, sa2, Y):
        H = X * Z
        M = H @ A
        return [
            Z.any(axis=0).sum(),
            Z.sum(axis=1).mean(),
            s2,
            sa2,
            (H**2).sum(),
            (A**2).sum(),
            (Y[obs] ** 2).sum(),
            (Y[obs] * M[obs]).sum(),
        ]

    prior = []
    for _ in range(n):
        Z = _ibp_draw(rng, N, alpha)
        K = Z.shape[1]
        s2 = 1.0 / rng.gamma(3.0, 1.0 / 1.0)
        sa2 = 1.0 / rng.gamma(3.0, 1.0 / 2.0)
        X = rng.standard_normal((N, K))
        A = math.sqrt(sa2) * rng.standard_normal((K, J))
        Y = (X * Z) @ A + math.sqrt(s2) * rng.standard_normal((N, J))
        prior.append(stats(X, Z, A, s2, sa2, Y))
    prior = np.array(prior, dtype=float)

    st = ibp_lfm.init_state(rng, rng.standard_normal((N, J)), miss, 2, prm, init="random")
    chain = []
    births = deaths = 0
    for _ in range(n):
        info = ibp_lfm.sweep(rng, st, miss, prm)
        births += info["births"]
        deaths += info["deaths"]
        M = st.H @ st.A
        st.Y[obs] = M[obs] + math.sqrt(st.sigma2) * rng.standard_normal(int(obs.sum()))
        chain.append(stats(st.X, st.Z, st.A, st.sigma2, st.sigma_a2, st.Y))
    chain = np.array(chain, dtype=float)
    # The default sweep's singleton birth/death must have run for the test to cover it.
    assert births > 500 and deaths > 500, (births, deaths)

    names = ["K+", "row count", "sigma2", "sigma_A2", "sum h^2", "sum A^2", "sum y^2", "sum y m"]
    for k, name in enumerate(names):
        c_mean, c_se = batch_mean_se(chain[:, k])
        p_mean, p_se = prior[:, k].mean(), prior[:, k].std() / math.sqrt(n)
        assert abs(c_mean - p_mean) < 4 * math.hypot(c_se, p_se), (name, c_mean, p_mean, c_se, p_se)


def _column_gaussian_score(Y_train: np.ndarray, Y_test: np.ndarray) -> float:
    rows, cols, vals = heldout_entries(Y_test)
    mu, sd = np.nanmean(Y_train, axis=0), np.nanstd(Y_train, axis=0)
    return float(gaussian_logpdf(vals, mu[cols], sd[cols] ** 2).mean())


def test_recovers_linear_cambridge_bars():
    n_iter = 1500
    data = make_linear_cambridge(200, noise_sd=0.25, random_state=2)
    Y_train, Y_test = holdout_mask(data["Y"], 0.2, random_state=2)
    m = IBPLinearFactorModel(n_iter=n_iter, init_dims=5, random_state=2).fit(Y_train)

    # Every shape is matched, one to one, by a learned loading row up to scale and sign.
    shapes = cambridge_shapes()
    A = np.abs(m.components_)
    cos = (A / np.linalg.norm(A, axis=1, keepdims=True)) @ (
        shapes / np.linalg.norm(shapes, axis=1, keepdims=True)
    ).T
    assert np.all(cos.max(axis=0) > 0.9), cos.max(axis=0)
    assert len(set(cos.argmax(axis=0))) == 4

    # K+: no shape is ever lost, and in most kept sweeps exactly four dimensions are used by at
    # least 5% of the rows. Beyond those the chain usually carries one or two dimensions on a
    # handful of rows whose loadings fit those rows' noise; such a dimension is self-sustaining
    # for the uncollapsed Gibbs sampler (its loading row stays fitted while its rows stay on), so
    # K+ itself is 4 in only a minority of the sweeps (about 20% here).
    kept = m.n_active_[n_iter // 2 :]
    substantial = np.array([((H != 0).mean(axis=0) >= 0.05).sum() for H in m.latent_samples_])
    assert np.mean(substantial == 4) > 0.8, np.bincount(substantial)
    assert kept.min() >= 4, np.bincount(kept)
    assert np.mean(kept - substantial) < 2.0, np.bincount(kept)

    # Held-out density: near the noise-level optimum (-0.03 per entry for sd 0.25) and far
    # above an independent Gaussian per column.
    score = m.score(Y_test)
    assert score > _column_gaussian_score(Y_train, Y_test) + 0.3
    assert score > -0.2
    assert np.median(m.sigma2_trace_[n_iter // 2 :]) == pytest.approx(0.25**2, rel=0.15)


def test_heldout_scores_are_consistent():
    data = make_linear_cambridge(60, noise_sd=0.25, random_state=5)
    Y_train, Y_test = holdout_mask(data["Y"], 0.2, random_state=5)
    m = IBPLinearFactorModel(n_iter=40, burn_in=10, init_dims=4, random_state=5).fit(Y_train)
    logp = m.pointwise_log_predictive(Y_test)
    n_test = int(np.count_nonzero(~np.isnan(Y_test)))
    assert logp.shape == (30, n_test)
    assert np.all(np.isfinite(logp))
    lpd = m.log_predictive_density(Y_test)
    assert lpd == pytest.approx(lpd_from_samples(logp))
    assert m.score(Y_test) == pytest.approx(lpd / n_test)
    assert m.predict().shape == Y_train.shape
    assert m.latent_.shape == (60, m.n_active_[-1]) == m.active_.shape
    assert m.components_.shape == (m.n_active_[-1], 36)
    # Dimensions of the final sample are ordered by use.
    assert np.all(np.diff(m.active_.sum(axis=0)) <= 0)
    assert np.array_equal(m.latent_ != 0, m.active_.astype(bool))
    with pytest.raises(ValueError, match="training shape"):
        m.score(Y_test[:, :-1])
    with pytest.raises(ValueError, match="no entries"):
        m.score(np.full_like(Y_test, np.nan))


def test_same_seed_same_chain():
    data = make_linear_cambridge(50, noise_sd=0.25, random_state=1)
    Y, _ = holdout_mask(data["Y"], 0.2, random_state=1)
    fits = [IBPLinearFactorModel(n_iter=30, init_dims=4, random_state=11).fit(Y) for _ in range(2)]
    for name in ("latent_", "components_", "n_active_", "log_likelihood_", "alpha_trace_", "sigma2_trace_"):
        assert np.array_equal(getattr(fits[0], name), getattr(fits[1], name)), name
    assert np.array_equal(fits[0].predict(), fits[1].predict())
    other = IBPLinearFactorModel(n_iter=30, init_dims=4, random_state=12).fit(Y)
    assert not np.array_equal(other.log_likelihood_, fits[0].log_likelihood_)


def test_unobserved_entries_are_not_zeros():
    """Every entry offset by +5 and a third of column 0 unobserved: the reconstruction there must
    be near the truth, 5 (pixel 0 belongs to no shape). Fitting the same matrix with those
    entries set to zero gives about 0 there, so the test tells the two apart.

    The offset is shared by all columns, not confined to column 0, because the model has no
    intercept: a constant in one column alone is an always-on factor whose per-row coordinate
    ``x_i`` is informed by that column only, so where the column is unobserved nothing in the
    row could predict it.
    """
    rng = np.random.default_rng(1)
    data = make_linear_cambridge(150, noise_sd=0.25, random_state=1)
    Y = data["Y"] + 5.0
    hidden = rng.permutation(150)[:50]
    Y[hidden, 0] = np.nan
    m = IBPLinearFactorModel(n_iter=300, init_dims=5, random_state=1).fit(Y)
    pred = m.predict()[hidden, 0]
    assert abs(pred.mean() - 5.0) < 0.15, pred.mean()
    assert np.max(np.abs(pred - 5.0)) < 0.6, np.abs(pred - 5.0).max()


@pytest.mark.parametrize(
    ("Y", "match"),
    [
        (np.arange(5.0), "2-D"),
        (np.array([[1.0, 2.0], [np.nan, np.nan], [3.0, 4.0]]), "no observed entry"),
        (np.array([[1.0, np.inf], [2.0, 3.0]]), "infinite"),
        (np.array([["a", "b"], ["c", "d"]]), "numeric"),
    ],
    ids=["1-D", "all-NaN row", "inf", "strings"],
)
def test_bad_input_raises(Y, match):
    with pytest.raises(ValueError, match=match):
        IBPLinearFactorModel(n_iter=2).fit(Y)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"n_iter": 0}, "n_iter"),
        ({"n_iter": 5, "burn_in": 5}, "burn_in"),
        ({"init_dims": -1}, "init_dims"),
        ({"fixed_alpha": -1.0}, "fixed_alpha"),
        ({"alpha_prior": (1.0,)}, "alpha_prior"),
        ({"sigma2_prior": (1.0, 0.0)}, "sigma2_prior"),
        ({"init": "kmeans"}, "init"),
        ({"random_state": "seed"}, "random_state"),
    ],
)
def test_bad_parameters_raise(params, match):
    Y = np.random.default_rng(0).standard_normal((6, 3))
    with pytest.raises(ValueError, match=match):
        IBPLinearFactorModel(**params).fit(Y)


def test_unfitted_raises():
    with pytest.raises(RuntimeError, match="not fitted"):
        IBPLinearFactorModel().predict()
