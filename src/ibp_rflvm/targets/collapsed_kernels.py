"""Compiled row kernels of the collapsed Gaussian target, on the rank-2 row cache.

Every move of the sweep that changes one row at a time runs here as one compiled pass over the
rows: elliptical slice sampling of ``x_i`` (:func:`ess_rows`), the slice sampler's Gibbs pass
of ``z_id`` (:func:`gibbs_z_rows`) and the dimension moves (joint flips, transfers,
absorb/emit). The rows are coupled by the collapsed marginal, so each accepted proposal
updates the cache before the next row is scored. Their acceptance ratios are the moves' own
(:mod:`ibp_rflvm.samplers.dimension_moves`, :mod:`~ibp_rflvm.samplers.transfer`,
:mod:`~ibp_rflvm.samplers.absorb`), with the likelihood ratio from the cache.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..features import row_features
from ..samplers.absorb import absorb_log_ratio, absorb_proposal
from ..samplers.dimension_moves import entry_log_ratio, proposed_x
from ..samplers.ibp import capped, count_change, gibbs_flip
from ..samplers.transfer import orient, transfer_log_ratio
from .row_cache import FAST, commit_row, eval_row, prepare_row, row_buffers


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
def gibbs_z_rows(rng, X, Z, W, bias, Phi, Y, A, P, Q, yy, state, a_n, b0, const, odds, weights, counts, room):
    """Gibbs update of every ``z_id``, row by row, with the prior's conditional log odds
    ``odds(weights, counts, d, z_cur)`` (the slice sampler's, :func:`ibp.z_log_prior_odds`,
    with the sticks) and the cap on ``K+`` (:func:`ibp.capped`)."""
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
            log_odds_one = odds(weights, counts, d, z_cur)
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


@njit(cache=True, fastmath=FAST)
def flip_rows(
    rng, X, Z, W, bias, Phi, Y, A, P, Q, yy, state, a_n, b0, const, counts, q_sd, propose, log_ratio, hyper
):
    """Every row in turn, every dimension other rows use: one joint ``(z_id, x_id)`` move each.

    The prior on ``Z`` proposes the new value (``propose(rng, z)``; the IBP's is the flip) and
    gives its ratio (``log_ratio``, :class:`ibp_rflvm.priors.FeaturePrior`). Acceptance:
    ``log u < entry_log_ratio(...) + ll' - ll`` (see :func:`entry_log_ratio`), with the
    collapsed likelihood evaluated by the rank-2 row cache. Returns ``(proposed, accepted)``.
    """
    N, K = X.shape
    L = Phi.shape[1]
    J = Y.shape[1]
    phi_new, v, u, r, s, w1, w2, Qn, m2, h = row_buffers(L, J, K)
    tried = n_acc = 0
    for i in range(N):
        prepare_row(Phi[i], A, P, v, r)
        for d in range(K):
            z_cur = Z[i, d]
            m_other = counts[d] - z_cur
            if m_other == 0:
                continue  # a singleton (or an empty column): the birth/death move's business
            tried += 1
            x_prop = q_sd * rng.standard_normal() if z_cur == 0 else rng.standard_normal()
            z_new = propose(rng, z_cur)
            log_u = math.log(rng.random())
            x_new = proposed_x(z_cur, z_new, X[i, d], x_prop)
            for k in range(K):
                h[k] = X[i, k] * Z[i, k]
            h[d] = x_new * z_new
            row_features(h, W, bias, phi_new)
            ll_new = eval_row(
                phi_new, Phi[i], v, r, Y[i], A, P, Q, yy, state[0], a_n, b0, const, u, s, w1, w2, Qn, m2
            )
            prior = entry_log_ratio(log_ratio, hyper, z_cur, z_new, X[i, d], x_prop, m_other, N, q_sd)
            if log_u < prior + ll_new - state[1]:
                commit_row(Y[i], A, P, Q, u, v, w1, w2, Qn, m2, state, ll_new, Phi[i], phi_new)
                X[i, d] = x_new
                Z[i, d] = z_new
                counts[d] += z_new - z_cur
                n_acc += 1
                prepare_row(Phi[i], A, P, v, r)
    return tried, n_acc


@njit(cache=True, fastmath=FAST)
def transfer_rows(
    rng, X, Z, W, bias, Phi, Y, A, P, Q, yy, state, a_n, b0, const, counts, pa, pb, pc, prior_ratio, hyper
):
    """Every row in turn, every aligned pair: one transfer proposal each, scored by the rank-2
    row cache. Returns ``(proposed, accepted)``."""
    N, K = X.shape
    L = Phi.shape[1]
    J = Y.shape[1]
    phi_new, v, u, r, s, w1, w2, Qn, m2, h = row_buffers(L, J, K)
    tried = acc = 0
    for i in range(N):
        prepare_row(Phi[i], A, P, v, r)
        for p in range(pa.size):
            src, dst, c = orient(Z, i, pa[p], pb[p], pc[p])
            if src < 0:
                continue
            value = Z[i, src]
            m_src = counts[src] - value
            m_dst = counts[dst]
            if m_src == 0:
                continue  # the row owns `src` alone: moving would kill a dimension
            new_dst = c * X[i, src]
            new_src = X[i, dst] / c
            log_u = math.log(rng.random())
            for k in range(K):
                h[k] = X[i, k] * Z[i, k]
            h[src] = 0.0
            h[dst] = new_dst * value
            row_features(h, W, bias, phi_new)
            ll_new = eval_row(
                phi_new, Phi[i], v, r, Y[i], A, P, Q, yy, state[0], a_n, b0, const, u, s, w1, w2, Qn, m2
            )
            tried += 1
            log_ratio = transfer_log_ratio(
                X[i, dst], X[i, src], new_dst, new_src, m_dst, m_src, value, N, prior_ratio, hyper
            )
            if log_u < log_ratio + ll_new - state[1]:
                commit_row(Y[i], A, P, Q, u, v, w1, w2, Qn, m2, state, ll_new, Phi[i], phi_new)
                X[i, dst] = new_dst
                X[i, src] = new_src
                Z[i, dst] = value
                Z[i, src] = 0
                counts[dst] += value
                counts[src] -= value
                acc += 1
                prepare_row(Phi[i], A, P, v, r)
    return tried, acc


@njit(cache=True, fastmath=FAST)
def absorb_rows(
    rng, X, Z, W, bias, Phi, Y, A, P, Q, yy, state, a_n, b0, const, counts, keep, toggle, cs, prior_ratio,
    hyper,
):
    """Every row in turn, every ordered aligned pair: one absorb or emit proposal, scored by the
    rank-2 row cache. Returns ``(proposed, accepted)``."""
    N, K = X.shape
    L = Phi.shape[1]
    J = Y.shape[1]
    phi_new, v, u, r, s, w1, w2, Qn, m2, h = row_buffers(L, J, K)
    tried = acc = 0
    for i in range(N):
        prepare_row(Phi[i], A, P, v, r)
        for p in range(keep.size):
            a, b = keep[p], toggle[p]
            m, new_a = absorb_proposal(X, Z, i, a, b, cs[p], counts)
            if m == 0:
                continue
            z_b = Z[i, b]
            log_u = math.log(rng.random())
            for k in range(K):
                h[k] = X[i, k] * Z[i, k]
            h[a] = new_a * Z[i, a]
            h[b] = 0.0 if z_b == 1 else X[i, b]
            row_features(h, W, bias, phi_new)
            ll_new = eval_row(
                phi_new, Phi[i], v, r, Y[i], A, P, Q, yy, state[0], a_n, b0, const, u, s, w1, w2, Qn, m2
            )
            tried += 1
            if log_u < absorb_log_ratio(z_b, X[i, a], new_a, m, N, prior_ratio, hyper) + ll_new - state[1]:
                commit_row(Y[i], A, P, Q, u, v, w1, w2, Qn, m2, state, ll_new, Phi[i], phi_new)
                X[i, a] = new_a
                Z[i, b] = 1 - z_b
                counts[b] += 1 - 2 * z_b
                acc += 1
                prepare_row(Phi[i], A, P, v, r)
    return tried, acc
