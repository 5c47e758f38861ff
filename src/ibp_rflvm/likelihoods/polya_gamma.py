"""Polya-gamma machinery shared by the logistic-type count likelihoods.

A likelihood of the form ``p(y | psi) = c(y) exp(psi)^a / (1 + exp(psi))^b`` (Bernoulli and
binomial: ``a = y``, ``b = n``; negative binomial: ``a = y``, ``b = y + r``) becomes Gaussian
in ``psi`` given ``omega ~ PG(b, psi)`` (Polson, Scott and Windle 2013):

``p(y | psi, omega) ∝ exp(kappa psi - omega psi^2 / 2)``, ``kappa = a - b / 2``,

so with ``beta_j ~ N(0, s^2 I)`` each column's weights have the Gaussian conditional
``N(V Phi^T kappa_j, V)``, ``V = (Phi^T Omega_j Phi + I / s^2)^-1``. This module holds:

* :func:`draw_pg` — ``omega`` for a whole array, zero where ``b = 0`` (unobserved entries, no
  trials), from one key of the chain's Generator and a stream per block of rows (the samplers
  live in :mod:`.pg_draws`);
* :func:`gaussian_weights` — the weight draw for all ``J`` columns at once: every
  ``Phi^T Omega_j Phi`` from one matrix product, one batched Cholesky, compiled triangular
  solves;
* :func:`crt_column_totals` — Chinese-restaurant-table counts for the negative binomial
  dispersion;
* :class:`LogisticPG` — the plug-in base class the binomial, Bernoulli and negative binomial
  likelihoods derive from.

Everything here that touches all ``N x J`` entries runs by blocks of rows or columns of fixed
size on the sweep's threads (:mod:`ibp_rflvm.plumbing.blocks`): split over outputs, never over a sum, and
random draws from per-block streams, so the numbers do not depend on the thread count.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

from ..plumbing import blocks as _blocks
from ..plumbing.validation import _positions, check_counts
from ..samplers.crt import crt_draw
from .base import Likelihood, LikelihoodParams, Prepared
from .offsets import offset_of
from .pg_draws import draw_pg_exact, pg_mean, pg_var

#: Upper bound (bytes) on the packed precisions (``J x L(L+1)/2``) built at once; columns are
#: processed in blocks of this size so memory stays bounded for many columns.
_STACK_BYTES = 64 * 2**20


# --------------------------------------------------------------------------------------------
# Polya-gamma draws
# --------------------------------------------------------------------------------------------


def draw_pg(rng: np.random.Generator, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``omega ~ PG(b, c)`` elementwise; entries with ``b = 0`` get ``omega = 0`` exactly.

    ``PG(0, c)`` is the point mass at zero (this is how unobserved entries drop out of the
    weight update). Every ``b > 0`` is drawn exactly, as a sum of Devroye ``PG(1, c)`` draws and
    an exact draw for the fractional part, except shapes ``b >= 9`` (where ``K + 3`` Gamma draws
    cost less than the sum), drawn from ``K`` series terms and a remainder matching seven
    cumulants, within a total-variation distance of 1e-10 (see :mod:`.pg_series` and
    ``docs/polya_gamma.md``). One key comes from `rng` and each block of rows draws from
    its own stream of it (:mod:`ibp_rflvm.plumbing.blocks`), so a seed fixes the draws whatever the
    number of threads.
    """
    return draw_pg_exact(rng, b, c)


# --------------------------------------------------------------------------------------------
# Gaussian weight draws for many columns at once
# --------------------------------------------------------------------------------------------


@njit(cache=True)
def cholesky_draw(P, rhs, eps, u):
    """``u = P^-1 rhs + R^-T eps`` with ``P = R R^T``: one draw of ``N(P^-1 rhs, P^-1)`` from
    standard normals `eps` (`P` is the full symmetric precision; `u` is written in place)."""
    L = rhs.shape[0]
    R = np.linalg.cholesky(P)
    # Forward substitution R u = rhs, then u += eps: mean R^-1 rhs, unit covariance.
    for a in range(L):
        acc = rhs[a]
        for c in range(a):
            acc -= R[a, c] * u[c]
        u[a] = acc / R[a, a]
    for a in range(L):
        u[a] += eps[a]
    # Back substitution R^T x = u (in place).
    for a in range(L - 1, -1, -1):
        acc = u[a]
        for c in range(a + 1, L):
            acc -= R[c, a] * u[c]
        u[a] = acc / R[a, a]


