"""The IBP slice sampler against the IBP prior (docs/sampler.md).

With the likelihood switched off, ``K+ ~ Poisson(alpha H_N)`` and each row's number of active
dimensions ``~ Poisson(alpha)``. Tolerances come from batch-means Monte Carlo standard errors.
"""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from ibp_rflvm import model
from ibp_rflvm.samplers import ibp, transfer
from ibp_rflvm.summaries.diagnostics import batch_mean_se


def capped_prior_moments(a: float, b: float, n: int, cap: int) -> tuple[float, float]:
    """``E[alpha]`` and ``E[K+]`` when ``alpha ~ Gamma(a, rate b)`` and the joint prior of
    ``(alpha, Z)`` is conditioned on ``K+ <= cap``: ``K+`` is then negative binomial
    (``r = a``, ``p = b / (b + H_N)``) truncated at the cap, and ``alpha | K+`` is
    ``Gamma(a + K+, b + H_N)``."""
    h = ibp.harmonic(n)
    k = np.arange(cap + 1)
    pmf = stats.nbinom(a, b / (b + h)).pmf(k)
    pmf /= pmf.sum()
    return float(pmf @ ((a + k) / (b + h))), float(pmf @ k)


def _prior_chain(
    data_cols: int, n_sweeps: int, n: int = 10, alpha: float = 2.0, seed: int = 0, moves: bool = True,
    max_dims: int | None = None, pairs_per_dim: float | None = 1.0,
):
    """Run the real sweep with no information in the data.

    ``data_cols = 0`` gives the collapsed-Gaussian kernels a constant likelihood (no columns);
    ``data_cols = None`` uses ``use_likelihood=False`` and the factorised z pass. Returns the
    ``K+`` and mean row-count traces after 200 sweeps, and the summed move counts (with
    ``over_budget``: the sweeps with more aligned pairs than the pair moves may visit).
    """
    rng = np.random.default_rng(seed)
    use_lik = data_cols is not None
    Y = np.zeros((n, data_cols if use_lik else 1))
    data = model.Data.from_array(Y)
    spec = model.ModelSpec(
        n_frequencies=3, fixed_alpha=alpha, use_likelihood=use_lik, moves=moves, max_dims=max_dims,
        pairs_per_dim=pairs_per_dim,
    )
    state = model.init_state(rng, data, spec)
    k_plus, row_counts, x2 = [], [], []
    moves_counted = ("births", "deaths", "flips", "transfers", "absorbs")
    moved = dict.fromkeys(moves_counted + ("over_budget",), 0)
    for _ in range(n_sweeps):
        if pairs_per_dim is not None:
            active = state.Z.any(axis=0)
            n_aligned = transfer.aligned_pairs(state.W[:, active], spec.transfer_min_cos)[0].size
            moved["over_budget"] += n_aligned > spec.pair_budget(int(active.sum()))
        state, info = model.sweep(rng, state, data, spec)
        k_plus.append(state.k_plus)
        row_counts.append(state.Z.sum(axis=1).mean())
        x2.append(np.mean(state.X**2) if state.X.size else 1.0)
        for key in moved:
            moved[key] += getattr(info, key, 0)
    return np.array(k_plus[200:]), np.array(row_counts[200:]), np.array(x2[200:]), moved


@pytest.mark.parametrize(
    ("moves", "pairs_per_dim"),
    [(True, 1.0), (False, 1.0), (True, 0.01)],
    ids=["default-sweep", "paper-sweep", "one-pair-per-sweep"],
)
@pytest.mark.parametrize("data_cols", [None, 0], ids=["factorised-z-pass", "gaussian-z-kernel"])
def test_ibp_prior_matches_poisson(data_cols, moves, pairs_per_dim):
    n, alpha = 10, 2.0
    k_plus, row_counts, x2, moved = _prior_chain(
        data_cols, 4000, n=n, alpha=alpha, moves=moves, pairs_per_dim=pairs_per_dim
    )
    if pairs_per_dim < 1.0:
        # The budget of one pair per sweep must have left pairs out in many sweeps.
        assert moved["over_budget"] > 500, moved
    if moves:
        # The check only speaks for the moves if they ran: thousands of accepted proposals.
        ran = ["births", "deaths", "flips", "transfers", "absorbs"]
        assert min(moved[k] for k in ran) > 300, moved
    target = alpha * ibp.harmonic(n)  # 5.858
    mean, se = batch_mean_se(k_plus)
    assert abs(mean - target) < 4 * se, (mean, target, se)
    # Poisson: variance equals the mean.
    var_mean, var_se = batch_mean_se((k_plus - target) ** 2)
    assert abs(var_mean - target) < 4 * var_se, (var_mean, target, var_se)
    row_mean, row_se = batch_mean_se(row_counts)
    assert abs(row_mean - alpha) < 4 * row_se, (row_mean, alpha, row_se)
    # Every coordinate is N(0, 1) under the prior, used or not: the transfers rescale them.
    x2_mean, x2_se = batch_mean_se(x2)
    assert abs(x2_mean - 1.0) < 4 * x2_se, (x2_mean, x2_se)
    # The pi*-start mistake samplers/ibp.py warns of gives 2.7; make sure the test could see it.
    assert 4 * se < 1.0


