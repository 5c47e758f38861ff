"""The non-linear reading of the reported dimensions, computed once per posterior: each row's
position (:mod:`.positions`), each column's profile and variation (:mod:`.profiles`) and
each dimension's reproducibility across chains (:mod:`.reproducibility`), as tables."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from .meaning import (
    LEVEL,
    AlignedDraws,
    DimensionSummary,
    aligned_draws,
    dimension_summary,
    weighted_quantiles,
)
from .positions import DimensionDraws, all_dimension_draws, group_positions, positions
from .posterior import Posterior
from .profiles import grid, profile_draws, variation

#: Grid points of a profile, by default.
PROFILE_POINTS = 50
#: The rankings of :func:`ranked_columns`: by variation along the dimension, or by effect.
RANKINGS = ("variation", "effect")


@dataclass(frozen=True)
class DimensionReading:
    """The reported dimensions with their samples oriented alike and the rows' positions."""

    summary: DimensionSummary
    draws: AlignedDraws
    dims: list[DimensionDraws]
    mean: np.ndarray
    std: np.ndarray

    def index(self, dimension: str) -> int:
        """The position of `dimension` (a name of ``dimensions_.index``) among the reported."""
        if dimension not in self.summary.labels:
            known = ", ".join(self.summary.labels) or "none"
            raise ValueError(f"no dimension {dimension!r}; the reported dimensions are: {known}")
        return self.summary.labels.index(dimension)


def dimension_reading(posterior: Posterior) -> DimensionReading:
    """The reading of `posterior`'s reported dimensions (computed once per posterior).

    Parameters
    ----------
    posterior : Posterior
        A fit's posterior.

    Returns
    -------
    DimensionReading
        The reported dimensions (``summary``), the matched samples (``draws``), each
        dimension's samples oriented alike (``dims``) and the rows' posterior mean and sd
        positions (``mean``, ``std``: ``N x n_dims``).
    """

    def compute():
        summary = dimension_summary(posterior)
        draws = aligned_draws(posterior)
        dims = all_dimension_draws(draws, summary)
        mean, std = positions(draws, dims)
        return DimensionReading(summary, draws, dims, mean, std)

    return posterior.memo("dimension_reading", compute)


def column_variation(posterior: Posterior) -> np.ndarray:
    """``n_dims x J``: each column's variation along each reported dimension (computed once)."""

    def compute():
        r = dimension_reading(posterior)
        with threadpool_limits(limits=1, user_api="blas"):
            return variation(r.draws, r.dims, r.mean, r.summary.usage, posterior.spec)

    return posterior.memo("column_variation", compute)


def ranked_columns(posterior: Posterior, n: int, by: str) -> np.ndarray:
    """``n_dims x n`` column indices of each reported dimension, largest `by` first."""
    if by not in RANKINGS:
        raise ValueError(f"by must be one of {list(RANKINGS)}; got {by!r}")
    summary = dimension_summary(posterior)
    key = column_variation(posterior) if by == "variation" else np.abs(summary.effect)
    n = min(int(n), summary.effect.shape[1])
    return np.argsort(-key, axis=1, kind="stable")[:, :n]


def profile_table(
    posterior: Posterior,
    dimension: str,
    columns: np.ndarray,
    names: np.ndarray,
    n_points: int = PROFILE_POINTS,
    level: float = LEVEL,
) -> pd.DataFrame:
    """The profile of `columns` along `dimension`, long format (the estimators' ``profile``).

    Parameters
    ----------
    posterior : Posterior
        A fit's posterior.
    dimension : str
        A reported dimension's name (``"d1"``, ...).
    columns : ndarray of int
        The columns' indices.
    names : ndarray of shape (n_features,)
        Every column's name.
    n_points : int, default=50
        Grid points, from the lowest to the highest posterior-mean position of the rows that
        use the dimension.
    level : float, default=0.9
        Mass of the equal-tailed band over the samples.

    Returns
    -------
    pandas.DataFrame
        ``dimension``, ``position``, ``column``, ``mean``, ``lower``, ``upper``; each column's
        whole profile together, positions ascending.
    """
    r = dimension_reading(posterior)
    t = r.index(dimension)
    points = grid(r.mean[:, t], r.summary.usage[:, t], n_points)
    with threadpool_limits(limits=1, user_api="blas"):
        values = profile_draws(r.draws, r.dims[t], points, columns, posterior.spec)
    flat = values.reshape(values.shape[0], -1)
    weight = r.dims[t].weight
    mean = weight @ flat
    lower, upper = weighted_quantiles(flat, weight, ((1.0 - level) / 2, (1.0 + level) / 2))
    # Column-major: each column's whole profile together, positions ascending.
    order = np.arange(flat.shape[1]).reshape(points.size, columns.size).T.ravel()
    return pd.DataFrame(
        {
            "dimension": dimension,
            "position": np.tile(points, columns.size),
            "column": np.repeat(names[columns], points.size),
            "mean": mean[order],
            "lower": lower[order],
            "upper": upper[order],
        }
    )


def groups_table(posterior: Posterior, groups: Sequence, level: float = LEVEL) -> pd.DataFrame:
    """Each group's usage and position on each reported dimension (the estimators' ``describe``).

    Parameters
    ----------
    posterior : Posterior
        A fit's posterior.
    groups : sequence of shape (n_samples,)
        Each training row's group.
    level : float, default=0.9
        Mass of the positions' equal-tailed intervals.

    Returns
    -------
    pandas.DataFrame
        ``dimension``, ``group``, ``rows``, ``usage``, ``position``, ``lower``, ``upper``.

    Raises
    ------
    ValueError
        Not one group per training row.
    """
    groups = np.asarray(groups, dtype=object)
    n_rows = posterior.shape[0]
    if groups.ndim != 1 or groups.shape[0] != n_rows:
        raise ValueError(f"labels must give one label per training row ({n_rows}); got shape {groups.shape}")
    r = dimension_reading(posterior)
    return group_positions(r.draws, r.dims, r.summary, groups, level)
