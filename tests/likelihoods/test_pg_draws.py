"""Exact Polya-gamma draws (issue 29): moments over the shapes the likelihoods produce, the law of
the fractional-shape sampler, its envelope, and the series regime's error bound.

Draw counts: the mean of ``n`` draws has standard error ``sd / sqrt(n)``, so a relative error
``e`` of the mean is ``e mean sqrt(n) / sd`` standard errors. At 200,000 draws a 0.5% error of the
mean is 4.5 SE or more wherever ``sd / mean <= 0.50``, i.e. ``b >= 2.7`` at ``c = 0``
(``sd / mean = 0.816 / sqrt(b)`` there); ``b = 0.5`` needs 1.1 million draws and
``b = 0.005`` 110 million. The full grid at 2 million draws per cell, too slow for the suite,
is ``benchmarks/pg_moments.py`` (figures in ``docs/polya_gamma.md``).
"""

import math

import numpy as np
import pytest
from scipy import integrate, special, stats

from ibp_rflvm.likelihoods import pg_draws as pgd
from ibp_rflvm.likelihoods import pg_series as pgs
from ibp_rflvm.likelihoods.polya_gamma import draw_pg

B_GRID = (0.005, 0.05, 0.5, 1.0, 1.5, 2.5, 3.5, 6.0, 12.0, 30.0, 80.0, 300.0)
C_GRID = (0.0, 0.1, 1.0, 4.0, 10.0)
#: Draws per cell: 200,000 (each draw costs about b PG(1) draws below b = 9, and K + 3 Gamma
#: draws, K = 2-9 at |c| <= 10, from there); the whole grid takes about 10 s.
N_SMALL, N_LARGE = 200_000, 200_000
Z_MAX = 4.5  # 60 cells x 2 statistics: P(any |Z| > 4.5 | exact sampler) is about 1e-3


def pg_cumulants(b, c, terms=200_000):
    """Cumulants 1-4 of ``PG(b, c) = sum_k Gamma(b, 1) / d_k``: ``kappa_n = b (n-1)! sum d_k^-n``
    (the first two also in closed form, :func:`pgd.pg_mean`, :func:`pgd.pg_var`)."""
    k = np.arange(1, terms + 1, dtype=np.float64)
    d = 2.0 * math.pi**2 * (k - 0.5) ** 2 + 0.5 * c * c
    return [b * math.factorial(n - 1) * float(np.sum(d**-n)) for n in (1, 2, 3, 4)]


def moment_z(x, b, c):
    """Z-scores of the sample mean and variance against the exact ones (SEs from the exact
    second and fourth central moments)."""
    n = x.size
    k1, k2, _, k4 = pg_cumulants(b, c)
    k1, k2 = float(pgd.pg_mean(b, c)), float(pgd.pg_var(b, c))
    z_mean = (x.mean() - k1) / math.sqrt(k2 / n)
    # Var of the sample variance ~ (mu_4 - sigma^4) / n, mu_4 = kappa_4 + 3 kappa_2^2.
    z_var = (x.var() - k2) / math.sqrt((k4 + 2.0 * k2 * k2) / n)
    return z_mean, z_var


def test_cumulant_helper_matches_closed_forms():
    for b, c in [(1.0, 0.0), (2.5, 3.0), (0.3, 12.0)]:
        k1, k2, _, _ = pg_cumulants(b, c)
        assert k1 == pytest.approx(float(pgd.pg_mean(b, c)), rel=1e-5)
        assert k2 == pytest.approx(float(pgd.pg_var(b, c)), rel=1e-9)
    # kappa_3 of J*(1) = 4 PG(1, 0) is 16/15 (Laplace transform cosh(sqrt(2s))^-1).
    assert 64.0 * pg_cumulants(1.0, 0.0)[2] == pytest.approx(16.0 / 15.0, rel=1e-9)


@pytest.mark.parametrize("b", B_GRID)
def test_pg_moments_over_the_grid(b):
    rng = np.random.default_rng(int(b * 1000) + 29)
    n = N_SMALL if b <= 6.0 else N_LARGE
    bad = []
    for c in C_GRID:
        x = draw_pg(rng, np.full(n, b), np.full(n, c))
        z_mean, z_var = moment_z(x, b, c)
        if abs(z_mean) > Z_MAX or abs(z_var) > Z_MAX:
            bad.append((c, round(z_mean, 2), round(z_var, 2)))
    assert not bad, bad


