"""A check shared by the factor-model baselines: unobserved entries must not be read as zeros."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def factor_data_with_frequent_column(rng, N, J, theta, phi, scale):
    """Counts whose column 0 is frequent in every factor, with column 0 masked in the first
    half of the rows: reading those masked entries as zeros would pull its fitted mean far
    down, so the check below has teeth. Returns ``(Y, truth, masked)``, `truth` the expected
    value of the masked entries under the generating model."""
    phi = phi.copy()
    phi[:, 0] = 0.3
    phi /= phi.sum(axis=1, keepdims=True)
    mean = theta @ phi
    Y = rng.poisson(scale * mean).astype(np.float64)
    masked = np.zeros_like(Y, dtype=bool)
    masked[: N // 2, 0] = True
    return Y, mean, masked


def assert_masked_entries_unobserved(
    Y: np.ndarray,
    truth: np.ndarray,
    masked: np.ndarray,
    masked_means: Callable[[np.ndarray], np.ndarray],
    zero_fill_ratio: float,
) -> None:
    """`masked_means(Y_fit)` returns, per posterior sample, the average fitted mean over the
    masked entries. With NaN there, the truth must lie in its 99% posterior interval; with
    zeros there (the mistake), the interval's top must fall below `zero_fill_ratio` x truth."""
    target = truth[masked].mean()
    with_nan = masked_means(np.where(masked, np.nan, Y))
    zero_filled = masked_means(np.where(masked, 0.0, Y))
    lo, hi = np.quantile(with_nan, [0.005, 0.995])
    assert lo <= target <= hi, (lo, target, hi)
    assert np.quantile(zero_filled, 0.995) < zero_fill_ratio * target
