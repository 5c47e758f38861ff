"""Polya-gamma draws of the JAX backend: moments over the shapes the likelihoods produce, power
against wrong laws, agreement in law with the numba sampler, reproducibility under jit.

Draw counts: every cell of the grid gets ``N_DRAWS = 40,000`` draws, all cells and the other
tests' rows in one call (compiling the sampler takes several seconds a shape on this CPU). The
mean of ``n`` draws has standard error ``sd / sqrt(n)``, so at
``Z_MAX = 4.5`` the test detects a relative error of the mean of ``4.5 sd / (mean sqrt(n))``:
``1.8% / sqrt(b)`` at ``c = 0`` (``sd / mean = 0.816 / sqrt(b)``), i.e. 1.8% at ``b = 1``, 0.33% at
``b = 30``, 0.1% at ``b = 300``; and a relative error of the variance of about
``4.5 sqrt(2 / n) = 3.2%`` where the law is near normal (more for small ``b``, whose kurtosis is
large). The numba suite's 200,000 draws per cell are about 2.2 times as sensitive; the threshold
is in standard errors, so it keeps its level at any count.
"""


import numpy as np
import pytest

pytest.importorskip("jax")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from scipy import stats  # noqa: E402

from ibp_rflvm.jax_backend.polya_gamma import draw_pg  # noqa: E402
from ibp_rflvm.likelihoods.polya_gamma import draw_pg as draw_pg_numba  # noqa: E402

from ..likelihoods.test_pg_draws import moment_z  # noqa: E402

B_GRID = (0.001, 0.005, 0.05, 0.5, 1.0, 1.5, 2.5, 3.5, 6.0, 12.0, 30.0, 80.0, 300.0, 3000.0)
C_GRID = (0.0, 0.1, 1.0, 4.0, 10.0, 30.0)
N_DRAWS = 40_000
#: 84 cells x 2 statistics: P(any |Z| > 4.5 | exact sampler) is about 1e-3 (as in the numba suite).
Z_MAX = 4.5


#: Rows drawn besides the grid, in the same call (one compiled program serves the whole file but
#: the mixed-shape tests): wrong laws for the power checks, the fractional-law cells and their
#: pilots for the chi-square bins, the tiniest shapes.
EXTRA = (
    [("wrong", 0.5, 1.0), ("wrong", 2.5, 0.1), ("chi", 0.9, 1.0)]
    + [("pilot", h, c) for h, c in [(0.05, 0.0), (0.5, 4.0), (0.9, 1.0)]]
    + [("tiny", b, 1.0) for b in (1e-300, 1e-25, 1e-19, 1e-15, 3.0 + 1e-13)]
)


@pytest.fixture(scope="module")
def draws():
    """``{(kind, b, c): N_DRAWS draws}``: kind "grid" for the cells of B_GRID x C_GRID (draws of
    PG(b, c)), "wrong" for draws of PG(b + 0.5, c), "chi" and "pilot" for PG(b, c), "tiny"."""
    rows = [("grid", b, c) for b in B_GRID for c in C_GRID] + EXTRA
    b = np.array([r[1] + (0.5 if r[0] == "wrong" else 0.0) for r in rows])[:, None] * np.ones(N_DRAWS)
    # Half the tilts negative: PG(b, c) = PG(b, -c).
    sign = np.where(np.arange(N_DRAWS) % 2 == 0, 1.0, -1.0)
    c = np.array([r[2] for r in rows])[:, None] * sign[None, :]
    x = np.asarray(draw_pg(jax.random.key(2029), jnp.asarray(b), jnp.asarray(c)))
    assert x.shape == b.shape and x.dtype == np.float64
    return dict(zip(rows, x, strict=True))


def test_pg_moments_over_the_grid(draws):
    bad = []
    for (kind, b, c), x in draws.items():
        if kind != "grid":
            continue
        assert np.all(np.isfinite(x)) and np.all(x > 0.0)
        z_mean, z_var = moment_z(x, b, c)
        if abs(z_mean) > Z_MAX or abs(z_var) > Z_MAX:
            bad.append((b, c, round(z_mean, 2), round(z_var, 2)))
    assert not bad, bad


@pytest.mark.parametrize(
    ("b", "c", "wrong"),
    [
        (30.0, 1.0, "scale"),  # PG(b, c) * 1.01: the mean about 13 SE off
        (300.0, 10.0, "scale"),
        (0.5, 1.0, "shape"),  # PG(b + 0.5, c): the mean doubles
        (2.5, 0.1, "shape"),
    ],
)
def test_the_grid_statistics_reject_a_wrong_law(draws, b, c, wrong):
    # The same statistics at the same draw count tell a deliberately wrong law from the right one.
    bad = 1.01 * draws["grid", b, c] if wrong == "scale" else draws["wrong", b, c]
    assert abs(moment_z(bad, b, c)[0]) > Z_MAX


