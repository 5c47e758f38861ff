"""Collapsed Gaussian likelihood (SPEC section 2.1).

``y_ij ~ N(phi_i^T beta_j, sigma_j^2)``, ``beta_j ~ N(0, sigma_j^2 I)``,
``sigma_j^2 ~ InvGamma(a0, b0)``, with ``beta`` and ``sigma^2`` integrated out. With
``S = Phi^T Phi + I`` shared by all columns,

``log p(Y | Phi) = sum_j [-N/2 log 2pi - 1/2 log|S| + a0 log b0 - a_n log b_nj + lgamma(a_n) - lgamma(a0)]``,
``b_nj = b0 + (y_j^T y_j - y_j^T Phi S^-1 Phi^T y_j) / 2``.

Rows are coupled, so X and Z are updated row by row, each proposal by the rank-2 kernels of
:mod:`ibp_rflvm.row_cache`; a frequency changes two columns of ``Phi``, a rank-4 change handled
by a block formula (:func:`mh_frequencies`). The cache is rebuilt from scratch at the start of
every block of updates, which bounds the round-off of the low-rank updates.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from scipy.linalg import cho_solve, cholesky, solve_triangular

from .._validation import check_magnitude
from ..features import frequency_columns, row_features
from ..row_cache import (
    FAST,
    LOG_2PI,
    Cache,
    GaussianPrior,
    build_cache,
    collapsed_loglik,
    commit_row,
    eval_row,
    prepare_row,
    row_buffers,
)
from ..samplers.ibp import capped, count_change, gibbs_flip, z_log_prior_odds
from .base import Prepared

__all__ = ["Cache", "GaussianLikelihood", "GaussianPrior", "build_cache", "collapsed_loglik", "impute"]


def loglik_direct(Phi: np.ndarray, Y: np.ndarray, prior: GaussianPrior) -> float:
    """The collapsed marginal evaluated directly (no cache), for checks."""
    return build_cache(Phi, Y, prior).loglik


# --------------------------------------------------------------------------------------------
# Compiled row samplers (the cache's rank-2 kernels live in ibp_rflvm.row_cache)
# --------------------------------------------------------------------------------------------


@njit(cache=True, fastmath=FAST)
def ess_rows(rng, X, Z, W, bias, Phi, Y, A, P, Q, yy, state, a_n, b0, const):
    """Elliptical slice sampling (Murray, Adams and MacKay 2010) of each row of ``X`` in turn."""
    N, K = X.shape
    L = Phi.shape[1]
    J = Y.shape[1]
    phi_new, v, u, r, s, w1, w2, Qn, m2, h = row_buffers(L, J, K)
    x_new = np.empty(K)
    nu = np.empty(K)
    n_evals = 0
    for i in range(N):
        for k in range(K):
            nu[k] = rng.standard_normal()
        log_u = math.log(rng.random())
        theta = rng.random() * 2.0 * math.pi
        lo = theta - 2.0 * math.pi
        hi = theta
        any_on = False
        for k in range(K):
            if Z[i, k] != 0:
                any_on = True
        if not any_on:
            # The likelihood ignores x_i, so ESS accepts its first proposal.
            c = math.cos(theta)
            sn = math.sin(theta)
            for k in range(K):
                X[i, k] = X[i, k] * c + nu[k] * sn
            continue
        prepare_row(Phi[i], A, P, v, r)
        log_y = state[1] + log_u
        while True:
            c = math.cos(theta)
            sn = math.sin(theta)
            for k in range(K):
                x_new[k] = X[i, k] * c + nu[k] * sn
                h[k] = x_new[k] * Z[i, k]
            row_features(h, W, bias, phi_new)
            ll_new = eval_row(
                phi_new, Phi[i], v, r, Y[i], A, P, Q, yy, state[0], a_n, b0, const, u, s, w1, w2, Qn, m2
            )
            n_evals += 1
            if ll_new > log_y:
                commit_row(Y[i], A, P, Q, u, v, w1, w2, Qn, m2, state, ll_new, Phi[i], phi_new)
                for k in range(K):
                    X[i, k] = x_new[k]
                break
            if theta < 0.0:
                lo = theta
            else:
                hi = theta
            theta = lo + rng.random() * (hi - lo)
    return n_evals


@njit(cache=True, fastmath=FAST)
def gibbs_z_rows(rng, X, Z, W, bias, Phi, Y, A, P, Q, yy, state, a_n, b0, const, pi, counts, room):
    """Gibbs update of every ``z_id``, row by row, with the slice sampler's prior factor (and
    the cap on ``K+``, :func:`ibp.capped`)."""
    N, K = X.shape
    L = Phi.shape[1]
    J = Y.shape[1]
    phi_new, v, u, r, s, w1, w2, Qn, m2, h = row_buffers(L, J, K)
    n_flips = 0
    for i in range(N):
        prepare_row(Phi[i], A, P, v, r)
        for d in range(K):
            z_cur = Z[i, d]
            if capped(counts, d, z_cur, room):
                continue
            for k in range(K):
                h[k] = X[i, k] * Z[i, k]
            h[d] = X[i, d] * (1 - z_cur)
            row_features(h, W, bias, phi_new)
            ll_new = eval_row(
                phi_new, Phi[i], v, r, Y[i], A, P, Q, yy, state[0], a_n, b0, const, u, s, w1, w2, Qn, m2
            )
            ll_cur = state[1]
            log_odds_one = z_log_prior_odds(pi, counts, d, z_cur)
            if z_cur == 0:
                log_odds_one += ll_new - ll_cur
            else:
                log_odds_one += ll_cur - ll_new
            z_new = gibbs_flip(rng, log_odds_one)
            if z_new != z_cur:
                commit_row(Y[i], A, P, Q, u, v, w1, w2, Qn, m2, state, ll_new, Phi[i], phi_new)
                Z[i, d] = z_new
                count_change(counts, d, z_cur, z_new, room)
                n_flips += 1
                prepare_row(Phi[i], A, P, v, r)
    return n_flips


# --------------------------------------------------------------------------------------------
# Frequencies: Metropolis-Hastings with the prior as proposal, rank-4 updates
# --------------------------------------------------------------------------------------------


def _inv2(a: np.ndarray) -> tuple[np.ndarray, float]:
    """Inverse and log-determinant of a 2 x 2 positive-definite matrix."""
    det = a[0, 0] * a[1, 1] - a[0, 1] * a[1, 0]
    inv = np.array([[a[1, 1], -a[0, 1]], [-a[1, 0], a[0, 0]]]) / det
    return inv, math.log(det)


class _FrequencyBlock:
    """The collapsed likelihood as one frequency ``w_m`` changes, all others fixed.

    A proposal replaces the two columns ``I = (m, m + M)`` of ``Phi``: rows and columns ``I`` of
    ``S`` and rows ``I`` of ``B = Phi^T Y``. Split the features into ``I`` and the rest ``r``.
    ``S_rr^-1 = A_rr - A_rI A_II^-1 A_Ir`` does not change, and the new likelihood needs only the
    2 x 2 Schur complement ``C = S'_II - g_r^T S_rr^-1 g_r`` (``g_r = S'_rI``, ``C >= I``):
    ``log|S'| = log|S| + log|A_II| + log|C|`` and
    ``Q'_j = Q_j - P_Ij^T A_II^-1 P_Ij + e_j^T C^-1 e_j``, ``e = b'_I - (S_rr^-1 g_r)^T B_r``.
    A proposal costs ``O(N L + N J + L^2 + L J)``. Carrying ``A`` from one accepted proposal
    to the next (by this block formula or by a rank-4 Woodbury update) amplifies its round-off
    by about ``||A_II^-1||`` per step, which grows with ``N``; so ``G = Phi^T Phi`` and ``B`` are
    kept exactly and ``A`` is refactored by Cholesky after each acceptance (``O(L^3)``).
    """

    def __init__(self, H, W, Phi, Y, cache: Cache, prior: GaussianPrior):
        self.H, self.W, self.Phi, self.Y, self.cache, self.prior = H, W, Phi, Y, cache, prior
        N, L = Phi.shape
        self.M = W.shape[0]
        self.a_n = prior.a0 + 0.5 * N
        self.const = prior.constant(N, Y.shape[1])
        self.A, self.Q, self.yy = cache.A, cache.Q.copy(), cache.yy
        self.G = Phi.T @ Phi
        self.B = Phi.T @ Y
        self.logdet = cache.state[0]
        self.ll = cache.state[1]
        self.R = cache.chol
        self.everything = np.arange(L)
        self.changed = False

    def evaluate(self, m: int, w_prop: np.ndarray) -> tuple[float, tuple]:
        """Log-likelihood if ``w_m`` became `w_prop`, and what `commit` needs to accept it."""
        A, B, M = self.A, self.B, self.M
        I = np.array([m, m + M])
        r = np.delete(self.everything, I)
        c_new = frequency_columns(self.H, w_prop, M)
        g = self.Phi.T @ c_new
        g[I] = 0.0  # keep only g_r: cross-products with the features that stay
        A_II_inv, logdet_A_II = _inv2(A[np.ix_(I, I)])
        K_rI = A[np.ix_(r, I)] @ A_II_inv
        Ag = A @ g
        h = Ag[r] - K_rI @ Ag[I]  # S_rr^-1 g_r
        C_inv, logdet_C = _inv2(c_new.T @ c_new + np.eye(2) - g[r].T @ h)
        P_I = A[I] @ B
        e = c_new.T @ self.Y - h.T @ B[r]
        Qn = self.Q - np.einsum("rj,rj->j", P_I, A_II_inv @ P_I) + np.einsum("rj,rj->j", e, C_inv @ e)
        logdet_new = self.logdet + logdet_A_II + logdet_C
        b_n = self.prior.b0 + 0.5 * (self.yy - Qn)
        ll_new = self.const - 0.5 * self.yy.size * logdet_new - self.a_n * np.sum(np.log(b_n))
        return float(ll_new), (I, c_new, g, Qn, ll_new)

    def commit(self, m: int, w_prop: np.ndarray, pieces: tuple) -> None:
        I, c_new, g, Qn, ll_new = pieces
        g[I] = c_new.T @ c_new
        self.G[:, I] = g
        self.G[I, :] = g.T
        self.B[I] = c_new.T @ self.Y
        self.Phi[:, I] = c_new
        self.W[m] = w_prop
        S = self.G.copy()
        S[np.diag_indices(S.shape[0])] += 1.0
        self.R = cholesky(S, lower=True)
        A = cho_solve((self.R, True), np.eye(S.shape[0]))
        self.A = 0.5 * (A + A.T)
        self.logdet = 2.0 * float(np.sum(np.log(np.diag(self.R))))
        self.Q = Qn
        self.ll = float(ll_new)
        self.changed = True

    def finish(self) -> float:
        """Write the block's factorisation back into the cache; return the carried log-likelihood."""
        if self.changed:
            cache = self.cache
            cache.A = self.A
            cache.chol = self.R
            cache.P = np.ascontiguousarray(self.A @ self.B)
            cache.Q = np.einsum("lj,lj->j", self.B, cache.P)
            cache.state[0] = self.logdet
            cache.state[1] = collapsed_loglik(cache.Q, self.yy, self.logdet, self.Phi.shape[0], self.prior)
        return float(self.ll)


