"""Dirichlet-process mixture of Gaussians over the random frequencies (BaNK kernel prior).

``zeta_m ~ CRP(eta)``, ``w_m | zeta_m = k ~ N(mu_k, Sigma_k)``,
``(mu_k, Sigma_k) ~ NIW(mu0 = 0, lambda0, Psi0 = I, nu0 = K + 2)``, ``eta ~ Gamma(a, b)``.

``nu0 = K + 2`` keeps the prior proper whatever the current number of dimensions, and makes
the block marginals of the ``(K+1)``-dimensional prior equal the ``K``-dimensional prior:
:func:`add_dimension` uses that to add a coordinate exactly, and dropping a coordinate is exact
marginalisation.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

# --------------------------------------------------------------------------------------------
# Collapsed Gibbs for the assignments (Neal 2000, Algorithm 3)
# --------------------------------------------------------------------------------------------


@njit(cache=True)
def _log_t_predictive(w, n, s, outer, lam0, nu0):
    """NIW posterior-predictive multivariate t log density of `w` given a cluster's statistics.

    With ``mu0 = 0`` and ``Psi0 = I``: ``lambda_n = lambda0 + n``, ``nu_n = nu0 + n``,
    ``mu_n = s / lambda_n``, ``Psi_n = I + outer - s s^T / lambda_n``; the predictive is
    ``t_{nu_n - K + 1}(mu_n, Psi_n (lambda_n + 1) / (lambda_n (nu_n - K + 1)))``.
    """
    K = w.size
    lam = lam0 + n
    nu = nu0 + n
    df = nu - K + 1.0
    scale = (lam + 1.0) / (lam * df)
    cov = np.empty((K, K))
    for a in range(K):
        for b in range(K):
            cov[a, b] = (outer[a, b] - s[a] * s[b] / lam) * scale
        cov[a, a] += scale
    L = np.linalg.cholesky(cov)
    dev = np.empty(K)
    for a in range(K):
        dev[a] = w[a] - s[a] / lam
    # forward substitution L y = dev
    maha = 0.0
    logdet = 0.0
    y = np.empty(K)
    for a in range(K):
        acc = dev[a]
        for b in range(a):
            acc -= L[a, b] * y[b]
        y[a] = acc / L[a, a]
        maha += y[a] * y[a]
        logdet += math.log(L[a, a])
    return (
        math.lgamma(0.5 * (df + K))
        - math.lgamma(0.5 * df)
        - 0.5 * K * math.log(df * math.pi)
        - logdet
        - 0.5 * (df + K) * math.log1p(maha / df)
    )


@njit(cache=True)
def _gibbs_assignments(rng, W, zeta, eta, lam0, nu0):
    """One Algorithm-3 pass over all frequencies; `zeta` is updated in place (labels < M)."""
    M, K = W.shape
    counts = np.zeros(M, dtype=np.int64)
    sums = np.zeros((M, K))
    outers = np.zeros((M, K, K))
    for m in range(M):
        k = zeta[m]
        counts[k] += 1
        for a in range(K):
            sums[k, a] += W[m, a]
            for b in range(K):
                outers[k, a, b] += W[m, a] * W[m, b]
    logw = np.empty(M + 1)
    labels = np.empty(M + 1, dtype=np.int64)
    zero_s = np.zeros(K)
    zero_o = np.zeros((K, K))
    for m in range(M):
        k = zeta[m]
        w = W[m]
        counts[k] -= 1
        for a in range(K):
            sums[k, a] -= w[a]
            for b in range(K):
                outers[k, a, b] -= w[a] * w[b]
        n_opt = 0
        free = -1
        for c in range(M):
            if counts[c] > 0:
                logw[n_opt] = math.log(counts[c]) + _log_t_predictive(
                    w, counts[c], sums[c], outers[c], lam0, nu0
                )
                labels[n_opt] = c
                n_opt += 1
            elif free < 0:
                free = c
        logw[n_opt] = math.log(eta) + _log_t_predictive(w, 0.0, zero_s, zero_o, lam0, nu0)
        labels[n_opt] = free
        n_opt += 1
        top = logw[0]
        for c in range(1, n_opt):
            if logw[c] > top:
                top = logw[c]
        total = 0.0
        for c in range(n_opt):
            logw[c] = math.exp(logw[c] - top)
            total += logw[c]
        u = rng.random() * total
        pick = n_opt - 1
        acc = 0.0
        for c in range(n_opt):
            acc += logw[c]
            if u < acc:
                pick = c
                break
        k = labels[pick]
        zeta[m] = k
        counts[k] += 1
        for a in range(K):
            sums[k, a] += w[a]
            for b in range(K):
                outers[k, a, b] += w[a] * w[b]


def _relabel(zeta: np.ndarray) -> np.ndarray:
    """Labels ``0..C-1`` in order of first appearance."""
    _, first, inverse = np.unique(zeta, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first))
    return order[inverse].astype(np.int64)


# --------------------------------------------------------------------------------------------
# Component parameters and concentration
# --------------------------------------------------------------------------------------------


def sample_inverse_wishart(rng: np.random.Generator, psi: np.ndarray, nu: float) -> np.ndarray:
    """``Sigma ~ IW(psi, nu)`` by the Bartlett decomposition of ``Sigma^-1 ~ Wishart(psi^-1, nu)``."""
    K = psi.shape[0]
    if K == 0:
        return np.zeros((0, 0))
    L = np.linalg.cholesky(np.linalg.inv(psi))
    A = np.zeros((K, K))
    A[np.diag_indices(K)] = np.sqrt(rng.chisquare(nu - np.arange(K)))
    low = np.tril_indices(K, -1)
    A[low] = rng.standard_normal(len(low[0]))
    LA = L @ A
    prec = LA @ LA.T
    cov = np.linalg.inv(prec)
    return 0.5 * (cov + cov.T)


def sample_components(
    rng: np.random.Generator, W: np.ndarray, zeta: np.ndarray, lam0: float
) -> tuple[np.ndarray, np.ndarray]:
    """``(mu_k, Sigma_k)`` from their NIW posterior given the member frequencies."""
    M, K = W.shape
    n_comp = int(zeta.max()) + 1
    nu0 = K + 2.0
    mu = np.zeros((n_comp, K))
    Sigma = np.zeros((n_comp, K, K))
    for k in range(n_comp):
        Wk = W[zeta == k]
        n = Wk.shape[0]
        lam = lam0 + n
        s = Wk.sum(axis=0)
        psi = np.eye(K) + Wk.T @ Wk - np.outer(s, s) / lam
        Sigma[k] = sample_inverse_wishart(rng, psi, nu0 + n)
        if K:
            mu[k] = s / lam + np.linalg.cholesky(Sigma[k] / lam) @ rng.standard_normal(K)
    return mu, Sigma


def sample_eta(rng: np.random.Generator, eta: float, n_comp: int, M: int, a: float, b: float) -> float:
    """Escobar and West (1995) with ``n = M``: one Gamma draw from the two-part mixture."""
    rho = rng.beta(eta + 1.0, M)
    rate = b - math.log(rho)
    odds = (a + n_comp - 1.0) / (M * rate)
    shape = a + n_comp if rng.random() < odds / (1.0 + odds) else a + n_comp - 1.0
    return float(rng.gamma(shape, 1.0 / rate))


def dp_step(
    rng: np.random.Generator,
    W: np.ndarray,
    zeta: np.ndarray,
    eta: float,
    lam0: float,
    a_eta: float,
    b_eta: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Assignments, then component parameters, then concentration. Returns ``zeta, mu, Sigma, eta``."""
    M, K = W.shape
    zeta = zeta.astype(np.int64, copy=True)
    if K > 0:
        _gibbs_assignments(rng, np.ascontiguousarray(W), zeta, eta, lam0, K + 2.0)
    zeta = _relabel(zeta)
    mu, Sigma = sample_components(rng, W, zeta, lam0)
    eta = sample_eta(rng, eta, int(zeta.max()) + 1, M, a_eta, b_eta)
    return zeta, mu, Sigma, eta


