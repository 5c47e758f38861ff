"""Random Fourier features.

``Phi(H) = [cos(H W^T), sin(H W^T)] / sqrt(M)``, with an optional constant bias column last.
Columns ``m`` and ``m + M`` belong to frequency ``m``; the MH update of one frequency relies
on that layout.
"""

from __future__ import annotations

import numpy as np
from numba import njit


def feature_map(H: np.ndarray, W: np.ndarray, bias: bool = False) -> np.ndarray:
    """The ``N x L`` feature matrix of latent inputs `H` (``N x K``) and frequencies `W` (``M x K``)."""
    M = W.shape[0]
    proj = H @ W.T
    scale = 1.0 / np.sqrt(M)
    parts = [np.cos(proj) * scale, np.sin(proj) * scale]
    if bias:
        parts.append(np.ones((H.shape[0], 1)))
    return np.hstack(parts)


@njit(cache=True)
def n_features(n_frequencies: int, bias: bool) -> int:
    """The number of columns :func:`feature_map` and :func:`row_features` give: a cosine and a
    sine per frequency, and the bias column (compiled, so that compiled samplers size their
    buffers by it too)."""
    return 2 * n_frequencies + (1 if bias else 0)


def feature_map_gradient(
    H: np.ndarray, W: np.ndarray, d_phi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """A function's gradients in `H` and `W` from its gradient `d_phi` in :func:`feature_map`'s
    ``Phi`` (a bias column's entry is ignored): with ``U = H W^T``,
    ``d/dU = (-d_cos * sin U + d_sin * cos U) / sqrt(M)``, ``d/dH = d/dU W``, ``d/dW = d/dU^T H``."""
    M = W.shape[0]
    U = H @ W.T
    d_u = (np.cos(U) * d_phi[:, M : 2 * M] - np.sin(U) * d_phi[:, :M]) / np.sqrt(M)
    return d_u @ W, d_u.T @ H


def frequency_columns(H: np.ndarray, w: np.ndarray, n_frequencies: int) -> np.ndarray:
    """The two feature columns (cos, sin) of one frequency `w` for all rows, ``N x 2``."""
    proj = H @ w
    return np.stack([np.cos(proj), np.sin(proj)], axis=1) / np.sqrt(n_frequencies)


@njit(cache=True, fastmath=False)
def row_features(h: np.ndarray, W: np.ndarray, bias: bool, out: np.ndarray) -> None:
    """Fill `out` with the features of one latent row `h` (compiled, for per-row samplers)."""
    M, K = W.shape
    scale = 1.0 / np.sqrt(M)
    for m in range(M):
        p = 0.0
        for k in range(K):
            p += W[m, k] * h[k]
        out[m] = np.cos(p) * scale
        out[M + m] = np.sin(p) * scale
    if bias:
        out[2 * M] = 1.0