def mh_frequencies(
    rng: np.random.Generator,
    H: np.ndarray,
    W: np.ndarray,
    zeta: np.ndarray,
    mu: np.ndarray,
    Sigma: np.ndarray,
    Phi: np.ndarray,
    Y: np.ndarray,
    cache: Cache,
    prior: GaussianPrior,
) -> tuple[int, float]:
    """Propose each ``w_m* ~ N(mu_k, Sigma_k)`` in turn; accept with the likelihood ratio
    (the paper's step; an independence sampler, so the prior terms cancel).

    ``W``, ``Phi`` and `cache` are updated in place (block formula of :class:`_FrequencyBlock`).
    Returns the number accepted and the log-likelihood as carried from proposal to proposal
    (the value the accept decisions used), which must agree with the rebuilt cache's.
    """
    M, K = W.shape
    if K == 0:
        return 0, float(cache.state[1])
    block = _FrequencyBlock(H, W, Phi, Y, cache, prior)
    chols = np.linalg.cholesky(Sigma)
    accepted = 0
    for m in range(M):
        k = zeta[m]
        w_prop = mu[k] + chols[k] @ rng.standard_normal(K)
        log_u = math.log(rng.random())
        ll_new, pieces = block.evaluate(m, w_prop)
        if log_u < ll_new - block.ll:
            block.commit(m, w_prop, pieces)
            accepted += 1
    return accepted, block.finish()


