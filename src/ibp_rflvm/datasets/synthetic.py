"""Synthetic data sets drawn from the models themselves."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..plumbing.validation import check_random_state

#: The four Cambridge-bars shapes on a 6x6 grid, row-major, 0-based flat indices.
CAMBRIDGE_SHAPES: dict[str, tuple[int, ...]] = {
    "cross": (1, 6, 7, 8, 13),
    "box": (3, 4, 5, 9, 11, 15, 16, 17),
    "triangle": (18, 24, 25, 30, 31, 32),
    "T": (21, 22, 23, 28, 34),
}


def cambridge_shapes() -> np.ndarray:
    """The four Cambridge-bars shapes (cross, box, triangle, T) on a 6 x 6 grid.

    Returns
    -------
    ndarray of shape (4, 36)
        One binary row per shape, the grid's pixels in row-major order.
    """
    A = np.zeros((4, 36))
    for k, idx in enumerate(CAMBRIDGE_SHAPES.values()):
        A[k, list(idx)] = 1.0
    return A


def make_cambridge(
    n_samples: int = 500, noise_sd: float = 0.25, on_prob: float = 0.5, random_state=None
) -> dict[str, np.ndarray]:
    """Non-linear Cambridge bars drawn from the IBP-RFLVM generative model.

    The paper's synthetic data set (:doc:`/datasets`): ``D = 4`` latent dimensions,
    ``z_id ~ Bern(on_prob)``, ``x_id ~ N(0, 1)``, the 36 frequencies are the shapes of
    :func:`cambridge_shapes` (frequency ``m`` has coordinate ``d`` equal to pixel ``m`` of
    shape ``d``), ``beta_j ~ N(0, I)`` and Gaussian noise.

    Parameters
    ----------
    n_samples : int, default=500
        Rows ``N``.
    noise_sd : float, default=0.25
        Standard deviation of the Gaussian noise.
    on_prob : float, default=0.5
        Probability that a row uses a dimension.
    random_state : int, numpy.random.Generator or None, default=None
        Seed of the draw.

    Returns
    -------
    dict of str to ndarray
        ``"Y"`` (``N x 36``), ``"Z"`` and ``"X"`` (``N x 4``), ``"W"`` (``36 x 4``),
        ``"beta"`` (``72 x 36``) and ``"labels"`` (``Z`` as ints).

    See Also
    --------
    make_linear_cambridge : The classic linear version.
    """
    rng = check_random_state(random_state)
    W = cambridge_shapes().T  # 36 frequencies x 4 latent dims
    M = W.shape[0]
    Z = (rng.random((n_samples, 4)) < on_prob).astype(float)
    X = rng.standard_normal((n_samples, 4))
    H = X * Z
    proj = H @ W.T
    Phi = np.hstack([np.cos(proj), np.sin(proj)]) / np.sqrt(M)
    beta = rng.standard_normal((2 * M, 36))
    Y = Phi @ beta + noise_sd * rng.standard_normal((n_samples, 36))
    return {"Y": Y, "Z": Z, "X": X, "W": W, "beta": beta, "labels": Z.astype(int)}


def make_linear_cambridge(
    n_samples: int = 500, noise_sd: float = 0.25, on_prob: float = 0.5, random_state=None
) -> dict[str, np.ndarray]:
    """The classic linear-Gaussian Cambridge bars, ``Y = Z A + noise`` (Griffiths & Ghahramani).

    Parameters
    ----------
    n_samples : int, default=500
        Rows ``N``.
    noise_sd : float, default=0.25
        Standard deviation of the Gaussian noise.
    on_prob : float, default=0.5
        Probability that a row shows a shape.
    random_state : int, numpy.random.Generator or None, default=None
        Seed of the draw.

    Returns
    -------
    dict of str to ndarray
        ``"Y"`` (``N x 36``), ``"Z"`` (``N x 4``), ``"A"`` (the ``4 x 36`` shapes) and
        ``"labels"`` (``Z`` as ints).

    See Also
    --------
    make_cambridge : The non-linear version drawn from the IBP-RFLVM.
    """
    rng = check_random_state(random_state)
    A = cambridge_shapes()
    Z = (rng.random((n_samples, 4)) < on_prob).astype(float)
    Y = Z @ A + noise_sd * rng.standard_normal((n_samples, 36))
    return {"Y": Y, "Z": Z, "A": A, "labels": Z.astype(int)}


class Bumps(NamedTuple):
    """What :func:`make_bumps` returns: the data and the structure that made them.

    Parameters
    ----------
    Y : ndarray of shape (n_rows, n_cols)
        The observations, each column standardised (mean 0, standard deviation 1).
    X : ndarray of shape (n_rows, n_coords)
        The true positions, exactly 0 where a row does not use the coordinate.
    Z : ndarray of bool, shape (n_rows, n_coords)
        Whether each row uses each coordinate.
    block : ndarray of int, shape (n_cols,)
        The coordinate that drives each column.
    centres : ndarray of shape (n_cols,)
        The centre of each column's bump on its coordinate.
    """

    Y: np.ndarray
    X: np.ndarray
    Z: np.ndarray
    block: np.ndarray
    centres: np.ndarray


def make_bumps(
    n_rows: int = 300,
    n_coords: int = 3,
    cols_per_coord=None,
    usage: float = 0.5,
    noise: float = 0.2,
    width: float = 0.8,
    extent: float = 2.0,
    random_state=None,
) -> Bumps:
    """Sparse non-linear data with a known answer: each coordinate moves bumps over its own columns.

    Row ``i`` uses coordinate ``b`` with probability `usage` (``Z[i, b]``); a used coordinate's
    position ``X[i, b]`` is uniform on ``[-extent, extent]``, an unused one is exactly 0 (as the
    IBP-RFLVM's ``h = z * x`` is). Coordinate ``b`` alone drives its own block of columns:
    column ``j`` of the block is the bump ``exp(-(X[i, b] - c_j)**2 / (2 * width**2))``, the
    block's centres ``c_j`` spread evenly over ``[-extent, extent]``, plus Gaussian noise of
    standard deviation `noise` (against the bumps' height of 1). A row that does not use the
    coordinate sits at 0 and so sees each bump's value at 0, exactly as the model's row with
    ``h = 0`` would. Each column is then standardised.

    The columns are bumps, not monotone in their coordinate: the inner ones rise and fall
    within the range, so a column's on-minus-off effect understates what the coordinate does
    to it, while a block's bumps together fix the position along the whole range. The
    positions are identified up to the model's symmetries: a sign flip and a smooth monotone
    change of scale.

    The blocks have different sizes by default (8, 12, 16, ... columns). With equal blocks the
    leading principal components, where the sampler starts, have nearly equal variances and
    mix the coordinates, and a chain can stay in such a mode: at 300 rows, ten columns per
    coordinate and 400 sweeps, one (width 0.8) or two (width 1) of seeds 0-4 ended with two
    coordinates sharing latent dimensions; with the default blocks, none of seeds 0-9 did.

    Parameters
    ----------
    n_rows : int, default=300
        Rows ``N``.
    n_coords : int, default=3
        True coordinates ``D``.
    cols_per_coord : int, sequence of int or None, default=None
        Columns driven by each coordinate: one number for every block, one per coordinate, or
        None for ``8 + 4 b`` for coordinate ``b`` (8, 12, 16, ...).
    usage : float, default=0.5
        Probability that a row uses a coordinate.
    noise : float, default=0.2
        Standard deviation of the Gaussian noise, against the bumps' height of 1 (at the
        defaults the bumps carry about two thirds of each column's variance).
    width : float, default=0.8
        Standard deviation of each bump, in the positions' units.
    extent : float, default=2.0
        Used positions and the bumps' centres lie on ``[-extent, extent]``.
    random_state : int, numpy.random.Generator or None, default=None
        Seed of the draw.

    Returns
    -------
    Bumps
        A named tuple: ``Y`` (``N x J``, standardised columns), ``X`` (``N x D``, 0 where
        unused), ``Z`` (``N x D`` bool), ``block`` (``J`` ints, the coordinate that drives each
        column, blocks in order) and ``centres`` (``J``, each column's bump centre).

    Raises
    ------
    ValueError
        `cols_per_coord` neither one number nor one per coordinate, or not all positive.

    See Also
    --------
    make_cambridge : Data drawn from the IBP-RFLVM itself.

    Examples
    --------
    >>> from ibp_rflvm.datasets import make_bumps
    >>> data = make_bumps(random_state=0)
    >>> data.Y.shape, data.X.shape
    ((300, 36), (300, 3))
    >>> data.centres[:8].round(2).tolist()
    [-2.0, -1.43, -0.86, -0.29, 0.29, 0.86, 1.43, 2.0]
    """
    rng = check_random_state(random_state)
    if cols_per_coord is None:
        cols_per_coord = [8 + 4 * b for b in range(n_coords)]
    counts = np.asarray(cols_per_coord, dtype=int).reshape(-1)
    if counts.size == 1:
        counts = np.repeat(counts, n_coords)
    if counts.size != n_coords or (counts < 1).any():
        raise ValueError(f"cols_per_coord must be one positive number or {n_coords}; got {cols_per_coord!r}")
    Z = rng.random((n_rows, n_coords)) < usage
    X = np.where(Z, rng.uniform(-extent, extent, (n_rows, n_coords)), 0.0)
    block = np.repeat(np.arange(n_coords), counts)
    centres = np.concatenate([np.linspace(-extent, extent, c) for c in counts])
    signal = np.exp(-((X[:, block] - centres) ** 2) / (2.0 * width**2))
    Y = signal + noise * rng.standard_normal(signal.shape)
    Y = (Y - Y.mean(axis=0)) / Y.std(axis=0)
    return Bumps(Y=Y, X=X, Z=Z, block=block, centres=centres)
