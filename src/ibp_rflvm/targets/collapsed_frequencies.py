"""The collapsed Gaussian's frequency updates, scored by a rank-4 block formula: Metropolis-Hastings
of each ``w_m`` with its mixture component as the proposal (the paper's step), or elliptical
slice sampling under the component (:mod:`.frequency_moves`).

The chain's updates run the compiled kernels of :mod:`.frequency_kernels`, one call per pass;
they evaluate the block formula of :class:`_FrequencyBlock` and make the same decisions from
the same random numbers, so the acceptance logic is unchanged. The NumPy block
stays as the readable reference: ``compiled=False`` runs it through the Python loop of
:func:`.frequency_moves.ess_frequencies`, and the tests hold the kernels to it.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

import numpy as np

from ..features import frequency_columns
from ..likelihoods.gaussian import GaussianPrior
from .frequency_kernels import Blocks, ess_pass, make_blocks, mh_pass
from .frequency_moves import ess_frequencies
from .row_cache import NOT_FINITE, Cache, collapsed_loglik, factor


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

    This is the readable reference of the arithmetic: the chain runs the compiled pass of
    :mod:`.frequency_kernels`, which evaluates the same formula (with ``A g`` and ``A e_I`` as
    solves with the Cholesky factor, refactored after each acceptance) and is tested against it.
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

    def evaluate(self, m: int, w_prop: np.ndarray, floor: float = -math.inf) -> tuple[float, tuple]:
        """Log-likelihood if ``w_m`` became `w_prop`, and what `commit` needs to accept it
        (`floor`, the elliptical slice's level, is not used: every point is scored)."""
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
        self.R, self.A, self.logdet = factor(self.G)
        self.Q = Qn
        self.ll = float(ll_new)
        self.changed = True

    def finish(self) -> float:
        """Write the block's factorisation back into the cache; return the carried log-likelihood."""
        if self.changed:
            _write_back(self.cache, self.R, self.A, self.B, self.logdet, self.Phi.shape[0], self.prior)
        return float(self.ll)


def _floats(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=float)


@contextmanager
def _named_failure():
    """A factorisation that fails inside a compiled pass is named as `factor` names it (a
    pivot that is not positive can only come from an infinite feature)."""
    try:
        yield
    except np.linalg.LinAlgError as err:
        raise FloatingPointError(NOT_FINITE) from err


def _write_back(cache: Cache, R, A, B, logdet: float, N: int, prior: GaussianPrior) -> None:
    """The cache of the changed features from their factorisation and ``B = Phi^T Y``; ``Q`` and
    the log-likelihood are computed afresh, not carried."""
    cache.A = A
    cache.chol = R
    cache.P = np.ascontiguousarray(A @ B)
    cache.Q = np.einsum("lj,lj->j", B, cache.P)
    cache.state[0] = logdet
    cache.state[1] = collapsed_loglik(cache.Q, cache.yy, logdet, N, prior)


def _compiled_blocks(H, Phi, Y, cache: Cache, prior: GaussianPrior) -> Blocks:
    """The kernels' state for a pass from `cache`: ``G`` and ``B`` computed afresh."""
    N = Phi.shape[0]
    J = Y.shape[1]
    st = np.array([cache.state[0], cache.state[1], prior.a0 + 0.5 * N, prior.b0, prior.constant(N, J)])
    return make_blocks(H, Y, Phi, Phi.T @ Phi, Phi.T @ Y, cache.chol, cache.Q, cache.yy, st, H.shape[1])


def _finish_compiled(blocks: Blocks, cache: Cache, prior: GaussianPrior, changed: bool) -> float:
    """Write a changed pass's state back into `cache` (``A`` formed once, from ``G``); return
    the carried log-likelihood."""
    if changed:
        R, A, logdet = factor(blocks.G)
        _write_back(cache, R, A, blocks.B, logdet, blocks.Phi.shape[0], prior)
    return float(blocks.st[1])


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
    compiled: bool = True,
) -> tuple[int, float]:
    """Propose each ``w_m* ~ N(mu_k, Sigma_k)`` in turn; accept with the likelihood ratio
    (the paper's step; an independence sampler, so the prior terms cancel).

    ``W``, ``Phi`` and `cache` are updated in place (block formula of :class:`_FrequencyBlock`;
    `compiled` false runs that NumPy reference instead of :func:`.frequency_kernels.mh_pass`).
    Returns the number accepted and the log-likelihood as carried from proposal to proposal
    (the value the accept decisions used), which must agree with the rebuilt cache's.
    """
    M, K = W.shape
    if K == 0:
        return 0, float(cache.state[1])
    chols = np.linalg.cholesky(Sigma)
    accepted = 0
    if compiled:
        blocks = _compiled_blocks(H, Phi, Y, cache, prior)
        with _named_failure():
            accepted = mh_pass(rng, W, zeta, _floats(mu), _floats(chols), blocks)
        return accepted, _finish_compiled(blocks, cache, prior, accepted > 0)
    block = _FrequencyBlock(H, W, Phi, Y, cache, prior)
    for m in range(M):
        k = zeta[m]
        w_prop = mu[k] + chols[k] @ rng.standard_normal(K)
        log_u = math.log(rng.random())
        ll_new, pieces = block.evaluate(m, w_prop)
        if log_u < ll_new - block.ll:
            block.commit(m, w_prop, pieces)
            accepted += 1
    return accepted, block.finish()


def ess_frequencies_collapsed(
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
    compiled: bool = True,
) -> tuple[int, int, float]:
    """Elliptical slice sampling of each ``w_m`` under ``N(mu_k, Sigma_k)`` (the invariance
    argument is in :mod:`.frequency_moves`), every point scored by the block formula of
    :class:`_FrequencyBlock` (`compiled` false: by that NumPy reference, through
    :func:`.frequency_moves.ess_frequencies`, instead of :func:`.frequency_kernels.ess_pass`).

    ``W``, ``Phi`` and `cache` are updated in place. Returns the likelihood evaluations, the
    frequencies that changed and the log-likelihood as carried from point to point.
    """
    if W.shape[1] == 0:
        return 0, 0, float(cache.state[1])
    if not compiled:
        block = _FrequencyBlock(H, W, Phi, Y, cache, prior)
        n_evals, moved = ess_frequencies(rng, W, zeta, mu, Sigma, block)
        return n_evals, moved, block.finish()
    blocks = _compiled_blocks(H, Phi, Y, cache, prior)
    chols = np.linalg.cholesky(Sigma)
    with _named_failure():
        n_evals, moved, accepted = ess_pass(rng, W, zeta, _floats(mu), _floats(chols), blocks)
    return n_evals, moved, _finish_compiled(blocks, cache, prior, accepted > 0)
