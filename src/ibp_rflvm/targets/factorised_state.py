"""X and W updates for likelihoods that factorise over rows given the weights ``beta``, and the
state the updates of ``Z`` score their proposals against (:class:`FactorisedState`).

Given ``beta``, row ``i`` of the data depends only on row ``i`` of ``Phi``, so all rows run
their elliptical slice samplers at once, and the moves of ``Z`` (:mod:`ibp_rflvm.samplers`)
score the proposals of many rows in one array operation (``FactorisedState.rows_loglik``, through
the target's row target). A frequency proposal changes two columns of
``Phi``, so the linear predictor ``psi = Phi beta`` is updated by a rank-2 product instead of
being recomputed.

The products ``Phi beta``, the row log-likelihoods and the rank-2 updates run by blocks of rows
on the sweep's threads (:mod:`ibp_rflvm.plumbing.blocks`); each row is computed the same way whatever the
thread count. The slice sampler's visit of the rows and the elliptical slice draws stay on the
chain's Generator, in one thread: they take few numbers, in an order that is part of the chain.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..features import feature_map, frequency_columns, n_features
from ..likelihoods.base import Likelihood, LikelihoodParams, Prepared
from ..plumbing import blocks as _blocks
from ..samplers.ess import elliptical_slice
from .frequency_bound import FrequencyBound
from .frequency_moves import ess_frequencies


class FactorisedState:
    """``Phi``, ``psi = Phi beta`` and the per-row log-likelihoods, kept consistent with X, Z, W."""

    def __init__(self, X, Z, W, bias, beta, lik: Likelihood, params: LikelihoodParams, prep: Prepared):
        self.bias = bias
        self.lik = lik
        self.params = params
        self.prep = prep
        self.beta = beta
        self.Phi, self.psi = features_and_predictor(X * Z, W, bias, beta)
        self.all_rows = np.arange(X.shape[0])
        self.ll = lik.loglik_rows(self.psi, self.all_rows, params, prep)

    def rows_loglik(
        self, H_rows: np.ndarray, W: np.ndarray, rows: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Log-likelihoods of `rows` with latent rows `H_rows`, and their ``Phi`` and ``psi``."""
        Phi, psi = features_and_predictor(H_rows, W, self.bias, self.beta)
        return self.lik.loglik_rows(psi, rows, self.params, self.prep), Phi, psi


def features_and_predictor(H: np.ndarray, W: np.ndarray, bias: bool, beta: np.ndarray):
    """``Phi = feature_map(H)`` and ``psi = Phi beta``, both by the sweep's row blocks in one pass
    over them (the block's features are still in cache for its product). Each row comes out as
    the whole-matrix calls would give it, whatever the thread count."""
    n = H.shape[0]
    Phi = np.empty((n, n_features(W.shape[0], bias)))
    psi = np.empty((n, beta.shape[1]))
    beta = np.ascontiguousarray(beta, dtype=np.float64)

    def part(_b: int, rows: slice) -> None:
        Phi[rows] = feature_map(H[rows], W, bias)
        np.matmul(Phi[rows], beta, out=psi[rows])

    blocks = _blocks.current()
    blocks.run(part, blocks.row_slices(n))
    return Phi, psi


def update_x(rng: np.random.Generator, X, Z, W, fs: FactorisedState) -> tuple[np.ndarray, int]:
    """Elliptical slice sampling of all rows of ``X`` at once; ``Phi``, ``psi`` follow."""

    def loglik(prop: np.ndarray, rows: np.ndarray):
        ll, Phi, psi = fs.rows_loglik(prop * Z[rows], W, rows)
        return ll, (Phi, psi)

    X_new, fs.ll, (fs.Phi, fs.psi), n_evals = elliptical_slice(rng, X, loglik, fs.ll, (fs.Phi, fs.psi))
    return X_new, n_evals


def update_w(
    rng: np.random.Generator, H, W, zeta, mu, Sigma, fs: FactorisedState, bounded: bool = True
) -> int:
    """Metropolis-Hastings of each frequency with its mixture component as the proposal.

    With `bounded` (and a likelihood with ``psi_derivatives``) a proposal whose upper bound on
    the log-likelihood change is already below ``log u`` is rejected without the exact pass
    over all entries (:mod:`.frequency_bound`): the same decisions from the same numbers, so the
    same chain, bit for bit, as ``bounded=False``.
    """
    M, K = W.shape
    if K == 0:
        return 0
    chols = np.linalg.cholesky(Sigma)
    accepted = 0
    ll_total = float(np.sum(fs.ll, dtype=np.float64))
    bound = FrequencyBound(fs, M) if bounded and fs.lik.has_psi_derivatives else None
    # Proposals are mostly rejected: one N x J buffer takes every proposed psi and trades places
    # with the current one only on acceptance, so no proposal allocates N x J memory.
    spare = np.empty_like(fs.psi)
    for m in range(M):
        k = zeta[m]
        w_prop = mu[k] + chols[k] @ rng.standard_normal(K)
        log_u = math.log(rng.random())
        cols = [m, m + M]
        new_cols = frequency_columns(H, w_prop, M)
        D = new_cols - fs.Phi[:, cols]  # [cols]: a C copy
        if bound is not None and bound.rejects(m, D, log_u):
            continue
        _low_rank_rows(fs.psi, D, fs.beta[cols], spare)
        ll_prop = fs.lik.loglik_rows(spare, fs.all_rows, fs.params, fs.prep)
        total = float(np.sum(ll_prop, dtype=np.float64))
        if log_u < total - ll_total:
            W[m] = w_prop
            fs.Phi[:, cols] = new_cols
            fs.psi, spare = spare, fs.psi
            fs.ll = ll_prop
            ll_total = total
            accepted += 1
            if bound is not None and m + 1 < M:
                bound = FrequencyBound(fs, M, first=m + 1)  # psi moved: expand again
    return accepted


