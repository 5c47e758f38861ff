"""The Bayesian GPLVM's collapsed bound (Titsias and Lawrence 2010), vectorised over columns.

The bound's mathematics for :mod:`.gplvm`, which packs the parameters, optimises and predicts:
the data-side constants, packed symmetric matrices, the ARD RBF kernel, the psi statistics and
the bound with their gradients.

Model. ``y_nj = f_j(x_n) + eps_nj`` with independent zero-mean GPs ``f_j`` sharing an ARD RBF
kernel ``k(x, x') = sf2 exp(-0.5 sum_q (x_q - x'_q)^2 / l_q^2)``, Gaussian noise of variance
``1 / beta``, prior ``x_n ~ N(0, I)`` and variational posterior ``q(x_n) = N(mu_n, diag(S_n))``.
With ``M`` inducing inputs ``Z`` the inducing outputs are integrated out, which gives the
collapsed lower bound of Titsias and Lawrence (2010). With missing data every column ``j`` gets
its own bound built from its observed rows only (as ``missing_data=True`` in GPy), so
unobserved entries are never read as zeros:

    F_j = -n_j/2 log(2 pi) + n_j/2 log beta - 1/2 log|B_j| - beta/2 y_j'y_j
          + beta^2/2 d_j' B_j^{-1} d_j - beta/2 n_j sf2 + beta/2 tr(P_j),
    ELBO = sum_j F_j - KL(q(X) || p(X)),

where ``Kmm = L L'``, ``P_j = L^{-1} (sum_n o_nj psi2_n) L^{-T}``, ``B_j = I + beta P_j`` and
``d_j = L^{-1} Psi1' (o_j * y_j)``. This is the bound written with ``A_j = Kmm + beta Psi2_j``
(``log|A_j| = log|Kmm| + log|B_j|``); the whitened form keeps every factorised matrix's
eigenvalues at 1 or above, however ill-conditioned ``Kmm`` is.

Why not GPy. GPy computes the same bound with a Python loop over columns, which took hours on
Olivetti. Here the per-column work is batched: columns with the same missingness pattern share
``P_j`` (complete data has a single pattern), the pattern sums of ``psi2_n`` are one matrix
product, and the factorisations are LAPACK calls on stacks of ``M x M`` matrices. Symmetric
``M x M`` quantities travel in packed upper-triangular form so that those products touch half
the entries. Whitening by ``L^{-1}`` is applied on whichever side (rows or patterns) is smaller.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

_LOG_2PI = float(np.log(2.0 * np.pi))


@dataclass(frozen=True)
class ObservedData:
    """Data-side constants of the bound, computed once per fit.

    Columns with the same observed rows share their ``M x M`` matrices, so the per-column stacks
    are built per distinct pattern. Patterns are numbered in order of first appearance, so with
    all patterns distinct pattern ``g`` is column ``g`` and no gathering is needed.
    """

    Y: np.ndarray  # N x J, zeros where unobserved
    patterns: np.ndarray  # N x G float mask of each distinct pattern
    pattern_of: np.ndarray  # J: pattern of each column
    n_cols: np.ndarray  # G: number of columns with each pattern
    n_obs: np.ndarray  # J: observed rows per column
    yy: np.ndarray  # J: sum of squared observed values per column

    @property
    def one_per_column(self) -> bool:
        return self.patterns.shape[1] == self.Y.shape[1]

    def per_column(self, stack: np.ndarray) -> np.ndarray:
        """Per-pattern rows expanded to one row per column."""
        return stack if self.one_per_column else stack[self.pattern_of]

    def sum_by_pattern(self, stack: np.ndarray) -> np.ndarray:
        """Per-column rows summed within each pattern (fixed order, so deterministic)."""
        if self.one_per_column:
            return stack
        order = np.argsort(self.pattern_of, kind="stable")
        starts = np.searchsorted(self.pattern_of[order], np.arange(self.n_cols.size))
        return np.add.reduceat(stack[order], starts, axis=0)


def observed_data(Yn: np.ndarray) -> ObservedData:
    """Constants of the bound for standardised data `Yn` (NaN = unobserved)."""
    observed = ~np.isnan(Yn)
    _, first, inverse = np.unique(observed.T, axis=0, return_index=True, return_inverse=True)
    rank = np.argsort(first, kind="stable")
    relabel = np.empty_like(rank)
    relabel[rank] = np.arange(rank.size)
    pattern_of = relabel[inverse.ravel()]
    Y = np.where(observed, Yn, 0.0)
    return ObservedData(
        Y=Y,
        patterns=observed[:, first[rank]].astype(np.float64),
        pattern_of=pattern_of,
        n_cols=np.bincount(pattern_of, minlength=rank.size).astype(np.float64),
        n_obs=observed.sum(axis=0).astype(np.float64),
        yy=np.einsum("nj,nj->j", Y, Y),
    )


# --- packed symmetric matrices -------------------------------------------------------------


def _frozen(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    # Cached index arrays are shared between calls, so nothing may write to them.
    for a in arrays:
        a.flags.writeable = False
    return arrays


@lru_cache(maxsize=8)
def _triu(M: int) -> tuple[np.ndarray, np.ndarray]:
    return _frozen(*np.triu_indices(M))


@lru_cache(maxsize=8)
def _packed_position(M: int) -> tuple[np.ndarray, np.ndarray]:
    """Flat positions of the packed entries in an ``M x M`` matrix, and the packed position of
    every flat entry: packing and unpacking are then single `np.take` gathers, several times
    faster than fancy-index assignment on large stacks."""
    iu, ju = _triu(M)
    where = np.empty((M, M), dtype=np.intp)
    where[iu, ju] = np.arange(iu.size)
    where[ju, iu] = np.arange(iu.size)
    return _frozen(iu * M + ju, where.ravel())


def _unpack(x: np.ndarray, M: int) -> np.ndarray:
    return np.take(x, _packed_position(M)[1], axis=-1).reshape(x.shape[:-1] + (M, M))


def _pack(X: np.ndarray) -> np.ndarray:
    M = X.shape[-1]
    return np.take(X.reshape(X.shape[:-2] + (M * M,)), _packed_position(M)[0], axis=-1)


def _pack_gradient(G: np.ndarray) -> np.ndarray:
    """Gradient with respect to the packed entries of a symmetric matrix, given the (symmetric)
    gradient with respect to the full matrix: an off-diagonal entry appears twice."""
    iu, ju = _triu(G.shape[-1])
    return _pack(G) * np.where(iu == ju, 1.0, 2.0)


def _whiten(stack: np.ndarray, Linv: np.ndarray) -> np.ndarray:
    """``Linv @ X @ Linv.T`` for every matrix of the stack."""
    return np.matmul(np.matmul(Linv, stack), Linv.T)


def _unwhiten_gradient(stack: np.ndarray, Linv: np.ndarray) -> np.ndarray:
    """Chain rule through `_whiten`: ``Linv.T @ G @ Linv``."""
    return np.matmul(np.matmul(Linv.T, stack), Linv)


# --- kernel and psi statistics -------------------------------------------------------------


def rbf(X: np.ndarray, Z: np.ndarray, variance: float, lengthscales: np.ndarray) -> np.ndarray:
    """ARD RBF cross-covariance ``K(X, Z)``; differences are formed directly, not by expanding the
    square, so nearby points lose no precision."""
    r = (X[:, None, :] - Z[None, :, :]) / lengthscales
    return variance * np.exp(-0.5 * np.einsum("nmq,nmq->nm", r, r))


def kmm_gradients(
    dKmm: np.ndarray, Kmm: np.ndarray, Kbase: np.ndarray, Z: np.ndarray, lengthscales: np.ndarray
) -> tuple[np.ndarray, float, np.ndarray]:
    """Chain rule from ``dF/dKmm`` (symmetric) to ``Z``, ``log sf2`` and ``log l``.

    ``Kmm = Kbase + jitter * sf2 * I`` is proportional to ``sf2``, jitter included."""
    W = dKmm * Kbase
    diff = Z[:, None, :] - Z[None, :, :]
    inv_l2 = 1.0 / lengthscales**2
    dZ = -2.0 * np.einsum("mk,mkq->mq", W, diff) * inv_l2
    dlog_l = np.einsum("mk,mkq->q", W, diff**2) * inv_l2
    return dZ, float(np.sum(dKmm * Kmm)), dlog_l


def psi1_statistics(
    mu: np.ndarray, S: np.ndarray, Z: np.ndarray, variance: float, lengthscales: np.ndarray
) -> np.ndarray:
    """``Psi1[n, m] = E_q[k(x_n, z_m)]``:
    ``sf2 prod_q (1 + a_q S_nq)^(-1/2) exp(-a_q (mu_nq - z_mq)^2 / (2 (1 + a_q S_nq)))``,
    ``a_q = 1 / l_q^2``."""
    a = 1.0 / lengthscales**2
    u = 1.0 + a * S
    d = mu[:, None, :] - Z[None, :, :]
    log_psi = np.log(variance) - 0.5 * np.log(u).sum(axis=1)[:, None]
    log_psi = log_psi - 0.5 * np.einsum("nmq,nq->nm", d * d, a / u)
    return np.exp(log_psi)


def psi1_gradients(
    dPsi1: np.ndarray,
    Psi1: np.ndarray,
    mu: np.ndarray,
    S: np.ndarray,
    Z: np.ndarray,
    lengthscales: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, np.ndarray]:
    """Chain rule from ``dF/dPsi1`` to ``(mu, S, Z, log sf2, log l)``."""
    a = 1.0 / lengthscales**2
    u = 1.0 + a * S
    W = dPsi1 * Psi1  # d log Psi1 is what the closed form differentiates simply
    d = mu[:, None, :] - Z[None, :, :]
    Wd = np.einsum("nm,nmq->nq", W, d)
    Wd2 = np.einsum("nm,nmq->nq", W, d * d)
    rs = W.sum(axis=1)[:, None]
    dmu = -a / u * Wd
    dS = -0.5 * a / u * rs + 0.5 * a**2 / u**2 * Wd2
    dZ = a * np.einsum("nm,nmq->mq", W, d / u[:, None, :])
    dlog_l = a * (np.sum(rs * S / u, axis=0) + np.sum(Wd2 / u**2, axis=0))
    return dmu, dS, dZ, float(W.sum()), dlog_l


def psi2_statistics(
    mu: np.ndarray, S: np.ndarray, Z: np.ndarray, variance: float, lengthscales: np.ndarray
) -> np.ndarray:
    """Packed ``psi2_n[m, m'] = E_q[k(z_m, x_n) k(x_n, z_m')]`` (``N x M(M+1)/2``):
    ``sf2^2 prod_q (1 + 2 a_q S_nq)^(-1/2)
    exp(-a_q (z_mq - z_m'q)^2 / 4 - a_q (mu_nq - zbar_q)^2 / (1 + 2 a_q S_nq))``,
    ``zbar = (z_m + z_m') / 2``. The loop runs over latent dimensions only, so temporaries stay
    ``N x M(M+1)/2``."""
    iu, ju = _triu(Z.shape[0])
    a = 1.0 / lengthscales**2
    v = 1.0 + 2.0 * a * S
    zbar = 0.5 * (Z[iu] + Z[ju])
    # In-place updates: with Q small these N x M(M+1)/2 passes are the whole cost.
    log_psi = np.add.outer(
        2.0 * np.log(variance) - 0.5 * np.log(v).sum(axis=1), -0.25 * ((Z[iu] - Z[ju]) ** 2) @ a
    )
    for q in range(Z.shape[1]):
        e2 = np.subtract.outer(mu[:, q], zbar[:, q])
        np.square(e2, out=e2)
        e2 *= (a[q] / v[:, q])[:, None]
        log_psi -= e2
    return np.exp(log_psi, out=log_psi)


def psi2_gradients(
    dpsi2: np.ndarray,
    psi2: np.ndarray,
    mu: np.ndarray,
    S: np.ndarray,
    Z: np.ndarray,
    lengthscales: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, np.ndarray]:
    """Chain rule from ``dF/dpsi2`` (packed, ``N x M(M+1)/2``) to ``(mu, S, Z, log sf2, log l)``."""
    M, Q = Z.shape
    iu, ju = _triu(M)
    a = 1.0 / lengthscales**2
    v = 1.0 + 2.0 * a * S
    W = dpsi2 * psi2
    rs = W.sum(axis=1)
    cs = W.sum(axis=0)
    dmu = np.empty_like(mu)
    dS = np.empty_like(S)
    dZ = np.zeros_like(Z)
    dlog_l = np.empty(Q)
    for q in range(Q):
        aq = a[q]
        vq = v[:, q]
        dz = Z[iu, q] - Z[ju, q]
        e = mu[:, q, None] - 0.5 * (Z[iu, q] + Z[ju, q])[None, :]
        We = W * e
        We_sum = We.sum(axis=1)
        We2_sum = np.einsum("nt,nt->n", We, e)
        dmu[:, q] = -2.0 * aq / vq * We_sum
        dS[:, q] = -aq / vq * rs + 2.0 * aq**2 / vq**2 * We2_sum
        dzbar = 2.0 * aq * ((1.0 / vq) @ We)
        ddz = -0.5 * aq * dz * cs
        dZ[:, q] = np.bincount(iu, weights=0.5 * dzbar + ddz, minlength=M) + np.bincount(
            ju, weights=0.5 * dzbar - ddz, minlength=M
        )
        dlog_l[q] = aq * (2.0 * np.sum(rs * S[:, q] / vq) + 0.5 * cs @ dz**2 + 2.0 * np.sum(We2_sum / vq**2))
    return dmu, dS, dZ, 2.0 * float(W.sum()), dlog_l


# --- the collapsed bound -------------------------------------------------------------------


@dataclass(frozen=True)
class _InducingPosterior:
    """Per-pattern factors of the bound at given psi statistics (whitened by ``L^{-1}``)."""

    P: np.ndarray  # G x M(M+1)/2, packed L^-1 Psi2_g L^-T
    Binv: np.ndarray  # G x M x M: (I + beta P_g)^-1
    logdet_B: np.ndarray  # G
    d: np.ndarray  # J x M: L^-1 Psi1' y_j
    b: np.ndarray  # J x M: B_j^-1 d_j


def _inducing_posterior(
    Linv: np.ndarray, Psi1: np.ndarray, psi2: np.ndarray, beta: float, obs: ObservedData
) -> _InducingPosterior:
    N, M = Psi1.shape
    if obs.patterns.shape[1] <= N:
        P = _pack(_whiten(_unpack(obs.patterns.T @ psi2, M), Linv))
    else:
        P = obs.patterns.T @ _pack(_whiten(_unpack(psi2, M), Linv))
    B = _unpack(beta * P, M)
    B[:, np.arange(M), np.arange(M)] += 1.0
    LB = np.linalg.cholesky(B)
    logdet_B = 2.0 * np.log(np.diagonal(LB, axis1=1, axis2=2)).sum(axis=1)
    del LB
    # Symmetric up to rounding; only the upper triangle feeds the gradients, so the asymmetry
    # is not worth a pass over the stack to remove.
    Binv = np.linalg.inv(B)
    del B
    d = (obs.Y.T @ Psi1) @ Linv.T
    b = np.matmul(obs.per_column(Binv), d[:, :, None])[:, :, 0]
    return _InducingPosterior(P=P, Binv=Binv, logdet_B=logdet_B, d=d, b=b)


@dataclass(frozen=True)
class BoundGradients:
    """Partial derivatives of ``sum_j F_j`` with psi statistics, ``Kmm`` and ``beta`` held as
    free variables; ``dsf2`` is the direct (psi0) dependence on the kernel variance only."""

    dKmm: np.ndarray
    dPsi1: np.ndarray
    dpsi2: np.ndarray  # packed
    dbeta: float
    dsf2: float


def collapsed_bound(
    Linv: np.ndarray, Psi1: np.ndarray, psi2: np.ndarray, beta: float, variance: float, obs: ObservedData
) -> tuple[float, BoundGradients]:
    """``sum_j F_j`` and its partial derivatives; ``Linv`` is the inverse Cholesky factor of Kmm."""
    N, M = Psi1.shape
    post = _inducing_posterior(Linv, Psi1, psi2, beta, obs)
    # Symmetric M x M quantities stay packed: <A, B> = sum_t w_t A_t B_t.
    P, b, d = post.P, post.b, post.d
    Binv = _pack(post.Binv)
    iu, ju = _triu(M)
    on_diag = iu == ju
    w = np.where(on_diag, 1.0, 2.0)
    nc = obs.n_cols
    n_total = obs.n_obs.sum()
    trP = P[:, on_diag].sum(axis=1)
    db = np.einsum("jm,jm->j", d, b)
    value = (
        -0.5 * n_total * _LOG_2PI
        + 0.5 * n_total * np.log(beta)
        - 0.5 * nc @ post.logdet_B
        - 0.5 * beta * obs.yy.sum()
        + 0.5 * beta**2 * db.sum()
        - 0.5 * beta * n_total * variance
        + 0.5 * beta * nc @ trP
    )

    bb = obs.sum_by_pattern(b[:, iu] * b[:, ju])  # G x T: sum of b_j b_j' over each pattern
    # dF/dP_g in whitened coordinates, summed over the pattern's columns:
    # beta/2 n_g (I - B_g^-1) - beta^3/2 sum_j b_j b_j'.
    H = bb * (-0.5 * beta**3)
    H -= (0.5 * beta * nc)[:, None] * Binv
    H[:, on_diag] += (0.5 * beta * nc)[:, None]
    if obs.patterns.shape[1] <= N:
        dpsi2 = obs.patterns @ _pack_gradient(_unwhiten_gradient(_unpack(H, M), Linv))
    else:
        dpsi2 = _pack_gradient(_unwhiten_gradient(_unpack(obs.patterns @ H, M), Linv))

    sum_Binv = _unpack(nc @ Binv, M)
    sum_P = _unpack(nc @ P, M)
    Kbar = 0.5 * obs.Y.shape[1] * np.eye(M) - 0.5 * sum_Binv - 0.5 * beta**2 * (b.T @ b) - 0.5 * beta * sum_P
    dKmm = Linv.T @ Kbar @ Linv
    dPsi1 = beta**2 * (obs.Y @ (b @ Linv))

    tr_BinvP = (Binv * P) @ w
    bPb = np.sum((P * bb) @ w)
    dbeta = (
        0.5 * n_total / beta
        - 0.5 * nc @ tr_BinvP
        - 0.5 * obs.yy.sum()
        + beta * db.sum()
        - 0.5 * beta**2 * bPb
        - 0.5 * n_total * variance
        + 0.5 * nc @ trP
    )
    grads = BoundGradients(
        dKmm=dKmm, dPsi1=dPsi1, dpsi2=dpsi2, dbeta=float(dbeta), dsf2=float(-0.5 * beta * n_total)
    )
    return float(value), grads