@pytest.mark.parametrize(("b", "c"), [(0.5, 1.0), (2.5, 4.0), (12.0, 10.0), (300.0, 30.0)])
def test_law_agrees_with_the_numba_sampler(draws, b, c):
    # Two-sample Kolmogorov-Smirnov test, N_DRAWS draws each.
    y = draw_pg_numba(np.random.default_rng(int(10 * b + c)), np.full(N_DRAWS, b), np.full(N_DRAWS, c))
    assert stats.ks_2samp(draws["grid", b, c], y).pvalue > 1e-4


@pytest.mark.parametrize(("h", "c"), [(0.05, 0.0), (0.5, 4.0), (0.9, 1.0)])
def test_fractional_shapes_have_the_exact_law(draws, h, c):
    # Chi-square of N_DRAWS draws of J*(h, c/2) = 4 PG(h, c) in 20 bins against the density
    # integrated numerically (the numba suite's check): it sees an error in the shape of the law,
    # e.g. of the fractional sampler's envelope or acceptance test, that moments need not.
    from tests.likelihoods.test_pg_draws import _bin_probabilities

    x = 4.0 * draws["chi" if h == 0.9 else "grid", h, c]
    pilot = 4.0 * draws["pilot", h, c]
    edges = np.quantile(pilot, np.linspace(0.0, 1.0, 21)[1:-1])
    edges = np.concatenate([[0.0], edges, [min(15.0, 10.0 * edges[-1])]])
    p = _bin_probabilities(h, 0.5 * c, edges)
    counts = np.bincount(np.searchsorted(edges, x, side="right") - 1, minlength=p.size)[: p.size]
    chi2 = float(np.sum((counts - N_DRAWS * p) ** 2 / (N_DRAWS * p)))
    assert chi2 < stats.chi2.ppf(1.0 - 1e-4, p.size - 1), chi2


def test_extremely_small_shapes(draws):
    # A dispersion floored near 0 gives such shapes at zero counts: finite, tiny draws
    # (E PG(b, c) <= b / 4); below 1e-150 the fractional part is 0, as in the numba code.
    for (kind, b, _), x in draws.items():
        if kind == "tiny":
            assert np.all(np.isfinite(x)) and np.all(x >= 0.0)
            assert np.all(x == 0.0) if b < 1e-150 else (x.mean() < 1e3 * b)


def mixed_shapes():
    """A (40, 30) array of every regime: zeros, tiny and fractional shapes, sums of PG(1) draws,
    the series from b = 9 on; tilts up to |c| of about 30."""
    rng = np.random.default_rng(4)
    b = rng.choice([0.0, 0.004, 0.7, 1.0, 3.4, 8.99, 9.0, 57.3, 2500.0], size=(40, 30))
    c = rng.normal(0.0, 8.0, size=(40, 30))
    return jnp.asarray(b), jnp.asarray(c)


@jax.jit
def step(key, b, c):
    """A caller's compiled step with the draw inside it."""
    return draw_pg(key, b, c) * 2.0


def test_reproducible_and_jittable_on_mixed_shapes():
    b, c = mixed_shapes()
    first = np.asarray(step(jax.random.key(11), b, c))
    again = np.asarray(step(jax.random.key(11), b, c))
    other = np.asarray(step(jax.random.key(12), b, c))
    assert first.shape == (40, 30) and first.dtype == np.float64
    np.testing.assert_array_equal(first, again)
    positive = np.asarray(b) > 0.0
    assert np.all(first[~positive] == 0.0) and np.all(first[positive] > 0.0)
    assert np.all(first[positive] != other[positive])


def test_zero_shape_is_exactly_zero_and_bad_input_is_nan():
    b, c = mixed_shapes()
    b = b.at[0, :4].set(jnp.array([0.0, -1.0, jnp.inf, jnp.nan])).at[1, 0].set(20.0)
    c = c.at[0, 0].set(-50.0).at[1, 0].set(jnp.inf)
    x = np.asarray(step(jax.random.key(0), b, c))
    assert x[0, 0] == 0.0
    assert np.all(np.isnan(x[0, 1:4])) and np.isnan(x[1, 0])
    rest = np.ones(x.shape, dtype=bool)
    rest[0, :4] = rest[1, 0] = False
    assert np.all(np.isfinite(x[rest])) and np.all((x[rest] > 0.0) == (np.asarray(b)[rest] > 0.0))