@njit(cache=True, nogil=True)
def _draw_columns(packed, lo_r, lo_c, tau, rhs, eps, out, offset):
    """``out[:, offset + j] = P_j^-1 rhs_j + R_j^-T eps_j`` for each row ``j`` of `packed`.

    ``packed[j]`` is the lower triangle of ``Phi^T Omega_j Phi`` (order of `lo_r`, `lo_c`);
    ``P_j = that + tau I = R_j R_j^T``. One ``L x L`` work matrix serves every column, so the
    stack of precisions is never stored.
    """
    n, T = packed.shape
    L = rhs.shape[0]
    P = np.zeros((L, L))
    u = np.empty(L)
    for j in range(n):
        for t in range(T):
            v = packed[j, t]
            P[lo_r[t], lo_c[t]] = v
            P[lo_c[t], lo_r[t]] = v
        for a in range(L):
            P[a, a] += tau
        cholesky_draw(P, rhs[:, j], eps[:, j], u)
        for a in range(L):
            out[a, offset + j] = u[a]


@njit(cache=True, nogil=True)
def _row_outer_products(Phi, out):
    """``out[i]``: the lower triangle of ``phi_i phi_i^T``, row by row (``np.tril_indices`` order)."""
    N, L = Phi.shape
    for i in range(N):
        t = 0
        for a in range(L):
            pa = Phi[i, a]
            for c in range(a + 1):
                out[i, t] = pa * Phi[i, c]
                t += 1


