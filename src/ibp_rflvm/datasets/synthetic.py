"""Synthetic data sets drawn from the models themselves."""

from __future__ import annotations

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
