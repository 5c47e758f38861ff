"""Absorb/emit moves (samplers/absorb.py): the shear and its ratio (the cache checks and the
option's switch are parametrised with the transfers' in tests/samplers/test_transfer.py).

Exactness inside the whole sweep: the IBP prior check (tests/samplers/test_ibp.py) and the
joint-distribution tests run with the moves on and require accepted absorbs and emits.
"""

import math

import numpy as np
import pytest
from scipy import stats

from ibp_rflvm.priors import IndianBuffet
from ibp_rflvm.samplers import absorb as ab

IBP = IndianBuffet()


def test_ordered_pairs_keep_the_phase_of_a_row_using_both_parallel_columns():
    rng = np.random.default_rng(0)
    w = rng.standard_normal(6)
    W = np.column_stack([w, rng.standard_normal(6), 1.7 * w])
    keep, toggle, c = ab.ordered_pairs(W, 0.99)
    assert sorted(zip(keep.tolist(), toggle.tolist(), strict=True)) == [(0, 2), (2, 0)]
    x = np.array([0.4, 0.0, -1.1])
    for k, t, cc in zip(keep, toggle, c, strict=True):
        # Absorbing `t` into `k`: x_k + c x_t on `k` alone gives the same phase.
        assert np.allclose((x[k] + cc * x[t]) * W[:, k], x[k] * W[:, k] + x[t] * W[:, t])


def test_absorb_log_ratio_is_ibp_odds_times_the_coordinate_prior_and_emit_reverses_it():
    n, m, x_a, x_b, c = 15, 4, 0.6, -0.9, 0.8
    new_a = x_a + c * x_b
    got = ab.absorb_log_ratio(1, x_a, new_a, m, n, IBP.hyper)
    expected = math.log((n - m) / m) + stats.norm.logpdf(new_a) - stats.norm.logpdf(x_a)
    assert got == pytest.approx(expected)
    # The emit from the absorbed state, same other rows: x_a' - c x_b = x_a, reciprocal ratio.
    back = ab.absorb_log_ratio(0, new_a, new_a - c * x_b, m, n, IBP.hyper)
    assert new_a - c * x_b == pytest.approx(x_a)
    assert back == pytest.approx(-got)