# --------------------------------------------------------------------------------------------
# Adding and removing latent dimensions
# --------------------------------------------------------------------------------------------


def add_dimension(
    rng: np.random.Generator,
    W: np.ndarray,
    zeta: np.ndarray,
    mu: np.ndarray,
    Sigma: np.ndarray,
    lam0: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Append one coordinate to every frequency and component, drawn from its exact conditional.

    For each component with old dimension ``K`` (new ``nu' = K + 3``): ``c ~ InvGamma(nu'/2,
    scale 1/2)``, ``b ~ N(0, c I)``; the covariance grows by ``[Sigma b; c + b^T Sigma b]``, the
    mean by ``b^T mu + sqrt(c / lambda0) e`` and each member frequency by
    ``mu_new + b^T (w - mu) + sqrt(c) e_m``.
    """
    M, K = W.shape
    n_comp = mu.shape[0]
    nu_new = K + 3.0
    W_out = np.zeros((M, K + 1))
    W_out[:, :K] = W
    mu_out = np.zeros((n_comp, K + 1))
    mu_out[:, :K] = mu
    Sigma_out = np.zeros((n_comp, K + 1, K + 1))
    Sigma_out[:, :K, :K] = Sigma
    for k in range(n_comp):
        c = 0.5 / rng.gamma(0.5 * nu_new)
        b = np.sqrt(c) * rng.standard_normal(K)
        Sb = Sigma[k] @ b
        Sigma_out[k, :K, K] = Sb
        Sigma_out[k, K, :K] = Sb
        Sigma_out[k, K, K] = c + b @ Sb
        mu_new = b @ mu[k] + np.sqrt(c / lam0) * rng.standard_normal()
        mu_out[k, K] = mu_new
        members = np.flatnonzero(zeta == k)
        W_out[members, K] = (
            mu_new + (W[members] - mu[k]) @ b + np.sqrt(c) * rng.standard_normal(members.size)
        )
    return W_out, mu_out, Sigma_out


def keep_dimensions(
    W: np.ndarray, mu: np.ndarray, Sigma: np.ndarray, keep: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Marginalise out every coordinate not in `keep` (exact for Gaussians and inverse Wisharts)."""
    return W[:, keep], mu[:, keep], Sigma[:, keep][:, :, keep]
