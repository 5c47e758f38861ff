"""Elliptical slice sampling (Murray, Adams and MacKay 2010), vectorised over independent units.

When the target factorises over units (the rows of ``X`` given the weights, or the columns of
``beta`` given ``Phi``), every unit runs its own slice sampler at once: each round evaluates the
proposals of all units still searching in one array operation. Each unit draws its own random
numbers from the one Generator, in a fixed order, so chains are reproducible.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np


def elliptical_slice(
    rng: np.random.Generator,
    x: np.ndarray,
    loglik: Callable,
    ll_current: np.ndarray,
    aux: tuple[np.ndarray, ...] | None = None,
) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, ...] | None, int]:
    """One ESS update of every row of `x` (``n x d``) under an independent ``N(0, I)`` prior.

    ``loglik(proposals, idx)`` returns the log-likelihood of unit ``idx[k]`` at ``proposals[k]``;
    `ll_current` holds each unit's current value. With `aux` (arrays whose first axis is the
    unit), ``loglik`` returns ``(ll, aux_of_proposals)`` and the accepted units' rows of `aux`
    are replaced, so a caller can keep quantities computed for the accepted proposals (feature
    rows, linear predictors) without recomputing them. Returns the new units, their
    log-likelihoods, the updated `aux` and the number of evaluations.
    """
    n = x.shape[0]
    nu = rng.standard_normal(x.shape)
    log_y = ll_current + np.log(rng.random(n))
    theta = rng.random(n) * (2.0 * math.pi)
    lo = theta - 2.0 * math.pi
    hi = theta.copy()
    x_new = x.copy()
    ll_new = ll_current.copy()
    aux_new = None if aux is None else tuple(a.copy() for a in aux)
    active = np.arange(n)
    n_evals = 0
    while active.size:
        t = theta[active]
        prop = x[active] * np.cos(t)[:, None] + nu[active] * np.sin(t)[:, None]
        if aux_new is None:
            ll = loglik(prop, active)
        else:
            ll, aux_prop = loglik(prop, active)
        n_evals += active.size
        ok = ll > log_y[active]
        done = active[ok]
        x_new[done] = prop[ok]
        ll_new[done] = ll[ok]
        if aux_new is not None:
            for a_new, a_prop in zip(aux_new, aux_prop, strict=True):
                a_new[done] = a_prop[ok]
        rej = active[~ok]
        t_rej = t[~ok]
        below = t_rej < 0.0
        lo[rej[below]] = t_rej[below]
        hi[rej[~below]] = t_rej[~below]
        theta[rej] = lo[rej] + rng.random(rej.size) * (hi[rej] - lo[rej])
        active = rej
    return x_new, ll_new, aux_new, n_evals
