"""The likelihoods' gradients in the latent positions and frequencies, for the continuous block's
HMC move (:mod:`ibp_rflvm.samplers.hmc`): the collapsed Gaussian marginal, and a factorising
likelihood given its weights.

With ``S = Phi^T Phi + I``, ``A = S^-1``, ``P = A Phi^T Y`` and ``b_j = b0 + (y_j^T y_j - Q_j) / 2``
(``Q_j = y_j^T Phi P_j``), the marginal of :mod:`.row_cache` is
``const - (J / 2) log|S| - a_n sum_j log b_j``. Its differential in ``Phi``:

    d log|S| = 2 tr(A Phi^T dPhi)                       so  d/dPhi = 2 Phi A
    d Q_j    = 2 (y_j - Phi P_j)^T dPhi P_j            so  d/dPhi = 2 (y_j - Phi P_j) P_j^T

hence ``dL/dPhi = -J Phi A + (Y - Phi P) diag(a_n / b) P^T``. ``Phi = [cos U, sin U] / sqrt(M)``
with ``U = H W^T`` turns it into ``dL/dU = (-dL/dPhi_cos * sin U + dL/dPhi_sin * cos U) / sqrt(M)``,
then ``dL/dH = dL/dU W`` and ``dL/dW = dL/dU^T H``. One evaluation costs ``O(N L^2 + N L J + L^3)``,
as a rebuilt cache does: array products throughout, no loop over rows or columns.

A factorising likelihood given ``beta`` (the count models, sampled with their weights) reads
``psi = Phi beta``, so ``dL/dPhi = g beta^T`` with ``g`` each entry's derivative in its linear
predictor: ``O(N L J)`` per evaluation.
"""

from __future__ import annotations

import numpy as np

from ..features import feature_map, feature_map_gradient
from ..likelihoods.gaussian import GaussianPrior
from .row_cache import factor


def collapsed_value_and_grad(
    H: np.ndarray, W: np.ndarray, Y: np.ndarray, prior: GaussianPrior, bias: bool
) -> tuple[float, np.ndarray, np.ndarray]:
    """The collapsed log-likelihood of complete `Y` at ``Phi(H, W)`` and its gradients
    ``(ll, dL/dH, dL/dW)`` (see the module docstring)."""
    N, J = Y.shape
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
    d_h, d_w = feature_map_gradient(H, W, d_phi)
    return float(ll), d_h, d_w


def factorised_value_and_grad(
    H: np.ndarray, W: np.ndarray, beta: np.ndarray, lik, params, prep, bias: bool
) -> tuple[float, np.ndarray, np.ndarray]:
    """The log-likelihood of a factorising likelihood given its weights `beta` at ``Phi(H, W)``,
    and its gradients: ``dL/dPhi = g beta^T`` with ``g`` the entries' first derivatives in their
    linear predictors (``Likelihood.psi_derivatives``)."""
    Phi = feature_map(H, W, bias)
    psi = Phi @ beta
    rows = np.arange(H.shape[0])
    ll = float(np.sum(lik.loglik_rows(psi, rows, params, prep), dtype=np.float64))
    g = lik.psi_derivatives(psi, rows, params, prep)[0]
    d_h, d_w = feature_map_gradient(H, W, g @ beta.T)
    return ll, d_h, d_w


__all__ = ["collapsed_value_and_grad", "factorised_value_and_grad"]
