"""Row transfers: move a row from one dimension to another whose frequencies point the same way.

Why: started from more dimensions than the data need, a chain splits one generating dimension
between two columns of ``Z`` that disjoint sets of rows use, with frequency columns that point
(nearly) the same way. Neither column can die while the other rows hold it, and a row moves from
one to the other only by two single flips, the first of which breaks the row's fit. A transfer
does both flips at once and carries the row's coordinate over, rescaled so that its phase
``x w`` keeps its length: on Cambridge it takes the chains from 12 and 20 dimensions to the
truth's four widely used ones within a few hundred sweeps (docs/sampler.md section 4).

The move, for a pair of active dimensions ``(a, b)`` and a row ``i`` that uses exactly one of
them (its *source*; the other is its *destination*), both used by other rows too:

* ``z_i,src: v -> 0``, ``z_i,dst: 0 -> v`` (``v = 1`` for a binary prior; a count moves
  whole, so the row's ``h = z x`` is carried as its ``x`` is) and
  ``(x_dst, x_src) -> (c x_src, x_dst / c)`` with ``c = s |w_src| / |w_dst|`` and ``s`` the
  sign of ``<w_a, w_b>``. The coordinate the row stops using keeps the value it leaves behind
  (prior ``N(0, 1)`` when off), so the map is an involution: the reverse transfer has ``c``
  replaced by ``1 / c``. Its Jacobian is 1.
* Acceptance, in the exchangeable view with the prior's weights integrated out (as for the
  flips of :mod:`dimension_moves`), with the prior on ``Z``'s conditionals (for the
  two-parameter IBP with sharing parameter ``beta``; ``beta = 1`` the one-parameter IBP):
  ``p(z_dst = v | m_-i,dst) / p(0 | m_-i,dst) * p(z_src = 0 | m_-i,src) / p(v | m_-i,src)``, for
  the IBP ``m_-i,dst / (N - 1 + beta - m_-i,dst) * (N - 1 + beta - m_-i,src) / m_-i,src``
  * N(x_dst'; 0, 1) N(x_src'; 0, 1) / (N(x_dst; 0, 1) N(x_src; 0, 1)) * L'/L``.
* Pairs are those with ``|cos(w_a, w_b)| >= min_cos``; they depend on ``W`` alone, which the
  move leaves unchanged, so the set of moves is the same before and after each one.
* With more aligned pairs than `max_pairs`, a sweep visits `max_pairs` of them, chosen uniformly
  without replacement by the chain's generator: the choice depends on neither ``X`` nor ``Z``,
  so the sweep's kernel is a mixture, over the subsets, of kernels that each leave the posterior
  invariant, and so is the mixture. It bounds the move's cost per sweep at ``O(N max_pairs)`` row
  evaluations where ``K`` dimensions could give ``K(K-1)/2`` aligned pairs.

``K+`` and every other row are unchanged, so the prior of ``Z`` and the counts stay valid for
the sweep's redraw of the weights given ``Z`` afterwards.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..features import row_features
from . import z_prior
from .row_scorer import FAST, begin, commit, feature_buffer, latent_row, score


def aligned_pairs(
    W: np.ndarray, min_cos: float, rng: np.random.Generator | None = None, max_pairs: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs ``a < b`` with ``|cos(w_a, w_b)| >= min_cos`` and the factor ``c_ab = s |w_a| / |w_b|``
    that carries a coordinate from ``a`` to ``b`` (from ``b`` to ``a`` it is ``1 / c_ab``).

    With more than `max_pairs` of them, a uniform random subset of `max_pairs` drawn with `rng`
    (in the order of the full list); with at most that many, `rng` is not used."""
    K = W.shape[1]
    norms = np.sqrt(np.einsum("mk,mk->k", W, W))
    a, b = np.triu_indices(K, 1)
    if a.size == 0:
        return a, b, np.empty(0)
    dots = np.einsum("ma,mb->ab", W, W)[a, b]
    denom = norms[a] * norms[b]
    ok = denom > 0.0
    cos = np.where(ok, dots / np.where(ok, denom, 1.0), 0.0)
    keep = ok & (np.abs(cos) >= min_cos)
    a, b, cos = a[keep], b[keep], cos[keep]
    if max_pairs is not None and a.size > max_pairs:
        pick = np.sort(rng.choice(a.size, size=max_pairs, replace=False))
        a, b, cos = a[pick], b[pick], cos[pick]
    return a, b, np.sign(cos) * norms[a] / norms[b]


@njit(cache=True)
def transfer_log_ratio(x_dst, x_src, new_dst, new_src, m_dst, m_src, value, n, hyper) -> float:
    """Prior part of the log acceptance ratio (module docstring); `m_*` exclude the moving row.

    The prior on ``Z``'s ratio for ``z_dst: 0 -> value`` and ``z_src: value -> 0`` comes from
    :func:`.z_prior.prior_ratio` of the prior's `hyper` (:class:`ibp_rflvm.priors.FeaturePrior`;
    the IBP's odds above, ``value = 1``)."""
    return (
        z_prior.prior_ratio(0, value, m_dst, n, hyper) + z_prior.prior_ratio(value, 0, m_src, n, hyper)
        - 0.5 * (new_dst * new_dst + new_src * new_src - x_dst * x_dst - x_src * x_src)
    )  # fmt: skip


@njit(cache=True)
def orient(Z, i, a, b, c):
    """``(src, dst, factor)`` for row `i` and pair ``(a, b)``, or ``src = -1`` if it uses both or neither."""
    if (Z[i, a] > 0) == (Z[i, b] > 0):
        return -1, -1, 0.0
    if Z[i, a] > 0:
        return a, b, c
    return b, a, 1.0 / c


