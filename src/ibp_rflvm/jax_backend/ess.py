"""Elliptical slice sampling on the device (Murray, Adams and MacKay 2010), vectorised over
independent units: the rows of ``X`` given the weights, or the Poisson's weight columns given
``Phi``. The device twin of :func:`ibp_rflvm.samplers.ess.elliptical_slice`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from . import jax

jnp = jax.numpy
lax = jax.lax


#: A bound on the rounds of one update. Each rejection shrinks a unit's bracket by a uniform
#: factor (by e on average), so after a few hundred rounds the proposal is the current point to
#: the last bit, whose log-likelihood is above its slice level whenever it is finite: a unit
#: still searching here has a NaN or infinite log-likelihood. It stays where it was and its
#: log-likelihood is returned as NaN, for the sweep to report (``DeviceInfo.nonfinite_row``).
MAX_ROUNDS = 1_000


def _capped(s):
    """`s` with the log-likelihood of every unit still searching at :data:`MAX_ROUNDS` set NaN."""
    i, theta, lo, hi, active, xn, lln, auxn, n_evals = s
    lln = jnp.where(active & (i >= MAX_ROUNDS), jnp.nan, lln)
    return i, theta, lo, hi, active, xn, lln, auxn, n_evals


def select(mask, cur, alt):
    """Rows of `alt` where `mask`, else of `cur` (tuples of arrays whose first axis is the unit)."""
    shaped = [mask.reshape((-1,) + (1,) * (c.ndim - 1)) for c in cur]
    return tuple(jnp.where(m, a, c) for m, c, a in zip(shaped, cur, alt, strict=True))


def _round(s, prop, ll_p, aux_p, log_y, u):
    """One round of every unit's search, given its proposal's score: a unit above its slice
    level keeps the proposal and stops; a rejected one shrinks its bracket towards the current
    point (``theta = 0``) and draws its next angle from the uniform `u`."""
    i, theta, lo, hi, active, xn, lln, auxn, n_evals = s
    ok = active & (ll_p > log_y)
    xn, lln = select(ok, (xn, lln), (prop, ll_p))
    auxn = select(ok, auxn, aux_p)
    rej = active & ~ok
    below = theta < 0.0
    lo = jnp.where(rej & below, theta, lo)
    hi = jnp.where(rej & ~below, theta, hi)
    theta = jnp.where(rej, lo + u * (hi - lo), theta)
    return i + 1, theta, lo, hi, rej, xn, lln, auxn, n_evals + jnp.sum(active)


def elliptical_slice(key, x: jax.Array, loglik: Callable, ll: jax.Array, aux: tuple = ()):
    """One update of every unit (row) of `x` under an independent ``N(0, I)`` prior.

    ``loglik(proposals) -> (ll, aux)`` scores every unit's proposal; `ll` holds the current
    values and `aux` whatever the caller keeps per unit for the accepted proposals (feature rows,
    linear predictors). Each round scores all units and keeps the proposals of those still
    searching: a unit stops at its first proposal above its slice level ``ll + log u``, and on
    each rejection its bracket shrinks towards the current point, so each unit's update is
    exact. Returns ``(x, ll, aux, evaluations)``, the last counting the searching units' scores;
    a unit whose log-likelihood is not finite stops at :data:`MAX_ROUNDS` with ``ll`` NaN.
    """
    n = x.shape[0]
    k_nu, k_u, k_t, k_loop = jax.random.split(key, 4)
    nu = jax.random.normal(k_nu, x.shape)
    log_y = ll + jnp.log(jax.random.uniform(k_u, (n,)))
    theta = jax.random.uniform(k_t, (n,)) * (2.0 * math.pi)

    def cond(s):
        return jnp.any(s[4]) & (s[0] < MAX_ROUNDS)

    def body(s):
        theta = s[1]
        prop = x * jnp.cos(theta)[:, None] + nu * jnp.sin(theta)[:, None]
        ll_p, aux_p = loglik(prop)
        u = jax.random.uniform(jax.random.fold_in(k_loop, s[0]), (n,))
        return _round(s, prop, ll_p, aux_p, log_y, u)

    start = (0, theta, theta - 2.0 * math.pi, theta, jnp.ones(n, dtype=bool), x, ll, tuple(aux),
             jnp.zeros((), jnp.int64))  # fmt: skip
    s = _capped(lax.while_loop(cond, body, start))
    return s[5], s[6], s[7], s[8]


#: Each level of :func:`elliptical_slice_rows` holds this fraction of the level above it.
SHRINK = 8
#: The smallest level: below it the rows still searching stay where they are.
MIN_LEVEL = 64


def levels(n: int) -> list[int]:
    """The buffer sizes of :func:`elliptical_slice_rows` for `n` units: ``n, n/8, n/64, ...``."""
    out = [n]
    while out[-1] // SHRINK >= MIN_LEVEL:
        out.append(out[-1] // SHRINK)
    return out


def elliptical_slice_rows(key, x: jax.Array, loglik_rows: Callable, ll: jax.Array, aux: tuple = ()):
    """:func:`elliptical_slice` whose work follows the units still searching.

    ``loglik_rows(proposals, rows) -> (ll, aux)`` scores the proposals of the units `rows` (an
    index array, or ``slice(None)`` for all of them in order). A
    round scores a buffer of units; once no more than a level below's size are still searching
    (:func:`levels`), those are gathered into that smaller buffer (a stable sort: unique indices)
    and the rounds go on there, so the last slow units do not cost a pass over all of them.
    Each unit's draws come from a key folded with the round and the unit's index, so a unit's
    update is the same exact slice sampler wherever it is computed. Returns ``(x, ll, aux,
    evaluations)``.
    """
    n = x.shape[0]
    k_nu, k_u, k_t, k_loop = jax.random.split(key, 4)
    nu = jax.random.normal(k_nu, x.shape)
    log_y = ll + jnp.log(jax.random.uniform(k_u, (n,)))
    theta0 = jax.random.uniform(k_t, (n,)) * (2.0 * math.pi)

    def uniforms(i, rows):
        k = jax.random.fold_in(k_loop, i)
        return jax.vmap(lambda r: jax.random.uniform(jax.random.fold_in(k, r)))(rows)

    def rounds(rows, until, s, whole):
        """Rounds over the units `rows` until no more than `until` of them are searching (all
        units in order when `whole`: they are then scored without a gather)."""
        sel = slice(None) if whole else rows
        x_b, nu_b, log_y_b = x[sel], nu[sel], log_y[sel]

        def cond(s):
            return (jnp.sum(s[4]) > until) & (s[0] < MAX_ROUNDS)

        def body(s):
            theta = s[1]
            prop = x_b * jnp.cos(theta)[:, None] + nu_b * jnp.sin(theta)[:, None]
            ll_p, aux_p = loglik_rows(prop, sel)
            return _round(s, prop, ll_p, aux_p, log_y_b, uniforms(s[0], rows))

        return _capped(lax.while_loop(cond, body, s))

    sizes = levels(n)
    rows = jnp.arange(n)
    s = (0, theta0, theta0 - 2.0 * math.pi, theta0, jnp.ones(n, dtype=bool), x, ll, tuple(aux),
         jnp.zeros((), jnp.int64))  # fmt: skip
    done = []  # each level's state after its rounds, and the slots it passed down
    for level in range(len(sizes)):
        last = level == len(sizes) - 1
        s = rounds(rows, 0 if last else sizes[level + 1], s, level == 0)
        if last:
            break
        # The searching units first, in order; the buffer's other slots are finished units,
        # carried along inactive and written back unchanged.
        pick = jnp.argsort(~s[4], stable=True)[: sizes[level + 1]]
        done.append((s, pick))
        i, theta, lo, hi, active, xn, lln, auxn, n_evals = s
        s = (i, theta[pick], lo[pick], hi[pick], active[pick], xn[pick], lln[pick],
             tuple(a[pick] for a in auxn), n_evals)  # fmt: skip
        rows = rows[pick]
    xn, lln, auxn, n_evals = s[5], s[6], s[7], s[8]
    for s_up, pick in reversed(done):  # each level's results into the level above
        xn = s_up[5].at[pick].set(xn, unique_indices=True)
        lln = s_up[6].at[pick].set(lln, unique_indices=True)
        auxn = tuple(a.at[pick].set(b, unique_indices=True) for a, b in zip(s_up[7], auxn, strict=True))
    return xn, lln, auxn, n_evals
