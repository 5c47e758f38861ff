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


def select(mask, cur, alt):
    """Rows of `alt` where `mask`, else of `cur` (tuples of arrays whose first axis is the unit)."""
    shaped = [mask.reshape((-1,) + (1,) * (c.ndim - 1)) for c in cur]
    return tuple(jnp.where(m, a, c) for m, c, a in zip(shaped, cur, alt, strict=True))


def elliptical_slice(key, x: jax.Array, loglik: Callable, ll: jax.Array, aux: tuple = ()):
    """One update of every unit (row) of `x` under an independent ``N(0, I)`` prior.

    ``loglik(proposals) -> (ll, aux)`` scores every unit's proposal; `ll` holds the current
    values and `aux` whatever the caller keeps per unit for the accepted proposals (feature rows,
    linear predictors). Each round scores all units and keeps the proposals of those still
    searching: a unit stops at its first proposal above its slice level ``ll + log u``, and on
    each rejection its bracket shrinks towards the current point, so each unit's update is
    exact. Returns ``(x, ll, aux, evaluations)``, the last counting the searching units' scores.
    """
    n = x.shape[0]
    k_nu, k_u, k_t, k_loop = jax.random.split(key, 4)
    nu = jax.random.normal(k_nu, x.shape)
    log_y = ll + jnp.log(jax.random.uniform(k_u, (n,)))
    theta = jax.random.uniform(k_t, (n,)) * (2.0 * math.pi)

    def cond(s):
        return jnp.any(s[4])

    def body(s):
        i, theta, lo, hi, active, xn, lln, auxn, n_evals = s
        prop = x * jnp.cos(theta)[:, None] + nu * jnp.sin(theta)[:, None]
        ll_p, aux_p = loglik(prop)
        ok = active & (ll_p > log_y)
        xn, lln = select(ok, (xn, lln), (prop, ll_p))
        auxn = select(ok, auxn, aux_p)
        rej = active & ~ok
        below = theta < 0.0
        lo = jnp.where(rej & below, theta, lo)
        hi = jnp.where(rej & ~below, theta, hi)
        u = jax.random.uniform(jax.random.fold_in(k_loop, i), (n,))
        theta = jnp.where(rej, lo + u * (hi - lo), theta)
        return i + 1, theta, lo, hi, rej, xn, lln, auxn, n_evals + jnp.sum(active)

    start = (0, theta, theta - 2.0 * math.pi, theta, jnp.ones(n, dtype=bool), x, ll, tuple(aux),
             jnp.zeros((), jnp.int64))  # fmt: skip
    s = lax.while_loop(cond, body, start)
    return s[5], s[6], s[7], s[8]