@njit(cache=True)
def _transfer_pair(rng, X, Z, a, b, c, x_a, x_b, delta_ll, counts, hyper, accepted):
    """Accept or reject the proposed transfers of pair ``(a, b)`` row by row (the counts couple
    them); `x_a`, `x_b` are each row's proposed coordinates. Returns ``(proposed, accepted)``."""
    N = Z.shape[0]
    tried = acc = 0
    for i in range(N):
        accepted[i] = False
        src, dst, _ = orient(Z, i, a, b, c)
        if src < 0:
            continue
        value = Z[i, src]
        if counts[src] == value:
            continue  # the row owns `src` alone: moving would kill a dimension
        new_dst = x_b[i] if dst == b else x_a[i]
        new_src = x_a[i] if src == a else x_b[i]
        tried += 1
        log_ratio = transfer_log_ratio(
            X[i, dst], X[i, src], new_dst, new_src, counts[dst], counts[src] - value, value, N, hyper
        )
        if math.log(rng.random()) < log_ratio + delta_ll[i]:
            X[i, a] = x_a[i]
            X[i, b] = x_b[i]
            Z[i, dst] = value
            Z[i, src] = 0
            counts[dst] += value
            counts[src] -= value
            accepted[i] = True
            acc += 1
    return tried, acc


@njit(cache=True, fastmath=FAST)
def transfer_rows(
    rng: np.random.Generator, X: np.ndarray, Z: np.ndarray, W: np.ndarray, bias: bool, rows,
    counts: np.ndarray, pairs: tuple, hyper,
) -> tuple[int, int]:
    """Transfers for a likelihood that couples the rows: every row in turn, every aligned pair
    of `pairs` (:func:`aligned_pairs`), one proposal each, scored by the compiled row scorer
    `rows` (:mod:`.row_scorer`) against the other rows as they stand. Acceptance as in the
    module docstring (:func:`transfer_log_ratio`). `X`, `Z`, `counts` are updated in place.
    Returns ``(proposed, accepted)``."""
    pa, pb, pc = pairs
    N, K = X.shape
    phi = feature_buffer(W, bias)
    h = np.empty(K)
    tried = acc = 0
    for i in range(N):
        ll = begin(rows, i)
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
            latent_row(X, Z, i, h)
            h[src] = 0.0
            h[dst] = new_dst * value
            row_features(h, W, bias, phi)
            ll_new = score(rows, i, phi)
            tried += 1
            log_ratio = transfer_log_ratio(
                X[i, dst], X[i, src], new_dst, new_src, m_dst, m_src, value, N, hyper
            )
            if log_u < log_ratio + ll_new - ll:
                commit(rows, i, phi)
                X[i, dst] = new_dst
                X[i, src] = new_src
                Z[i, dst] = value
                Z[i, src] = 0
                counts[dst] += value
                counts[src] -= value
                acc += 1
                ll = begin(rows, i)
    return tried, acc


def transfers(
    rng: np.random.Generator, X, Z, W, counts, min_cos: float, target, max_pairs: int | None, prior
) -> tuple[int, int]:
    """Transfers between the aligned pairs of `W` (at most `max_pairs` of them), with the prior
    on ``Z`` `prior`: :func:`transfer_rows` when `target` (a row target) offers a compiled row
    scorer, else :func:`transfer_pairs`. ``(proposed, accepted)``."""
    if target.rows is None:
        return transfer_pairs(rng, X, Z, W, counts, min_cos, target, max_pairs, prior)
    pairs = aligned_pairs(W, min_cos, rng, max_pairs)
    return transfer_rows(rng, X, Z, W, target.bias, target.rows, counts, pairs, prior.hyper)


def transfer_pairs(
    rng: np.random.Generator, X, Z, W, counts, min_cos: float, target, max_pairs: int | None, prior
) -> tuple[int, int]:
    """Transfers for a row-factorised target (or the prior alone), one aligned pair at a time.

    Given the weights, row ``i``'s proposal for a pair depends only on its own ``(z, x)`` in the
    two dimensions, which no other row's transfer changes, so the proposals of the rows that use
    exactly one of the two are scored in one array pass (`target.deltas_at`); the accept
    decisions then run row by row in compiled code.
    `X`, `Z`, `counts` are updated in place. Returns ``(proposed, accepted)``.
    """
    pa, pb, pc = aligned_pairs(W, min_cos, rng, max_pairs)
    N = Z.shape[0]
    accepted = np.zeros(N, dtype=np.bool_)
    delta = np.zeros(N)
    tried = acc = 0
    for a, b, c in zip(pa.tolist(), pb.tolist(), pc.tolist(), strict=True):
        # Only the rows that use exactly one of the two are scored: with many small
        # dimensions (wide or count data) that is a few rows per pair.
        rows = np.flatnonzero((Z[:, a] > 0) != (Z[:, b] > 0))
        if rows.size == 0:
            continue
        from_a = Z[rows, a] > 0
        value = np.where(from_a, Z[rows, a], Z[rows, b])
        # In either direction the involution is (x_a, x_b) -> (x_b / c_ab, c_ab x_a).
        x_a, x_b = X[:, a].copy(), X[:, b].copy()
        x_a[rows] = X[rows, b] / c
        x_b[rows] = X[rows, a] * c
        H_rows = X[rows] * Z[rows]
        H_rows[:, a] = np.where(from_a, 0.0, x_a[rows] * value)
        H_rows[:, b] = np.where(from_a, x_b[rows] * value, 0.0)
        delta[rows] = target.deltas_at(rows, H_rows, W)
        t, n_acc = _transfer_pair(rng, X, Z, a, b, c, x_a, x_b, delta, counts, prior.hyper, accepted)
        tried += t
        acc += n_acc
        if n_acc:
            target.accept_at(np.flatnonzero(accepted[rows]))
    return tried, acc
