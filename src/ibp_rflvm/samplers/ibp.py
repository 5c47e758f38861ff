"""Stick-breaking Indian buffet process: the semi-ordered slice sampler of Teh, Gorur and
Ghahramani (2007), shared by every IBP model in the package.

The sampler state is the binary matrix ``Z`` (``N x K`` represented dimensions), the sticks
``pi`` of the represented dimensions and the concentration ``alpha``. One IBP step is

1. ``extend``: slice variable ``s ~ U(0, pi*)``; inactive dimensions are dropped and new sticks
   are drawn exactly, in decreasing order starting below 1, until one falls below ``s``;
2. the model updates ``z_id`` with the prior factor of :func:`z_log_prior_odds` (this module
   gives the compiled factor, :func:`.z_prior.gibbs_odds` of the :class:`Sticks`, a compiled
   pass of one column for factorising likelihoods,
   :func:`gibbs_column`, and one of every row in turn for likelihoods that couple the rows,
   :func:`gibbs_z_rows`), visiting dimensions in :func:`scan_order`;
3. ``update_sticks``: ``pi_d ~ Beta(m_d, N - m_d + 1)`` for active dimensions; inactive ones
   are dropped;
4. ``update_alpha``: ``alpha ~ Gamma(a + K+, b + H_N)``.

This is the one-parameter IBP (``beta = 1``). The two-parameter IBP (:mod:`.ibp_beta`) has no
stick-breaking slice sampler: its models update ``Z`` in the exchangeable view, with the odds
:func:`log_share_odds`, the rate :func:`new_dims_rate` and :func:`exchangeable_column`, and
``alpha ~ Gamma(a + K+, b + sum_i beta / (beta + i - 1))`` (:func:`sharing_sum`).

A cap on ``K+`` (``ModelSpec.max_dims``) conditions the joint prior of ``(alpha, Z)`` on the
event ``K+ <= cap``. The indicator depends on ``Z`` alone, so the updates of the sticks, the
slice and ``alpha`` are unchanged (``alpha | Z`` keeps its Gamma form), and every update of ``Z``
multiplies its conditional by the indicator: a ``z`` that would switch on a dimension no row
uses while ``K+`` is at the cap stays 0. The kernels carry the room left under the cap in a
one-element array (:func:`room`), which they update as columns switch on and off.

Why start new sticks below 1 rather than below ``pi*``: in the semi-ordered representation the
inactive sticks form a Poisson process on ``(0, 1)`` independent of the active ones. Starting
from ``pi*`` belongs to the fully ordered scheme and biases ``K+`` low (tests/samplers/test_ibp.py
has the power to see it).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit
from numba.extending import overload
from scipy import special

from ..features import row_features
from . import z_prior
from .row_scorer import FAST, begin, commit, feature_buffer, latent_row, score

#: The room of a model without a cap on ``K+``.
UNCAPPED = 2**62


def room(k_plus: int, cap: int | None) -> np.ndarray:
    """How many more dimensions may switch on, in the one-element array the kernels update."""
    return np.array([UNCAPPED if cap is None else cap - k_plus], dtype=np.int64)


def harmonic(n: int) -> float:
    return float(np.sum(1.0 / np.arange(1, n + 1)))


def sharing_sum(n: int, beta: float = 1.0) -> float:
    """``sum_{i=1..N} beta / (beta + i - 1)``: ``E[K+] / alpha`` under the two-parameter IBP.

    ``H_N`` at ``beta = 1`` (computed as :func:`harmonic`, so that the one-parameter chains keep
    their arithmetic); otherwise ``beta (psi(beta + N) - psi(beta))``, the same sum in closed form.
    """
    if beta == 1.0:
        return harmonic(n)
    return float(beta * (special.digamma(beta + n) - special.digamma(beta)))


# --------------------------------------------------------------------------------------------
# Exact draws of new sticks
# --------------------------------------------------------------------------------------------


class _NewStickDensity:
    """``log p(t)`` for ``t = log(pi)``, up to a constant, and its derivative.

    ``p(pi) ∝ exp(alpha sum_{i<=N} (1 - pi)^i / i) pi^(alpha - 1) (1 - pi)^N``; in ``t`` the
    Jacobian adds one power of ``pi``. The derivative has the closed form
    ``alpha (1 - pi)^N - N pi / (1 - pi)``, strictly decreasing in ``t``: the density is
    log-concave in ``t``, which is what adaptive rejection sampling needs.
    """

    def __init__(self, alpha: float, n: int):
        self.alpha = float(alpha)
        self.n = int(n)
        self._i = np.arange(1, n + 1, dtype=np.float64)

    def logp(self, t: float) -> float:
        pi = math.exp(t)
        log1m = math.log1p(-pi)
        series = float(np.sum(np.exp(self._i * log1m) / self._i))
        return self.alpha * series + self.alpha * t + self.n * log1m

    def dlogp(self, t: float) -> float:
        pi = math.exp(t)
        return self.alpha * math.exp(self.n * math.log1p(-pi)) - self.n * pi / (1.0 - pi)


def _log_diff_exp(a: float, b: float) -> float:
    """``log(exp(a) - exp(b))`` for ``a > b``."""
    return a + math.log1p(-math.exp(b - a))


def _segment_log_mass(h: float, s: float, t0: float, lo: float, hi: float) -> float:
    """Log integral over ``[lo, hi]`` of the tangent ``exp(h + s (t - t0))``."""
    if hi <= lo:
        return -math.inf
    if lo == -math.inf:
        return h + s * (hi - t0) - math.log(s)
    if abs(s) * (hi - lo) < 1e-12:
        return h + s * (0.5 * (lo + hi) - t0) + math.log(hi - lo)
    if s > 0:
        return _log_diff_exp(h + s * (hi - t0), h + s * (lo - t0)) - math.log(s)
    return _log_diff_exp(h + s * (lo - t0), h + s * (hi - t0)) - math.log(-s)


def _sample_segment(rng: np.random.Generator, s: float, lo: float, hi: float) -> float:
    """Draw from the density ∝ ``exp(s t)`` on ``[lo, hi]`` by its inverse CDF."""
    u = rng.random()
    if lo == -math.inf:
        return hi + math.log(u) / s
    width = hi - lo
    if abs(s) * width < 1e-12:
        return lo + u * width
    if s > 0:
        # t = hi + log(u + (1 - u) exp(-s width)) / s, written to stay finite for large s width
        return hi + math.log(u + (1.0 - u) * math.exp(-s * width)) / s
    return lo + math.log(u + (1.0 - u) * math.exp(s * width)) / s


def sample_new_stick(
    rng: np.random.Generator, alpha: float, n: int, upper: float, max_points: int = 60
) -> float:
    """One exact draw of a new stick on ``(0, upper)`` by adaptive rejection sampling in ``log pi``.

    The tangent envelope of a log-concave density is an upper bound, so accepted points are
    exact draws; rejected points refine the envelope.
    """
    dens = _NewStickDensity(alpha, n)
    t_max = math.log(upper)
    # Starting abscissae: below the mode (positive slope, needed for the unbounded left tail),
    # around the mode (pi ~ alpha / N) and near the upper end.
    guesses = {
        t_max + math.log(0.999),
        t_max + math.log(0.5),
        min(math.log(alpha / (n + alpha)), t_max + math.log(0.25)),
    }
    t_left = min(guesses) - 1.0
    while dens.dlogp(t_left) <= 0.0:
        t_left -= 2.0
    guesses.add(t_left)
    pts = sorted(guesses)
    hs = [dens.logp(t) for t in pts]
    ds = [dens.dlogp(t) for t in pts]
    while True:
        k = len(pts)
        bounds = [-math.inf]
        for a in range(k - 1):
            if ds[a] - ds[a + 1] > 1e-14:
                z = (hs[a + 1] - hs[a] - pts[a + 1] * ds[a + 1] + pts[a] * ds[a]) / (ds[a] - ds[a + 1])
                z = min(max(z, pts[a]), pts[a + 1])
            else:
                z = 0.5 * (pts[a] + pts[a + 1])
            bounds.append(z)
        bounds.append(t_max)
        log_mass = np.array(
            [_segment_log_mass(hs[a], ds[a], pts[a], bounds[a], bounds[a + 1]) for a in range(k)]
        )
        w = np.exp(log_mass - log_mass.max())
        a = int(np.searchsorted(np.cumsum(w), rng.random() * w.sum(), side="right"))
        a = min(a, k - 1)
        t = _sample_segment(rng, ds[a], bounds[a], bounds[a + 1])
        t = min(t, t_max)
        upper_hull = hs[a] + ds[a] * (t - pts[a])
        h_t = dens.logp(t) if t < 0.0 else -math.inf
        if math.log(rng.random()) <= h_t - upper_hull:
            return math.exp(t)
        if k < max_points and math.isfinite(h_t):
            pos = int(np.searchsorted(pts, t))
            pts.insert(pos, t)
            hs.insert(pos, h_t)
            ds.insert(pos, dens.dlogp(t))


# --------------------------------------------------------------------------------------------
# The steps of one sweep
# --------------------------------------------------------------------------------------------


def pi_star(pi: np.ndarray, counts: np.ndarray) -> float:
    """``min(1, smallest stick among active dimensions)``."""
    active = counts > 0
    return float(min(1.0, pi[active].min())) if active.any() else 1.0


def extend(
    rng: np.random.Generator, Z: np.ndarray, pi: np.ndarray, alpha: float
) -> tuple[np.ndarray, np.ndarray, float]:
    """Slice step: keep the active dimensions and represent the new sticks above the slice.

    Returns ``(keep, new_pi, s)``: indices of the kept (active) dimensions, the new sticks in
    decreasing order (each one a new dimension with ``z = 0`` for every row), and the slice.
    """
    n = Z.shape[0]
    counts = Z.sum(axis=0)
    s = rng.random() * pi_star(pi, counts)
    keep = np.flatnonzero(counts > 0)
    new = []
    prev = 1.0
    while True:
        p = sample_new_stick(rng, alpha, n, prev)
        if p < s:
            break
        new.append(p)
        prev = p
    return keep, np.asarray(new, dtype=np.float64), float(s)


def scan_order(pi: np.ndarray) -> np.ndarray:
    """The order in which the z updates must visit the represented dimensions: decreasing stick.

    The order of a Gibbs scan may depend on what the step conditions on (the sticks, the
    slice) but not on ``Z`` itself. Visiting the active dimensions first and the new ones after
    does depend on ``Z`` and biases ``K+`` (by +7% for ``N = 1``, +18% for ``N = 10``, in the
    prior check); sorting by stick value does not.
    """
    return np.argsort(-pi, kind="stable")


def update_sticks(
    rng: np.random.Generator, Z: np.ndarray, beta: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """``pi_d ~ Beta(m_d, N - m_d + beta)`` for active dimensions; returns ``(keep, pi)``.

    Under the two-parameter IBP (``beta != 1``) no step reads the sticks; they are drawn all
    the same (the limit of the finite model's ``Beta(alpha beta / K, beta)`` sticks given ``Z``)
    so that every state and sample has them."""
    n = Z.shape[0]
    counts = Z.sum(axis=0)
    keep = np.flatnonzero(counts > 0)
    m = counts[keep].astype(np.float64)
    pi = rng.beta(m, n - m + beta) if keep.size else np.empty(0)
    # A Beta draw can round to exactly 1.0 in double precision; log(1 - pi) must stay finite.
    return keep, np.minimum(pi, 1.0 - 1e-15)


def update_alpha(
    rng: np.random.Generator, k_plus: int, n: int, a: float, b: float, beta: float = 1.0
) -> float:
    """Conjugate Gamma update of the IBP concentration (shape `a`, rate `b` prior):
    ``alpha | Z, beta ~ Gamma(a + K+, b + sum_i beta / (beta + i - 1))``."""
    return float(rng.gamma(a + k_plus, 1.0 / (b + sharing_sum(n, beta))))


def new_dims_rate(alpha: float, n: int, beta: float = 1.0) -> float:
    """Poisson mean of the dimensions one row owns alone given the others: ``alpha beta / (beta + N - 1)``
    (``alpha / N`` for the one-parameter IBP)."""
    return alpha / n if beta == 1.0 else alpha * beta / (beta + n - 1.0)


# --------------------------------------------------------------------------------------------
# The z prior factor, compiled so every z kernel shares one definition
# --------------------------------------------------------------------------------------------


@njit(cache=True)
def log_pi_star(pi: np.ndarray, counts: np.ndarray, d: int, count_d: int) -> float:
    """``log pi*`` when dimension `d` has `count_d` active rows and the others keep theirs."""
    pmin = 1.0
    for k in range(pi.size):
        c = count_d if k == d else counts[k]
        if c > 0 and pi[k] < pmin:
            pmin = pi[k]
    return math.log(pmin)


@njit(cache=True)
def z_log_prior_odds(pi: np.ndarray, counts: np.ndarray, d: int, z_cur: int) -> float:
    """``log P(z_id = 1) - log P(z_id = 0)`` from the prior and the slice, all else fixed.

    ``P(z_id = v) ∝ pi_d^v (1 - pi_d)^(1 - v) / pi*(Z with z_id = v)``: ``pi*`` is recomputed
    for each value because switching a dimension on or off can change the smallest active stick.
    """
    base = counts[d] - z_cur
    return (
        math.log(pi[d])
        - math.log1p(-pi[d])
        - log_pi_star(pi, counts, d, base + 1)
        + log_pi_star(pi, counts, d, base)
    )


@z_prior.hyper_class
class Sticks(NamedTuple):
    """The slice sampler's sticks ``pi`` of the represented dimensions, as the Gibbs pass of
    ``Z`` takes the prior's weights: :func:`.z_prior.gibbs_odds` of them is
    :func:`z_log_prior_odds`."""

    pi: np.ndarray


@overload(z_prior.gibbs_odds)
def _gibbs_odds(weights, counts, d, z_cur):
    if z_prior.is_hyper(weights, Sticks):

        def odds(weights, counts, d, z_cur):
            return z_log_prior_odds(weights.pi, counts, d, z_cur)

        return odds


@njit(cache=True)
def log_share_odds(m_other: int, n: int, beta: float) -> float:
    """``log P(z_id = 1) - log P(z_id = 0)`` in the exchangeable view, for a dimension that
    ``m_other > 0`` other rows use: ``m / (beta + N - 1 - m)`` under the two-parameter IBP
    (Ghahramani, Griffiths and Sollich 2007), ``m / (N - m)`` at ``beta = 1``.

    `beta` is an argument, never a module constant: numba's cache would not see a changed
    global. At ``beta = 1`` every term is an integer held exactly in floating point, so the
    odds equal the one-parameter ``log m - log(N - m)`` bit for bit."""
    return math.log(m_other) - math.log(beta + n - 1 - m_other)


@njit(cache=True)
def capped(counts: np.ndarray, d: int, z_cur: int, room: np.ndarray) -> bool:
    """Whether ``z_id = 1`` is outside the support: it would switch on an unused dimension while
    ``K+`` is at the cap (the conditional is then ``z_id = 0`` with probability 1)."""
    return z_cur == 0 and counts[d] == 0 and room[0] <= 0


@njit(cache=True)
def count_change(counts: np.ndarray, d: int, z_cur: int, z_new: int, room: np.ndarray) -> None:
    """Apply a flip of ``z_id`` to the column counts and to the room under the cap."""
    if z_new != z_cur:
        counts[d] += z_new - z_cur
        if counts[d] == 0:
            room[0] += 1
        elif counts[d] == 1 and z_new == 1:
            room[0] -= 1


@njit(cache=True)
def gibbs_flip(rng, log_odds_one: float) -> int:
    """Draw ``v`` with ``P(v = 1) = logistic(log_odds_one)``, stable for large magnitudes."""
    u = rng.random()
    if log_odds_one >= 0.0:
        return 1 if u * (1.0 + math.exp(-log_odds_one)) < 1.0 else 0
    e = math.exp(log_odds_one)
    return 1 if u * (1.0 + e) < e else 0


@njit(cache=True)
def gibbs_column(rng, Z: np.ndarray, d: int, delta_ll: np.ndarray, weights, counts: np.ndarray, room):
    """Update column `d` of `Z` row by row, for likelihoods that factorise over rows.

    ``delta_ll[i] = log p(y_i | z_id = 1) - log p(y_i | z_id = 0)`` was computed for all rows at
    once; rows are still visited in turn because the prior couples them through ``m_d``:
    :func:`.z_prior.gibbs_odds` of its `weights` (:class:`Sticks` for the slice sampler's, whose
    odds are :func:`z_log_prior_odds`) is its conditional log odds of ``z_id = 1``.
    `Z`, `counts` and `room` (:func:`room`) are updated in place.
    """
    for i in range(Z.shape[0]):
        z_cur = Z[i, d]
        if capped(counts, d, z_cur, room):
            continue
        lo = z_prior.gibbs_odds(weights, counts, d, z_cur) + delta_ll[i]
        v = gibbs_flip(rng, lo)
        count_change(counts, d, z_cur, v, room)
        Z[i, d] = v


def gibbs_z(
    rng: np.random.Generator, X: np.ndarray, Z: np.ndarray, W: np.ndarray, weights, counts: np.ndarray,
    room: np.ndarray, target,
) -> int:
    """Gibbs update of every ``z_id``, dimensions in `Z`'s order (the caller's scan order), with
    the prior's conditional log odds given its `weights` (:func:`.z_prior.gibbs_odds`; the
    sticks, :class:`Sticks`) and the cap on ``K+``
    (`room`), against the likelihood of `target` (a row target,
    :class:`ibp_rflvm.samplers.dimension_moves.RowTarget`): row by row in one compiled pass
    (:func:`gibbs_z_rows`) when it offers a compiled row scorer (``target.rows``), else one
    dimension at a time, every row's change of the likelihood in one array pass
    (``target.deltas``) and the rows visited in turn by :func:`gibbs_column`. `Z`, `counts`
    and `room` are updated in place; returns the number of entries changed."""
    if target.rows is not None:
        return gibbs_z_rows(rng, X, Z, W, target.bias, target.rows, weights, counts, room)
    flips = 0
    for d in range(Z.shape[1]):
        H_alt = X * Z
        H_alt[:, d] = X[:, d] * (1 - Z[:, d])
        z_before = Z[:, d].copy()
        # The change if z_id flipped; the column's conditional wants log p(z = 1) - log p(z = 0).
        delta = target.deltas(H_alt, W)
        delta = np.where(z_before == 1, -delta, delta)
        gibbs_column(rng, Z, d, delta, weights, counts, room)
        changed = np.flatnonzero(Z[:, d] != z_before)
        if changed.size:
            target.accept_rows(changed)
            flips += int(changed.size)
    return flips


@njit(cache=True, fastmath=FAST)
def gibbs_z_rows(
    rng: np.random.Generator, X: np.ndarray, Z: np.ndarray, W: np.ndarray, bias: bool, rows, weights,
    counts: np.ndarray, room: np.ndarray,
) -> int:
    """Gibbs update of every ``z_id``, row by row, for a likelihood that couples the rows: each
    entry's two values scored by the compiled row scorer `rows` (:mod:`.row_scorer`), with the
    prior's conditional log odds given its `weights` as in :func:`gibbs_column`
    and the cap on ``K+`` (:func:`capped`). `Z`, `counts` and `room` are updated in place;
    returns the number of entries changed."""
    N, K = X.shape
    phi = feature_buffer(W, bias)
    h = np.empty(K)
    n_flips = 0
    for i in range(N):
        ll_cur = begin(rows, i)
        for d in range(K):
            z_cur = Z[i, d]
            if capped(counts, d, z_cur, room):
                continue
            latent_row(X, Z, i, h)
            h[d] = X[i, d] * (1 - z_cur)
            row_features(h, W, bias, phi)
            ll_new = score(rows, i, phi)
            log_odds_one = z_prior.gibbs_odds(weights, counts, d, z_cur)
            if z_cur == 0:
                log_odds_one += ll_new - ll_cur
            else:
                log_odds_one += ll_cur - ll_new
            z_new = gibbs_flip(rng, log_odds_one)
            if z_new != z_cur:
                commit(rows, i, phi)
                Z[i, d] = z_new
                count_change(counts, d, z_cur, z_new, room)
                n_flips += 1
                ll_cur = begin(rows, i)
    return n_flips


@njit(cache=True)
def exchangeable_column(rng, Z: np.ndarray, d: int, delta_ll: np.ndarray, counts: np.ndarray, beta: float):
    """Gibbs update of column `d` of `Z` in the exchangeable view (no sticks), for the
    two-parameter IBP: row ``i`` with ``m_-i,d > 0`` other rows on is on with prior odds
    ``m / (N - 1 + beta - m)`` (:func:`log_share_odds`) times ``exp(delta_ll[i])``; a row that
    would own the column alone, or be its only user, is left to the singleton birth/death move.
    `Z` and `counts` are updated in place; returns the number of flips."""
    n = Z.shape[0]
    flips = 0
    for i in range(n):
        z_cur = Z[i, d]
        m_other = counts[d] - z_cur
        if m_other == 0:
            continue
        v = gibbs_flip(rng, log_share_odds(m_other, n, beta) + delta_ll[i])
        if v != z_cur:
            counts[d] += v - z_cur
            Z[i, d] = v
            flips += 1
    return flips
