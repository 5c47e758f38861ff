"""How each column changes as a row moves along one dimension: profiles, and the ranking of
columns by how much their profile varies.

The model maps a latent coordinate to the data non-linearly, so one dimension can raise a
column at one end and lower it at the other, which an on-minus-off effect (:mod:`.effects`)
averages away. A *profile* reads the map itself. In each sample that has the dimension, the
dimension's coordinate of every row that uses it there is set to a grid value ``t``, the other
coordinates kept as they are (partial dependence over the rows that use it), and the column's
linear predictor is averaged over those rows:

    psi_j(t) = mean_i phi(a_i + t w_d) beta_j,     a_i = h_i W^T - h_id w_d.

The average over rows is taken before the features' products, by the angle-addition formulas,
``mean_i cos(a_im + t w_md) = C_m cos(t w_md) - S_m sin(t w_md)`` with ``C_m, S_m`` the rows'
means of ``cos a_im, sin a_im``: one pass over the used rows per sample and dimension, then
``n_points x L`` features, whatever the number of rows. The profile on the data's scale is the
likelihood's expected value at that averaged predictor for a row with no offset and one trial
(:meth:`~ibp_rflvm.likelihoods.base.Likelihood.unit_mean`): exactly the partial dependence of
the mean for the Gaussian, and for the other likelihoods the expected value of a typical row
(the rates' geometric mean over the rows, the probability at their mean log-odds). The grid is
in the oriented coordinates of :mod:`.positions`, each sample's own sign applied.

A column's *variation* along a dimension is the range, over the grid, of its posterior-mean
profile on the linear predictor's scale (centred over the columns where a constant added to a
row changes nothing): the same scale as the effects, so the two rankings compare.
"""

from __future__ import annotations

import numpy as np

from .effects import centred_weights
from .meaning import AlignedDraws
from .positions import DimensionDraws

#: Grid points of a column's variation along a dimension (its range needs fewer than a picture).
VARIATION_POINTS = 25


def grid(mean_positions: np.ndarray, usage: np.ndarray, n_points: int) -> np.ndarray:
    """`n_points` evenly spaced positions from the lowest to the highest posterior-mean position
    of the rows that use the dimension with probability at least 0.5 (all rows with a non-zero
    position when none does; [-1, 1] when no row has one)."""
    on = usage >= 0.5
    values = mean_positions[on] if on.any() else mean_positions[mean_positions != 0.0]
    if values.size == 0:
        lo, hi = -1.0, 1.0
    else:
        lo, hi = float(values.min()), float(values.max())
        if hi - lo < 1e-12:
            lo, hi = lo - 0.5, hi + 0.5
    return np.linspace(lo, hi, int(n_points))


def mean_features(H: np.ndarray, W: np.ndarray, column: int, positions: np.ndarray, bias: bool) -> np.ndarray:
    """``n_points x L``: the feature map averaged over the rows that use `column` of `H`, with
    that coordinate set to each of `positions` (the sample's own coordinates)."""
    M = W.shape[0]
    rows = np.flatnonzero(H[:, column] != 0.0)
    w_d = W[:, column]
    if rows.size:
        base = H[rows] @ W.T - np.outer(H[rows, column], w_d)
        C, S = np.cos(base).mean(axis=0), np.sin(base).mean(axis=0)
    else:
        C, S = np.ones(M), np.zeros(M)
    u = np.outer(positions, w_d)
    cu, su = np.cos(u), np.sin(u)
    parts = [(C * cu - S * su) / np.sqrt(M), (S * cu + C * su) / np.sqrt(M)]
    if bias:
        parts.append(np.ones((positions.size, 1)))
    return np.hstack(parts)


def profile_draws(
    draws: AlignedDraws, dd: DimensionDraws, points: np.ndarray, columns: np.ndarray, spec
) -> np.ndarray:
    """``n_have x n_points x len(columns)``: each sample's profile of `columns` on the data's
    scale over the grid `points`."""
    lik = spec.likelihood
    out = np.empty((dd.draw.size, points.size, columns.size))
    for k, (i, c, s) in enumerate(zip(dd.draw, dd.column, dd.sign, strict=True)):  # over samples
        sample = draws.samples[i]
        F = mean_features(sample.H, sample.W, int(c), s * points, spec.bias)
        # Every column's predictor: a softmax (the multinomial) needs them all.
        out[k] = lik.unit_mean(F @ sample.params.beta, sample.params)[:, columns]
    return out


def mean_link_profile(draws: AlignedDraws, dd: DimensionDraws, points: np.ndarray, spec) -> np.ndarray:
    """``n_points x J``: the posterior-mean profile on the linear predictor's scale (centred
    over the columns for a likelihood that ignores a row's constant), bias left out."""
    shift = spec.likelihood.row_shift_invariant
    total = None
    for i, c, s, w in zip(dd.draw, dd.column, dd.sign, dd.weight, strict=True):  # over samples
        sample = draws.samples[i]
        M = sample.W.shape[0]
        F = mean_features(sample.H, sample.W, int(c), s * points, False)
        part = w * (F @ centred_weights(sample.params.beta, shift)[: 2 * M])
        total = part if total is None else total + part
    if total is None:
        return np.zeros((points.size, draws.samples[0].params.beta.shape[1] if draws.samples else 0))
    return total


def variation(
    draws: AlignedDraws, dims: list[DimensionDraws], mean_positions: np.ndarray, usage: np.ndarray, spec
) -> np.ndarray:
    """``n_dims x J``: each column's variation along each dimension (the range of its
    posterior-mean link-scale profile over :data:`VARIATION_POINTS` grid points)."""
    n_cols = draws.samples[0].params.beta.shape[1] if draws.samples else 0
    out = np.zeros((len(dims), n_cols))
    for t, dd in enumerate(dims):
        points = grid(mean_positions[:, t], usage[:, t], VARIATION_POINTS)
        P = mean_link_profile(draws, dd, points, spec)
        out[t] = P.max(axis=0) - P.min(axis=0)
    return out
