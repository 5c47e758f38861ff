"""Absorb/emit: fold a dimension into an aligned one for a row that uses both, or the reverse.

Why: a chain started with every row on every dimension mixes a generating dimension across
several columns rather than splitting it, so the rows that use both columns of an aligned pair
cannot be moved by a row transfer (:mod:`transfer`). For such a row, switching ``b`` off while
adding ``c x_b`` to ``x_a`` keeps its phase ``x_a w_a + x_b w_b`` when ``w_b = c w_a``.

The move, for an ordered pair ``(a, b)`` of active dimensions with ``|cos(w_a, w_b)| >= min_cos``,
``c = <w_a, w_b> / |w_a|^2`` (the projection of ``w_b`` on ``w_a``), and a row that uses ``a``:

* absorb (``z_b = 1``, other rows use ``b`` too): ``z_b -> 0``, ``x_a -> x_a + c x_b / z_a``;
* emit (``z_b = 0``): ``z_b -> 1``, ``x_a -> x_a - c x_b / z_a``, with ``x_b`` the value the row
  holds while off (prior ``N(0, 1)``). ``z_a = 1`` under a binary prior; with counts the move
  keeps ``h_a + c h_b`` (``h = z x``) and leaves rows with ``z_b > 1`` alone.

``x_b`` is unchanged, so the map is a shear (Jacobian 1) and each is the other's inverse.
Acceptance in the exchangeable view (the prior's weights integrated out; ``m`` = the other rows'
sum on ``b``), with the prior on ``Z``'s ratio ``p(z_b' | m) / p(z_b | m)``, for the IBP (with
``beta`` the two-parameter IBP's sharing parameter, 1 for the one-parameter IBP):
absorb ``(N - 1 + beta - m)/m * N(x_a'; 0, 1)/N(x_a; 0, 1) * L'/L``,
emit ``m/(N - 1 + beta - m) * N(x_a'; 0, 1)/N(x_a; 0, 1) * L'/L``.
The ordered pairs and ``c`` depend on ``W`` only, which the move leaves alone.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..features import row_features
from . import z_prior
from .row_scorer import FAST, begin, commit, feature_buffer, latent_row, score
from .transfer import aligned_pairs


def ordered_pairs(
    W: np.ndarray, min_cos: float, rng: np.random.Generator | None = None, max_pairs: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(keep, toggle, c)``: both orders of every aligned pair (of at most `max_pairs` of them,
    as in :func:`.transfer.aligned_pairs`), ``c = <w_keep, w_toggle> / |w_keep|^2``."""
    a, b, _ = aligned_pairs(W, min_cos, rng, max_pairs)
    keep = np.concatenate([a, b])
    toggle = np.concatenate([b, a])
    dots = np.einsum("mk,mk->k", W[:, keep], W[:, toggle])
    return keep, toggle, dots / np.einsum("mk,mk->k", W[:, keep], W[:, keep])


@njit(cache=True)
def absorb_log_ratio(z_b: int, x_a: float, new_a: float, m: int, n: int, hyper) -> float:
    """Prior part of the log acceptance ratio (module docstring); `m` excludes the row. The
    prior on ``Z``'s ratio for ``z_b -> 1 - z_b`` is :func:`.z_prior.prior_ratio` of the prior's
    `hyper` (the IBP's odds above; :class:`ibp_rflvm.priors.FeaturePrior`)."""
    return z_prior.prior_ratio(z_b, 1 - z_b, m, n, hyper) - 0.5 * (new_a * new_a - x_a * x_a)


@njit(cache=True)
def absorb_proposal(X, Z, i, a, b, c, counts):
    """``(m, new_x_a)`` for row `i`, or ``m = 0`` when the move does not apply.

    Under a prior with counts the move toggles ``z_b`` between 0 and 1 only, and carries
    ``c z_b x_b`` into ``h_a = z_a x_a``, so ``x_a`` moves by ``c x_b / z_a``."""
    z_a = Z[i, a]
    if z_a == 0:
        return 0, 0.0
    z_b = Z[i, b]
    m = counts[b] - z_b
    if m == 0 or z_b > 1:
        return 0, 0.0  # absorbing the last user would kill `b`; emitting into an empty column is a birth
    return m, X[i, a] + c * X[i, b] / z_a if z_b == 1 else X[i, a] - c * X[i, b] / z_a


