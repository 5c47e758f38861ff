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
from numba.core import cgutils, errors
from numba.extending import intrinsic, overload
from scipy.linalg.lapack import dpotrf, dpotrs

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


#: What :func:`factor` (and the compiled frequency pass's refactorisation) says of an ``S`` it
#: cannot factor.
NOT_FINITE = (
    "the collapsed Gaussian likelihood's S = Phi^T Phi + I is not finite or not positive "
    "definite: a latent position or frequency is NaN or infinite"
)


def factor(G: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """``(R, S^-1, log|S|)`` for ``S = G + I``, ``G = Phi^T Phi`` (left as it is), with
    ``S = R R^T``.

    LAPACK's ``potrf`` and ``potrs`` are called directly, as ``scipy.linalg.cholesky`` and
    ``cho_solve`` call them: their wrappers (checks of the input for NaN, batching, dispatch)
    were a fifth of a small sweep's time. A NaN in ``S`` (a latent position or frequency gone
    NaN) reaches the diagonal of ``R``, and is named here rather than carried into the chain."""
    S = G.copy()
    S[np.diag_indices(S.shape[0])] += 1.0
    R, info = dpotrf(S, lower=1, clean=1)
    logdet = 2.0 * float(np.sum(np.log(np.diag(R)))) if info == 0 else math.nan
    if not math.isfinite(logdet):
        raise FloatingPointError(NOT_FINITE)
    A, _ = dpotrs(R, np.eye(S.shape[0]), lower=1)
    return R, 0.5 * (A + A.T), logdet


def build_cache(Phi: np.ndarray, Y: np.ndarray, prior: GaussianPrior) -> Cache:
    """Everything from scratch: one Cholesky of ``S`` and one ``Phi^T Y`` serve all columns."""
    R, A, logdet = factor(Phi.T @ Phi)
    B = Phi.T @ Y
    P = A @ B
    Q = np.einsum("lj,lj->j", B, P)
    yy = np.einsum("nj,nj->j", Y, Y)
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


def _is_row_cache(rows) -> bool:
    return isinstance(rows, types.BaseNamedTuple) and rows.instance_class is RowCache


# Reading an array out of a tuple takes a reference to it (an atomic increment, and a decrement
# when the value dies), and `score` reads fifteen per proposal: about 4% of a proposal's cost at
# Breast Cancer's size (L = 100, J = 30). The fields are read without one: `rows` is an argument
# of the kernel, which holds its arrays until it returns, and what is read here never outlives it.
@intrinsic
def _field(typingctx, rows, name):
    """Field `name` of `rows`; an array comes without a reference (no meminfo) of its own."""
    if not isinstance(name, types.StringLiteral):
        raise errors.RequireLiteralValue(name)
    k = rows.fields.index(name.literal_value)
    ty = rows.types[k]

    def codegen(context, builder, sig, args):
        value = builder.extract_value(args[0], k)
        if isinstance(ty, types.Array):
            ary = context.make_array(ty)(context, builder, value=value)
            ary.meminfo = cgutils.get_null_value(ary.meminfo.type)
            value = ary._getvalue()
        return value

    return ty(rows, name), codegen


# The scorer is inlined into the row kernels: a call that passed the tuple would cost as much
# as the references, and inlined, LLVM sees the fields as the kernel's arguments.
@overload(row_scorer.begin, inline="always")
def _begin(rows, i):
    if _is_row_cache(rows):

        def begin(rows, i):
            phi_i = _field(rows, "Phi")[i]
            prepare_row(phi_i, _field(rows, "A"), _field(rows, "P"), _field(rows, "v"), _field(rows, "r"))
            return _field(rows, "state")[1]

        return begin


@overload(row_scorer.score, inline="always")
def _score(rows, i, phi):
    if _is_row_cache(rows):

        def score(rows, i, phi):
            m2 = _field(rows, "m2")
            ll = eval_row(
                phi, _field(rows, "Phi")[i], _field(rows, "v"), _field(rows, "r"), _field(rows, "Y")[i],
                _field(rows, "A"), _field(rows, "P"), _field(rows, "Q"), _field(rows, "yy"),
                _field(rows, "state")[0], _field(rows, "a_n"), _field(rows, "b0"), _field(rows, "const"),
                _field(rows, "u"), _field(rows, "s"), _field(rows, "w1"), _field(rows, "w2"),
                _field(rows, "Qn"), m2,
            )  # fmt: skip
            m2[4] = ll  # for commit
            return ll

        return score


@overload(row_scorer.commit, inline="always")
def _commit(rows, i, phi):
    if _is_row_cache(rows):

        def commit(rows, i, phi):
            m2 = _field(rows, "m2")
            apply_row(
                _field(rows, "Y")[i], _field(rows, "A"), _field(rows, "P"), _field(rows, "Q"),
                _field(rows, "u"), _field(rows, "v"), _field(rows, "w1"), _field(rows, "w2"),
                _field(rows, "Qn"), m2,
            )  # fmt: skip
            state = _field(rows, "state")
            state[0] = m2[3]
            state[1] = m2[4]
            phi_row = _field(rows, "Phi")[i]
            for a in range(phi.size):
                phi_row[a] = phi[a]

        return commit


# The scorer for callers on the host (the singleton births and deaths score one row at a time).


@njit(cache=True, fastmath=FAST)
def begin_row(rows: RowCache, i: int) -> float:
    """:func:`ibp_rflvm.samplers.row_scorer.begin` of `rows`: `prepare_row` for row `i`."""
    return row_scorer.begin(rows, i)


@njit(cache=True, fastmath=FAST)
def score_row(rows: RowCache, i: int, phi: np.ndarray) -> float:
    """:func:`ibp_rflvm.samplers.row_scorer.score` of `rows`: `eval_row` of features `phi`."""
    return row_scorer.score(rows, i, phi)


@njit(cache=True, fastmath=FAST)
def commit_row(rows: RowCache, i: int, phi: np.ndarray) -> None:
    """:func:`ibp_rflvm.samplers.row_scorer.commit` of `rows`: the proposal `score_row` scored
    updates the cache, ``[log|S|, loglik]`` and row `i` of ``Phi`` in one step."""
    row_scorer.commit(rows, i, phi)