def ess_frequencies(
    rng: np.random.Generator,
    H: np.ndarray,
    W: np.ndarray,
    zeta: np.ndarray,
    mu: np.ndarray,
    Sigma: np.ndarray,
    Phi: np.ndarray,
    Y: np.ndarray,
    cache: Cache,
    prior: GaussianPrior,
) -> tuple[int, float]:
    """Elliptical slice sampling of each ``w_m`` under its component's ``N(mu_k, Sigma_k)``.

    The prior-proposal step above accepts a few per cent of its proposals (4-8% per frequency
    per sweep on Cambridge), so a frequency moves every 10-25 sweeps; ESS moves every frequency
    every sweep, at the cost of the few evaluations its shrinking bracket needs. It is exact for
    the same target (Murray, Adams and MacKay 2010): the ellipse through ``w_m - mu_k`` and a
    prior draw ``nu`` leaves the Gaussian prior invariant and the slice handles the likelihood.
    Returns the number of likelihood evaluations and the carried log-likelihood.
    """
    M, K = W.shape
    if K == 0:
        return 0, float(cache.state[1])
    block = _FrequencyBlock(H, W, Phi, Y, cache, prior)
    chols = np.linalg.cholesky(Sigma)
    n_evals = 0
    for m in range(M):
        k = zeta[m]
        centred = W[m] - mu[k]
        nu = chols[k] @ rng.standard_normal(K)
        log_y = block.ll + math.log(rng.random())
        theta = rng.random() * 2.0 * math.pi
        lo, hi = theta - 2.0 * math.pi, theta
        while True:
            w_prop = mu[k] + centred * math.cos(theta) + nu * math.sin(theta)
            ll_new, pieces = block.evaluate(m, w_prop)
            n_evals += 1
            if ll_new > log_y:
                block.commit(m, w_prop, pieces)
                break
            if theta < 0.0:
                lo = theta
            else:
                hi = theta
            theta = lo + rng.random() * (hi - lo)
    return n_evals, block.finish()