@njit(cache=True)
def _absorb_pair(rng, X, Z, a, b, c, delta_ll, counts, hyper, accepted):
    """Accept or reject pair ``(a, b)``'s proposals row by row (``m`` couples them)."""
    N = Z.shape[0]
    tried = acc = 0
    for i in range(N):
        accepted[i] = False
        m, new_a = absorb_proposal(X, Z, i, a, b, c, counts)
        if m == 0:
            continue
        z_b = Z[i, b]
        tried += 1
        ratio = absorb_log_ratio(z_b, X[i, a], new_a, m, N, hyper)
        if math.log(rng.random()) < ratio + delta_ll[i]:
            X[i, a] = new_a
            Z[i, b] = 1 - z_b
            counts[b] += 1 - 2 * z_b
            accepted[i] = True
            acc += 1
    return tried, acc


@njit(cache=True, fastmath=FAST)
def absorb_rows(
    rng: np.random.Generator, X: np.ndarray, Z: np.ndarray, W: np.ndarray, bias: bool, rows,
    counts: np.ndarray, pairs: tuple, hyper,
) -> tuple[int, int]:
    """Absorb/emit for a likelihood that couples the rows: every row in turn, every ordered
    aligned pair of `pairs` (:func:`ordered_pairs`), one proposal each, scored by the compiled
    row scorer `rows` (:mod:`.row_scorer`) against the other rows as they stand. Acceptance as
    in the module docstring (:func:`absorb_log_ratio`). `X`, `Z`, `counts` are updated in
    place. Returns ``(proposed, accepted)``."""
    keep, toggle, cs = pairs
    N, K = X.shape
    phi = feature_buffer(W, bias)
    h = np.empty(K)
    tried = acc = 0
    for i in range(N):
        ll = begin(rows, i)
        for p in range(keep.size):
            a, b = keep[p], toggle[p]
            m, new_a = absorb_proposal(X, Z, i, a, b, cs[p], counts)
            if m == 0:
                continue
            z_b = Z[i, b]
            log_u = math.log(rng.random())
            latent_row(X, Z, i, h)
            h[a] = new_a * Z[i, a]
            h[b] = 0.0 if z_b == 1 else X[i, b]
            row_features(h, W, bias, phi)
            ll_new = score(rows, i, phi)
            tried += 1
            if log_u < absorb_log_ratio(z_b, X[i, a], new_a, m, N, hyper) + ll_new - ll:
                commit(rows, i, phi)
                X[i, a] = new_a
                Z[i, b] = 1 - z_b
                counts[b] += 1 - 2 * z_b
                acc += 1
                ll = begin(rows, i)
    return tried, acc


def absorbs(
    rng: np.random.Generator, X, Z, W, counts, min_cos: float, target, max_pairs: int | None, prior
) -> tuple[int, int]:
    """Absorb/emit between the ordered aligned pairs of `W` (of at most `max_pairs` pairs), with
    the prior on ``Z`` `prior`: :func:`absorb_rows` when `target` (a row target) offers a
    compiled row scorer, else :func:`absorb_pairs`. ``(proposed, accepted)``."""
    if target.rows is None:
        return absorb_pairs(rng, X, Z, W, counts, min_cos, target, max_pairs, prior)
    pairs = ordered_pairs(W, min_cos, rng, max_pairs)
    return absorb_rows(rng, X, Z, W, target.bias, target.rows, counts, pairs, prior.hyper)


def absorb_pairs(
    rng: np.random.Generator, X, Z, W, counts, min_cos: float, target, max_pairs: int | None, prior
) -> tuple[int, int]:
    """Absorb/emit for a row-factorised target (or the prior alone), one ordered pair at a time.

    Row ``i``'s proposal for a pair depends only on its own ``(z_b, x_a, x_b)``, which no other
    row's move changes, so the rows that use ``a`` are scored in one array pass
    (`target.deltas_at`) and accepted row by row in compiled code. Returns ``(proposed, accepted)``.
    """
    keep, toggle, cs = ordered_pairs(W, min_cos, rng, max_pairs)
    N = Z.shape[0]
    accepted = np.zeros(N, dtype=np.bool_)
    delta = np.zeros(N)
    tried = acc = 0
    for a, b, c in zip(keep.tolist(), toggle.tolist(), cs.tolist(), strict=True):
        rows = np.flatnonzero((Z[:, a] > 0) & (Z[:, b] <= 1))
        if rows.size == 0:
            continue
        on = Z[rows, b] == 1
        z_a = Z[rows, a]
        H_rows = X[rows] * Z[rows]
        shift = c * X[rows, b] / z_a
        H_rows[:, a] = np.where(on, X[rows, a] + shift, X[rows, a] - shift) * z_a
        H_rows[:, b] = np.where(on, 0.0, X[rows, b])
        delta[rows] = target.deltas_at(rows, H_rows, W)
        t, n_acc = _absorb_pair(rng, X, Z, a, b, c, delta, counts, prior.hyper, accepted)
        tried += t
        acc += n_acc
        if n_acc:
            target.accept_at(np.flatnonzero(accepted[rows]))
    return tried, acc
