"""The collapsed Gaussian marginal and its gradient in the latent positions and frequencies.

With ``S = Phi^T Phi + I``, ``A = S^-1``, ``P = A Phi^T Y`` and ``b_j = b0 + (y_j^T y_j - Q_j) / 2``
(``Q_j = y_j^T Phi P_j``), the marginal of :mod:`.row_cache` is
``const - (J / 2) log|S| - a_n sum_j log b_j``. Its differential in ``Phi``:

    d log|S| = 2 tr(A Phi^T dPhi)                       so  d/dPhi = 2 Phi A
    d Q_j    = 2 (y_j - Phi P_j)^T dPhi P_j            so  d/dPhi = 2 (y_j - Phi P_j) P_j^T

hence ``dL/dPhi = -J Phi A + (Y - Phi P) diag(a_n / b) P^T``. ``Phi = [cos U, sin U] / sqrt(M)``
with ``U = H W^T`` turns it into ``dL/dU = (-dL/dPhi_cos * sin U + dL/dPhi_sin * cos U) / sqrt(M)``,
then ``dL/dH = dL/dU W`` and ``dL/dW = dL/dU^T H``. One evaluation costs ``O(N L^2 + N L J + L^3)``,
as a rebuilt cache does: array products throughout, no loop over rows or columns.
"""

from __future__ import annotations

import math

import numpy as np

from ..features import feature_map
from ..likelihoods.gaussian import GaussianPrior
from .row_cache import factor


def collapsed_value_and_grad(
    H: np.ndarray, W: np.ndarray, Y: np.ndarray, prior: GaussianPrior, bias: bool
) -> tuple[float, np.ndarray, np.ndarray]:
    """The collapsed log-likelihood of complete `Y` at ``Phi(H, W)`` and its gradients
    ``(ll, dL/dH, dL/dW)`` (see the module docstring)."""
    N, J = Y.shape
    M = W.shape[0]
    U = H @ W.T
    cos_u, sin_u = np.cos(U), np.sin(U)
    root = 1.0 / math.sqrt(M)
    Phi = feature_map(H, W, bias)
    _, A, logdet = factor(Phi.T @ Phi)
    P = A @ (Phi.T @ Y)
    fitted = Phi @ P
    yy = np.einsum("nj,nj->j", Y, Y)
    Q = np.einsum("nj,nj->j", Y, fitted)
    a_n = prior.a0 + 0.5 * N
    b = prior.b0 + 0.5 * (yy - Q)
    ll = prior.constant(N, J) - 0.5 * J * logdet - a_n * float(np.sum(np.log(b)))
    d_phi = -J * (Phi @ A) + ((Y - fitted) * (a_n / b)) @ P.T
    d_u = (sin_u * d_phi[:, :M] - cos_u * d_phi[:, M : 2 * M]) * -root
    return float(ll), d_u @ W, d_u.T @ H


__all__ = ["collapsed_value_and_grad"]
