"""Moves that change which latent dimensions a row uses, beyond the paper's slice sweep.

What they are and why: docs/sampler.md, section 2.

The paper's slice step almost never represents a new dimension, and a dimension appears with
``x ~ N(0, 1)`` and dies only when every row has switched it off, so ``K+`` freezes. These moves
run between the IBP steps in the view where the active sticks are integrated out: there the
IBP is exchangeable, so given the other rows

* a dimension that other rows use (``m_-i,d > 0``) is on for row ``i`` with prior odds
  ``m_-i,d / (N - 1 + beta - m_-i,d)`` (``m_-i,d / (N - m_-i,d)`` for the one-parameter IBP,
  ``beta = 1``; :func:`ibp.log_share_odds`);
* the dimensions row ``i`` owns alone (its singletons) are a Poisson(``alpha beta / (N - 1 +
  beta)``) number of dimensions, each with ``x ~ N(0, 1)`` and frequency coordinates from their
  conditional prior.

The prior's odds and rates come from the prior on ``Z`` (:mod:`ibp_rflvm.priors`; the compiled
kernels ask it through :mod:`.z_prior` with its ``hyper``; the odds above are the IBP's,
with ``beta`` its sharing parameter). With ``beta = 1`` the sweep redraws ``pi_d ~ Beta(m_d,
N - m_d + 1)`` afterwards, which restores the joint of the slice sampler's semi-ordered
representation; with ``beta != 1`` these moves are the only updates of ``Z``. Both moves
propose the new ``x`` from ``q = N(0, s^2)`` with a small ``s``: a dimension switched on then
barely changes the row's features, so it is accepted when the data do not object, and
elliptical slice sampling of ``X`` grows it later.

The likelihood enters only through what the sweep's target scores (:mod:`ibp_rflvm.targets`):
a *row target* (:class:`RowTarget`), where ``delta(i, h, W)`` is the change of the
log-likelihood if row ``i``'s latent row became ``h`` (with frequencies ``W``) and ``accept(i)``
commits the last proposal, or, for a likelihood that couples the rows, a compiled row scorer
(:mod:`.row_scorer`), over which the flips run as one compiled pass (:func:`flip_rows`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numba import njit

from ..features import row_features
from . import dp_mixture, z_prior
from .row_scorer import FAST, begin, commit, feature_buffer, latent_row, score


@njit(cache=True)
def log_x_ratio(x: float, q_sd: float) -> float:
    """``log N(x; 0, 1) - log q(x)`` with ``q = N(0, q_sd^2)``."""
    return math.log(q_sd) + 0.5 * x * x * (1.0 / (q_sd * q_sd) - 1.0)


# --------------------------------------------------------------------------------------------
# Row targets
# --------------------------------------------------------------------------------------------


class RowTarget(Protocol):
    """What a move needs of the likelihood, given by the sweep's target (:mod:`ibp_rflvm.targets`).

    ``delta``/``accept``: one row (singleton birth/death); ``deltas``/``accept_rows``: every row
    at once (the flips, the Gibbs pass of ``Z``); ``deltas_at``/``accept_at``: a few rows
    (transfers, absorb/emit). A ``delta`` is the change of the log-likelihood if the row's latent
    row became the proposal (with frequencies ``W``); an ``accept`` commits the last proposal of
    those rows.

    ``rows``: for a likelihood that couples the rows, a compiled row scorer of the same rows
    (:mod:`.row_scorer`; features with a bias column when ``bias``), over which the flips, the
    Gibbs pass, the transfers and absorb/emit run as compiled row kernels; None when the rows
    are independent given the weights, and the array methods score them.
    """

    rows: object | None
    bias: bool

    def delta(self, i: int, h: np.ndarray, W: np.ndarray) -> float: ...

    def accept(self, i: int) -> None: ...

    def deltas(self, H_alt: np.ndarray, W: np.ndarray) -> np.ndarray: ...

    def accept_rows(self, rows: np.ndarray) -> None: ...

    def deltas_at(self, rows: np.ndarray, H_rows: np.ndarray, W: np.ndarray) -> np.ndarray: ...

    def accept_at(self, idx: np.ndarray) -> None: ...


# --------------------------------------------------------------------------------------------
# Joint (z, x) flips of dimensions that other rows use
# --------------------------------------------------------------------------------------------


@njit(cache=True)
def entry_log_ratio(hyper, z_cur, z_new, x_cur, x_prop, m_other, n, q_sd) -> float:
    """Prior and proposal part of the log acceptance ratio of a joint ``(z_id, x_id)`` move.

    :func:`.z_prior.log_ratio` of the prior's `hyper` is the prior's part (with its proposal of
    ``z_new``; :class:`ibp_rflvm.priors.FeaturePrior`). Switching a dimension on (``z: 0 -> v``)
    proposes ``x' ~ q`` and adds ``log N(x'; 0, 1) - log q(x')``, because the reverse move
    draws the old ``x`` from ``N(0, 1)``, its prior when ``z = 0``; switching it off
    (``z: v -> 0``, ``x' ~ N(0, 1)``) adds the reciprocal at the ``x`` being switched off; a
    change between two non-zero values (a count's) keeps ``x``. For the IBP (a flip) the prior's
    part is ``log m/(N - 1 + beta - m)`` switching on and its negative switching off. The
    likelihood ratio is added by the caller.
    """
    prior = z_prior.log_ratio(z_cur, z_new, m_other, n, hyper)
    if z_cur == 0:
        return prior + log_x_ratio(x_prop, q_sd)
    if z_new == 0:
        return prior - log_x_ratio(x_cur, q_sd)
    return prior


@njit(cache=True)
def proposed_x(z_cur: int, z_new: int, x_cur: float, x_prop: float) -> float:
    """The coordinate a move of ``z_id`` from `z_cur` to `z_new` proposes: the drawn `x_prop`
    when the dimension switches on or off, the current one when a count changes."""
    return x_prop if z_cur == 0 or z_new == 0 else x_cur


@njit(cache=True)
def _flip_column(rng, X, Z, d, x_prop, z_prop, delta_ll, counts, q_sd, hyper, accepted):
    """Accept or reject the proposed moves of column `d` row by row (``m_-i,d`` couples them);
    ``(proposed, accepted)``."""
    N = Z.shape[0]
    tried = n_acc = 0
    for i in range(N):
        accepted[i] = False
        z_cur = Z[i, d]
        m_other = counts[d] - z_cur
        if m_other == 0:
            continue
        tried += 1
        z_new = z_prop[i]
        ratio = entry_log_ratio(hyper, z_cur, z_new, X[i, d], x_prop[i], m_other, N, q_sd)
        if math.log(rng.random()) < ratio + delta_ll[i]:
            X[i, d] = proposed_x(z_cur, z_new, X[i, d], x_prop[i])
            Z[i, d] = z_new
            counts[d] += z_new - z_cur
            accepted[i] = True
            n_acc += 1
    return tried, n_acc


#: The accept step of one column's moves, for targets that score the proposals their own way.
accept_flips = _flip_column


def flips(
    rng: np.random.Generator, X, Z, W, counts, q_sd: float, target: RowTarget, prior
) -> tuple[int, int]:
    """The joint ``(z_id, x_id)`` moves of the dimensions other rows use, with the prior on
    ``Z`` `prior` (:class:`ibp_rflvm.priors.FeaturePrior`): :func:`flip_rows` when `target`
    offers a compiled row scorer, else :func:`flip_columns`. ``(proposed, accepted)``."""
    if target.rows is not None:
        return flip_rows(rng, X, Z, W, target.bias, target.rows, counts, q_sd, prior.hyper)
    return flip_columns(rng, X, Z, W, counts, q_sd, target, prior)


def flip_columns(rng: np.random.Generator, X, Z, W, counts, q_sd: float, target, prior) -> tuple[int, int]:
    """Joint ``(z_id, x_id)`` moves for a row-factorised target, one dimension at a time.

    Given the weights, row ``i``'s likelihood depends only on its own latent row, so the
    proposals of every row for dimension ``d`` are drawn and scored in one array pass; only
    the accept decisions run row by row, in compiled code, because each move changes the
    ``m_-i,d`` of the rows after it. The proposal of row ``i`` depends only on ``(z_id, x_id)``
    (the prior's proposal does not read ``m``), which no other row's move changes, so drawing
    them all first is the same kernel as drawing each one in turn. Acceptance as in
    :func:`entry_log_ratio`, with `prior`'s ratio (:class:`ibp_rflvm.priors.FeaturePrior`;
    for the IBP, flips ``z -> 1 - z``). `X`, `Z`, `counts` are updated in place. Returns
    ``(proposed, accepted)``.
    """
    N, K = Z.shape
    accepted = np.zeros(N, dtype=np.bool_)
    tried = n_acc = 0
    for d in range(K):
        e = rng.standard_normal(N)
        z_d = Z[:, d]
        x_prop = np.where(z_d == 0, q_sd * e, e)
        z_prop = prior.propose_column(rng, z_d)
        x_new = np.where((z_d == 0) | (z_prop == 0), x_prop, X[:, d])
        H_alt = X * Z
        H_alt[:, d] = x_new * z_prop
        delta = target.deltas(H_alt, W)
        t, a = _flip_column(rng, X, Z, d, x_prop, z_prop, delta, counts, q_sd, prior.hyper, accepted)
        tried += t
        n_acc += a
        if a:
            target.accept_rows(np.flatnonzero(accepted))
    return tried, n_acc


@njit(cache=True, fastmath=FAST)
def flip_rows(
    rng: np.random.Generator, X: np.ndarray, Z: np.ndarray, W: np.ndarray, bias: bool, rows,
    counts: np.ndarray, q_sd: float, hyper,
) -> tuple[int, int]:
    """The joint ``(z_id, x_id)`` moves for a likelihood that couples the rows: every row in
    turn, every dimension other rows use, one move each, scored by the compiled row scorer
    `rows` (:mod:`.row_scorer`) against the other rows as they stand.

    The prior on ``Z`` of `hyper` proposes the new value (:func:`.z_prior.propose`; the IBP's
    is the flip) and gives its ratio (:func:`.z_prior.log_ratio`).
    Acceptance: ``log u < entry_log_ratio(...) + ll' - ll`` (:func:`entry_log_ratio`). `X`,
    `Z`, `counts` are updated in place. Returns ``(proposed, accepted)``.
    """
    N, K = X.shape
    phi = feature_buffer(W, bias)
    h = np.empty(K)
    tried = n_acc = 0
    for i in range(N):
        ll = begin(rows, i)
        for d in range(K):
            z_cur = Z[i, d]
            m_other = counts[d] - z_cur
            if m_other == 0:
                continue  # a singleton (or an empty column): the birth/death move's business
            tried += 1
            x_prop = q_sd * rng.standard_normal() if z_cur == 0 else rng.standard_normal()
            z_new = z_prior.propose(rng, z_cur, hyper)
            log_u = math.log(rng.random())
            x_new = proposed_x(z_cur, z_new, X[i, d], x_prop)
            latent_row(X, Z, i, h)
            h[d] = x_new * z_new
            row_features(h, W, bias, phi)
            ll_new = score(rows, i, phi)
            prior = entry_log_ratio(hyper, z_cur, z_new, X[i, d], x_prop, m_other, N, q_sd)
            if log_u < prior + ll_new - ll:
                commit(rows, i, phi)
                X[i, d] = x_new
                Z[i, d] = z_new
                counts[d] += z_new - z_cur
                n_acc += 1
                ll = begin(rows, i)
    return tried, n_acc


# --------------------------------------------------------------------------------------------
# Singleton birth/death
# --------------------------------------------------------------------------------------------


def singleton_plan(
    rng: np.random.Generator, Z: np.ndarray, rate: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows a singleton birth/death pass must visit, for every model that has one.

    In the exchangeable view a row's own dimensions are ``Poisson(rate)`` in number, so each row
    draws ``k_new`` new ones; a row with ``k_new = 0`` and no singletons would propose nothing.
    One row's birth or death changes no other row's singletons, so the rows are known before
    any is visited. Returns ``(k_new, counts, rows)`` (``counts``: column sums of `Z`).
    """
    n = Z.shape[0]
    k_new = rng.poisson(rate, size=n)
    counts = Z.sum(axis=0, dtype=np.int64)
    owns = (Z > 0) & (counts[None, :] == Z)
    return k_new, counts, np.flatnonzero(owns.any(axis=1) | (k_new > 0))


def owned_alone(z_row: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The dimensions a row with values `z_row` uses alone (``counts``: column sums of ``Z``)."""
    return np.flatnonzero((z_row > 0) & (counts == z_row))


@dataclass
class Dimensions:
    """The arrays whose columns are latent dimensions (``mu``, ``Sigma``: per mixture component)."""

    X: np.ndarray
    Z: np.ndarray
    W: np.ndarray
    zeta: np.ndarray
    mu: np.ndarray
    Sigma: np.ndarray


def singleton_birth_death(
    rng: np.random.Generator,
    dims: Dimensions,
    alpha: float,
    q_sd: float,
    lam0: float,
    target: RowTarget,
    prior,
    max_dims: int | None = None,
) -> tuple[Dimensions, dict]:
    """For each row, propose to replace the dimensions it owns alone by
    ``k ~ Poisson(prior.singleton_rate(N, alpha))`` new ones with values from
    ``prior.singleton_values`` (Meeds et al. 2007, in the exchangeable view; for the IBP the rate
    is ``alpha beta / (N - 1 + beta)`` and every value 1).

    New dimensions get ``x ~ q`` for this row, ``x ~ N(0, 1)`` for the others (where ``z = 0``)
    and frequency and mixture coordinates from their exact conditional prior
    (:func:`dp_mixture.add_dimension`); the old singletons' coordinates are dropped (exact
    marginalisation). The count, the values and every coordinate except this row's ``x`` are
    proposed from their prior, so the acceptance ratio is
    ``p(y_i | new) / p(y_i | old) * prod_births N(x; 0, 1) / q(x) / prod_deaths N(x; 0, 1) / q(x)``.

    The Python loop visits only the rows :func:`singleton_plan` names, about ``alpha`` rows
    plus the owners of singletons per sweep. Under a cap on ``K+`` (`max_dims`, with `dims`
    holding only active dimensions), or with a value the prior's support lacks, a proposal is
    outside the support: rejected.
    """
    N = dims.Z.shape[0]
    k_new, counts, rows = singleton_plan(rng, dims.Z, prior.singleton_rate(N, alpha))
    births = deaths = proposed = accepted = 0
    for i in rows:
        old = owned_alone(dims.Z[i], counts)
        k = int(k_new[i])
        if k == 0 and old.size == 0:
            continue
        proposed += 1
        if max_dims is not None and dims.Z.shape[1] - old.size + k > max_dims:
            continue
        W_ext, mu_ext, Sigma_ext = dims.W, dims.mu, dims.Sigma
        for _ in range(k):
            W_ext, mu_ext, Sigma_ext = dp_mixture.add_dimension(
                rng, W_ext, dims.zeta, mu_ext, Sigma_ext, lam0
            )
        x_birth = q_sd * rng.standard_normal(k)
        values = prior.singleton_values(rng, k, N)
        if not prior.in_support(values):
            continue
        h = dims.X[i] * dims.Z[i]
        h[old] = 0.0
        h = np.concatenate([h, x_birth * values])
        log_ratio = target.delta(i, h, W_ext)
        log_ratio += sum(log_x_ratio(x, q_sd) for x in x_birth)
        log_ratio -= sum(log_x_ratio(x, q_sd) for x in dims.X[i, old])
        if math.log(rng.random()) >= log_ratio:
            continue
        target.accept(i)
        keep = np.setdiff1d(np.arange(dims.Z.shape[1] + k), old)
        X_new = np.hstack([dims.X, rng.standard_normal((N, k))])
        X_new[i, dims.X.shape[1] :] = x_birth
        Z_new = np.hstack([dims.Z, np.zeros((N, k), dtype=dims.Z.dtype)])
        Z_new[i, dims.Z.shape[1] :] = values
        W_new, mu_new, Sigma_new = dp_mixture.keep_dimensions(W_ext, mu_ext, Sigma_ext, keep)
        counts = np.concatenate([counts, values.astype(np.int64)])[keep]
        dims = Dimensions(
            np.ascontiguousarray(X_new[:, keep]), np.ascontiguousarray(Z_new[:, keep]),
            np.ascontiguousarray(W_new), dims.zeta, mu_new, Sigma_new,
        )  # fmt: skip
        births += k
        deaths += old.size
        accepted += 1
    return dims, {"births": births, "deaths": deaths, "singletons_proposed": proposed, "singletons": accepted}