def gaussian_weights(
    rng: np.random.Generator,
    Phi: np.ndarray,
    omega: np.ndarray,
    rhs: np.ndarray,
    prior_precision: float,
) -> np.ndarray:
    """One draw of every column ``beta_j ~ N(P_j^-1 rhs_j, P_j^-1)``, ``P_j = Phi^T Omega_j Phi + tau I``.

    `omega` is ``N x J`` (the diagonals of the ``Omega_j``), `rhs` is ``L x J``. All ``J``
    precisions come from ONE matrix product: `omega` transposed times the row outer products of
    ``Phi`` (lower triangle, ``N x L(L+1)/2``). The Cholesky factorisations and triangular
    solves then run in one compiled loop over the columns.

    The columns go in blocks of fixed size (``blocks.columns``, fewer when the packed precisions
    of that many would pass ``_STACK_BYTES``; both independent of the thread count) to the
    sweep's threads, each block one single-threaded product and one compiled loop. The normal
    draws are taken up front from `rng`, so the chain's stream does not depend on the blocks.
    """
    blocks = _blocks.current()
    N, L = Phi.shape
    J = omega.shape[1]
    # Drawn up front so the chain does not depend on the block size.
    eps = rng.standard_normal((L, J))
    beta = np.empty((L, J))
    rhs = np.ascontiguousarray(rhs, dtype=np.float64)
    lo_r, lo_c = np.tril_indices(L)
    if J == 1:
        # One column (a one-column data matrix): the direct product is cheaper than the
        # N x L(L+1)/2 row outer products.
        P = Phi.T @ (omega[:, :1] * Phi)
        _draw_columns(P[lo_r, lo_c][None], lo_r, lo_c, prior_precision, rhs, eps, beta, 0)
        return beta
    Phi = np.ascontiguousarray(Phi)
    outer = np.empty((N, lo_r.size))

    def outer_rows(_b: int, rows: slice) -> None:
        _row_outer_products(Phi[rows], outer[rows])

    blocks.run(outer_rows, blocks.row_slices(N))
    width = max(1, min(blocks.columns, _STACK_BYTES // (8 * lo_r.size)))

    def columns(_b: int, blk: slice) -> None:
        packed = omega[:, blk].T @ outer
        _draw_columns(packed, lo_r, lo_c, prior_precision, rhs[:, blk], eps[:, blk], beta, blk.start)

    blocks.run(columns, _blocks.slices(J, width))
    return beta


# --------------------------------------------------------------------------------------------
# Chinese restaurant table counts
# --------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _crt_columns(rng, Y0, observed, r, lo, hi, out):
    """``out[j] = sum_i CRT(y_ij, r_j)`` over the observed entries, for columns ``lo <= j < hi``."""
    N = Y0.shape[0]
    for i in range(N):
        for j in range(lo, hi):
            if observed[i, j]:
                y = int(Y0[i, j])
                if y > 0:
                    out[j] += crt_draw(rng, y, r[j])


def crt_column_totals(
    rng: np.random.Generator, Y0: np.ndarray, observed: np.ndarray, r: np.ndarray
) -> np.ndarray:
    """``L_j = sum_i CRT(y_ij, r_j)`` over the OBSERVED entries of each column.

    One key from `rng`; each block of columns draws from its own stream of it on the sweep's
    threads (:mod:`ibp_rflvm.plumbing.blocks`), so the totals do not depend on the thread count.
    """
    blocks = _blocks.current()
    J = Y0.shape[1]
    out = np.zeros(J)
    r = np.ascontiguousarray(r, dtype=np.float64)
    key = _blocks.step_key(rng)

    def part(block: int, cols: slice) -> None:
        _crt_columns(_blocks.stream(key, block), Y0, observed, r, cols.start, cols.stop, out)

    blocks.run(part, blocks.column_slices(J))
    return out


# --------------------------------------------------------------------------------------------
# Row log-likelihoods
# --------------------------------------------------------------------------------------------


# The row log-likelihood is the hot loop of every X, Z and W update (one call per frequency
# proposal on the full N x J matrix). libm's exp and log1p are scalar calls that stop LLVM from
# vectorising the loop; the branch-free polynomial softplus below vectorises (AVX2: about three
# times faster per call) and agrees with log(1 + e^x) to a few ulp.
_LN2 = math.log(2.0)
_INV_LN2 = 1.0 / _LN2
# Cody-Waite split of ln 2: n * _LN2_HI is exact for n < 2^20, so q keeps full precision.
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_SQRT2_M1 = math.sqrt(2.0) - 1.0
# Adding 1.5 * 2^52 rounds a double in [0, 2^51) to an integer held in its low mantissa bits.
_ROUND = 6755399441055744.0
_ROUND_BITS = int(np.float64(_ROUND).view(np.int64))
# Beyond this, log(1 + e^-a) < 1e-304; capping keeps 2^-n normal (subnormals are very slow).
_SOFTPLUS_CAP = 700.0
_EXP_MIN, _EXP_MAX = -708.0, 709.0
#: ``1 / (36 sqrt 3)``: the third derivative of softplus is at most ``1 / (6 sqrt 3)`` in size; over 3! = 6.
_THIRD_LOGISTIC = 1.0 / (36.0 * math.sqrt(3.0))
_FAST = {"contract"}  # fused multiply-add only: no reassociation, results stay reproducible


@intrinsic
def _as_float(typingctx, bits):
    """Reinterpret an int64 as the float64 with the same bits (vectorises, unlike ldexp)."""
    sig = types.float64(types.int64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float64))

    return sig, codegen


@intrinsic
def _as_bits(typingctx, value):
    """Reinterpret a float64 as the int64 with the same bits."""
    sig = types.int64(types.float64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.int64))

    return sig, codegen


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def exp_poly(x):
    """``e^x`` to about an ulp with a polynomial, so that loops calling it vectorise.

    ``x`` is clamped to ``[_EXP_MIN, _EXP_MAX]``: above, the result would overflow (the clamp
    returns about 8e307 instead of inf, which no likelihood can tell apart); below, it would be
    subnormal and slow, and ``e^-708`` differs from the true value by less than 1e-307.
    """
    x = min(max(x, _EXP_MIN), _EXP_MAX)
    # e^x = 2^n e^q, n = round(x / ln 2), q = x - n ln2 in [-ln2/2, ln2/2]; Taylor to q^13.
    shifted = x * _INV_LN2 + _ROUND
    n = _as_bits(shifted) - _ROUND_BITS
    nf = shifted - _ROUND
    q = (x - nf * _LN2_HI) - nf * _LN2_LO
    p = 1.0 / 6227020800.0
    p = p * q + 1.0 / 479001600.0
    p = p * q + 1.0 / 39916800.0
    p = p * q + 1.0 / 3628800.0
    p = p * q + 1.0 / 362880.0
    p = p * q + 1.0 / 40320.0
    p = p * q + 1.0 / 5040.0
    p = p * q + 1.0 / 720.0
    p = p * q + 1.0 / 120.0
    p = p * q + 1.0 / 24.0
    p = p * q + 1.0 / 6.0
    p = p * q + 0.5
    p = p * q + 1.0
    p = p * q + 1.0
    return p * _as_float((1023 + n) << 52)


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _exp_neg_abs(x):
    """``e^-|x|`` in ``(0, 1]``, from which softplus and the logistic are computed without
    cancellation on either side of 0."""
    return exp_poly(-min(abs(x), _SOFTPLUS_CAP))


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _entry(psi, Y0, off, trials, r, use_trials, k, i, j):
    """``(x, y, b)`` of entry ``(i, j)``, held in row ``k`` of `psi`: the linear predictor with
    the row's offset, the count, and the shape (``trials_ij``, or ``y + r_j`` for the NB)."""
    y = Y0[i, j]
    return psi[k, j] + off[i], y, (trials[i, j] if use_trials else y + r[j])


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _softplus(x):
    """``log(1 + e^x)`` as ``max(x, 0) + log1p(e^-|x|)`` with polynomial exp and log1p."""
    t = _exp_neg_abs(x)
    # log(1 + t) = 2 atanh(z), z = t / (2 + t); for 1 + t > sqrt 2 use log((1 + t) / 2) + ln 2,
    # so |z| <= 0.172 and the odd series to z^23 is exact to double precision.
    big = t > _SQRT2_M1
    z = (t - 1.0) / (t + 3.0) if big else t / (2.0 + t)
    z2 = z * z
    w = 1.0 / 23.0
    w = w * z2 + 1.0 / 21.0
    w = w * z2 + 1.0 / 19.0
    w = w * z2 + 1.0 / 17.0
    w = w * z2 + 1.0 / 15.0
    w = w * z2 + 1.0 / 13.0
    w = w * z2 + 1.0 / 11.0
    w = w * z2 + 1.0 / 9.0
    w = w * z2 + 1.0 / 7.0
    w = w * z2 + 1.0 / 5.0
    w = w * z2 + 1.0 / 3.0
    w = w * z2 + 1.0
    return max(x, 0.0) + (2.0 * z * w + (_LN2 if big else 0.0))


