"""Chinese restaurant table draws of the JAX backend: moments against the closed forms over
counts from 0 to 5000 (both phases of the sampler: one uniform per customer below 32, jumps from
there), power against a wrong law, column totals over observed entries only.

Draw counts: ``M = 4,000`` draws per cell, all cells in one call. The mean of ``CRT(n, r)`` has
standard error ``sd / sqrt(M)``; at ``Z_MAX = 4.5`` that detects an error of the mean of
``0.071 sd`` (e.g. 0.19 tables, 2.1%, at ``n = 5000``, ``r = 1``: mean 9.1, sd 2.7) and a
relative error of the variance of about ``4.5 sqrt(2 / M) = 10%``.
"""

import math

import numpy as np
import pytest

pytest.importorskip("jax")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from ibp_rflvm.jax_backend.crt import crt_column_totals, crt_draw  # noqa: E402

N_GRID = (0, 1, 5, 200, 201, 5000)
R_GRID = (0.05, 1.0, 30.0)
M = 4_000
#: 12 cells with spread x 2 statistics (n = 0 and 1 are checked exactly): P(any |Z| > 4.5) ~ 2e-4.
Z_MAX = 4.5


def crt_cumulants(n, r):
    """Mean, variance and fourth cumulant of ``sum_t Bernoulli(p_t)``, ``p_t = r / (r + t)``."""
    p = r / (r + np.arange(n, dtype=np.float64))
    q = p * (1.0 - p)
    return float(p.sum()), float(q.sum()), float(np.sum(q * (1.0 - 6.0 * q)))


def crt_z(x, n, r):
    mean, var, k4 = crt_cumulants(n, r)
    z_mean = (x.mean() - mean) / math.sqrt(var / x.size)
    z_var = (x.var() - var) / math.sqrt((k4 + 2.0 * var * var) / x.size)
    return z_mean, z_var


@pytest.fixture(scope="module")
def grid_draws():
    cells = [(n, r) for n in N_GRID for r in R_GRID]
    n = np.repeat([float(c[0]) for c in cells], M).reshape(len(cells), M)
    r = np.repeat([c[1] for c in cells], M).reshape(len(cells), M)
    return cells, np.asarray(crt_draw(jax.random.key(31), jnp.asarray(n), jnp.asarray(r)))


def test_crt_moments_over_the_grid(grid_draws):
    cells, x = grid_draws
    assert x.dtype == np.float64
    bad = []
    for (n, r), row in zip(cells, x, strict=True):
        assert np.all(row == np.round(row)) and np.all(row >= min(n, 1)) and np.all(row <= n)
        if n <= 1:
            assert np.all(row == n)  # the first customer always opens a table
            continue
        z_mean, z_var = crt_z(row, n, r)
        if abs(z_mean) > Z_MAX or abs(z_var) > Z_MAX:
            bad.append((n, r, round(z_mean, 2), round(z_var, 2)))
    assert not bad, bad


@pytest.mark.parametrize(
    ("n", "r", "wrong_n", "wrong_r"), [(5, 1.0, 6, 1.0), (5000, 1.0, 5000, 1.1), (201, 30.0, 200, 33.0)]
)
def test_the_grid_statistics_reject_a_wrong_law(grid_draws, n, r, wrong_n, wrong_r):
    # One customer more, or r 10% off, is told apart at the same draw count.
    cells, x = grid_draws
    assert max(abs(z) for z in crt_z(x[cells.index((n, r))], n, r)) <= Z_MAX
    bad = np.asarray(crt_draw(jax.random.key(5), jnp.full(M, float(wrong_n)), jnp.full(M, wrong_r)))
    assert max(abs(z) for z in crt_z(bad, n, r)) > Z_MAX


def test_column_totals_are_sums_over_observed_entries():
    rng = np.random.default_rng(3)
    N, J = 60, 8
    y = rng.poisson(3.0, size=(N, J)).astype(np.float32)
    y[5, 2], y[7, 6] = 4000.0, 250.0  # two large counts among small ones
    observed = rng.random((N, J)) < 0.8
    observed[:, 4] = False  # a column with nothing observed
    observed[5, 2] = True
    r = jnp.asarray(rng.uniform(0.05, 30.0, size=J))
    key = jax.random.key(8)
    totals = np.asarray(crt_column_totals(key, jnp.asarray(y), jnp.asarray(observed), r))
    assert totals.shape == (J,) and totals.dtype == np.float64 and totals[4] == 0.0
    # Unobserved entries contribute nothing, whatever their count: the same draws as zero counts.
    y_hidden = np.where(observed, y, 9999.0).astype(np.float32)
    same = crt_column_totals(key, jnp.asarray(y_hidden), jnp.asarray(observed), r)
    np.testing.assert_array_equal(np.asarray(same), totals)
    # The totals are the column sums of the elementwise draws of the same key.
    n = jnp.asarray(np.where(observed, y, 0.0))
    each = np.asarray(crt_draw(key, n, jnp.broadcast_to(r[None, :], n.shape)))
    np.testing.assert_array_equal(each.sum(axis=0), totals)
    assert each[5, 2] >= 1.0 and np.all(each[~observed] == 0.0)


def test_column_totals_law_and_reproducibility():
    # 400 replicate columns of 50 entries each (mostly small counts, one of 3000 per column):
    # the totals' mean and variance against the sums of the entries' closed forms.
    rng = np.random.default_rng(9)
    base = rng.poisson(2.0, size=50).astype(np.float64)
    base[0] = 3000.0
    J, r_value = 400, 2.5
    y = np.repeat(base[:, None], J, axis=1)
    observed = np.ones_like(y, dtype=bool)
    r = jnp.full(J, r_value)
    totals = np.asarray(crt_column_totals(jax.random.key(1), jnp.asarray(y), jnp.asarray(observed), r))
    parts = [crt_cumulants(int(n), r_value) for n in base]
    mean, var = sum(p[0] for p in parts), sum(p[1] for p in parts)
    k4 = sum(p[2] for p in parts)
    assert abs(totals.mean() - mean) / math.sqrt(var / J) < Z_MAX
    assert abs(totals.var() - var) / math.sqrt((k4 + 2 * var * var) / J) < Z_MAX
    again = crt_column_totals(jax.random.key(1), jnp.asarray(y), jnp.asarray(observed), r)
    other = crt_column_totals(jax.random.key(2), jnp.asarray(y), jnp.asarray(observed), r)
    np.testing.assert_array_equal(np.asarray(again), totals)
    assert not np.array_equal(np.asarray(other), totals)
