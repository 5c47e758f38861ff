"""PSIS-LOO and stacking weights against ArviZ, a closed-form LOO density, and their defining properties."""

import warnings

import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

from ibp_rflvm.summaries.stacking import (
    MIN_DRAWS,
    k_threshold,
    pareto_k_summary,
    psis_loo,
    stacking_objective,
    stacking_weights,
    tail_length,
)

az = pytest.importorskip("arviz")


def _simulated_log_lik(n_draws: int, n: int, seed: int) -> np.ndarray:
    """Normal model with uncertain location and scale, with outliers (heavy ratio tails, k up to
    ~10), a constant column (no tail: k = inf), rounded columns (ties inside the tail and at the
    cutoff) and columns of repeated draws as a Metropolis chain makes (tails shorter than M)."""
    rng = np.random.default_rng(seed)
    mu = rng.normal(0, 0.3, n_draws)
    sig = np.exp(rng.normal(0, 0.2, n_draws))
    y = rng.normal(0, 1, n)
    y[:12] = rng.choice([-1, 1], 12) * rng.uniform(2, 12, 12)
    ll = stats.norm.logpdf(y[None], mu[:, None], sig[:, None])
    ll[:, 20] = -1.3
    ll[:, 21] = np.round(ll[:, 21], 1)
    ll[:, 22] = np.round(ll[:, 22] * 3) / 3
    repeats = rng.integers(0, n_draws // 3, (n_draws, 30))
    ll[:, 30:60] = np.take_along_axis(ll[:, 30:60], repeats, axis=0)
    return ll


def _arviz_loo(ll: np.ndarray, reff: float | None = None):
    # One chain: ArviZ's own default reff is then 1.
    idata = az.from_dict(posterior={"mu": np.zeros((1, ll.shape[0]))}, log_likelihood={"y": ll[None]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return az.loo(idata, pointwise=True, reff=reff)


@pytest.mark.parametrize(("n_draws", "reff"), [(100, None), (40, None), (1000, 0.5)])
def test_psis_loo_matches_arviz(n_draws, reff):
    ll = _simulated_log_lik(n_draws, 300 if n_draws < 1000 else 80, seed=n_draws)
    ref = _arviz_loo(ll, reff)
    elpd, k = psis_loo(ll, reff=1.0 if reff is None else reff)
    np.testing.assert_allclose(elpd, ref.loo_i.values, rtol=1e-8, atol=0)
    ref_k = ref.pareto_k.values
    np.testing.assert_array_equal(np.isinf(k), np.isinf(ref_k))
    finite = np.isfinite(ref_k)
    np.testing.assert_allclose(k[finite], ref_k[finite], rtol=1e-8, atol=1e-10)
    # The case covers good, bad and unfittable tails.
    assert ref_k[finite].min() < 0.3 and ref_k[finite].max() > 1.0 and np.isinf(k[20])
    assert np.isclose(ref.good_k, k_threshold(n_draws))


def test_tail_length_follows_arviz_and_reff_matters():
    assert [tail_length(s) for s in (20, 40, 100, 1000)] == [4, 8, 20, 95]
    assert tail_length(1000, 0.5) == 135
    ll = _simulated_log_lik(1000, 80, seed=1)
    assert not np.allclose(psis_loo(ll)[1], psis_loo(ll, reff=0.5)[1])


def test_chunking_does_not_change_results():
    ll = _simulated_log_lik(60, 250, seed=5)
    elpd, k = psis_loo(ll)
    for chunk in (1, 7, 100):
        e_c, k_c = psis_loo(ll, chunk=chunk)
        np.testing.assert_allclose(e_c, elpd, rtol=1e-13, atol=0)
        np.testing.assert_allclose(k_c, k, rtol=1e-13, atol=1e-15)


def test_psis_loo_matches_closed_form_conjugate_normal():
    """y_i ~ N(mu, 1), mu ~ N(0, 10^2): p(y_i | y_-i) is normal with known moments."""
    rng = np.random.default_rng(11)
    n, n_draws = 30, 4000
    y = rng.normal(1.0, 1.0, n)
    y[:2] = [12.0, -3.5]
    prec = 1 / 10.0**2 + n
    mu = rng.normal(y.sum() / prec, prec**-0.5, n_draws)
    ll = stats.norm.logpdf(y[None], mu[:, None], 1.0)
    loo_prec = prec - 1
    exact = stats.norm.logpdf(y, (y.sum() - y) / loo_prec, np.sqrt(1 + 1 / loo_prec))
    elpd, k = psis_loo(ll)
    # Delta-method Monte Carlo standard error of log(1 / mean ratio), valid where k < 0.5.
    ratio = np.exp(ll.min(axis=0) - ll)
    se = ratio.std(axis=0) / np.sqrt(n_draws) / ratio.mean(axis=0)
    fine = k < 0.5
    assert fine.sum() >= n - 1 and not fine[0], "the outlier at 12 should have a heavy tail"
    assert np.all(np.abs(elpd - exact)[fine] < 4 * se[fine])
    # The tolerance discriminates: the in-sample log density misses by far more.
    in_sample = logsumexp(ll, axis=0) - np.log(n_draws)
    assert np.mean(np.abs(in_sample - exact)[fine] > 4 * se[fine]) > 0.5


def test_special_rows():
    rng = np.random.default_rng(2)
    ll = rng.normal(-1, 0.5, (50, 4))
    ll[:, 1] = -2.0
    ll[7, 2] = -np.inf
    elpd, k = psis_loo(ll)
    assert elpd[1] == pytest.approx(-2.0) and np.isinf(k[1])
    assert elpd[2] == -np.inf and np.isinf(k[2])
    np.testing.assert_array_equal(psis_loo(ll[:, [0, 3]])[0], elpd[[0, 3]])
    # Too few draws for a tail of 5: plain importance sampling (the harmonic mean), k = inf.
    few = ll[:20, [0, 3]]
    e_few, k_few = psis_loo(few)
    np.testing.assert_allclose(e_few, -logsumexp(-few, axis=0) + np.log(20), rtol=1e-12)
    assert np.all(np.isinf(k_few))


@pytest.mark.parametrize(
    ("log_lik", "kwargs", "message"),
    [
        (np.zeros(10), {}, "2-D"),
        (np.zeros((MIN_DRAWS - 1, 5)), {}, "at least 2 draws"),
        (np.where(np.eye(30, 4) > 0, np.nan, 0.0), {}, "NaN or \\+inf"),
        (np.where(np.eye(30, 4) > 0, np.inf, 0.0), {}, "NaN or \\+inf"),
        (np.array([["a", "b"], ["c", "d"]]), {}, "real numbers"),
        (np.zeros((30, 4)), {"chunk": 0}, "chunk"),
        (np.zeros((30, 4)), {"reff": 0.0}, "reff"),
    ],
)
def test_psis_loo_rejects_bad_input(log_lik, kwargs, message):
    with pytest.raises(ValueError, match=message):
        psis_loo(log_lik, **kwargs)


def test_pareto_k_summary_thresholds():
    k = np.array([-0.2, 0.3, 0.45, 0.55, 0.65, 0.75, 1.2, np.inf, np.nan, 0.5])
    s = pareto_k_summary(k, 4000)  # threshold min(1 - 1/log10(4000), 0.7) = 0.7
    assert s["threshold"] == 0.7
    assert (s["good"], s["ok"], s["bad"], s["very_bad"]) == (0.4, 0.2, 0.4, 0.3)
    s = pareto_k_summary(k, 100)  # threshold 1 - 1/2 = 0.5: nothing is merely ok
    assert s["threshold"] == pytest.approx(0.5) and s["ok"] == 0 and s["bad"] == 0.6
    s = pareto_k_summary(k, 40)  # threshold ~0.376
    assert s["good"] == 0.2 and s["ok"] == 0 and s["bad"] == 0.8
    assert pareto_k_summary(k)["threshold"] == 0.7
    with pytest.raises(ValueError, match="n_draws"):
        pareto_k_summary(k, 1)


def _three_models(seed: int = 7):
    rng = np.random.default_rng(seed)
    n_draws = 200
    y = np.concatenate([rng.normal(0, 1, 100), rng.normal(3, 0.5, 50), rng.uniform(-8, 10, 12)])
    loc = [rng.normal(0, 0.1, n_draws), rng.normal(3, 0.07, n_draws), rng.normal(1, 0.15, n_draws)]
    scale = np.exp(rng.normal(np.log([[1.0], [0.5], [2.5]]), 0.05, (3, n_draws)))
    lls = [stats.norm.logpdf(y[None], loc[i][:, None], scale[i][:, None]) for i in range(2)]
    lls.append(stats.t.logpdf(y[None], 4, loc[2][:, None], scale[2][:, None]))
    return lls


def test_stacking_matches_arviz_compare():
    lls = _three_models()
    loos = {f"m{i}": _arviz_loo(ll) for i, ll in enumerate(lls)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = az.compare(loos, method="stacking")
    ref = table.loc[list(loos), "weight"].to_numpy()
    elpd = np.column_stack([psis_loo(ll)[0] for ll in lls])
    w = stacking_weights(elpd)
    assert np.all(ref > 0.1), "the case should have all three weights inside the simplex"
    np.testing.assert_allclose(w, ref, atol=1e-4)
    # ArviZ's SLSQP stops earlier; the weights here are at least as good.
    assert stacking_objective(elpd, w) >= stacking_objective(elpd, ref) - 1e-9


def test_stacking_dominant_and_complementary_models():
    rng = np.random.default_rng(3)
    elpd = rng.normal(-1, 0.3, (300, 4))
    elpd[:, 2] = elpd.max(axis=1) + 0.5
    np.testing.assert_allclose(stacking_weights(elpd), [0, 0, 1, 0], atol=1e-8)
    half = np.full((300, 2), -10.0)
    half[:150, 0] = half[150:, 1] = -1.0
    np.testing.assert_allclose(stacking_weights(half), [0.5, 0.5], atol=1e-6)
    np.testing.assert_allclose(stacking_weights(half[:200]), [0.75, 0.25], atol=1e-3)
    assert stacking_weights(rng.normal(size=(50, 1))).tolist() == [1.0]


@pytest.mark.parametrize("seed", range(6))
def test_stacking_weights_are_optimal(seed):
    rng = np.random.default_rng(seed)
    n, n_models = int(rng.integers(20, 400)), int(rng.integers(2, 7))
    elpd = rng.normal(-1, 1, (n, 1)) + rng.normal(0, rng.uniform(0.05, 2), (n, n_models))
    elpd += rng.normal(0, 0.3, n_models)
    w = stacking_weights(elpd)
    assert np.all(w >= 0) and w.sum() == pytest.approx(1.0, abs=1e-12)
    best = stacking_objective(elpd, w)
    for candidate in [*np.eye(n_models), np.full(n_models, 1 / n_models)]:
        assert best >= stacking_objective(elpd, candidate) - 1e-9
    # Optimality on the simplex: no model's marginal gain beats the mixture's.
    dens = np.exp(elpd - elpd.max(axis=1, keepdims=True))
    assert np.all((dens / (dens @ w)[:, None]).mean(axis=0) <= 1 + 1e-6)
    np.testing.assert_array_equal(stacking_weights(elpd), w)  # deterministic


@pytest.mark.parametrize(
    ("elpd", "message"),
    [
        (np.zeros(5), "2-D"),
        (np.zeros((0, 3)), "at least one observation"),
        (np.array([[0.0, np.nan], [1.0, 2.0]]), "NaN or \\+inf"),
        (np.array([[-np.inf, -np.inf], [1.0, 2.0]]), "-inf for every model"),
    ],
)
def test_stacking_rejects_bad_input(elpd, message):
    with pytest.raises(ValueError, match=message):
        stacking_weights(elpd)


def test_stacking_accepts_minus_inf_for_some_models():
    elpd = np.array([[-1.0, -np.inf], [-2.0, -1.0], [-1.5, -1.2]])
    w = stacking_weights(elpd)
    assert np.all(np.isfinite(w)) and w.sum() == pytest.approx(1.0)
    assert np.isfinite(stacking_objective(elpd, w))
