"""The updates of ``Z`` on the device: rows in parallel given the sticks.

**The representation.** The state holds the sticks ``pi_d`` of the active dimensions (those some
row uses). Under the IBP (two-parameter form, sharing ``beta``; ``beta = 1`` is the paper's) the
joint of ``Z`` and the active sticks is

    p(Z, pi+) ∝ (alpha beta)^K+ / K+! * prod_{d active} pi_d^(m_d - 1) (1 - pi_d)^(N - m_d + beta - 1)

(the semi-ordered stick-breaking law of Teh, Gorur and Ghahramani 2007; the inactive sticks, a
Poisson process independent of these, are integrated out). So ``pi_d | Z ~ Beta(m_d, N - m_d +
beta)`` (:func:`draw_sticks`), and given ``pi+`` and the weights the rows are conditionally
independent: each ``z_id`` of an active dimension has prior odds ``pi_d / (1 - pi_d)``, as long as
the dimension stays active (its factor ``pi_d^(m_d - 1)`` would otherwise leave the space).

**Rows in parallel, a column at a time.** Every move below updates one dimension (or one pair) for
all rows at once: each row proposes and accepts on its own (its kernel leaves its own factor
``pi^z (1 - pi)^(1 - z) N(x; 0, 1) p(y_i | h_i)`` invariant), and the product of the rows' kernels,
restricted to the event that no column empties (the whole column's update is undone if it would),
leaves the conditional invariant: for two states in that event, detailed balance of the product
kernel holds term by term and the restriction only removes moves out of it. Columns and pairs are
visited in an order drawn afresh each sweep, independent of ``X`` and ``Z``.

**The stick follows its column.** Given a fixed stick a column's density moves slowly: from the
all-on start ``pi_d = 1 - O(1/N)``, and leaving costs every row ``log N``, where the host's
moves, with the sticks integrated out, lower ``m_-i`` row by row. So the Gibbs pass alternates,
within each column, between the column given its stick and the stick given its column
(``Beta(m_d, N - m_d + beta)``), :data:`STICK_ROUNDS` times: both halves are exact
conditionals, every round reuses the column's two log-likelihoods per row, and the later moves
of the sweep read the sticks the rounds end on.

**Births and deaths.** New dimensions enter only by the singleton move (:func:`singletons`):
given the other rows, the dimensions row ``i`` owns alone are a ``Poisson(alpha beta / (N - 1 +
beta))`` number (the Poisson process of sticks no other row takes, thinned by row ``i``), each with
``x ~ N(0, 1)`` and frequency coordinates from their conditional prior. The move replaces them by
a fresh number from that law with this row's new ``x ~ q = N(0, s^2)``; acceptance
``p(y_i | new) / p(y_i | old) * prod_births N(x; 0, 1) / q(x) / prod_deaths N(x; 0, 1) / q(x)``.
The singletons' sticks are integrated out (no update reads them before the next sweep's
:func:`draw_sticks`). It visits, one after another, the rows that own a singleton or draw a new
one (about ``alpha`` plus the owners per sweep), each in ``O(J L + M K^2)``.

The paper's slice step is not run on the device: with the moves above ``Z`` needs no slice
variable, and new dimensions come from the singleton move, which SPEC 2.2 found to be what opens
``K+`` in practice.

Every acceptance sum is float64. Row ``i``'s random numbers come from a key folded with the
move's position and drawn over all rows at once with JAX's counter-based generator, so they do
not depend on how the rows are split between devices.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

from . import jax
from .dp_device import add_dimension, drop_dimension

jnp = jax.numpy
lax = jax.lax


#: Rounds of each column's Gibbs pass with its stick in the device sweep
#: (:func:`gibbs_columns`): a round costs O(N), a likelihood evaluation O(N J L). From the all-on
#: start the first sweep's changes level off by 16 (docs/record/jax_backend.md, 2026-11-29).
STICK_ROUNDS = 16


class ZState(NamedTuple):
    """What the updates of ``Z`` change: the latent values and indicators, the projections
    ``P = (X * Z) W^T`` and the rows' log-likelihoods, with the frequencies and the mixture
    (changed by births and deaths only)."""

    X: jax.Array
    Z: jax.Array
    P: jax.Array
    ll: jax.Array
    W: jax.Array
    mu: jax.Array
    Sigma: jax.Array


def log_x_ratio(x: jax.Array, q_sd: float) -> jax.Array:
    """``log N(x; 0, 1) - log q(x)`` with ``q = N(0, q_sd^2)``."""
    return math.log(q_sd) + 0.5 * x * x * (1.0 / (q_sd * q_sd) - 1.0)


def logit(p: jax.Array) -> jax.Array:
    return jnp.log(p) - jnp.log1p(-p)


def draw_sticks(key, Z: jax.Array, beta: jax.Array) -> jax.Array:
    """``pi_d ~ Beta(m_d, N - m_d + beta)`` for the active dimensions (1/2 elsewhere, unread)."""
    N = Z.shape[0]
    m = jnp.sum(Z, axis=0, dtype=jnp.float64)
    active = m > 0
    pi = jax.random.beta(key, jnp.where(active, m, 1.0), jnp.where(active, N - m + beta, 1.0))
    # A Beta draw can round to 0 or 1 in double precision; its log-odds must stay finite.
    return jnp.where(active, jnp.clip(pi, 1e-300, 1.0 - 1e-15), 0.5)


def _uniform_logs(key, n: int) -> jax.Array:
    return jnp.log(jax.random.uniform(key, (n,), dtype=jnp.float64))


def _apply(s: ZState, accept: jax.Array, P_alt, ll_alt, X=None, Z=None) -> ZState:
    """Rows of the proposal where `accept`; ``X``/``Z`` already hold the accepted values."""
    return s._replace(
        X=s.X if X is None else X,
        Z=s.Z if Z is None else Z,
        P=jnp.where(accept[:, None], P_alt, s.P),
        ll=jnp.where(accept, ll_alt, s.ll),
    )


def _visit(order: jax.Array, active: jax.Array, fn: Callable, carry):
    """``fn(d, carry)`` for each slot of `order` that is `active`, in that order."""

    def body(j, c):
        d = order[j]
        return lax.cond(active[d], lambda c: fn(d, c), lambda c: c, c)

    return lax.fori_loop(0, order.shape[0], body, carry)


def gibbs_columns(key, s: ZState, pi, active, score: Callable, rounds: int = 1, sticks: float = 1.0):
    """A Gibbs pass over each active column of ``Z`` given the sticks, all rows at once:
    ``P(z_id = 1) / P(z_id = 0) = pi_d / (1 - pi_d) * p(y_i | z_id = 1) / p(y_i | z_id = 0)``.
    A column that every row would leave keeps its old values (module docstring).

    With `rounds` > 1 the column's update alternates ``rounds - 1`` more times between its
    stick, ``pi_d ~ Beta(m_d, N - m_d + beta)`` (``beta``: `sticks`; the conditional
    :func:`draw_sticks` draws), and the column given it: each half is an exact conditional, so
    each round leaves the posterior invariant and needs no acceptance step. Every round reads the same two
    log-likelihoods per row (the column's other coordinates stay), so it costs ``O(N)``, not a
    likelihood evaluation. Why: given a fixed stick the column's density can move by about
    ``N (1 - pi_d)`` rows a sweep, and from the all-on start ``pi_d`` is ``1 - O(1/N)``, so the
    rows that should leave leave over tens of sweeps; the rounds let the stick follow the
    column within the sweep, as the host's collapsed moves (``m_-i`` updated row by row) do.

    Returns ``(state, changed, pi)``: the number of ``z_id`` changed and the sticks (the
    columns' last draws; unchanged with `rounds` = 1)."""
    N, Kw = s.Z.shape
    k_order, k_u = jax.random.split(key)
    k_rounds = jax.random.fold_in(k_order, 1)  # read only with rounds > 1: one round's chains keep their bits

    def one(d, c):
        s, n, pi = c
        z = s.Z[:, d]
        x = s.X[:, d]
        P_alt = s.P + jnp.where(z, -x, x)[:, None] * s.W[:, d][None, :]
        ll_alt = score(P_alt)
        diff = ll_alt - s.ll
        gain = jnp.where(z, -diff, diff)  # log p(y_i | z_id = 1) - log p(y_i | z_id = 0)

        def draw(key, p, z_now):
            v = _uniform_logs(key, N) < -jnp.logaddexp(0.0, -(logit(p) + gain))
            return jnp.where(jnp.any(v), v, z_now)

        z_new = draw(jax.random.fold_in(k_u, d), pi[d], z)

        def round_(r, c):
            z_now, _ = c
            k_pi, k_z = jax.random.split(jax.random.fold_in(jax.random.fold_in(k_rounds, d), r))
            p = draw_sticks(k_pi, z_now[:, None], sticks)[0]
            return draw(k_z, p, z_now), p

        if rounds > 1:
            z_new, p = lax.fori_loop(1, rounds, round_, (z_new, pi[d]))
            pi = pi.at[d].set(p)
        change = z_new != z
        s = _apply(s, change, P_alt, ll_alt, Z=s.Z.at[:, d].set(z_new))
        return s, n + jnp.sum(change), pi

    return _visit(jax.random.permutation(k_order, Kw), active, one, (s, jnp.zeros((), jnp.int64), pi))


def flip_columns(key, s: ZState, pi, active, q_sd: float, score: Callable):
    """Joint ``(z_id, x_id)`` flips given the sticks, a column at a time, all rows at once.

    On (``z: 0 -> 1``, ``x' ~ q``): ``log pi/(1 - pi) + log N(x'; 0, 1) - log q(x')`` plus the
    likelihood ratio, because the reverse move draws the old ``x`` from ``N(0, 1)``, its prior
    when ``z = 0``. Off (``x' ~ N(0, 1)``): the reciprocal, with the ``x`` being switched off.
    Returns ``(state, proposed, accepted)``: every row proposes once in each active column.
    """
    N, Kw = s.Z.shape
    k_order, k_move = jax.random.split(key)

    def one(d, c):
        s, n = c
        k_e, k_u = jax.random.split(jax.random.fold_in(k_move, d))
        z = s.Z[:, d]
        x = s.X[:, d]
        e = jax.random.normal(k_e, (N,), dtype=jnp.float64)
        x_prop = jnp.where(z, e, q_sd * e)
        step = jnp.where(z, -x, x_prop)
        P_alt = s.P + step[:, None] * s.W[:, d][None, :]
        ll_alt = score(P_alt)
        lp = logit(pi[d])
        prior = jnp.where(z, -lp - log_x_ratio(x, q_sd), lp + log_x_ratio(x_prop, q_sd))
        acc = _uniform_logs(k_u, N) < prior + (ll_alt - s.ll)
        acc = acc & jnp.any(z ^ acc)
        s = _apply(s, acc, P_alt, ll_alt, X=s.X.at[:, d].set(jnp.where(acc, x_prop, x)),
                   Z=s.Z.at[:, d].set(z ^ acc))  # fmt: skip
        return s, n + jnp.sum(acc)

    s, accepted = _visit(jax.random.permutation(k_order, Kw), active, one, (s, jnp.zeros((), jnp.int64)))
    return s, N * jnp.sum(active, dtype=jnp.int64), accepted


class Pairs(NamedTuple):
    """Aligned pairs ``a < b`` of active dimensions (``|cos(w_a, w_b)| >= min_cos``), a uniform
    random subset of at most the budget, in random order: ``first[k], second[k]``, the carrying
    factor ``c[k] = sign(cos) |w_a| / |w_b|`` and the projection ``proj[k] = <w_a, w_b> / |w_a|^2``
    (and ``/ |w_b|^2`` for the reverse order, ``proj_rev``); ``count`` of them are live."""

    first: jax.Array
    second: jax.Array
    c: jax.Array
    proj: jax.Array
    proj_rev: jax.Array
    count: jax.Array


def aligned_pairs(key, W, active, min_cos: float, pairs_per_dim: float | None) -> Pairs:
    """The pairs a sweep's transfers and absorbs visit. They depend on ``W`` alone, which neither
    move changes, and the subset on a draw independent of ``X`` and ``Z``: the sweep's kernel is
    a mixture, over subsets, of kernels that each leave the posterior invariant."""
    Kw = W.shape[1]
    norms = jnp.sqrt(jnp.sum(W * W, axis=0))
    dots = W.T @ W
    denom = norms[:, None] * norms[None, :]
    ok = denom > 0.0
    cos = jnp.where(ok, dots / jnp.where(ok, denom, 1.0), 0.0)
    upper = jnp.triu(jnp.ones((Kw, Kw), dtype=bool), 1)
    aligned = upper & active[:, None] & active[None, :] & ok & (jnp.abs(cos) >= min_cos)
    n_aligned = jnp.sum(aligned)
    if pairs_per_dim is None:
        budget = n_aligned
    else:
        k_plus = jnp.sum(active)
        budget = jnp.maximum(1, jnp.ceil(pairs_per_dim * k_plus).astype(jnp.int64))
    ranks = jnp.where(aligned, jax.random.uniform(key, (Kw, Kw)), 2.0).reshape(-1)
    order = jnp.argsort(ranks)
    a, b = order // Kw, order % Kw
    safe = jnp.where(ok, 1.0, 0.0)
    sq = jnp.where(norms > 0.0, norms * norms, 1.0)
    c = jnp.sign(cos) * norms[:, None] / jnp.where(norms > 0, norms, 1.0)[None, :] * safe
    return Pairs(a, b, c[a, b], dots[a, b] / sq[a], dots[a, b] / sq[b], jnp.minimum(budget, n_aligned))


def _over_pairs(count, fn: Callable, carry):
    def cond(c):
        return c[0] < count

    def body(c):
        return (c[0] + 1, fn(c[0], c[1]))

    return lax.while_loop(cond, body, (jnp.zeros((), jnp.int64), carry))[1]


def transfers(key, s: ZState, pi, pairs: Pairs, score: Callable):
    """Row transfers (:mod:`ibp_rflvm.samplers.transfer`) given the sticks: a row that uses one
    of an aligned pair moves to the other, ``(x_a, x_b) -> (x_b / c, c x_a)`` (an involution,
    Jacobian 1). Log acceptance ``logit pi_dst - logit pi_src - (x_dst'^2 + x_src'^2 - x_dst^2 -
    x_src^2) / 2`` plus the likelihood ratio. Returns ``(state, proposed, accepted)``."""
    N = s.Z.shape[0]

    def one(k, c):
        s, tried, n = c
        a, b, cab = pairs.first[k], pairs.second[k], pairs.c[k]
        za, zb = s.Z[:, a], s.Z[:, b]
        xa, xb = s.X[:, a], s.X[:, b]
        elig = za != zb
        # ``xb * (1 / cab)``, not ``xb / cab``: XLA's simplifier may rewrite a division by a
        # broadcast scalar into that product in one compiled program and not in another (it
        # does in the rows-sharded program and not in the one-device one), and the two round
        # differently; written as the product, every device count computes the same bits.
        xa_new, xb_new = xb * (1.0 / cab), xa * cab
        ha_new = jnp.where(za, 0.0, xa_new)
        hb_new = jnp.where(za, xb_new, 0.0)
        step_a = jnp.where(elig, ha_new - jnp.where(za, xa, 0.0), 0.0)
        step_b = jnp.where(elig, hb_new - jnp.where(zb, xb, 0.0), 0.0)
        P_alt = s.P + step_a[:, None] * s.W[:, a][None, :] + step_b[:, None] * s.W[:, b][None, :]
        ll_alt = score(P_alt)
        la, lb = logit(pi[a]), logit(pi[b])
        prior = jnp.where(za, lb - la, la - lb) - 0.5 * (xa_new**2 + xb_new**2 - xa**2 - xb**2)
        acc = elig & (_uniform_logs(jax.random.fold_in(key, k), N) < prior + (ll_alt - s.ll))
        za_new, zb_new = za ^ acc, zb ^ acc
        acc = acc & jnp.any(za_new) & jnp.any(zb_new)
        X = s.X.at[:, a].set(jnp.where(acc, xa_new, xa)).at[:, b].set(jnp.where(acc, xb_new, xb))
        Z = s.Z.at[:, a].set(za ^ acc).at[:, b].set(zb ^ acc)
        return _apply(s, acc, P_alt, ll_alt, X=X, Z=Z), tried + jnp.sum(elig), n + jnp.sum(acc)

    zero = jnp.zeros((), jnp.int64)
    return _over_pairs(pairs.count, one, (s, zero, zero))


def absorbs(key, s: ZState, pi, pairs: Pairs, score: Callable):
    """Absorb/emit (:mod:`ibp_rflvm.samplers.absorb`) given the sticks, both orders of each pair:
    for a row using ``a``, absorb ``b`` (``z_b: 1 -> 0``, ``x_a -> x_a + c x_b``) or emit it
    (``z_b: 0 -> 1``, ``x_a -> x_a - c x_b``), ``c = <w_a, w_b> / |w_a|^2``: a shear (Jacobian 1),
    each the other's inverse. Log acceptance ``-+ logit pi_b - (x_a'^2 - x_a^2) / 2`` plus the
    likelihood ratio. Returns ``(state, proposed, accepted)``."""
    N = s.Z.shape[0]

    def one(k, c):
        s, tried, n = c
        rev = k % 2 == 1
        j = k // 2
        a = jnp.where(rev, pairs.second[j], pairs.first[j])
        b = jnp.where(rev, pairs.first[j], pairs.second[j])
        cab = jnp.where(rev, pairs.proj_rev[j], pairs.proj[j])
        elig, zb = s.Z[:, a], s.Z[:, b]
        xa, xb = s.X[:, a], s.X[:, b]
        xa_new = jnp.where(zb, xa + cab * xb, xa - cab * xb)
        step_a = jnp.where(elig, xa_new - xa, 0.0)
        step_b = jnp.where(elig, jnp.where(zb, -xb, xb), 0.0)
        P_alt = s.P + step_a[:, None] * s.W[:, a][None, :] + step_b[:, None] * s.W[:, b][None, :]
        ll_alt = score(P_alt)
        lb = logit(pi[b])
        prior = jnp.where(zb, -lb, lb) - 0.5 * (xa_new**2 - xa**2)
        acc = elig & (_uniform_logs(jax.random.fold_in(key, k), N) < prior + (ll_alt - s.ll))
        acc = acc & jnp.any(zb ^ acc)
        X = s.X.at[:, a].set(jnp.where(acc, xa_new, xa))
        Z = s.Z.at[:, b].set(zb ^ acc)
        return _apply(s, acc, P_alt, ll_alt, X=X, Z=Z), tried + jnp.sum(elig), n + jnp.sum(acc)

    zero = jnp.zeros((), jnp.int64)
    return _over_pairs(2 * pairs.count, one, (s, zero, zero))


def singletons(
    key, s: ZState, zeta, rate, q_sd: float, lam0: float, cap: int, score_row: Callable
):
    """Singleton birth/death for every row that owns a singleton or draws a new one, one row
    after another (module docstring). New dimensions take the lowest free slots (the row's own
    singletons' slots count as free: they are dropped in the proposal). A proposal past the cap
    on ``K+`` is outside the support and rejected. Returns ``(state, births, deaths, proposed,
    accepted)``: one proposal a candidate row."""
    N, Kw = s.Z.shape
    k_pois, k_rows = jax.random.split(key)
    k_new = jax.random.poisson(k_pois, rate, (N,))
    m0 = jnp.sum(s.Z, axis=0, dtype=jnp.int64)
    owns = jnp.any(s.Z & (m0 == 1)[None, :], axis=1)
    cand = owns | (k_new > 0)
    n_cand = jnp.sum(cand)
    # The candidates first, in row order (a stable sort: no scatter, which a GPU may serialise).
    rows = jnp.argsort(~cand, stable=True)

    def body(c):
        j, s, m, births, deaths, accepted = c
        i = rows[j]
        k_add, k_x, k_u, k_fresh = jax.random.split(jax.random.fold_in(k_rows, i), 4)
        z_i = s.Z[i]
        old = z_i & (m == 1)
        n_old = jnp.sum(old)
        k = k_new[i]
        free = (m == 0) | old
        new = free & (jnp.cumsum(free) <= k)
        fits = (jnp.sum(m > 0) - n_old + k <= cap) & (jnp.sum(new) == k)
        keep = (m > 0) & ~old

        def add(d, carry):
            W, mu, Sigma, act = carry

            def grow(carry):
                W, mu, Sigma, act = carry
                W, mu, Sigma = add_dimension(jax.random.fold_in(k_add, d), W, act, zeta, mu, Sigma, lam0, d)
                return W, mu, Sigma, act.at[d].set(True)

            return lax.cond(new[d], grow, lambda c: c, carry)

        W1, mu1, S1 = s.W, s.mu, s.Sigma
        for_old = jnp.nonzero(old, size=Kw, fill_value=Kw)[0]

        def drop(t, carry):
            W, mu, Sigma = carry
            d = for_old[t]
            return lax.cond(d < Kw, lambda c: drop_dimension(*c, d), lambda c: c, (W, mu, Sigma))

        W1, mu1, S1 = lax.fori_loop(0, Kw, drop, (W1, mu1, S1))
        W1, mu1, S1, _ = lax.fori_loop(0, Kw, add, (W1, mu1, S1, keep))
        x_birth = q_sd * jax.random.normal(k_x, (Kw,), dtype=jnp.float64)
        h = jnp.where(keep & z_i, s.X[i], 0.0) + jnp.where(new, x_birth, 0.0)
        p_row = W1 @ h
        ll_new = score_row(p_row, i)
        log_ratio = (ll_new - s.ll[i] + jnp.sum(jnp.where(new, log_x_ratio(x_birth, q_sd), 0.0))
                     - jnp.sum(jnp.where(old, log_x_ratio(s.X[i], q_sd), 0.0)))  # fmt: skip
        acc = fits & (jnp.log(jax.random.uniform(k_u, dtype=jnp.float64)) < log_ratio)

        def commit(c):
            s, m = c
            # The other rows' values in the new dimensions: their prior, N(0, 1), as z = 0.
            fresh = jax.random.normal(k_fresh, (N, Kw), dtype=jnp.float64)
            X = jnp.where(new[None, :], fresh, s.X)
            X = X.at[i].set(jnp.where(new, x_birth, X[i]))
            Z = s.Z.at[i].set((z_i & ~old) | new)
            s = s._replace(X=X, Z=Z, P=s.P.at[i].set(p_row), ll=s.ll.at[i].set(ll_new), W=W1, mu=mu1,
                           Sigma=S1)  # fmt: skip
            return s, m - old + new

        s, m = lax.cond(acc, commit, lambda c: c, (s, m))
        births = births + jnp.where(acc, k, 0)
        deaths = deaths + jnp.where(acc, n_old, 0)
        return j + 1, s, m, births, deaths, accepted + acc

    zero = jnp.zeros((), jnp.int64)
    _, s, _, births, deaths, accepted = lax.while_loop(
        lambda c: c[0] < n_cand, body, (zero, s, m0, zero, zero, zero)
    )
    return s, births, deaths, n_cand.astype(jnp.int64), accepted


__all__ = [
    "Pairs", "ZState", "absorbs", "aligned_pairs", "draw_sticks", "flip_columns",
    "STICK_ROUNDS", "gibbs_columns", "log_x_ratio", "singletons", "transfers",
]  # fmt: skip