@pytest.mark.parametrize("moves", [True, False], ids=["default-sweep", "paper-sweep"])
@pytest.mark.parametrize("data_cols", [None, 0], ids=["factorised-z-pass", "gaussian-z-kernel"])
def test_capped_ibp_prior_is_the_truncated_poisson(data_cols, moves):
    """With ``max_dims`` the prior is the IBP conditioned on ``K+ <= cap``: ``K+`` follows the
    Poisson(alpha H_N) truncated at the cap. A cap of 5 against a mean of 5.86 truncates 45%
    of the mass, so a sampler that ignored the cap anywhere, or applied it as a reflection
    rather than as an indicator, would be off by many standard errors."""
    n, alpha, cap = 10, 2.0, 5
    k_plus, _, x2, moved = _prior_chain(data_cols, 4000, n=n, alpha=alpha, moves=moves, max_dims=cap)
    assert k_plus.max() <= cap
    if moves:
        assert min(moved[k] for k in ("births", "deaths", "flips")) > 300, moved
    pmf = stats.poisson(alpha * ibp.harmonic(n)).pmf(np.arange(cap + 1))
    pmf /= pmf.sum()
    for name, values, target in [
        ("mean", k_plus, float(pmf @ np.arange(cap + 1))),
        ("P(K+ = cap)", k_plus == cap, float(pmf[cap])),
        ("P(K+ <= 2)", k_plus <= 2, float(pmf[:3].sum())),
    ]:
        mean, se = batch_mean_se(values)
        assert abs(mean - target) < 4 * se, (name, mean, target, se)
    x2_mean, x2_se = batch_mean_se(x2)
    assert abs(x2_mean - 1.0) < 4 * x2_se, (x2_mean, x2_se)


def _new_stick_cdf(alpha: float, n: int, upper: float):
    dens = ibp._NewStickDensity(alpha, n)
    grid = np.linspace(-25.0, math.log(upper) - 1e-12, 4001)
    logp = np.array([dens.logp(t) for t in grid])
    p = np.exp(logp - logp.max())
    cdf = integrate.cumulative_trapezoid(p, grid, initial=0.0)
    cdf /= cdf[-1]
    return lambda t: np.interp(t, grid, cdf)


@pytest.mark.parametrize(("alpha", "n", "upper"), [(2.0, 10, 1.0), (0.3, 500, 1.0), (5.0, 200, 0.01)])
def test_new_stick_draws_are_exact(alpha, n, upper):
    rng = np.random.default_rng(42)
    draws = np.array([ibp.sample_new_stick(rng, alpha, n, upper) for _ in range(3000)])
    assert np.all((draws > 0) & (draws < upper))
    cdf = _new_stick_cdf(alpha, n, upper)
    result = stats.kstest(np.log(draws), cdf)
    assert result.pvalue > 1e-3, result


def test_z_prior_odds_recompute_pi_star():
    pi = np.array([0.9, 0.2, 0.05])
    counts = np.array([5, 1, 0])
    # Dimension 1 is a singleton with the smallest active stick: switching it off raises pi*.
    odds = ibp.z_log_prior_odds(pi, counts, 1, 1)
    assert odds == pytest.approx(math.log(0.2 / 0.8) - math.log(0.2) + math.log(0.9))
    # Switching on dimension 2 (inactive, smaller stick) lowers pi* to its own stick.
    odds = ibp.z_log_prior_odds(pi, counts, 2, 0)
    assert odds == pytest.approx(math.log(0.05 / 0.95) - math.log(0.05) + math.log(0.2))