@njit(cache=True, nogil=True, error_model="numpy", fastmath=_FAST)
def _logistic_rows(psi, rows, Y0, observed, off, trials, r, use_trials, const, out):
    """``const_i + sum_j [y x - b softplus(x)]``, ``x = psi + off_i``, over observed entries of each
    row in `rows` (``off_i`` is the row's offset, 0 without one).

    ``b = trials_ij`` (binomial) when `use_trials`, else ``y_ij + r_j`` (negative binomial).
    Each row's terms go to a buffer first (a loop LLVM vectorises) and are then summed in order.
    """
    J = psi.shape[1]
    buf = np.empty(J)
    for k in range(rows.size):
        i = rows[k]
        for j in range(J):
            x, y, b = _entry(psi, Y0, off, trials, r, use_trials, k, i, j)
            term = y * x - b * _softplus(x)
            # A select, not a branch: whatever Y0 holds at unobserved entries is never added.
            buf[j] = term if observed[i, j] else 0.0
        acc = 0.0
        for j in range(J):
            acc += buf[j]
        out[k] = const[i] + acc


@njit(cache=True, nogil=True, error_model="numpy", fastmath=_FAST)
def _logistic_derivatives(psi, rows, Y0, observed, off, trials, r, use_trials, g, h, t):
    """``g = y - b s``, ``h = b s (1 - s)`` (``s = logistic(x)``, ``x = psi + off_i``) and
    ``t = b / (36 sqrt 3)``: the first and minus the second derivative of ``y x - b softplus(x)``
    at each entry of the rows `rows`, and a bound on the size of its third derivative over 6
    (which is at most ``b / (6 sqrt 3)``; :mod:`ibp_rflvm.targets.frequency_bound`); 0 where unobserved."""
    J = psi.shape[1]
    for k in range(rows.size):
        i = rows[k]
        for j in range(J):
            x, y, b = _entry(psi, Y0, off, trials, r, use_trials, k, i, j)
            u = _exp_neg_abs(x)
            inv = 1.0 / (1.0 + u)
            s = inv if x >= 0.0 else u * inv
            obs = observed[i, j]
            g[k, j] = y - b * s if obs else 0.0
            h[k, j] = b * u * inv * inv if obs else 0.0
            t[k, j] = b * _THIRD_LOGISTIC if obs else 0.0