def test_the_grid_test_has_power_against_the_old_sampler():
    # The same statistics at the same draw count reject polyagamma 2.0.2's default, the sampler
    # draw_pg used before, in two of its biased cells (issue 29: mean +0.9% at b = 2.5, c = 0.1;
    # variance +4.2% at b = 3.5, c = 1).
    polyagamma = pytest.importorskip("polyagamma")
    rng = np.random.default_rng(7)
    for b, c, which in [(2.5, 0.1, 0), (3.5, 1.0, 1)]:
        x = polyagamma.random_polyagamma(b, c, size=N_SMALL, random_state=rng)
        assert abs(moment_z(x, b, c)[which]) > Z_MAX


# ------------------------------------------------------------------------------------------
# The fractional-shape sampler: its law, its envelope
# ------------------------------------------------------------------------------------------


def jstar_density(x, h, z=0.0, terms=60):
    """Density of ``J*(h, z)`` from its small-``x`` alternating series (accurate for x <~ 15):
    ``cosh(z)^h e^{-z^2 x / 2} 2^h / Gamma(h) sum_n (-1)^n Gamma(n + h) / n! (2n + h)
    (2 pi x^3)^-1/2 exp(-(2n + h)^2 / (2x))``."""
    n = np.arange(terms)[:, None]
    x = np.atleast_1d(np.asarray(x, dtype=np.float64))[None, :]
    log_a = (
        special.gammaln(n + h) - special.gammaln(n + 1.0) + np.log(2 * n + h)
        - 0.5 * np.log(2 * math.pi * x**3) - (2 * n + h) ** 2 / (2 * x)
    )  # fmt: skip
    series = np.sum((-1.0) ** n * np.exp(log_a), axis=0)
    return math.cosh(z) ** h * np.exp(-0.5 * z * z * x[0]) * 2.0**h / special.gamma(h) * series


