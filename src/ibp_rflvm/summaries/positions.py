"""Where each row sits on each matched dimension, and where groups of rows sit along it.

A reported dimension (:mod:`.meaning`) is one column of ``H = X * Z`` in each sample that has
it. Its sign is not identified: flipping ``x_d`` and the frequencies' ``d``-th coordinates
together changes no feature, so the matching (:mod:`.align`), which compares usage and
effects, cannot see it. Before positions are averaged, each sample's column is therefore
oriented against a reference, the running weighted mean of the oriented columns (two passes,
as the matching does: the first builds the reference sample by sample, the second orients
every sample afresh against the finished one, so no sample's orientation depends on the order).
The reference's overall sign is a convention: the rows that use the dimension sit on the
positive side on average.

A row's position in a sample is its coordinate there, 0 where it does not use the dimension
(as in the model). Positions are averaged over the samples that have the dimension, the same
conditioning as its effects (``given that it exists``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .meaning import AlignedDraws, DimensionSummary, weighted_quantiles


@dataclass(frozen=True)
class DimensionDraws:
    """One reported dimension in the samples that have it.

    Parameters
    ----------
    draw : ndarray of int of shape (n_have,)
        The samples' indices in :class:`~.meaning.AlignedDraws`.
    column : ndarray of int of shape (n_have,)
        The dimension's column in each sample's ``H``.
    sign : ndarray of shape (n_have,)
        +1 or -1: the orientation that aligns the sample's column with the others.
    weight : ndarray of shape (n_have,)
        The samples' posterior weights, renormalised to sum to one.
    """

    draw: np.ndarray
    column: np.ndarray
    sign: np.ndarray
    weight: np.ndarray

    def values(self, draws: AlignedDraws) -> np.ndarray:
        """``n_have x N``: each sample's oriented positions of every row (0 where a row is off)."""
        if self.draw.size == 0:
            return np.zeros((0, draws.effects[0].used.shape[0]) if draws.effects else (0, 0))
        return np.stack(
            [s * draws.samples[i].H[:, c] for i, c, s in zip(self.draw, self.column, self.sign, strict=True)]
        )


def dimension_draws(draws: AlignedDraws, label: int) -> DimensionDraws:
    """The samples of `draws` that have aligned dimension `label`, oriented alike."""
    idx, cols = [], []
    for s, (eff, lab) in enumerate(zip(draws.effects, draws.labels, strict=True)):
        hit = np.flatnonzero(lab == label)
        if hit.size:
            idx.append(s)
            cols.append(int(eff.columns[hit[0]]))
    idx = np.asarray(idx, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    weight = draws.weights[idx] if idx.size else np.zeros(0)
    weight = weight / weight.sum() if weight.sum() > 0 else np.full(idx.size, 1.0 / max(idx.size, 1))
    unsigned = DimensionDraws(idx, cols, np.ones(idx.size), weight)
    V = unsigned.values(draws)
    return DimensionDraws(idx, cols, orient(V, weight), weight)


def orient(V: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Signs (``+-1``, one per row of `V`) that align the rows of `V` with their weighted mean.

    The first pass orients each row against the running mean of those before it; the second
    orients every row against the mean the first pass finished with. The overall sign makes
    the mean's sum non-negative.
    """
    n = V.shape[0]
    if n == 0:
        return np.ones(0)
    ref = np.zeros(V.shape[1])
    for s in range(n):  # over samples, never rows: each step is one N-long dot product
        sign = 1.0 if V[s] @ ref >= 0.0 else -1.0
        ref += weight[s] * sign * V[s]
    signs = np.where(V @ ref >= 0.0, 1.0, -1.0)
    if (weight * signs) @ V.sum(axis=1) < 0.0:
        signs = -signs
    return signs


def all_dimension_draws(draws: AlignedDraws, summary: DimensionSummary) -> list[DimensionDraws]:
    """:func:`dimension_draws` of every reported dimension of `summary`, in its order."""
    return [dimension_draws(draws, int(label)) for label in summary.ids]


def positions(draws: AlignedDraws, dims: list[DimensionDraws]) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mean and standard deviation of every row's position on each dimension, each
    ``N x n_dims``, over the samples that have the dimension."""
    n_rows = draws.effects[0].used.shape[0] if draws.effects else 0
    mean = np.zeros((n_rows, len(dims)))
    std = np.zeros((n_rows, len(dims)))
    for t, dd in enumerate(dims):
        V = dd.values(draws)
        if V.shape[0] == 0:
            continue
        mean[:, t] = dd.weight @ V
        std[:, t] = np.sqrt(np.maximum(dd.weight @ (V * V) - mean[:, t] ** 2, 0.0))
    return mean, std


def group_positions(
    draws: AlignedDraws,
    dims: list[DimensionDraws],
    summary: DimensionSummary,
    groups: np.ndarray,
    level: float,
) -> pd.DataFrame:
    """Where each group of rows sits on each dimension.

    Per sample, a group's position is the mean coordinate of its rows that use the dimension
    there; the table gives its posterior mean over the samples in which some row of the group
    uses it, with an equal-tailed interval of mass `level`, and the group's mean usage.

    Parameters
    ----------
    groups : ndarray of shape (N,)
        Each row's group (any hashable values; missing values are their own group "nan").
    """
    codes, names = pd.factorize(pd.Series(groups).astype("string").fillna("nan"), sort=True)
    n_groups = len(names)
    onehot = np.zeros((codes.size, n_groups))
    onehot[np.arange(codes.size), codes] = 1.0
    sizes = onehot.sum(axis=0)
    tails = ((1.0 - level) / 2, (1.0 + level) / 2)
    records = []
    for t, dd in enumerate(dims):
        V = dd.values(draws)
        sums = V @ onehot
        counts = (V != 0.0).astype(np.float64) @ onehot
        with np.errstate(invalid="ignore", divide="ignore"):
            means = sums / counts
        usage = summary.usage[:, t] @ onehot / sizes
        for g in range(n_groups):  # over groups, a handful
            have = np.isfinite(means[:, g]) if means.size else np.zeros(0, dtype=bool)
            if have.any():
                w = dd.weight[have]
                pos = float(w @ means[have, g] / w.sum())
                lo, hi = weighted_quantiles(means[have, g][:, None], w, tails)[:, 0]
            else:
                pos = lo = hi = np.nan
            records.append((summary.labels[t], names[g], int(sizes[g]), float(usage[g]), pos, lo, hi))
    return pd.DataFrame(
        records, columns=["dimension", "group", "rows", "usage", "position", "lower", "upper"]
    )
