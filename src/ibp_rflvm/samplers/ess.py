"""Elliptical slice sampling (Murray, Adams and MacKay 2010), of independent units at once or of
coupled rows one at a time.

When the target factorises over units (the rows of ``X`` given the weights, or the columns of
``beta`` given ``Phi``), every unit runs its own slice sampler at once
(:func:`elliptical_slice`): each round evaluates the proposals of all units still searching in
one array operation. When the likelihood couples the rows, :func:`ess_rows` updates them in
turn, each scored by a compiled row scorer (:mod:`.row_scorer`). Each unit draws its own
random numbers from the one Generator, in a fixed order, so chains are reproducible. Every
search, the frequencies' included, shrinks its bracket by :func:`shrink`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numba import njit

from ..features import row_features
from .row_scorer import FAST, begin, commit, feature_buffer, score


# Inlined into its callers so that it compiles with their flags: under the row kernel's fastmath
# ``lo + u (hi - lo)`` may become a fused multiply-add, where the host's arithmetic rounds each
# step, and each caller must keep the arithmetic its chains were drawn with.
@njit(cache=True, inline="always")
def shrink(theta: float, lo: float, hi: float, u: float) -> tuple[float, float, float]:
    """After a rejected angle `theta`, the bracket ``[lo, hi]`` shrinks to the side of it that
    holds the current point (``theta = 0``) and the next angle is drawn uniformly on it from
    the uniform `u`: ``(theta', lo', hi')``."""
    if theta < 0.0:
        lo = theta
    else:
        hi = theta
    return lo + u * (hi - lo), lo, hi


@njit(cache=True)
def _shrink_units(theta: np.ndarray, lo: np.ndarray, hi: np.ndarray, units: np.ndarray, u: np.ndarray):
    """:func:`shrink` of the brackets of `units`, the `k`-th from ``u[k]``, in place."""
    for k in range(units.size):
        j = units[k]
        theta[j], lo[j], hi[j] = shrink(theta[j], lo[j], hi[j], u[k])


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
        _shrink_units(theta, lo, hi, rej, rng.random(rej.size))
        active = rej
    return x_new, ll_new, aux_new, n_evals


@njit(cache=True, fastmath=FAST)
def ess_rows(rng: np.random.Generator, X: np.ndarray, Z: np.ndarray, W: np.ndarray, bias: bool, rows) -> int:
    """Elliptical slice sampling of each row of ``X`` in turn under ``N(0, I)``, for a likelihood
    that couples the rows: every point is scored by the compiled row scorer `rows`
    (:mod:`.row_scorer`) against the other rows as they stand. A row that uses no dimension
    does not move the likelihood, so it takes its first point. ``X`` is updated in place;
    returns the number of likelihood evaluations."""
    N, K = X.shape
    phi = feature_buffer(W, bias)
    h = np.empty(K)
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
            c = math.cos(theta)
            sn = math.sin(theta)
            for k in range(K):
                X[i, k] = X[i, k] * c + nu[k] * sn
            continue
        log_y = begin(rows, i) + log_u
        while True:
            c = math.cos(theta)
            sn = math.sin(theta)
            for k in range(K):
                x_new[k] = X[i, k] * c + nu[k] * sn
                h[k] = x_new[k] * Z[i, k]
            row_features(h, W, bias, phi)
            ll_new = score(rows, i, phi)
            n_evals += 1
            if ll_new > log_y:
                commit(rows, i, phi)
                for k in range(K):
                    X[i, k] = x_new[k]
                break
            theta, lo, hi = shrink(theta, lo, hi, rng.random())
    return n_evals