class FactorisedFrequencies:
    """The log-likelihood as one frequency changes, for :func:`.frequency_moves.ess_frequencies`:
    a change of ``w_m`` moves two columns of ``Phi`` and ``psi`` by the rank-2 product of
    :func:`_low_rank_rows`, written into a spare ``N x J`` buffer that trades places with ``psi``
    when the point is taken (no proposal allocates ``N x J`` memory).

    With `bounded` (and a likelihood with ``psi_derivatives``), a point whose upper bound on the
    log-likelihood change (:mod:`.frequency_bound`, built at the current ``psi`` when frequency
    ``m`` is first evaluated) is already at or below the slice is scored ``-inf`` without the
    pass over all entries: the slice search then takes the same steps from the same numbers as
    without the bound, and its early points, far out on the ellipse, cost ``O(N)`` each.
    """

    def __init__(self, H: np.ndarray, W: np.ndarray, fs: FactorisedState, bounded: bool = True) -> None:
        self.H, self.W, self.fs = H, W, fs
        self.M = W.shape[0]
        self.ll = float(np.sum(fs.ll, dtype=np.float64))
        self.spare = np.empty_like(fs.psi)
        self.bounded = bounded and fs.lik.has_psi_derivatives
        self._bound: FrequencyBound | None = None
        self._bound_m = -1
        #: Points the bound decided, and points scored exactly.
        self.screened = self.exact = 0

    def evaluate(self, m: int, w_prop: np.ndarray, floor: float = -math.inf) -> tuple[float, tuple | None]:
        """The log-likelihood with ``w_m = w_prop``, or ``-inf`` when the bound shows it is at
        most `floor` (the slice level)."""
        fs, cols = self.fs, [m, m + self.M]
        new_cols = frequency_columns(self.H, w_prop, self.M)
        D = new_cols - fs.Phi[:, cols]
        if self.bounded and floor > -math.inf:
            if self._bound_m != m:
                # psi moved with the last frequency taken: expand again, for this one alone.
                self._bound, self._bound_m = FrequencyBound(fs, self.M, first=m, stop=m + 1), m
            if self._bound.rejects(m, D, floor - self.ll):
                self.screened += 1
                return -math.inf, None
        self.exact += 1
        _low_rank_rows(fs.psi, D, fs.beta[cols], self.spare)
        ll_rows = fs.lik.loglik_rows(self.spare, fs.all_rows, fs.params, fs.prep)
        total = float(np.sum(ll_rows, dtype=np.float64))
        return total, (new_cols, ll_rows, total)

    def commit(self, m: int, w_prop: np.ndarray, pieces: tuple) -> None:
        new_cols, ll_rows, total = pieces
        fs = self.fs
        self.W[m] = w_prop
        fs.Phi[:, [m, m + self.M]] = new_cols
        fs.psi, self.spare = self.spare, fs.psi
        fs.ll = ll_rows
        self.ll = total
        self._bound_m = -1


def ess_w(
    rng: np.random.Generator, H, W, zeta, mu, Sigma, fs: FactorisedState, bounded: bool = True
) -> tuple[int, int]:
    """Elliptical slice sampling of each frequency under its mixture component
    (:mod:`.frequency_moves`, where the invariance argument is written); ``Phi``, ``psi`` and the
    row log-likelihoods follow. `bounded`: screen points by :mod:`.frequency_bound` (the same
    chain, bit for bit, as without). Returns ``(evaluations, moved)``."""
    if W.shape[1] == 0:
        return 0, 0
    return ess_frequencies(rng, W, zeta, mu, Sigma, FactorisedFrequencies(H, W, fs, bounded))


def _low_rank_rows(psi, D, B, out):
    """:func:`_low_rank_update` by blocks of rows on the sweep's threads."""
    blocks = _blocks.current()

    def part(_b: int, rows: slice) -> None:
        _low_rank_update(psi[rows], D[rows], B, out[rows])

    blocks.run(part, blocks.row_slices(psi.shape[0]))


@njit(cache=True, nogil=True)
def _low_rank_update(psi, D, B, out):
    """``out = psi + D B`` in one pass (``D`` is N x r, ``B`` is r x J, r small).

    Each entry is ``psi_ij + (((0 + D_i0 B_0j) + D_i1 B_1j) + ...)``, as a loop over ``t`` inside
    the entry would sum it; the sums run in a row buffer, one ``t`` at a time, so the loops over
    ``j`` vectorise (30% faster at J = 2,000) with the same numbers.
    """
    N, J = psi.shape
    r = D.shape[1]
    acc = np.empty(J)
    for i in range(N):
        for j in range(J):
            acc[j] = 0.0
        for t in range(r):
            d = D[i, t]
            for j in range(J):
                acc[j] += d * B[t, j]
        for j in range(J):
            out[i, j] = psi[i, j] + acc[j]


__all__ = ["FactorisedState", "elliptical_slice", "ess_w", "update_w", "update_x"]
