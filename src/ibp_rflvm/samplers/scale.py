"""A move along each latent dimension's scale, the direction the likelihood cannot see.

The likelihood reads ``X`` and ``W`` only through the products ``h_i . w_m`` (``H = X * Z``), so
``x_id -> c x_id`` for the rows that use dimension ``d`` together with ``w_md -> w_md / c`` for
every frequency changes nothing it sees (SPEC section 2.10). Along that direction only the
priors hold the chain, and the row-by-row and frequency-by-frequency moves crawl there; this
move jumps along it (parameter expansion, as in interweaving for factor models).

It is a Metropolis-Hastings move on the orbit ``u -> (e^u x_d, e^{-u} w_d)`` with the mixture's
component means and covariances integrated out, so it must be followed by a draw of them from
their conditional (the sweep runs it just before the Dirichlet-process step, which draws the
assignments with the components integrated out and then the components given ``W``: a partially
collapsed Gibbs sampler in the order van Dyk and Park (2008) require). With ``u ~ N(0, s^2)``
(symmetric; `s` depends on the state only through the number of rows that use ``d``, which the
move does not change), the acceptance ratio is the target's ratio times the Jacobian:

    log r = (n_d - M) u                                     (Jacobian: n_d x's times e^u, M w's times e^-u)
            - (e^{2u} - 1) sum_{i: z_id != 0} x_id^2 / 2    (the x's standard normal prior)
            + sum_k (nu_k / 2) (log|Psi_k| - log|Psi_k(u)|)  (the frequencies' NIW marginal)

where, for each mixture component ``k`` with ``n_k`` frequencies, ``nu_k = K + 2 + n_k`` and
``Psi_k = I + sum_m w_m w_m^T - s_k s_k^T / (lambda0 + n_k)`` (``s_k`` their sum): the
normal-inverse-Wishart evidence of :mod:`.dp_mixture` is ``|Psi_k|^{-nu_k / 2}`` up to factors
the move does not change, and scaling column ``d`` of ``W`` by ``e^{-u}`` turns ``Psi_k - I``
into ``D (Psi_k - I) D`` with ``D = diag(1, ..., e^{-u}, ..., 1)``. Nothing else changes: the
products (hence the likelihood and any augmentation), ``Z`` and the assignments.
"""

from __future__ import annotations

import math

import numpy as np

#: Proposals per dimension and sweep: each costs a few ``K x K`` determinants, nothing of ``N x J``.
SCALE_STEPS = 3


def _component_stats(W: np.ndarray, zeta: np.ndarray, lam0: float) -> tuple[np.ndarray, np.ndarray]:
    """``G_k = sum_m w_m w_m^T - s_k s_k^T / (lambda0 + n_k)`` of each component (``C x K x K``)
    and ``nu_k - K - 2 = n_k`` (``C``)."""
    labels, inverse = np.unique(zeta, return_inverse=True)
    onehot = np.zeros((labels.size, W.shape[0]))
    onehot[inverse, np.arange(W.shape[0])] = 1.0
    n = onehot.sum(axis=1)
    sums = onehot @ W
    outer = np.einsum("cm,ma,mb->cab", onehot, W, W)
    G = outer - sums[:, :, None] * sums[:, None, :] / (lam0 + n)[:, None, None]
    return G, n


def _log_evidence_terms(G: np.ndarray, nu: np.ndarray, scale: np.ndarray) -> float:
    """``-sum_k (nu_k / 2) log|I + D G_k D|`` with ``D = diag(scale)``."""
    K = G.shape[1]
    Psi = np.eye(K)[None] + scale[None, :, None] * G * scale[None, None, :]
    _, logdet = np.linalg.slogdet(Psi)
    return float(-0.5 * np.dot(nu, logdet))


def scale_moves(
    rng: np.random.Generator,
    X: np.ndarray,
    Z: np.ndarray,
    W: np.ndarray,
    zeta: np.ndarray,
    lam0: float,
    steps: int = SCALE_STEPS,
) -> tuple[int, int]:
    """`steps` scale proposals for each dimension in turn, in place on `X` and `W`.

    Parameters
    ----------
    rng : numpy.random.Generator
        The chain's generator.
    X : ndarray of shape (N, K)
        Latent coordinates (updated in place where ``Z != 0``).
    Z : ndarray of shape (N, K)
        Which rows use which dimension (0 = off; counts allowed).
    W : ndarray of shape (M, K)
        Frequencies (updated in place).
    zeta : ndarray of int of shape (M,)
        Each frequency's mixture component.
    lam0 : float
        The normal-inverse-Wishart prior's ``lambda0``.
    steps : int, default=3
        Proposals per dimension.

    Returns
    -------
    tuple of int
        ``(proposed, accepted)``.
    """
    M, K = W.shape
    if K == 0 or M == 0:
        return 0, 0
    G, n_k = _component_stats(W, zeta, lam0)
    nu = K + 2.0 + n_k
    scale = np.ones(K)  # the accepted scaling of each column of W since G was computed
    current = _log_evidence_terms(G, nu, scale)
    accepted = 0
    for d in range(K):  # over dimensions: each proposal is O(K^3) per component
        on = Z[:, d] != 0
        n_d = int(on.sum())
        A = float(np.sum(X[on, d] ** 2))
        s = 2.4 / math.sqrt(2.0 * n_d + M)
        for _ in range(steps):
            u = s * float(rng.standard_normal())
            log_v = math.log(rng.random())
            trial = scale.copy()
            trial[d] *= math.exp(-u)
            proposed = _log_evidence_terms(G, nu, trial)
            log_r = (n_d - M) * u - 0.5 * math.expm1(2.0 * u) * A + (proposed - current)
            if log_v < log_r:
                factor = math.exp(u)
                X[on, d] *= factor
                W[:, d] /= factor
                A *= factor * factor
                scale, current = trial, proposed
                accepted += 1
    return K * steps, accepted
