"""Delayed-acceptance Metropolis-Hastings of the frequencies, for likelihoods with derivatives.

The paper's update of ``w_m`` proposes from its mixture component, ``w' ~ N(mu_k, Sigma_k)``,
and accepts with the likelihood ratio; each proposal costs a pass over all ``N x J`` entries
(a rank-2 update of ``psi`` and every entry's log-likelihood), and on count data almost every
proposal is rejected. This update screens each proposal first with a cheap approximation of the
log-likelihood change and pays for the exact one only when the screen passes (Christen and Fox
2005). It leaves the same conditional invariant as the paper's update.

**The screen.** A proposal changes two columns of ``Phi`` by ``a = cos' - cos`` and
``c = sin' - sin`` (N-vectors), so ``d psi_ij = a_i beta_mj + c_i beta_{m+M}j``. The
second-order expansion of the log-likelihood around the current ``psi``, with ``g`` and ``h``
its first and minus its second derivative at each entry (:meth:`Likelihood.psi_derivatives`),

    D~(theta -> theta') = sum_ij g_ij d psi_ij - 1/2 h_ij d psi_ij^2
                        = a.U_m + c.U_{m+M} - 1/2 (a^2.V_m0 + 2 a c.V_m1 + c^2.V_m2),

needs only ``U = g beta^T`` (N x 2M) and ``V = h [beta_m^2, beta_m beta_{m+M}, beta_{m+M}^2]^T``
(N x 3M), two products computed once per update (and again for the frequencies left after an
acceptance, since ``psi`` moved): each proposal's screen is then O(N) instead of O(N J).

**The acceptance ratio.** With the prior proposal ``q(theta -> theta') = N(w'; mu_k, Sigma_k)``,
which cancels the prior of ``w`` in ``pi``:

* stage 1 passes with probability ``a1(theta, theta') = min(1, exp D~(theta -> theta'))``;
* stage 2 accepts with probability
  ``min(1, exp(D) a1(theta', theta) / a1(theta, theta'))``, ``D = log L(theta') - log L(theta)``
  the exact change, and ``a1(theta', theta)`` the screen of the reverse move, an expansion
  around ``psi'`` (its derivatives are computed in stage 2, with ``L(theta')``).

Then ``pi(theta) q(theta -> theta') a1(theta, theta') a2 = min(pi(theta) q a1(theta, theta'),
pi(theta') q(theta' -> theta) a1(theta', theta))``, symmetric in the two states: detailed
balance for any screen. The screen depends on the current state, so the reverse screen must be
the one the move from ``theta'`` would have used, which is why stage 2 evaluates it at ``psi'``
(and not the forward screen again). A screen that is not a number (an overflow) counts as
``a1 = 0``, which keeps the pair of moves symmetric. The forward screen is summed through
``U, V`` and the reverse one entry by entry: the same function, up to rounding.

Random numbers per frequency: ``K`` normals and one uniform, as the paper's update; one more
uniform only when stage 1 passes.
"""

from __future__ import annotations

import math

import numpy as np

from .. import blocks as _blocks
from ..features import frequency_columns
from .factorised import FactorisedState, _low_rank_rows