def softplus(x: np.ndarray) -> np.ndarray:
    """``log(1 + exp(x)) = -log(1 - logistic(x))``, without overflow."""
    return np.logaddexp(0.0, x)


@njit(cache=True, nogil=True, error_model="numpy", fastmath=_FAST)
def _softplus_columns(psi, observed, lo, hi, out):
    """``out[j] = sum_i softplus(psi_ij)`` over the observed rows, for columns ``lo <= j < hi``."""
    N = psi.shape[0]
    for i in range(N):
        for j in range(lo, hi):
            v = _softplus(psi[i, j])
            out[j] += v if observed[i, j] else 0.0


def softplus_column_sums(psi: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """``sum_i softplus(psi_ij)`` over the observed rows of each column (the NB dispersion rate).

    Split over columns on the sweep's threads; each column is summed over rows in row order, as
    on one thread.
    """
    blocks = _blocks.current()
    J = psi.shape[1]
    out = np.zeros(J)
    psi = np.ascontiguousarray(psi)

    def part(_b: int, cols: slice) -> None:
        _softplus_columns(psi, observed, cols.start, cols.stop, out)

    blocks.run(part, blocks.column_slices(J))
    return out


# --------------------------------------------------------------------------------------------
# The shared plug-in
# --------------------------------------------------------------------------------------------


class LogisticPG(Likelihood):
    """Base of the likelihoods ``c(y) exp(psi)^y / (1 + exp(psi))^b`` with Gaussian weights.

    ``beta_j ~ N(0, prior_scale^2 I)``. Subclasses say what ``b`` is (:meth:`_trials`,
    :meth:`_r`), what ``log c(y)`` is per row (:meth:`_row_const`), and may add their own
    variables to :meth:`update_params`.
    """

    default_bias = True
    kind = "counts"
    has_psi_derivatives = True

    def __init__(self, prior_scale: float = 1.0):
        self.prior_scale = _positive(prior_scale, "prior_scale")

    # hooks ------------------------------------------------------------------------------
    def _trials(self, prep: Prepared) -> np.ndarray | None:
        """``N x J`` numbers of trials (0 where unobserved), or None when ``b = y + r``."""
        return None

    def _r(self, params: LikelihoodParams) -> np.ndarray:
        raise NotImplementedError

    def _row_const(self, params: LikelihoodParams, prep: Prepared) -> np.ndarray:
        raise NotImplementedError

    # interface --------------------------------------------------------------------------
    def loglik_rows(self, psi: np.ndarray, rows, params: LikelihoodParams, prep: Prepared) -> np.ndarray:
        args = (*self._entry_args(params, prep), self._row_const(params, prep))
        return _blocks.row_kernel(_logistic_rows, psi, rows, *args)

    def _entry_args(self, params: LikelihoodParams, prep: Prepared) -> tuple:
        """What the row kernels need, after ``psi, rows``, to make each entry's ``(x, y, b)``."""
        trials = self._trials(prep)
        use_trials = trials is not None
        if use_trials:
            r = np.zeros(0)
        else:
            trials = np.zeros((0, 0))
            r = self._r(params)
        off = prep.row_offset
        if off is None:
            off = np.zeros(prep.Y0.shape[0])
        return (prep.Y0, prep.observed, off, trials, r, use_trials)

    def psi_derivatives(self, psi, rows, params, prep):
        g, h, t = np.empty(psi.shape), np.empty(psi.shape), np.empty(psi.shape)
        args = self._entry_args(params, prep)
        _logistic_derivatives(np.ascontiguousarray(psi), np.asarray(rows, dtype=np.int64), *args, g, h, t)
        return g, h, t

    def _b(self, params: LikelihoodParams, prep: Prepared) -> np.ndarray:
        trials = self._trials(prep)
        if trials is not None:
            return trials
        r = self._r(params)
        Y0, observed = prep.Y0, prep.observed
        b = np.empty(Y0.shape)

        def part(_b: int, rows: slice) -> None:
            np.add(Y0[rows], r[None, :], out=b[rows])
            b[rows][~observed[rows]] = 0.0

        blocks = _blocks.current()
        blocks.run(part, blocks.row_slices(Y0.shape[0]))
        return b

    def _draw_beta(self, rng: np.random.Generator, Phi: np.ndarray, beta: np.ndarray, params, prep):
        """``omega ~ PG(b, psi)`` then ``beta ~ N(V Phi^T kappa, V)`` for every column.

        With row offsets ``o`` (``psi = Phi beta + o``) the Gaussian in ``psi`` gives the same
        precision and the mean term ``Phi^T (kappa - Omega o)``.
        """
        off = offset_of(prep)
        psi = _blocks.matmul_rows(Phi, beta)
        if off is not None:
            psi += off[:, None]
        b = self._b(params, prep)
        omega = draw_pg(rng, b, psi)
        del psi  # each N x J array freed here lowers the fit's peak (docs/memory.md)
        # kappa = where(observed, Y0, 0) - b / 2 (what Y0 holds where unobserved is never read),
        # computed in b's place when b is this call's own array: the same numbers without two
        # N x J temporaries.
        kappa = b if b is not self._trials(prep) else b.copy()
        del b
        _kappa_in_place(kappa, prep.Y0, prep.observed, omega, off)
        rhs = _blocks.matmul_columns(Phi.T, kappa)
        del kappa
        return gaussian_weights(rng, Phi, omega, rhs, self.prior_scale**-2)

    def init_params(self, rng: np.random.Generator, Phi: np.ndarray, prep: Prepared) -> LikelihoodParams:
        # One Gibbs step from beta = 0 lands in the bulk of the conditional posterior at once.
        params = self._initial(prep, np.zeros((Phi.shape[1], prep.Y0.shape[1])))
        return self.update_params(rng, Phi, params, prep)

    def _initial(self, prep: Prepared, beta: np.ndarray) -> LikelihoodParams:
        """The start from which :meth:`init_params` takes one Gibbs step: weights `beta` and the
        subclass's own variables."""
        return LikelihoodParams(beta=beta)

    def update_params(
        self, rng: np.random.Generator, Phi: np.ndarray, params: LikelihoodParams, prep: Prepared
    ) -> LikelihoodParams:
        return replace(params, beta=self._draw_beta(rng, Phi, params.beta, params, prep))


def _kappa_in_place(kappa: np.ndarray, Y0: np.ndarray, observed: np.ndarray, omega, off) -> None:
    """``kappa = y - b / 2`` where observed and ``-b / 2`` elsewhere, minus ``omega o`` with row
    offsets ``o``, written over ``b`` (given as `kappa`) by the sweep's row blocks."""

    def part(_b: int, rows: slice) -> None:
        k = kappa[rows]
        k *= 0.5
        np.subtract(Y0[rows], k, out=k, where=observed[rows])
        np.subtract(0.0, k, out=k, where=~observed[rows])
        if off is not None:
            k -= omega[rows] * off[rows, None]

    blocks = _blocks.current()
    blocks.run(part, blocks.row_slices(kappa.shape[0]))


def _positive(value, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a positive number; got {value!r}") from None
    if not (math.isfinite(v) and v > 0.0):
        raise ValueError(f"{name} must be a positive number; got {value!r}")
    return v


def check_finite_counts(Y: np.ndarray, what: str) -> None:
    """Finite, non-negative integer observed entries (NaN = unobserved)."""
    Y = np.asarray(Y, dtype=np.float64)
    bad = np.isinf(Y)
    if bad.any():
        raise ValueError(
            f"Y has {int(bad.sum())} infinite value(s) at (row, column) {_positions(bad)}; "
            f"{what} needs finite counts (use NaN for unobserved entries)"
        )
    check_counts(Y, what=what)


__all__ = [
    "LogisticPG",
    "check_finite_counts",
    "crt_column_totals",
    "draw_pg",
    "gaussian_weights",
    "pg_mean",
    "pg_var",
    "softplus",
    "softplus_column_sums",
]
