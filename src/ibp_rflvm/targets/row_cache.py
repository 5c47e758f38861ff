"""The low-rank row cache of the collapsed Gaussian likelihood (SPEC section 2.1).

With ``S = Phi^T Phi + I`` shared by all columns, everything a one-row change of ``Phi`` needs
is kept here: ``A = S^-1``, ``P = A Phi^T Y`` (column posterior means),
``Q_j = y_j^T Phi A Phi^T y_j`` and ``log|S|``. Changing one row from ``phi`` to ``phi'`` is the
rank-2 change ``S' = S + phi' phi'^T - phi phi^T`` together with ``Phi^T y_j += (phi' - phi) y_ij``,
so a proposal costs ``O(L^2 + L J)`` by the Woodbury identity instead of
``O(N L^2 + L^3 + N L J)``.

Every sampler that moves one row at a time (ESS of ``x_i``, Gibbs of ``z_id``, the dimension
moves) is a compiled row kernel of :mod:`ibp_rflvm.samplers` scoring its proposals here: the
cache and its work buffers travel as one value (:class:`RowCache`), for which this module
registers the compiled row scorer of :mod:`ibp_rflvm.samplers.row_scorer`: ``begin`` is
`prepare_row` for the row's current features, ``score`` is `eval_row` for each proposal (it
fills the work buffers), and ``commit`` is `apply_row` for the one that is accepted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import njit, types
from numba.extending import overload
from scipy.linalg import cho_solve, cholesky

from ..likelihoods.gaussian import GaussianPrior
from ..samplers import row_scorer
from ..samplers.row_scorer import FAST


@dataclass
class Cache:
    """Sufficient statistics of the collapsed likelihood for the current ``Phi`` and ``Y``.

    ``state`` holds ``[log|S|, log-likelihood]`` in one small array so compiled kernels can
    update both in place.
    """

    A: np.ndarray
    P: np.ndarray
    Q: np.ndarray
    yy: np.ndarray
    state: np.ndarray
    chol: np.ndarray

    @property
    def logdet(self) -> float:
        return float(self.state[0])

    @property
    def loglik(self) -> float:
        return float(self.state[1])


def collapsed_loglik(Q, yy, logdet, N: int, prior: GaussianPrior) -> float:
    a_n = prior.a0 + 0.5 * N
    J = yy.size
    b_n = prior.b0 + 0.5 * (yy - Q)
    return float(prior.constant(N, J) - 0.5 * J * logdet - a_n * np.sum(np.log(b_n)))


def build_cache(Phi: np.ndarray, Y: np.ndarray, prior: GaussianPrior) -> Cache:
    """Everything from scratch: one Cholesky of ``S`` and one ``Phi^T Y`` serve all columns."""
    L = Phi.shape[1]
    S = Phi.T @ Phi
    S[np.diag_indices(L)] += 1.0
    R = cholesky(S, lower=True)
    A = cho_solve((R, True), np.eye(L))
    A = 0.5 * (A + A.T)
    B = Phi.T @ Y
    P = A @ B
    Q = np.einsum("lj,lj->j", B, P)
    yy = np.einsum("nj,nj->j", Y, Y)
    logdet = 2.0 * float(np.sum(np.log(np.diag(R))))
    ll = collapsed_loglik(Q, yy, logdet, Phi.shape[0], prior)
    return Cache(A=A, P=np.ascontiguousarray(P), Q=Q, yy=yy, state=np.array([logdet, ll]), chol=R)


@njit(cache=True, fastmath=FAST)
def prepare_row(phi, A, P, v, r):
    """``v = A phi`` and ``r = P^T phi`` for the row about to change."""
    L = phi.size
    J = P.shape[1]
    for a in range(L):
        acc = 0.0
        for b in range(L):
            acc += A[a, b] * phi[b]
        v[a] = acc
    for j in range(J):
        r[j] = 0.0
    for a in range(L):
        pa = phi[a]
        for j in range(J):
            r[j] += pa * P[a, j]


@njit(cache=True, fastmath=FAST)
def eval_row(phi_new, phi, v, r, y, A, P, Q, yy, logdet, a_n, b0, const, u, s, w1, w2, Qn, m2):
    """Log-likelihood if one row of ``Phi`` became `phi_new`; fills the work buffers for `apply_row`."""
    L = phi.size
    J = y.size
    for a in range(L):
        acc = 0.0
        for b in range(L):
            acc += A[a, b] * phi_new[b]
        u[a] = acc
    a11 = 0.0
    a12 = 0.0
    a22 = 0.0
    for a in range(L):
        a11 += phi_new[a] * u[a]
        a12 += phi_new[a] * v[a]
        a22 += phi[a] * v[a]
    m11 = 1.0 + a11
    m22 = -1.0 + a22
    det = m11 * m22 - a12 * a12
    # det(S') = -det(S) det(M2) with M2 = C^-1 + U^T A U, C = diag(1, -1); det(M2) < 0.
    logdet_new = logdet + math.log(-det)
    dAd = a11 - 2.0 * a12 + a22
    pnAd = a11 - a12
    pAd = a12 - a22
    i11 = m22 / det
    i12 = -a12 / det
    i22 = m11 / det
    m2[0] = i11
    m2[1] = i12
    m2[2] = i22
    m2[3] = logdet_new
    for j in range(J):
        s[j] = 0.0
    for a in range(L):
        pa = phi_new[a]
        for j in range(J):
            s[j] += pa * P[a, j]
    acc = 0.0
    for j in range(J):
        yj = y[j]
        t1 = Q[j] + 2.0 * yj * (s[j] - r[j]) + yj * yj * dAd
        x1 = s[j] + yj * pnAd
        x2 = r[j] + yj * pAd
        w1[j] = x1
        w2[j] = x2
        qn = t1 - (x1 * x1 * i11 + 2.0 * x1 * x2 * i12 + x2 * x2 * i22)
        Qn[j] = qn
        acc += math.log(b0 + 0.5 * (yy[j] - qn))
    return const - 0.5 * J * logdet_new - a_n * acc


@njit(cache=True, fastmath=FAST)
def apply_row(y, A, P, Q, u, v, w1, w2, Qn, m2):
    """Commit the change evaluated by `eval_row`: ``A -= [u v] M2^-1 [u v]^T`` and ``P``, ``Q``."""
    L = u.size
    J = y.size
    i11 = m2[0]
    i12 = m2[1]
    i22 = m2[2]
    for a in range(L):
        ca = i11 * u[a] + i12 * v[a]
        cb = i12 * u[a] + i22 * v[a]
        for b in range(L):
            A[a, b] -= ca * u[b] + cb * v[b]
    # P is L x J in C order: the column terms go to buffers first so that the update runs
    # along P's rows. Walking it column by column (stride J) cost 60 times as much for
    # Olivetti's J = 4096 and dominated the Gaussian sweep.
    c1 = np.empty(J)
    c2 = np.empty(J)
    for j in range(J):
        c1[j] = i11 * w1[j] + i12 * w2[j]
        c2[j] = i12 * w1[j] + i22 * w2[j]
        Q[j] = Qn[j]
    for a in range(L):
        ua = u[a]
        va = v[a]
        d = ua - va
        for j in range(J):
            P[a, j] = P[a, j] + y[j] * d - ua * c1[j] - va * c2[j]


@njit(cache=True)
def row_buffers(L, J, K):
    """Work arrays of the row kernels: feature rows (L), per-column terms (J), the 2 x 2 system
    with the proposal's ``log|S'|`` and score."""
    return (np.empty(L), np.empty(L), np.empty(L), np.empty(J), np.empty(J), np.empty(J),
            np.empty(J), np.empty(J), np.empty(5), np.empty(K))  # fmt: skip


class RowCache(NamedTuple):
    """The cache of one pass over the rows with its work buffers: the ``rows`` value of the
    compiled row scorer (:mod:`ibp_rflvm.samplers.row_scorer`), registered below. Its arrays
    are the :class:`Cache`'s and the view's ``Phi`` and ``Y``, updated in place."""

    Phi: np.ndarray
    Y: np.ndarray
    A: np.ndarray
    P: np.ndarray
    Q: np.ndarray
    yy: np.ndarray
    state: np.ndarray
    a_n: float
    b0: float
    const: float
    v: np.ndarray
    u: np.ndarray
    r: np.ndarray
    s: np.ndarray
    w1: np.ndarray
    w2: np.ndarray
    Qn: np.ndarray
    m2: np.ndarray


def row_cache(Phi: np.ndarray, Y: np.ndarray, cache: Cache, prior: GaussianPrior) -> RowCache:
    """`cache` of ``Phi`` and ``Y`` (both updated in place as rows are accepted) for the row kernels."""
    N, L = Phi.shape
    J = Y.shape[1]
    _, v, u, r, s, w1, w2, Qn, m2, _ = row_buffers(L, J, 0)
    a_n = prior.a0 + 0.5 * N
    return RowCache(
        Phi, Y, cache.A, cache.P, cache.Q, cache.yy, cache.state, a_n, prior.b0, prior.constant(N, J),
        v, u, r, s, w1, w2, Qn, m2,
    )  # fmt: skip


@njit(cache=True, fastmath=FAST)
def begin_row(rows, i):
    """``begin`` of the row scorer: `prepare_row` for row `i`; the current log-likelihood."""
    prepare_row(rows.Phi[i], rows.A, rows.P, rows.v, rows.r)
    return rows.state[1]


@njit(cache=True, fastmath=FAST)
def score_row(rows, i, phi):
    """``score`` of the row scorer: `eval_row` of features `phi` for row `i`, kept for `commit_row`."""
    ll = eval_row(
        phi, rows.Phi[i], rows.v, rows.r, rows.Y[i], rows.A, rows.P, rows.Q, rows.yy, rows.state[0],
        rows.a_n, rows.b0, rows.const, rows.u, rows.s, rows.w1, rows.w2, rows.Qn, rows.m2,
    )  # fmt: skip
    rows.m2[4] = ll
    return ll


@njit(cache=True, fastmath=FAST)
def commit_row(rows, i, phi):
    """``commit`` of the row scorer: the proposal `score_row` scored updates the cache,
    ``[log|S|, loglik]`` and row `i` of ``Phi`` in one step."""
    apply_row(rows.Y[i], rows.A, rows.P, rows.Q, rows.u, rows.v, rows.w1, rows.w2, rows.Qn, rows.m2)
    rows.state[0] = rows.m2[3]
    rows.state[1] = rows.m2[4]
    phi_row = rows.Phi[i]
    for a in range(phi.size):
        phi_row[a] = phi[a]


def _is_row_cache(rows) -> bool:
    return isinstance(rows, types.BaseNamedTuple) and rows.instance_class is RowCache


@overload(row_scorer.begin)
def _begin(rows, i):
    if _is_row_cache(rows):
        return lambda rows, i: begin_row(rows, i)


@overload(row_scorer.score)
def _score(rows, i, phi):
    if _is_row_cache(rows):
        return lambda rows, i, phi: score_row(rows, i, phi)


@overload(row_scorer.commit)
def _commit(rows, i, phi):
    if _is_row_cache(rows):
        return lambda rows, i, phi: commit_row(rows, i, phi)
