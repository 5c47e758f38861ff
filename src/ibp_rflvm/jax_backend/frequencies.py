"""Elliptical slice sampling of each frequency on the device: the twin of
:func:`ibp_rflvm.targets.frequency_moves.ess_frequencies`, where the invariance argument is
written (given ``zeta_m = k``, ``mu_k``, ``Sigma_k`` and the rest, ``w_m`` has the conditional
``N(mu_k, Sigma_k) L(w_m)``, which the slice search over the ellipse through ``w_m`` and
``nu ~ N(0, Sigma_k)`` leaves invariant; no ratio beyond the slice condition).

The frequencies are visited in turn (each one's features enter the next one's ``psi``); each
search is a ``while_loop`` bounded by :data:`MAX_SHRINKS` rounds, as on the host, and every
point it scores changes two columns of ``Phi``, so ``psi`` moves by a rank-2 product.
"""

from __future__ import annotations

import math

from . import jax, linalg
from .programs import features_of
from .rowsum import row_matmul, row_sum

jnp = jax.numpy
lax = jax.lax

#: Rounds of one search after which ``w_m`` is kept: the host's
#: :data:`ibp_rflvm.targets.frequency_moves.MAX_SHRINKS` (the bracket has shrunk by about
#: ``2^-200`` around the current point by then).
MAX_SHRINKS = 200


def ess_frequencies(key, W, zeta, mu, Sigma, active, H, P, beta, score_psi, cfg):
    """One elliptical slice update of every frequency; coordinates of unused slots stay 0.

    Returns ``(W, P, searched, moved)``: the new frequencies and projections ``H W^T``, the
    searches that ended on a point and the frequencies whose value changed.
    """
    M = cfg.M
    scale = 1.0 / math.sqrt(M)
    dlik = cfg.dlik

    def times(A, B):
        return row_matmul(A, B, dlik.row_groups, dlik.replicated)

    def total_of(ll):
        return row_sum(ll, dlik.row_groups, dlik.replicated)

    k_nu, k_u, k_t = jax.random.split(key, 3)
    chol = linalg.cholesky(Sigma)
    nu_all = jnp.einsum("mab,mb->ma", chol[zeta], jax.random.normal(k_nu, W.shape, dtype=jnp.float64))
    nu_all = nu_all * active[None, :]
    log_u = jnp.log(jax.random.uniform(k_u, (M,), dtype=jnp.float64))
    keys = jax.random.split(k_t, M)
    Phi = features_of(P, cfg.bias, M)
    psi = times(Phi, beta)
    ll = score_psi(psi)

    def body(m, s):
        W, P, Phi, psi, ll, total, searched, moved = s
        centre = mu[zeta[m]] * active
        centred = W[m] - centre
        old = jnp.stack([Phi[:, m], Phi[:, m + M]], axis=1)
        B = jnp.stack([beta[m], beta[m + M]], axis=0)
        log_y = total + log_u[m]
        k_first, k_shrink = jax.random.split(keys[m])

        def moved_psi(new):
            return psi + times(new - old, B)

        def point(theta):
            # The round's psi is scored and dropped, not carried: carried, every round of every
            # search would write an N x J array (issue 65's cost analysis: most of the sweep's
            # memory traffic); the accepted point's is rebuilt once.
            w = centre + centred * jnp.cos(theta) + nu_all[m] * jnp.sin(theta)
            proj = times(H, w)
            new = jnp.stack([jnp.cos(proj), jnp.sin(proj)], axis=1) * scale
            ll_p = score_psi(moved_psi(new))
            return w, proj, new, ll_p, total_of(ll_p)

        theta0 = jax.random.uniform(k_first, (), dtype=jnp.float64) * (2.0 * math.pi)
        first = point(theta0)

        def cond(c):
            i, _theta, _lo, _hi, pt = c
            return (i < MAX_SHRINKS) & ~(pt[4] > log_y)

        def shrink(c):
            i, theta, lo, hi, _pt = c
            lo = jnp.where(theta < 0.0, theta, lo)
            hi = jnp.where(theta < 0.0, hi, theta)
            u = jax.random.uniform(jax.random.fold_in(k_shrink, i), (), dtype=jnp.float64)
            theta = lo + u * (hi - lo)
            return i + 1, theta, lo, hi, point(theta)

        start = (jnp.zeros((), jnp.int32), theta0, theta0 - 2.0 * math.pi, theta0, first)
        _, _, _, _, (w, proj, new, ll_p, total_p) = lax.while_loop(cond, shrink, start)
        took = total_p > log_y  # False only when MAX_SHRINKS rounds ran out: w_m is kept

        def accept(_):
            Phi_n = Phi.at[:, m].set(new[:, 0]).at[:, m + M].set(new[:, 1])
            changed = jnp.any(w != W[m]).astype(moved.dtype)
            W_n, P_n = W.at[m].set(w), P.at[:, m].set(proj)
            return W_n, P_n, Phi_n, moved_psi(new), ll_p, total_p, searched + 1, moved + changed

        return lax.cond(took, accept, lambda _: s, None)

    zero = jnp.zeros((), jnp.int64)
    s = (W, P, Phi, psi, ll, total_of(ll), zero, zero)
    W, P, _, _, _, _, searched, moved = lax.fori_loop(0, M, body, s)
    return W, P, searched, moved


__all__ = ["ess_frequencies"]