@pytest.mark.parametrize("h", [0.01, 0.3, 0.7])
def test_jstar_density_series_is_a_density_with_mean_h(h):
    # The series the sampler's acceptance test evaluates: total mass 1, mean h (E J*(h) = h).
    # Beyond x = 15 the mass is below e^{-18}; the integrand is split where it varies fastest.
    pts = [0.0, 1e-3, 0.05, 0.5, 2.0, 15.0]

    def integral(g):
        return sum(integrate.quad(g, a, b, limit=200)[0] for a, b in zip(pts[:-1], pts[1:], strict=True))

    mass = integral(lambda x: jstar_density(x, h)[0])
    mean = integral(lambda x: x * jstar_density(x, h)[0])
    assert mass == pytest.approx(1.0, abs=2e-6)
    assert mean == pytest.approx(h, rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("h", [1e-4, 0.01, 0.1, 0.5, 0.9, 0.999])
def test_fractional_envelope_dominates_the_density(h):
    # Left of t: f <= 2^h / Gamma(h) a_0 (ratio of the series to its first term <= 1); right of
    # t: f <= K_h e^{-kappa x}. Checked on a grid where the series is accurate.
    t, log_k = pgd._frac_setup(h)
    x_left = np.linspace(1e-3, t, 400)
    a0 = 2.0**h * h / np.sqrt(2 * math.pi * x_left**3) * np.exp(-h * h / (2 * x_left))
    assert np.all(jstar_density(x_left, h) <= a0 * (1.0 + 1e-12))
    x_right = np.linspace(t, 15.0, 400)
    envelope = np.exp(log_k - pgd._KAPPA * x_right)
    ratio = jstar_density(x_right, h) / envelope
    assert np.all(ratio <= 1.0), ratio.max()


def _bin_probabilities(h, z, edges):
    """P(J*(h, z) in each bin), the density integrated numerically (last bin open)."""
    inner = [
        integrate.quad(lambda x: jstar_density(x, h, z)[0], a, b, limit=200)[0]
        for a, b in zip(edges[:-1], edges[1:], strict=True)
    ]
    return np.array([*inner, max(0.0, 1.0 - sum(inner))])


@pytest.mark.parametrize(("h", "c"), [(0.05, 0.0), (0.5, 0.0), (0.5, 3.0), (0.9, 1.0)])
def test_fractional_sampler_has_the_exact_law(h, c):
    # Chi-square of 200,000 draws of J*(h, c/2) = 4 PG(h, c) in 20 bins against the density:
    # detects a total-variation error of about 0.5% in the shape, which moments alone need not.
    n = 200_000
    x = 4.0 * draw_pg(np.random.default_rng(11), np.full(n, h), np.full(n, c))
    pilot = 4.0 * draw_pg(np.random.default_rng(12), np.full(20_000, h), np.full(20_000, c))
    edges = np.quantile(pilot, np.linspace(0.0, 1.0, 21)[1:-1])
    edges = np.concatenate([[0.0], edges, [min(15.0, 10.0 * edges[-1])]])
    p = _bin_probabilities(h, 0.5 * c, edges)
    counts = np.bincount(np.searchsorted(edges, x, side="right") - 1, minlength=p.size)[: p.size]
    chi2 = float(np.sum((counts - n * p) ** 2 / (n * p)))
    assert chi2 < stats.chi2.ppf(1.0 - 1e-4, p.size - 1), chi2


# ------------------------------------------------------------------------------------------
# Large shapes: the series regime and its bound (pg_series)
# ------------------------------------------------------------------------------------------


def tail_brute(c, K, n_max=8, terms=4_000_000):
    """``sum_{k > K} d_k^-n`` for ``n = 1 .. n_max`` by direct summation (the first sum's
    remainder beyond `terms` added as its integral)."""
    k = np.arange(K + 1, terms + 1, dtype=np.float64)
    d = 2.0 * math.pi**2 * ((k - 0.5) ** 2 + (c / (2 * math.pi)) ** 2)
    out = [float(np.sum(d**-n)) for n in range(1, n_max + 1)]
    out[0] += 1.0 / (2.0 * math.pi**2 * terms)
    return out


@pytest.mark.parametrize(("m", "b"), [(3, 4.5), (3, 300.0), (8, 9.0), (8, 14.0), (8, 300.0)])
def test_gamma_derivative_norm(m, b):
    # int |g^(m)| from the Laguerre roots against quadrature of g^(m) = m! x^{b-1-m} e^-x
    # L_m^{(b-1-m)}(x) / Gamma(b) (Rodrigues), itself checked against finite differences.
    a, sd = b - 1.0, math.sqrt(b)

    def gm(x, m=m):
        return (
            math.factorial(m)
            * math.exp((a - m) * math.log(x) - x - math.lgamma(b))
            * special.eval_genlaguerre(m, a - m, x)
        )

    x0, h = b + 0.7 * sd, 1e-2 * sd
    pdf = stats.gamma(b).pdf
    fd3 = (pdf(x0 + 2 * h) - 2 * pdf(x0 + h) + 2 * pdf(x0 - h) - pdf(x0 - 2 * h)) / (2 * h**3)
    assert gm(x0, 3) == pytest.approx(fd3, rel=1e-3)
    # Integrate piece by piece between the roots of g^(m) (scipy's own Laguerre roots).
    edges = [max(1e-12, b - 25 * sd), *special.roots_genlaguerre(m, a - m)[0], b + 25 * sd + 30]
    want = sum(
        integrate.quad(lambda x: abs(gm(x)), lo, hi, limit=200, epsabs=0.0, epsrel=1e-11)[0]
        for lo, hi in zip(edges[:-1], edges[1:], strict=True)
    )
    assert pgs.gamma_deriv_norm(m, b) == pytest.approx(want, rel=1e-6)


def test_g8_table_bounds_the_norm_between_its_edges():
    # The bound reads b^4 G_8(b) at the table edge below b: valid if b^4 G_8(b) decreases, which
    # it does on a fine grid up to 10^6 (towards E|He_8(Z)| = 96.0 as Gamma(b) turns normal).
    grid = np.concatenate([np.linspace(9.0, 64.0, 551), np.geomspace(64.0, 1e6, 200)[1:]])
    vals = np.array([b**4 * pgs.gamma_deriv_norm(8, b) for b in grid])
    assert np.all(np.diff(vals) < 0.0)
    assert 96.0 < vals[-1] < 96.2
    for b, v in zip(grid, vals, strict=True):
        assert pgs._g8_upper(b) * b**4 >= v * (1 - 1e-12)


@pytest.mark.parametrize("c", [0.0, 1.0, 7.0, 20.0, 80.0])
def test_tail_sums_and_the_three_gamma_remainder(c):
    b = 138.0
    K = pgs.series_terms(b, c, pgs.K_MAX)
    assert K > 0
    work = np.empty(14 + pgs.WORK_EXTRA)
    shift = pgs.remainder_law(b, c, K, work)
    brute = tail_brute(c, K)
    np.testing.assert_allclose(work[1:8], brute[:7], rtol=1e-12)
    # The remainder T' = s + sum theta_i Gamma(alpha_i) has T's cumulants 1-7 and at most its 8th.
    theta, alpha = work[8:14:2], work[9:14:2]
    assert shift >= 0.0 and np.all(theta > 0.0) and np.all(alpha > 0.0)
    got = [shift + np.sum(alpha * theta)] + [
        math.factorial(n - 1) * np.sum(alpha * theta**n) for n in range(2, 9)
    ]
    want = [b * math.factorial(n - 1) * brute[n - 1] for n in range(1, 9)]
    np.testing.assert_allclose(got[:7], want[:7], rtol=1e-11)
    assert got[7] <= want[7]
    # The bound's cumulant bounds hold: S_n <= (2 pi^2)^-n K^{1-2n} / (2n - 1).
    for n in range(1, 9):
        assert brute[n - 1] <= (2 * math.pi**2) ** -n * K ** (1 - 2 * n) / (2 * n - 1)


def test_eighth_moment_from_cumulants():
    # The bound's E (X - mu)^8 in cumulants, checked on a Gamma(3.7) variable (kappa_n = 3.7 (n-1)!).
    k = {n: 3.7 * math.factorial(n - 1) for n in range(2, 9)}
    m8 = (k[8] + 28 * k[6] * k[2] + 56 * k[5] * k[3] + 35 * k[4] ** 2 + 210 * k[4] * k[2] ** 2
          + 280 * k[3] ** 2 * k[2] + 105 * k[2] ** 4)  # fmt: skip
    want = integrate.quad(lambda x: (x - 3.7) ** 8 * stats.gamma.pdf(x, 3.7), 0, 200, limit=500)[0]
    assert m8 == pytest.approx(want, rel=1e-8)


@pytest.mark.parametrize("c", [0.0, 1.0, 4.0, 10.0, 20.0, 60.0])
def test_series_regime_is_used_only_within_its_bound(c):
    for b in (9.0, 9.7, 20.0, 138.0, 1e3, 1e5, 1e7):
        K = pgs.series_terms(b, c, pgs.K_MAX)
        assert K > 0
        assert pgs.series_tv_bound(b, c, K) <= pgs.TV_TARGET
        lowest = max(1, math.ceil(math.sqrt(14.0) * c / (2 * math.pi) - 0.5))
        assert K == lowest or pgs.series_tv_bound(b, c, K - 1) > pgs.TV_TARGET
    # The bound does not grow with b; at |c| <= 10 a handful of terms suffices.
    if c <= 10.0:
        assert pgs.series_terms(1e7, c, pgs.K_MAX) <= 9
    # Below b = 9 (G_8 infinite from b = 8) the bound is infinite and no series is offered.
    assert pgs.series_tv_bound(8.99, c, 50) == math.inf and pgs.series_terms(8.99, c, pgs.K_MAX) == 0
    # A cap below the K the bound needs: no series (the exact sum is drawn).
    assert pgs.series_terms(138.0, c, pgs.series_terms(138.0, c, pgs.K_MAX) - 1) == 0


@pytest.mark.parametrize(("b", "c"), [(9.0, 0.0), (20.5, 7.0), (138.0, 10.0)])
def test_series_law_equals_the_exact_sum(b, c):
    # Two-sample Kolmogorov-Smirnov test of the series draws against the exact route (the sum of
    # floor(b) PG(1, c) draws and one PG(h, c) draw), 40,000 draws each.
    n = 40_000
    rng = np.random.default_rng(int(b * 10 + c))
    series = draw_pg(rng, np.full(n, b), np.full(n, c))
    parts = np.ones((n, int(b)))
    if b % 1:
        parts = np.hstack([parts, np.full((n, 1), b % 1)])
    exact = draw_pg(rng, parts, np.full(parts.shape, c)).sum(axis=1)
    assert stats.ks_2samp(series, exact).pvalue > 1e-3


def test_large_shape_third_cumulant():
    # The series regime matches mean and variance by construction; the skewness shows the
    # shape (PG(300, 1): kappa_3 / kappa_2^1.5 = 0.11) is right too.
    n, b, c = 50_000, 300.0, 1.0
    x = draw_pg(np.random.default_rng(3), np.full(n, b), np.full(n, c))
    _, k2, k3, _ = pg_cumulants(b, c)
    m3 = np.mean((x - x.mean()) ** 3)
    se = np.std((x - x.mean()) ** 3) / math.sqrt(n)
    assert abs(m3 - k3) < Z_MAX * se, (m3, k3, se)
    # Power: a normal approximation (third central moment 0) would be off by more than 5 SE.
    assert k3 > 5.0 * se and k3 / k2**1.5 > 0.05


# ------------------------------------------------------------------------------------------
# Reproducibility and input checks
# ------------------------------------------------------------------------------------------


def test_draws_are_a_function_of_the_generator_state():
    rng = np.random.default_rng(5)
    b = np.array([[0.0, 0.3, 1.0, 2.7], [60.0, 0.004, 7.5, 300.0]])
    c = np.array([[1.0, -2.0, 0.0, 5.0], [0.5, 3.0, -8.0, 1.0]])
    state = rng.bit_generator.state
    first = draw_pg(rng, b, c)
    second = draw_pg(rng, b, c)
    assert not np.array_equal(first, second)  # the Generator advanced
    rng.bit_generator.state = state
    np.testing.assert_array_equal(draw_pg(rng, b, c), first)
    np.testing.assert_array_equal(draw_pg(rng, b, c), second)
    assert np.all(first[b == 0] == 0.0) and np.all(first[b > 0] > 0.0)
    # A scalar tilt broadcasts; 1-D, 0-D and empty shape arrays work.
    assert draw_pg(np.random.default_rng(0), np.array([1.5, 0.2]), 0.0).shape == (2,)
    assert draw_pg(np.random.default_rng(0), np.float64(2.5), 1.0).shape == ()
    assert draw_pg(np.random.default_rng(0), np.zeros((4, 0)), 1.0).shape == (4, 0)


def test_extremely_small_shapes():
    # A negative binomial dispersion floored at 1e-300 gives such shapes at zero counts: the
    # draws stay finite and tiny (E PG(b, c) <= b / 4), and below 1e-20 no right proposal is made.
    b = np.array([1e-300, 1e-25, 1e-19, 1e-15, 3.0 + 1e-13])
    x = draw_pg(np.random.default_rng(0), np.repeat(b[None, :], 2000, axis=0), 1.0)
    assert np.all(np.isfinite(x)) and np.all(x >= 0.0)
    assert np.all(x[:, :4].mean(axis=0) < 1e3 * b[:4])
    assert pgd._frac_setup(1e-21)[1] == -np.inf and np.isfinite(pgd._frac_setup(1e-19)[1])


@pytest.mark.parametrize(
    ("b", "c", "match"),
    [
        (np.array([1.0, -0.5]), 0.0, "shapes b must be finite and >= 0"),
        (np.array([1.0, np.nan]), 0.0, "shapes b must be finite"),
        (np.array([1.0, 2.0]), np.array([0.0, np.inf]), "tilts c must be finite"),
    ],
)
def test_bad_input_is_named(b, c, match):
    with pytest.raises(ValueError, match=match):
        draw_pg(np.random.default_rng(0), b, c)
