"""Chinese restaurant table draws in JAX (float64), exact, for arrays of fixed shape under jit.

``CRT(n, r) = sum_{t=0}^{n-1} Bernoulli(r / (r + t))``, as :mod:`ibp_rflvm.samplers.crt`. Two
phases, both exact (up to floating point in the inversion, as the numba code):

* customers ``t < 32`` of every entry: one uniform per customer, one pass per ``t`` over the
  whole array (a pass ends the phase once ``t`` reaches the largest count);
* customers ``t >= 32`` of the few entries with larger counts: those entries are moved to the
  front (a stable sort of the flags) and processed in chunks of fixed size; each jumps to the
  next customer who opens a table by inverting ``P(no table for t0..u)`` (bisection), so its
  passes grow with its tables (about ``r log(n / 32)``), not with ``n``.

Counts of 0, and unobserved entries, cost nothing beyond the first phase's passes. When many
counts exceed 32 the chunks run one after another (one chunk holds ``max(4096, E / 16)`` of the
``E`` entries).
"""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax, random
from jax.scipy.special import gammaln

from . import jax
from .chunks import over_selected

__all__ = ["crt_column_totals", "crt_draw"]

#: Customers drawn one uniform each; the rest by jumps.
_DIRECT = 32


def _log_no_table(t0, u, r):
    """``log P(no new table for customers t0..u) = log prod_{t=t0}^{u} t / (t + r)``."""
    return gammaln(u + 1.0) - gammaln(t0) - gammaln(u + 1.0 + r) + gammaln(t0 + r)


def _jump_tables(key, n, r, live):
    """Tables among customers ``_DIRECT .. n - 1`` for the entries in `live` (0 elsewhere)."""
    nm1 = jnp.where(live, n - 1.0, float(_DIRECT))
    rs = jnp.where(live, r, 1.0)

    def body(st):
        it, t0, tables, open_ = st
        log_v = jnp.log(random.uniform(random.fold_in(key, it), n.shape, dtype=jnp.float64))
        # No table left among t0..n-1: this entry is finished.
        open_ = open_ & ~(_log_no_table(t0, nm1, rs) >= log_v)

        # Smallest u in [t0, n-1] with P(no table t0..u) < V: it decreases in u.
        def bis_body(lh):
            lo, hi = lh
            mid = jnp.floor(0.5 * (lo + hi))
            below = _log_no_table(t0, mid, rs) < log_v
            return jnp.where(below, lo, mid + 1.0), jnp.where(below, mid, hi)

        lo, _ = lax.while_loop(
            lambda lh: jnp.any(open_ & (lh[0] < lh[1])), bis_body, (t0, jnp.where(open_, nm1, t0))
        )
        tables = jnp.where(open_, tables + 1.0, tables)
        t0 = jnp.where(open_, lo + 1.0, t0)
        return it + 1, t0, tables, open_ & (t0 <= nm1)

    init = (jnp.int32(0), jnp.full(n.shape, float(_DIRECT)), jnp.zeros_like(n), live)
    return lax.while_loop(lambda st: jnp.any(st[3]), body, init)[2]


def _crt_flat(key, n, r):
    """``CRT(n_e, r_e)`` for flat float64 arrays (``n_e >= 0`` integers); NaN where ``n_e`` or
    ``r_e`` is not finite or ``r_e <= 0`` (so that no loop waits on an entry that cannot end,
    and a bad state shows as NaN downstream rather than as a wrong count)."""
    bad = ~(jnp.isfinite(n) & jnp.isfinite(r) & (r > 0.0))
    n, r = jnp.where(bad, 0.0, n), jnp.where(bad, 1.0, r)
    k_direct, k_jump = random.split(key)
    n_max = jnp.max(n, initial=0.0)

    def direct(st):
        t, tables = st
        u = random.uniform(random.fold_in(k_direct, t), n.shape, dtype=jnp.float64)
        tf = t.astype(jnp.float64)
        return t + 1, tables + ((tf < n) & (u * (r + tf) < r))

    cond = lambda st: (st[0] < _DIRECT) & (st[0].astype(jnp.float64) < n_max)  # noqa: E731
    _, tables = lax.while_loop(cond, direct, (jnp.int32(0), jnp.zeros_like(n)))

    big = n > _DIRECT
    jumps = over_selected(lambda k, nn, rr, live: _jump_tables(k, nn, rr, live & (nn > _DIRECT)),
                          k_jump, big, n, n, r)  # fmt: skip
    return jnp.where(bad, jnp.nan, tables) + jumps


@jax.jit
def crt_draw(key: jax.Array, n: jax.Array, r: jax.Array) -> jax.Array:
    """``CRT(n, r)`` elementwise (float64, the broadcast shape of `n` and `r`; ``n`` counts >= 0,
    ``r > 0``)."""
    n = jnp.asarray(n, dtype=jnp.float64)
    r = jnp.asarray(r, dtype=jnp.float64)
    n, r = jnp.broadcast_arrays(n, r)
    return _crt_flat(key, n.ravel(), r.ravel()).reshape(n.shape)


@jax.jit
def crt_column_totals(key: jax.Array, y: jax.Array, observed: jax.Array, r: jax.Array) -> jax.Array:
    """``L_j = sum_i CRT(y_ij, r_j)`` over the observed entries: shape ``(J,)``, float64.

    `y` ``(N, J)`` counts (float32 or float64), `observed` bool ``(N, J)``, `r` ``(J,)`` positive.
    Unobserved entries contribute nothing (their count is taken as 0 whatever `y` holds there).
    """
    y = jnp.asarray(y, dtype=jnp.float64)
    n = jnp.where(observed, y, 0.0)
    rr = jnp.broadcast_to(jnp.asarray(r, dtype=jnp.float64)[None, :], n.shape)
    return _crt_flat(key, n.ravel(), rr.ravel()).reshape(n.shape).sum(axis=0)