# --------------------------------------------------------------------------------------------
# Data augmentation, prediction and held-out density
# --------------------------------------------------------------------------------------------


def sample_weights(
    rng: np.random.Generator, cache: Cache, N: int, prior: GaussianPrior
) -> tuple[np.ndarray, np.ndarray]:
    """``(beta_j, sigma_j^2)`` from their normal-inverse-gamma posterior given the completed data."""
    a_n = prior.a0 + 0.5 * N
    b_n = prior.b0 + 0.5 * (cache.yy - cache.Q)
    sigma2 = b_n / rng.gamma(a_n, 1.0, size=b_n.size)
    L, J = cache.P.shape
    eps = rng.standard_normal((L, J))
    # S = R R^T, so R^-T eps has covariance S^-1.
    beta = cache.P + solve_triangular(cache.chol, eps, lower=True, trans="T") * np.sqrt(sigma2)
    return beta, sigma2


def impute(
    rng: np.random.Generator,
    Phi: np.ndarray,
    Y: np.ndarray,
    missing: tuple[np.ndarray, np.ndarray],
    cache: Cache,
    prior: GaussianPrior,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Draw the weights, then every unobserved entry from ``N(phi_i^T beta_j, sigma_j^2)``.

    Returns ``(Y_completed, beta, sigma2, mean)`` with ``mean = Phi beta``; `Y` is not modified.
    """
    beta, sigma2 = sample_weights(rng, cache, Phi.shape[0], prior)
    mean = Phi @ beta
    Y = Y.copy()
    rows, cols = missing
    if rows.size:
        Y[rows, cols] = mean[rows, cols] + np.sqrt(sigma2[cols]) * rng.standard_normal(rows.size)
    return Y, beta, sigma2, mean


def observed_loglik(Y: np.ndarray, observed: np.ndarray, mean: np.ndarray, sigma2: np.ndarray) -> float:
    """``sum over observed entries of log N(y_ij | mean_ij, sigma_j^2)``."""
    ll = -0.5 * (LOG_2PI + np.log(sigma2) + (Y - mean) ** 2 / sigma2)
    return float(np.sum(ll[observed], dtype=np.float64))


# --------------------------------------------------------------------------------------------
# The plug-in
# --------------------------------------------------------------------------------------------


class GaussianLikelihood:
    """Collapsed Gaussian observation model; its X, Z and W updates are the kernels above."""

    name = "gaussian"
    collapsed = True
    default_bias = False
    kind = "real"
    row_shift_invariant = False

    def __init__(self, a0: float = 1.0, b0: float = 1.0):
        self.prior = GaussianPrior(float(a0), float(b0))

    def validate(self, Y: np.ndarray) -> None:
        """Finite (checked by the generic validation) and small enough to square safely."""
        check_magnitude(Y)

    def prepare(self, Y: np.ndarray) -> Prepared:
        observed = ~np.isnan(Y)
        return Prepared(Y0=np.where(observed, Y, 0.0), observed=observed, extra={})

    def loglik_rows(self, psi: np.ndarray, rows, params: dict, prep) -> np.ndarray:
        """Row log-likelihoods given explicit ``(beta, sigma^2)``: used for new rows (transform),
        where the weights of a posterior sample are held fixed."""
        var = params["sigma2"]
        y = prep.Y0[rows]
        ll = -0.5 * (LOG_2PI + np.log(var) + (y - psi) ** 2 / var)
        return np.sum(np.where(prep.observed[rows], ll, 0.0), axis=1, dtype=np.float64)

    def logpdf_entries(self, y, psi_u, row_pos, cols, params, prep=None) -> np.ndarray:
        var = params["sigma2"][cols]
        mean = psi_u[row_pos, cols]
        return -0.5 * (LOG_2PI + np.log(var) + (y - mean) ** 2 / var)

    def mean(self, psi: np.ndarray, params: dict) -> np.ndarray:
        return psi