def update_w_delayed(rng: np.random.Generator, H, W, zeta, mu, Sigma, fs: FactorisedState) -> int:
    """Delayed-acceptance MH of each frequency with its mixture component as the proposal;
    returns the number accepted. `fs.lik` must have ``psi_derivatives``."""
    M, K = W.shape
    if K == 0:
        return 0
    chols = np.linalg.cholesky(Sigma)
    accepted = 0
    ll_total = float(np.sum(fs.ll, dtype=np.float64))
    spare = np.empty_like(fs.psi)
    U, V = expansion(fs, np.arange(M), M)
    first = 0  # U, V hold the frequencies first.. (their row t is frequency first + t)
    for m in range(M):
        k = zeta[m]
        w_prop = mu[k] + chols[k] @ rng.standard_normal(K)
        log_u = math.log(rng.random())
        cols = [m, m + M]
        new_cols = frequency_columns(H, w_prop, M)
        D = new_cols - fs.Phi[:, cols]
        t = m - first
        n_left = U.shape[1] // 2
        log_a1 = _log_a1(screen(D, U[:, t], U[:, n_left + t], V[:, 3 * t : 3 * t + 3]))
        if not log_u < log_a1:
            continue
        log_u2 = math.log(rng.random())
        _low_rank_rows(fs.psi, D, fs.beta[cols], spare)
        ll_prop = fs.lik.loglik_rows(spare, fs.all_rows, fs.params, fs.prep)
        total = float(np.sum(ll_prop, dtype=np.float64))
        log_a1_rev = _log_a1(taylor_change(fs, spare, fs.psi))
        if log_u2 < (total - ll_total) + log_a1_rev - log_a1:
            W[m] = w_prop
            fs.Phi[:, cols] = new_cols
            fs.psi, spare = spare, fs.psi
            fs.ll = ll_prop
            ll_total = total
            accepted += 1
            if m + 1 < M:
                first = m + 1
                U, V = expansion(fs, np.arange(first, M), M)
    return accepted


def screen(D: np.ndarray, u_cos: np.ndarray, u_sin: np.ndarray, v: np.ndarray) -> float:
    """``D~`` of a proposal whose columns change by ``D = [a, c]``, from its ``U`` and ``V``."""
    a, c = D[:, 0], D[:, 1]
    first = a @ u_cos + c @ u_sin
    second = (a * a) @ v[:, 0] + 2.0 * ((a * c) @ v[:, 1]) + (c * c) @ v[:, 2]
    return float(first - 0.5 * second)


def expansion(fs: FactorisedState, ms: np.ndarray, M: int) -> tuple[np.ndarray, np.ndarray]:
    """``U`` (N x 2n: ``g beta_m`` for the frequencies `ms`, then ``g beta_{m+M}``) and ``V``
    (N x 3n: ``h beta_m^2, h beta_m beta_{m+M}, h beta_{m+M}^2`` per frequency), at the current
    ``psi``, by the sweep's row blocks."""
    beta = fs.beta
    bc, bs = beta[ms], beta[ms + M]
    B = np.ascontiguousarray(np.concatenate([bc, bs]).T)
    C = np.ascontiguousarray(np.stack([bc * bc, bc * bs, bs * bs], axis=1).reshape(3 * ms.size, -1).T)
    n = fs.psi.shape[0]
    U = np.empty((n, B.shape[1]))
    V = np.empty((n, C.shape[1]))

    def part(_b: int, rows: slice) -> None:
        g, h = fs.lik.psi_derivatives(fs.psi[rows], fs.all_rows[rows], fs.params, fs.prep)
        np.matmul(g, B, out=U[rows])
        np.matmul(h, C, out=V[rows])

    blocks = _blocks.current()
    blocks.run(part, blocks.row_slices(n))
    return U, V


def taylor_change(fs: FactorisedState, psi_at: np.ndarray, psi_to: np.ndarray) -> float:
    """``sum_ij g_ij d_ij - 1/2 h_ij d_ij^2``, ``d = psi_to - psi_at``, derivatives at `psi_at`:
    the screen of the move from `psi_at` to `psi_to`, summed entry by entry (rows in order)."""
    n = psi_at.shape[0]
    out = np.empty(n)

    def part(_b: int, rows: slice) -> None:
        g, h = fs.lik.psi_derivatives(psi_at[rows], fs.all_rows[rows], fs.params, fs.prep)
        d = psi_to[rows] - psi_at[rows]
        out[rows] = np.sum(g * d - 0.5 * h * d * d, axis=1)

    blocks = _blocks.current()
    blocks.run(part, blocks.row_slices(n))
    return float(np.sum(out, dtype=np.float64))


def _log_a1(change: float) -> float:
    """``log min(1, e^change)``; not a number: ``-inf`` (a screen that never passes)."""
    return min(0.0, change) if not math.isnan(change) else -math.inf


__all__ = ["expansion", "screen", "taylor_change", "update_w_delayed"]
