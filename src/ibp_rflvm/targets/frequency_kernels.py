"""The collapsed Gaussian's frequency moves compiled: a pass of elliptical slice searches (or of
Metropolis-Hastings steps) over every frequency ``w_m`` in one call, each point scored by the
block formula of :class:`.collapsed_frequencies._FrequencyBlock`, the readable NumPy reference
of the same arithmetic; the acceptance logic is that of :mod:`.frequency_moves` and of the
paper's step, unchanged.

**Why compiled.** At Breast Cancer's size (``N = 569``, ``L = 100``, ``J = 30``) a point's
arithmetic is the feature columns (``N`` sines and cosines), ``g = Phi^T c'`` (``2 N L``),
``c'^T Y`` (``2 N J``) and the ``L``-length and 2 x 2 algebra: 17 microseconds compiled (``K =
18``), where the NumPy block spent 120, mostly in calls (fancy indexing, small products), and
its Python loop more. What depends on ``m``
alone (``A_II^-1``, ``A_rI A_II^-1``, the ``Q_j`` without the pair's terms) is computed once per
frequency, not once per point; ``Phi`` and ``Y`` are also kept transposed, so that their
products with ``c'`` run along contiguous rows.

**The factorisation.** After an acceptance the reference refactors ``S = G + I`` and forms
``A = S^-1`` (``O(L^3)``, about 100 microseconds at ``L = 100``), for the reason its docstring
gives: carrying ``A`` by low-rank updates amplifies its round-off with ``N``. Here only the
Cholesky factor ``R`` (``S = R R^T``) is recomputed, from ``G`` as it stands (LAPACK's
``potrf`` through numba: 22 microseconds), and ``A`` is never formed: ``A g`` and ``A e_I`` are
triangular solves with ``R``, as many operations as the product with ``A`` (2 microseconds more
per point, being sequential) and backward stable. So every decision still uses a likelihood
exact to round-off, whatever ``N``; the cache is written back from ``G`` by ``row_cache.factor``
once, at the end of the pass.

**The random numbers.** A pass draws from the chain's ``numpy.random.Generator`` in the
reference's order: per frequency, ``K`` normals, the slice's uniform, the first angle and one
uniform per shrink (:func:`.frequency_moves.ess_frequencies`), or ``K`` normals and one uniform
(the paper's step). Numba's ``standard_normal`` and ``random`` of a Generator give NumPy's
numbers for the same state (tests/targets/test_frequency_kernels.py checks it).

**The arithmetic.** The search's own steps (the angle, the ellipse's point, the shrink) compile
without fastmath, so they round as the Python loop does; the scoring (:func:`prepare`,
:func:`evaluate`) compiles with the row kernels' ``FAST`` flags, so its sums run in another order
than NumPy's and a score differs from the reference's in the last bits (a decision differs from
the reference's only if a score and its threshold agree to that many bits). A seed gives the
same chain on every run.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from ..samplers.ess import shrink
from ..samplers.row_scorer import FAST
from .frequency_moves import MAX_SHRINKS
from .row_cache import NOT_FINITE

# Slots of the per-frequency and per-point scalars in `Blocks.sc`.
_I00, _I01, _I10, _I11, _LOGDET_AII = 0, 1, 2, 3, 4
_CC00, _CC01, _CC11, _LL = 5, 6, 7, 8
_N_SCALARS = 9


class Blocks(NamedTuple):
    """The arrays of a pass: the sweep's state (updated in place) and work buffers sized once.

    Attributes
    ----------
    H : numpy.ndarray
        Latent inputs, ``N x K``, read only.
    YT : numpy.ndarray
        The completed data transposed, ``J x N``, read only.
    Phi, PhiT : numpy.ndarray
        The features (``N x L``, the caller's, updated in place) and their transpose.
    G, B : numpy.ndarray
        ``Phi^T Phi`` and ``Phi^T Y``, updated in place.
    R : numpy.ndarray
        The lower Cholesky factor of ``S = G + I``, recomputed after each acceptance.
    Q, yy : numpy.ndarray
        ``Q_j = b_j^T S^-1 b_j`` (updated in place) and ``y_j^T y_j``.
    st : numpy.ndarray
        ``[log|S|, log-likelihood, a_n, b0, constant]``.
    c, gh, pj, ku, sc : numpy.ndarray
        Work: the point's two feature columns (``2 x N``); ``g_r``, ``S_rr^-1 g_r`` and
        ``A_rI A_II^-1`` (``6 x L``, two rows each); ``P_I = A_I. B`` (whose first row then
        holds the point's ``Q'``), ``c'^T Y``, ``(S_rr^-1 g_r)^T B_r`` and the frequency's
        ``Q`` without the pair's terms (``7 x J``); the ellipse's vectors (``4 x K``); the
        2 x 2 scalars.
    """

    H: np.ndarray
    YT: np.ndarray
    Phi: np.ndarray
    PhiT: np.ndarray
    G: np.ndarray
    B: np.ndarray
    R: np.ndarray
    Q: np.ndarray
    yy: np.ndarray
    st: np.ndarray
    c: np.ndarray
    gh: np.ndarray
    pj: np.ndarray
    ku: np.ndarray
    sc: np.ndarray


def make_blocks(H, Y, Phi, G, B, R, Q, yy, st, K: int) -> Blocks:
    """:class:`Blocks` of the given state (``R`` and ``Q`` copied, ``Phi`` kept) with fresh
    transposes and work buffers for frequencies of `K` dimensions."""
    N, L = Phi.shape
    J = Y.shape[1]
    return Blocks(
        np.ascontiguousarray(H, dtype=float), np.ascontiguousarray(Y.T, dtype=float), Phi,
        np.ascontiguousarray(Phi.T), G, B, np.array(R, dtype=float, order="C"), np.array(Q, dtype=float),
        yy, st, np.zeros((2, N)), np.zeros((6, L)), np.zeros((7, J)), np.zeros((4, K)), np.zeros(_N_SCALARS),
    )  # fmt: skip


@njit(cache=True, fastmath=FAST)
def _solve2(R: np.ndarray, x0: np.ndarray, x1: np.ndarray) -> None:
    """``x <- S^-1 x`` for two vectors at once, ``S = R R^T``: forward, then back substitution."""
    L = R.shape[0]
    for i in range(L):
        s0 = x0[i]
        s1 = x1[i]
        for k in range(i):
            s0 -= R[i, k] * x0[k]
            s1 -= R[i, k] * x1[k]
        x0[i] = s0 / R[i, i]
        x1[i] = s1 / R[i, i]
    # R^T x = y walks R's rows, which are R^T's columns, as axpys along contiguous memory.
    for i in range(L - 1, -1, -1):
        v0 = x0[i] / R[i, i]
        v1 = x1[i] / R[i, i]
        x0[i] = v0
        x1[i] = v1
        for k in range(i):
            x0[k] -= R[i, k] * v0
            x1[k] -= R[i, k] * v1


@njit(cache=True, fastmath=FAST)
def _two_rows_times(x0, x1, B, out0, out1) -> None:
    """``out0 = x0^T B`` and ``out1 = x1^T B`` in one pass over ``B``'s rows."""
    L, J = B.shape
    for j in range(J):
        out0[j] = 0.0
        out1[j] = 0.0
    for a in range(L):
        for j in range(J):
            out0[j] += x0[a] * B[a, j]
            out1[j] += x1[a] * B[a, j]


@njit(cache=True, fastmath=FAST)
def prepare(m: int, M: int, blocks: Blocks) -> None:
    """What the scores of frequency `m` share: ``A_II^-1`` and ``log|A_II|`` (in ``sc``),
    ``A_rI A_II^-1`` (rows 4 and 5 of ``gh``) and ``Q_j - P_Ij^T A_II^-1 P_Ij`` (row 6 of
    ``pj``), with ``P_I = A_I. B`` (rows 0 and 1), from the columns ``A e_I``."""
    B, R, Q, gh, pj, sc = blocks.B, blocks.R, blocks.Q, blocks.gh, blocks.pj, blocks.sc
    L, J = B.shape
    i0 = m
    i1 = m + M
    x0 = gh[2]  # the columns of A, in rows that each point overwrites
    x1 = gh[3]
    for a in range(L):
        x0[a] = 0.0
        x1[a] = 0.0
    x0[i0] = 1.0
    x1[i1] = 1.0
    _solve2(R, x0, x1)
    a00 = x0[i0]
    a01 = x1[i0]
    a10 = x0[i1]
    a11 = x1[i1]
    det = a00 * a11 - a01 * a10
    v00 = a11 / det
    v01 = -a01 / det
    v10 = -a10 / det
    v11 = a00 / det
    sc[_I00] = v00
    sc[_I01] = v01
    sc[_I10] = v10
    sc[_I11] = v11
    sc[_LOGDET_AII] = math.log(det)
    k0 = gh[4]
    k1 = gh[5]
    for a in range(L):
        k0[a] = x0[a] * v00 + x1[a] * v10
        k1[a] = x0[a] * v01 + x1[a] * v11
    p0 = pj[0]
    p1 = pj[1]
    _two_rows_times(x0, x1, B, p0, p1)
    base = pj[6]
    for j in range(J):
        base[j] = Q[j] - (p0[j] * (v00 * p0[j] + v01 * p1[j]) + p1[j] * (v10 * p0[j] + v11 * p1[j]))


@njit(cache=True, fastmath=FAST)
def evaluate(m: int, M: int, w: np.ndarray, blocks: Blocks) -> float:
    """The log-likelihood if ``w_m`` became `w` (after :func:`prepare` of `m`); leaves in the
    buffers what :func:`commit` writes back."""
    H, YT, PhiT, R, B = blocks.H, blocks.YT, blocks.PhiT, blocks.R, blocks.B
    yy, st, c, gh, pj, sc = blocks.yy, blocks.st, blocks.c, blocks.gh, blocks.pj, blocks.sc
    N, K = H.shape
    L = PhiT.shape[0]
    J = YT.shape[0]
    i0 = m
    i1 = m + M
    root = math.sqrt(M)
    c0 = c[0]
    c1 = c[1]
    cc00 = 0.0
    cc01 = 0.0
    cc11 = 0.0
    for n in range(N):
        p = 0.0
        for k in range(K):
            p += H[n, k] * w[k]
        x0 = math.cos(p) / root
        x1 = math.sin(p) / root
        c0[n] = x0
        c1[n] = x1
        cc00 += x0 * x0
        cc01 += x0 * x1
        cc11 += x1 * x1
    g0 = gh[0]
    g1 = gh[1]
    for a in range(L):
        s0 = 0.0
        s1 = 0.0
        for n in range(N):
            s0 += PhiT[a, n] * c0[n]
            s1 += PhiT[a, n] * c1[n]
        g0[a] = s0
        g1[a] = s1
    y0 = pj[2]
    y1 = pj[3]
    for j in range(J):
        s0 = 0.0
        s1 = 0.0
        for n in range(N):
            s0 += YT[j, n] * c0[n]
            s1 += YT[j, n] * c1[n]
        y0[j] = s0
        y1[j] = s1
    # Only g_r enters: the cross-products with the features that stay.
    g0[i0] = 0.0
    g0[i1] = 0.0
    g1[i0] = 0.0
    g1[i1] = 0.0
    h0 = gh[2]
    h1 = gh[3]
    for a in range(L):
        h0[a] = g0[a]
        h1[a] = g1[a]
    _solve2(R, h0, h1)
    # h = (A g)_r - A_rI A_II^-1 (A g)_I = S_rr^-1 g_r; its rows I are set to 0 so that the sums
    # below may run over all L rows.
    u0 = h0[i0]
    u1 = h0[i1]
    z0 = h1[i0]
    z1 = h1[i1]
    k0 = gh[4]
    k1 = gh[5]
    for a in range(L):
        h0[a] -= k0[a] * u0 + k1[a] * u1
        h1[a] -= k0[a] * z0 + k1[a] * z1
    h0[i0] = 0.0
    h0[i1] = 0.0
    h1[i0] = 0.0
    h1[i1] = 0.0
    q00 = 0.0
    q01 = 0.0
    q10 = 0.0
    q11 = 0.0
    for a in range(L):
        q00 += g0[a] * h0[a]
        q01 += g0[a] * h1[a]
        q10 += g1[a] * h0[a]
        q11 += g1[a] * h1[a]
    m00 = cc00 + 1.0 - q00
    m01 = cc01 - q01
    m10 = cc01 - q10
    m11 = cc11 + 1.0 - q11
    det = m00 * m11 - m01 * m10
    w00 = m11 / det
    w01 = -m01 / det
    w10 = -m10 / det
    w11 = m00 / det
    e0 = pj[4]
    e1 = pj[5]
    _two_rows_times(h0, h1, B, e0, e1)
    base = pj[6]
    qn = pj[0]  # P_I's first row, no longer needed once the base is computed
    b0 = st[3]
    acc = 0.0
    for j in range(J):
        d0 = y0[j] - e0[j]
        d1 = y1[j] - e1[j]
        q = base[j] + (d0 * (w00 * d0 + w01 * d1) + d1 * (w10 * d0 + w11 * d1))
        qn[j] = q
        acc += math.log(b0 + 0.5 * (yy[j] - q))
    logdet_new = st[0] + sc[_LOGDET_AII] + math.log(det)
    ll = st[4] - 0.5 * J * logdet_new - st[2] * acc
    sc[_CC00] = cc00
    sc[_CC01] = cc01
    sc[_CC11] = cc11
    sc[_LL] = ll
    return ll


@njit(cache=True)
def commit(m: int, w: np.ndarray, W: np.ndarray, blocks: Blocks) -> None:
    """Accept the point :func:`evaluate` scored last: ``w_m``, its columns of ``Phi``, ``G`` and
    ``B``, ``Q`` and the log-likelihood; then :func:`refactor`."""
    Phi, PhiT, G, B, Q, st = blocks.Phi, blocks.PhiT, blocks.G, blocks.B, blocks.Q, blocks.st
    c, gh, pj, sc = blocks.c, blocks.gh, blocks.pj, blocks.sc
    M, K = W.shape
    N, L = Phi.shape
    i0 = m
    i1 = m + M
    g0 = gh[0]
    g1 = gh[1]
    for a in range(L):
        G[a, i0] = g0[a]
        G[a, i1] = g1[a]
        G[i0, a] = g0[a]
        G[i1, a] = g1[a]
    G[i0, i0] = sc[_CC00]
    G[i0, i1] = sc[_CC01]
    G[i1, i0] = sc[_CC01]
    G[i1, i1] = sc[_CC11]
    for j in range(B.shape[1]):
        B[i0, j] = pj[2, j]
        B[i1, j] = pj[3, j]
        Q[j] = pj[0, j]
    for n in range(N):
        Phi[n, i0] = c[0, n]
        Phi[n, i1] = c[1, n]
        PhiT[i0, n] = c[0, n]
        PhiT[i1, n] = c[1, n]
    for k in range(K):
        W[m, k] = w[k]
    st[1] = sc[_LL]
    refactor(blocks)


@njit(cache=True)
def refactor(blocks: Blocks) -> None:
    """``R`` and ``log|S|`` (``st[0]``) from ``S = G + I`` as it stands (LAPACK's ``potrf``)."""
    G, R = blocks.G, blocks.R
    L = G.shape[0]
    S = G.copy()
    for a in range(L):
        S[a, a] += 1.0
    R[:, :] = np.linalg.cholesky(S)
    logdet = 0.0
    for a in range(L):
        logdet += math.log(R[a, a])
    if not math.isfinite(logdet):
        raise FloatingPointError(NOT_FINITE)
    blocks.st[0] = 2.0 * logdet


@njit(cache=True)
def _normals(rng: np.random.Generator, chol: np.ndarray, z: np.ndarray, nu: np.ndarray) -> None:
    """``nu = chol z`` with ``z`` standard normal, drawn in order."""
    K = z.size
    for k in range(K):
        z[k] = rng.standard_normal()
    for a in range(K):
        acc = 0.0
        for b in range(K):
            acc += chol[a, b] * z[b]
        nu[a] = acc


@njit(cache=True)
def ess_pass(
    rng: np.random.Generator,
    W: np.ndarray,
    zeta: np.ndarray,
    mu: np.ndarray,
    chols: np.ndarray,
    blocks: Blocks,
) -> tuple[int, int, int]:
    """One elliptical slice search of each ``w_m`` in turn under ``N(mu_k, Sigma_k)``,
    ``k = zeta_m`` (the move of :mod:`.frequency_moves`, its random numbers in the same order).

    Parameters
    ----------
    rng : numpy.random.Generator
        The chain's generator.
    W : numpy.ndarray
        ``M x K`` frequencies, updated in place.
    zeta : numpy.ndarray
        Each frequency's mixture component.
    mu, chols : numpy.ndarray
        The components' means (``C x K``) and the Cholesky factors of their covariances
        (``C x K x K``).
    blocks : Blocks
        The state, updated in place, and the work buffers.

    Returns
    -------
    tuple of int
        ``(evaluations, moved, accepted)``: the points scored, the frequencies whose value
        changed and those for which a point was accepted (a search gives up after
        ``MAX_SHRINKS`` shrinks).
    """
    M, K = W.shape
    ku, st = blocks.ku, blocks.st
    z = ku[0]
    nu = ku[1]
    centred = ku[2]
    w = ku[3]
    n_evals = 0
    moved = 0
    accepted = 0
    for m in range(M):
        k = zeta[m]
        _normals(rng, chols[k], z, nu)
        log_y = st[1] + math.log(rng.random())
        theta = rng.random() * (2.0 * math.pi)
        lo = theta - 2.0 * math.pi
        hi = theta
        for d in range(K):
            centred[d] = W[m, d] - mu[k, d]
        prepare(m, M, blocks)
        for _ in range(MAX_SHRINKS):
            cos_t = math.cos(theta)
            sin_t = math.sin(theta)
            for d in range(K):
                w[d] = mu[k, d] + centred[d] * cos_t + nu[d] * sin_t
            ll = evaluate(m, M, w, blocks)
            n_evals += 1
            if ll > log_y:
                for d in range(K):
                    if w[d] != W[m, d]:
                        moved += 1
                        break
                commit(m, w, W, blocks)
                accepted += 1
                break
            theta, lo, hi = shrink(theta, lo, hi, rng.random())
    return n_evals, moved, accepted


@njit(cache=True)
def mh_pass(
    rng: np.random.Generator,
    W: np.ndarray,
    zeta: np.ndarray,
    mu: np.ndarray,
    chols: np.ndarray,
    blocks: Blocks,
) -> int:
    """The paper's step for each ``w_m`` in turn: ``w* = mu_k + chol_k z`` (``K`` normals),
    accepted when the log of one uniform is below the log-likelihood ratio. Arguments as
    :func:`ess_pass`'s; returns the number accepted."""
    M, K = W.shape
    ku, st = blocks.ku, blocks.st
    nu = ku[1]
    w = ku[3]
    accepted = 0
    for m in range(M):
        k = zeta[m]
        _normals(rng, chols[k], ku[0], nu)
        for d in range(K):
            w[d] = mu[k, d] + nu[d]
        log_u = math.log(rng.random())
        prepare(m, M, blocks)
        ll = evaluate(m, M, w, blocks)
        if log_u < ll - st[1]:
            commit(m, w, W, blocks)
            accepted += 1
    return accepted


__all__ = [
    "Blocks",
    "commit",
    "ess_pass",
    "evaluate",
    "make_blocks",
    "mh_pass",
    "prepare",
    "refactor",
]
