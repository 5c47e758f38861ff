"""Polya-gamma draws ``PG(b, c)`` for every shape ``b > 0``: exact, or within a stated bound.

Notation (Polson, Scott and Windle 2013): ``J*(h) = sum_k g_k / lambda_k`` with
``g_k ~ Gamma(h, 1)`` independent and ``lambda_k = (2k - 1)^2 pi^2 / 8``; its Laplace transform is
``cosh(sqrt(2 s))^-h``. ``J*(h, z)`` is ``J*(h)`` tilted by ``exp(-z^2 x / 2)``, and
``PG(b, c) = J*(b, |c| / 2) / 4``. Shapes add: ``PG(b, c) = PG(1, c) + ... + PG(h, c)``.

The regimes (``docs/polya_gamma.md`` has the derivations and the measurements):

* ``b = n + h`` with ``b < 9``, or where it is cheaper (very large ``|c|``): the sum of ``n``
  exact ``PG(1, c)`` draws (Devroye's alternating-series sampler, :func:`_jstar_one`) and one
  exact ``PG(h, c)`` draw for the fractional part ``h in (0, 1)`` (:func:`_jstar_frac`, an
  alternating-series sampler built on the small-``x`` series of the ``J*(h)`` density, with an
  envelope proved below; below ``h = 1e-20`` it is cut at ``x = 6``, a change of law under
  ``1e-20``).
* ``b >= 9``: ``K`` exact Gamma terms of the series and the rest as three Gamma variables and a
  shift matching the rest's first seven cumulants (:mod:`.pg_series`). Its total-variation
  distance from ``PG(b, c)`` is at most :func:`.pg_series.series_tv_bound` (a Taylor bound,
  eighth order), and ``K`` is the smallest that brings it under :data:`TV_TARGET` (2-9 terms for
  ``|c| <= 10``); where that ``K`` would cost more than the exact sum, the exact sum is used.

Every random number derives from the chain's ``numpy.random.Generator``: :func:`draw_pg_exact`
takes one key from it and draws each block of rows from that key's Philox stream for the block
(:mod:`ibp_rflvm.plumbing.blocks`), so the blocks can run on several threads and a seed still fixes every
draw, whatever the thread count; a restored Generator state repeats them.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..plumbing import blocks as _blocks
from .pg_series import B_MIN, K_MAX, TV_TARGET, WORK_EXTRA, jstar_series, series_terms

__all__ = ["TV_TARGET", "draw_pg_exact", "pg_mean", "pg_var"]

_PI = math.pi
_KAPPA = _PI**2 / 8.0  # lambda_1: the slowest exponential rate of J*(h)
_LAMBDA2 = 9.0 * _KAPPA
_LOG_2PI = math.log(2.0 * _PI)
#: Devroye's split point for ``J*(1, z)`` (Polson, Scott and Windle 2013, section 4).
_T_ONE = 0.64
#: Fractional shapes below this are drawn on ``(0, 6]`` only (see :func:`_frac_setup`).
_H_TINY = 1e-20
#: Fractional shapes below this add 0 (``h^2`` would underflow; see :func:`_draw_pg_kernel`).
_H_ZERO = 1e-150
#: Cost of one Gamma draw over one ``PG(1, c)`` draw (measured: 0.31-0.38), and of the series
#: draw's set-up (the remainder's sums and Gauss rule) in ``PG(1, c)`` draws: the series regime is
#: used only when its ``K + 3`` Gamma draws and set-up cost less than the exact sum.
_GAMMA_PER_PG1 = 0.35
_SERIES_SETUP = 1.5


# --------------------------------------------------------------------------------------------
# Closed forms
# --------------------------------------------------------------------------------------------


def pg_mean(b: np.ndarray | float, c: np.ndarray | float) -> np.ndarray:
    """``E[PG(b, c)] = b / (2c) tanh(c / 2)``, with its limit ``b / 4`` at ``c = 0``."""
    b = np.asarray(b, dtype=np.float64)
    c = np.abs(np.asarray(c, dtype=np.float64))
    small = c < 1e-4
    safe = np.where(small, 1.0, c)
    # Taylor series near 0 avoids 0/0; its next term is O(c^4) ~ 1e-16 there.
    return np.where(small, b * (0.25 - c * c / 48.0), b / (2.0 * safe) * np.tanh(safe / 2.0))


def pg_var(b: np.ndarray | float, c: np.ndarray | float) -> np.ndarray:
    """``Var[PG(b, c)] = b (sinh c - c) / (4 c^3 cosh^2(c / 2))``, ``b (1/24 - c^2/120)`` near 0."""
    b = np.asarray(b, dtype=np.float64)
    c = np.abs(np.asarray(c, dtype=np.float64))
    small = c < 1e-3
    safe = np.where(small, 1.0, c)
    th = np.tanh(safe / 2.0)
    # (sinh c - c) / cosh^2(c/2) = 2 tanh(c/2) - c sech^2(c/2), which never overflows.
    closed = (2.0 * th - safe * (1.0 - th * th)) / (4.0 * safe**3)
    return b * np.where(small, 1.0 / 24.0 - c * c / 120.0, closed)


# --------------------------------------------------------------------------------------------
# Proposals shared by the exact samplers
# --------------------------------------------------------------------------------------------


@njit(cache=True)
def _ig_cdf(t, z, h):
    """``P(X <= t)`` for ``X ~ IG(mean h / z, shape h^2)`` (``z = 0``: the Levy law of scale ``h^2``)."""
    r = math.sqrt(2.0 * t)
    if z == 0.0:
        return math.erfc(h / r)
    lower = 0.5 * math.erfc((h - t * z) / r)
    arg = (t * z + h) / r
    # e^{2hz} erfc(arg) / 2; once erfc underflows the product is below 1e-300 of the first term.
    upper = 0.0 if arg > 26.0 else math.exp(2.0 * h * z) * 0.5 * math.erfc(arg)
    return lower + upper


@njit(cache=True)
def _ig_unit_truncated(rng, zeta, tmax):
    """``Y ~ IG(mean 1 / zeta, shape 1)`` conditioned on ``Y <= tmax`` (``zeta = 0``: Levy).

    Mean above the cut: the Levy law ``1 / N^2`` conditioned on ``|N| >= tmax^-1/2``, then kept
    with probability ``exp(-zeta^2 Y / 2)`` (that factor turns the Levy density into the inverse
    Gaussian one, up to a constant). Otherwise the Michael-Schucany-Haas draw, repeated until it
    falls under the cut.
    """
    if zeta * tmax < 1.0:
        a = 1.0 / math.sqrt(tmax)
        while True:
            if a < 1.0:
                # |N| >= a by plain rejection (probability >= 0.317 of acceptance).
                n = rng.standard_normal()
                while abs(n) < a:
                    n = rng.standard_normal()
                y = 1.0 / (n * n)
            else:
                # Normal tail beyond a (Devroye 1986, IX.1.2): a + E1 / a, kept if E1^2 <= 2 a^2 E2.
                e1 = rng.standard_exponential()
                e2 = rng.standard_exponential()
                while e1 * e1 > 2.0 * a * a * e2:
                    e1 = rng.standard_exponential()
                    e2 = rng.standard_exponential()
                n = a + e1 / a
                y = 1.0 / (n * n)
            if zeta == 0.0 or rng.random() <= math.exp(-0.5 * zeta * zeta * y):
                return y
    mu = 1.0 / zeta
    while True:
        n = rng.standard_normal()
        w = 0.5 * mu * n * n
        # The smaller root mu (1 + w - sqrt(w^2 + 2w)), written without cancellation.
        y = mu / (1.0 + w + math.sqrt(w * (w + 2.0)))
        if rng.random() * (mu + y) > mu:
            y = mu * mu / y
        if y <= tmax:
            return y


# --------------------------------------------------------------------------------------------
# J*(1, z): Devroye's sampler (Polson, Scott and Windle 2013, algorithm of section 4)
# --------------------------------------------------------------------------------------------


@njit(cache=True)
def _one_weight(z):
    """Probability of the right-hand (exponential) proposal of :func:`_jstar_one` at tilt ``z``."""
    k = _KAPPA + 0.5 * z * z
    p = 0.5 * _PI / k * math.exp(-k * _T_ONE)
    q = 2.0 * math.exp(-z) * _ig_cdf(_T_ONE, z, 1.0)
    return p / (p + q)


@njit(cache=True)
def _jstar_one(rng, z, p_right):
    """One exact draw of ``J*(1, z)``.

    The density of ``J*(1)`` is ``sum_n (-1)^n a_n(x)`` with, left of ``t = 0.64``,
    ``a_n = pi (n + 1/2) (2 / (pi x))^{3/2} exp(-2 (n + 1/2)^2 / x)`` and, right of it,
    ``a_n = pi (n + 1/2) exp(-(n + 1/2)^2 pi^2 x / 2)``. Envelope ``cosh(z) e^{-z^2 x / 2} a_0(x)``:
    an inverse Gaussian ``IG(1/z, 1)`` piece on ``(0, t]`` and an exponential of rate
    ``pi^2/8 + z^2/2`` beyond. Both series alternate with terms decreasing from ``n = 0`` on
    their side of ``t``, so their partial sums bracket the density: accept ``X`` when ``U`` falls
    under an odd partial sum of ``a_n / a_0``, reject when it lies above an even one.
    """
    k = _KAPPA + 0.5 * z * z
    while True:
        if rng.random() < p_right:
            x = _T_ONE + rng.standard_exponential() / k
            # a_n / a_0 = (2n + 1) exp(-n (n + 1) pi^2 x / 2) on the right of t ...
            rate = 0.5 * _PI * _PI * x
        else:
            x = _ig_unit_truncated(rng, z, _T_ONE)
            # ... and (2n + 1) exp(-2 n (n + 1) / x) on the left.
            rate = 2.0 / x
        u = rng.random()
        s = 1.0
        n = 0
        while True:
            n += 1
            a = (2.0 * n + 1.0) * math.exp(-n * (n + 1.0) * rate)
            if n % 2 == 1:
                s -= a
                if u <= s:
                    return x
            else:
                s += a
                if u > s:
                    break


# --------------------------------------------------------------------------------------------
# J*(h, z), 0 < h < 1: small-x alternating series with a proved envelope
# --------------------------------------------------------------------------------------------
#
# Density (expand cosh(s)^-h = 2^h e^{-hs} (1 + e^{-2s})^-h binomially, s = sqrt(2 lambda), and
# invert each e^{-(2n+h)s}, the transform of a Levy first-passage time):
#
#   f(x | h) = 2^h / Gamma(h) sum_n (-1)^n a_n(x),
#   a_n(x) = Gamma(n + h) / n! (2n + h) / sqrt(2 pi x^3) exp(-(2n + h)^2 / (2x)).
#
# Ratio a_{n+1} / a_n <= exp(2 / (2n + h) - 2 (2n + 1 + h) / x) for h <= 1, which is <= 1 for
# every n >= m once x <= (2m + h)(2m + 1 + h). So with m(x) that smallest m, every partial sum
# S_N with N + 1 >= m(x) brackets f: above it for N even, below for N odd.
#
# Left envelope (x <= t): f <= 2^h/Gamma(h) a_0 while x <= (2 + h)(3 + h) (terms decrease from
# n = 1) and also up to min(42, 2 (3 + h) / log q), q = (1 + h)(4 + h) / (2 (2 + h)) (terms
# decrease from n = 3 and a_2 <= a_1). Tilted, 2^h/Gamma(h) a_0 is (2 cosh z)^h e^{-hz} times the
# IG(h / z, h^2) density.
#
# Right envelope (x > t > 1): split J = A + R, A = g_1 / lambda_1 ~ Gamma(h, kappa). The part of
# f(x) = E[f_R(x - A)] with A >= 1 is at most kappa^h / Gamma(h) e^{-kappa x} E[e^{kappa R}],
# E[e^{kappa R}] = prod_{k >= 2} (1 - 1/(2k-1)^2)^-h = (4/pi)^h; the part with A < 1 is at most
# sup_{r >= x-1} f_R(r). For that density: a Gamma(h, l') density is <= (l'/l)^h times the
# Gamma(h, l) density when l' >= l, so with m = ceil(1/h) and s = m h >= 1, the sum of terms
# k = 2..m+1 has a density <= C Gamma(s, lambda_2), C = prod_{k=2}^{m+1} ((2k - 1)/3)^{2h}; then
# f_R(r) <= D r^{s-1} e^{-lambda_2 r}, D = C lambda_2^s (32 / (3 pi))^h / Gamma(s), using
# prod_{k >= 3} (1 - 9/(2k-1)^2) = 3 pi / 32. Hence, for x >= t:
#
#   f(x | h) <= K_h e^{-kappa x},
#   K_h = (pi/2)^h / Gamma(h) + D (t - 1)^{s-1} e^{lambda_2 - 8 kappa t}.


@njit(cache=True)
def _frac_setup(h):
    """Split point ``t`` and ``log K_h`` of the right envelope for ``J*(h)``, ``0 < h < 1``.

    Below ``h = 1e-20`` the right envelope's constant overflows; there the draw is restricted
    to ``x <= 6`` (``log K_h = -inf``: no right proposals), which changes its law by at most
    ``P(J*(h, z) > 6) <= cosh(z)^h E[J*(h)] / 6 = cosh(z)^h h / 6`` (Markov), under ``1e-20``.
    """
    if h < _H_TINY:
        return 6.0, -math.inf
    m = np.ceil(1.0 / h)  # a float: 1 / h may exceed the int64 range
    s = m * h
    # log prod_{k=2}^{m+1} (2k - 1) = log((2m + 1)!!) = lgamma(2m + 2) - m log 2 - lgamma(m + 1).
    log_odd = math.lgamma(2.0 * m + 2.0) - m * math.log(2.0) - math.lgamma(m + 1.0)
    log_d = (
        2.0 * h * (log_odd - m * math.log(3.0))
        + s * math.log(_LAMBDA2)
        + h * math.log(32.0 / (3.0 * _PI))
        - math.lgamma(s)
    )
    first = h * math.log(0.5 * _PI) - math.lgamma(h)
    # t = 2 is near the cheapest envelope for h >= 0.1; smaller h need a later split for the
    # D term to be e^-5 of the first (one fixed-point step for the (t-1)^{s-1} factor).
    t = max(2.0, (log_d + _LAMBDA2 - first + 5.0) / (8.0 * _KAPPA))
    t = max(2.0, (log_d + (s - 1.0) * math.log(t - 1.0) + _LAMBDA2 - first + 5.0) / (8.0 * _KAPPA))
    q = (1.0 + h) * (4.0 + h) / (2.0 * (2.0 + h))
    log_q = math.log(q)  # > 0, but rounds to 0 for h below about 1e-16 (the cap is then 42)
    t = min(t, 42.0) if log_q <= 0.0 else min(t, 42.0, 2.0 * (3.0 + h) / log_q)
    second = log_d + (s - 1.0) * math.log(t - 1.0) + _LAMBDA2 - 8.0 * _KAPPA * t
    big = max(first, second)
    log_k = big + math.log(math.exp(first - big) + math.exp(second - big))
    return t, log_k


@njit(cache=True)
def _frac_weight(h, z, t, log_k):
    """Probability of the right-hand proposal of :func:`_jstar_frac` (masses over ``cosh(z)^h``)."""
    rate = _KAPPA + 0.5 * z * z
    left = math.exp(h * (math.log(2.0) - z)) * _ig_cdf(t, z, h)
    right = math.exp(log_k - rate * t) / rate
    return right / (left + right)


@njit(cache=True)
def _frac_series_accept(rng_u, x, h, scale):
    """Whether ``U <= scale * sum_n (-1)^n a_n(x) / a_0(x)``, decided by bracketing partial sums."""
    s = 1.0
    coef = 1.0  # Gamma(n + h) / (Gamma(h) n!)
    n = 0
    if x <= (2.0 + h) * (3.0 + h) and rng_u > scale:
        return False
    while True:
        n += 1
        coef *= (n - 1.0 + h) / n
        r = coef * (2.0 * n + h) / h * math.exp(-2.0 * n * (n + h) / x)
        if n % 2 == 1:
            s -= r
        else:
            s += r
        if x <= (2.0 * n + 2.0 + h) * (2.0 * n + 3.0 + h):
            if n % 2 == 1:
                if rng_u <= scale * s:
                    return True
            elif rng_u > scale * s:
                return False
        if r == 0.0:
            # Terms underflowed (x tiny): the partial sum is the density ratio to the last bit.
            return rng_u <= scale * s


@njit(cache=True)
def _jstar_frac(rng, h, z, t, log_k, p_right):
    """One exact draw of ``J*(h, z)`` for ``0 < h < 1`` (constants from :func:`_frac_setup`)."""
    rate = _KAPPA + 0.5 * z * z
    h2 = h * h
    while True:
        if rng.random() < p_right:
            x = t + rng.standard_exponential() / rate
            # f / g_R = 2^h h (2 pi x^3)^-1/2 e^{kappa x - h^2/(2x)} / K_h * sum (-1)^n a_n / a_0.
            scale = math.exp(
                h * math.log(2.0) + math.log(h) - 0.5 * _LOG_2PI - 1.5 * math.log(x)
                + _KAPPA * x - 0.5 * h2 / x - log_k
            )  # fmt: skip
        else:
            # IG(h / z, h^2) = h^2 IG(1 / (h z), 1), cut at t.
            x = h2 * _ig_unit_truncated(rng, h * z, t / h2)
            scale = 1.0
        if _frac_series_accept(rng.random(), x, h, scale):
            return x


# --------------------------------------------------------------------------------------------
# The array kernel
# --------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _draw_pg_kernel(rng, b, c, out):
    """``out[i, j] ~ PG(b[i, j], c[i, j])``, column by column (a negative binomial's fractional
    shape is one per column, so its envelope constants are computed once per column)."""
    N, J = b.shape
    last_h = -1.0
    t = log_k = 0.0
    work = np.empty(14 + WORK_EXTRA)
    for j in range(J):
        for i in range(N):
            bb = b[i, j]
            if bb == 0.0:
                out[i, j] = 0.0
                continue
            z = 0.5 * abs(c[i, j])
            n = math.floor(bb)
            h = bb - n
            if bb >= B_MIN:
                # Only K whose Gamma draws and set-up cost less than the n exact PG(1, c) draws.
                K = series_terms(bb, c[i, j], min(K_MAX, (n - _SERIES_SETUP) / _GAMMA_PER_PG1 - 3.0))
                if K > 0:
                    out[i, j] = jstar_series(rng, bb, c[i, j], K, work)
                    continue
            x = 0.0
            if n > 0:
                p_one = _one_weight(z)
                for _ in range(int(n)):
                    x += _jstar_one(rng, z, p_one)
            # Below _H_ZERO the fractional part's draw is below 1e-300 except with probability
            # under 1e-145 (its Gamma(h) terms exceed 1e-300 with probability about 690 h): 0.
            if h >= _H_ZERO:
                if h != last_h:
                    t, log_k = _frac_setup(h)
                    last_h = h
                x += _jstar_frac(rng, h, z, t, log_k, _frac_weight(h, z, t, log_k))
            out[i, j] = 0.25 * x


def draw_pg_exact(
    rng: np.random.Generator, b: np.ndarray, c: np.ndarray, blocks: _blocks.Blocks | None = None
) -> np.ndarray:
    """``omega ~ PG(b, c)`` elementwise (``b >= 0``; ``PG(0, c)`` is the point mass at 0).

    The last axis is the columns, the rest the rows (a 1-D array is one column). One key is drawn
    from `rng`; each block of rows (`blocks`, default :func:`ibp_rflvm.plumbing.blocks.current`) draws
    from its own stream of that key, so the result is the same with any number of threads.
    """
    blocks = _blocks.current() if blocks is None else blocks
    b = np.asarray(b, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    if not np.all(np.isfinite(b)) or np.any(b < 0.0):
        bad = int(np.sum(~np.isfinite(b) | (b < 0.0)))
        raise ValueError(f"Polya-gamma shapes b must be finite and >= 0; {bad} are not")
    c = np.broadcast_to(c, b.shape)
    if not np.all(np.isfinite(c)):
        raise ValueError(f"Polya-gamma tilts c must be finite; {int(np.sum(~np.isfinite(c)))} are not")
    shape = b.shape
    if b.size == 0:
        return np.zeros(shape)
    b2 = np.ascontiguousarray(b.reshape(-1, shape[-1]) if b.ndim >= 2 else b.reshape(-1, 1))
    c2 = np.ascontiguousarray(c).reshape(b2.shape)
    out = np.empty(b2.shape)
    key = _blocks.step_key(rng)

    def part(block: int, rows: slice) -> None:
        _draw_pg_kernel(_blocks.stream(key, block), b2[rows], c2[rows], out[rows])

    blocks.run(part, blocks.row_slices(b2.shape[0]))
    return out.reshape(shape)
