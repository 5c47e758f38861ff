"""Large Polya-gamma shapes: ``K`` exact series terms and a three-Gamma remainder matching seven
cumulants, within a proved total-variation bound (``docs/polya_gamma.md``, section 3).

``PG(b, c) = sum_{k >= 1} g_k / d_k`` with ``g_k ~ Gamma(b, 1)`` independent and
``d_k = 2 pi^2 ((k - 1/2)^2 + a^2)``, ``a = c / (2 pi)``. The first ``K`` terms ``H`` are drawn
exactly. The rest ``T`` has cumulants ``kappa_n = b (n-1)! S_n``, ``S_n = sum_{k > K} d_k^-n``,
i.e. ``kappa_n = (n-1)! int t^{n-2} dnu`` for the measure ``nu = b sum_{k>K} d_k^-2 delta_{1/d_k}``.
The three-point Gauss rule of ``nu`` (nodes ``theta_i``, weights ``W_i``) integrates
``t^0 .. t^5`` exactly, so ``T' = s + sum_i theta_i Gamma(W_i / theta_i^2)`` has the cumulants
``kappa_2 .. kappa_7`` of ``T``; the shift ``s`` gives it ``T``'s mean, and ``s >= 0`` because a
Gauss rule underestimates the integral of ``1/t`` (all its even derivatives are positive).

Bound (:func:`series_tv_bound`): with ``psi(u) = P(H + u in A)``, Taylor's theorem to order 8
around the common mean, the equal moments of orders 1-7, and ``|psi^(8)| <= ||f_H^(8)||_1 / 2``
(``f_H^(8)`` integrates to 0) give
``TV(H + T, H + T') <= ||f_H^(8)||_1 (E (T - mu)^8 + E (T' - mu)^8) / (2 8!)``. The Gauss rule also
underestimates ``int t^6 dnu``, so ``kappa_8(T') <= kappa_8(T)`` and ``E (T' - mu)^8 <= E (T - mu)^8``
(the eighth moment is a polynomial with positive coefficients in the cumulants). Further
``||f_H^(8)||_1 <= ||f_1^(8)||_1 = d_1^8 G_8(b)`` (``f_1`` the first term's density; convolving with
the other terms does not raise an L1 norm), ``G_8(b) = int |g^(8)|`` for the ``Gamma(b, 1)``
density ``g`` (:func:`gamma_deriv_norm`), and ``S_n <= (2 pi^2)^-n K^{1-2n} / (2n - 1)`` (convexity).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from scipy.special import eval_genlaguerre, zeta

_PI = math.pi
_TWO_PI2 = 2.0 * _PI * _PI
#: Total-variation target: ``n`` draws tell the series draw from an exact one with probability
#: at most ``n * TV_TARGET`` (1e-3 for 10^7 draws).
TV_TARGET = 1e-10
#: Taylor order of the bound (the remainder matches cumulants 2 .. _ORDER - 1).
_ORDER = 8
#: Series terms: at most this many (beyond, the exact sum is used).
K_MAX = 256
#: Smallest shape the series serves: ``G_8(b)`` is finite for ``b > 8`` only.
B_MIN = 9.0
#: Hurwitz zeta table ``_ZETA[K, m] = zeta(2m, K + 1/2) = sum_{k > K} (k - 1/2)^{-2m}``.
_M_MAX = 48
#: Relative cut of the remainder's sums: the matched cumulants are then within about 1e-14 of the
#: remainder's (tested), which moves the total-variation bound by far less than 1e-14.
_SUM_TOL = 1e-15
#: Scratch floats :func:`jstar_series` needs beyond its 14.
WORK_EXTRA = _M_MAX
_BINOM = np.array(
    [[math.comb(n + i - 1, i) if n else 0.0 for i in range(_M_MAX)] for n in range(_ORDER)], dtype=np.float64
)
_ZETA = zeta(2.0 * np.arange(_M_MAX)[None, :], np.arange(K_MAX + 1)[:, None] + 0.5)
_ZETA[:, 0] = 0.0  # m = 0 is never read


def gamma_deriv_norm(m: int, b: float) -> float:
    """``int |g^(m)|`` for the ``Gamma(b, 1)`` density ``g`` (``b > m``), from the roots of ``g^(m)``.

    Rodrigues: ``(x^A e^-x)^(m) = m! x^{A-m} e^-x L_m^{(A-m)}(x)`` (generalised Laguerre), so
    ``g^(m)`` vanishes at the ``m`` roots of ``L_m^{(b-1-m)}`` (the eigenvalues of its Jacobi
    matrix) and ``g^(m-1)`` is monotone between them and 0 at 0 and infinity: the integral is
    ``2 sum |g^(m-1)(root)|``.
    """
    A = b - 1.0
    alpha = A - m
    i = np.arange(m, dtype=np.float64)
    off = np.sqrt(i[1:] * (i[1:] + alpha))
    roots = np.linalg.eigvalsh(np.diag(2.0 * i + alpha + 1.0) + np.diag(off, 1) + np.diag(off, -1))
    total = 0.0
    for x in roots:
        lag = abs(float(eval_genlaguerre(m - 1, alpha + 1.0, x)))
        total += math.exp(math.lgamma(m) + (alpha + 1.0) * math.log(x) - x - math.lgamma(b) + math.log(lag))
    return 2.0 * total


#: ``b^4 G_8(b)`` at these shapes; it decreases in ``b`` (checked on a fine grid in the suite and
#: ``docs/polya_gamma.md``) towards ``E|He_8(Z)| = 96.0``, so the value at the largest edge below
#: ``b`` bounds it.
_G8_EDGES = np.array(
    [9.0, 9.5, 10.0, 11.0, 12.0, 13.0, 14.0, 16.0, 18.0, 20.0, 24.0, 28.0, 32.0, 40.0, 48.0, 64.0, 96.0,
     128.0, 192.0, 256.0, 512.0, 1024.0, 4096.0, 16384.0, 65536.0]
)  # fmt: skip
_G8_SCALED = np.array([b**4 * gamma_deriv_norm(_ORDER, b) for b in _G8_EDGES])


@njit(cache=True)
def _g8_upper(b):
    """Upper bound on ``G_8(b)`` for ``b >= 9``."""
    i = np.searchsorted(_G8_EDGES, b, side="right") - 1
    return _G8_SCALED[i] / (b * b * b * b)


@njit(cache=True)
def tv_factors(b, c, K):
    """``(d_1^8, E (T - mu)^8)``: the factors of :func:`series_tv_bound` besides ``G_8(b)``, in
    arithmetic alone, so that the JAX backend's draws use this very function
    (``tv_factors.py_func``) on arrays. Each cumulant of the remainder is bounded by
    ``b (n-1)! (2 pi^2)^-n K^{1-2n} / (2n - 1)``."""
    # kappa_n / b = (n-1)! (2 pi^2)^-n K^{1-2n} / (2n - 1), n = 2 .. 8.
    x = 1.0 / (_TWO_PI2 * K * K)
    base = b * K * x
    k2 = base * x / 3.0
    k3 = base * x**2 * 2.0 / 5.0
    k4 = base * x**3 * 6.0 / 7.0
    k5 = base * x**4 * 24.0 / 9.0
    k6 = base * x**5 * 120.0 / 11.0
    k8 = base * x**7 * 5040.0 / 15.0
    m8 = (
        k8 + 28.0 * k6 * k2 + 56.0 * k5 * k3 + 35.0 * k4 * k4
        + 210.0 * k4 * k2 * k2 + 280.0 * k3 * k3 * k2 + 105.0 * k2**4
    )  # fmt: skip
    d1 = 0.5 * (_PI * _PI + c * c)
    return d1**8, m8


@njit(cache=True)
def orthogonal_cubic(m0, m1, m2, m3, m4, m5):
    """``(p0, p1, p2)`` of the monic ``p(t) = t^3 + p2 t^2 + p1 t + p0`` orthogonal to 1, t, t^2
    under the moments ``m0 .. m5``: the Hankel system ``[m0 m1 m2; m1 m2 m3; m2 m3 m4] (p0, p1,
    p2) = -(m3, m4, m5)`` by Cramer's rule, in arithmetic alone (the JAX draws use its Python
    function on arrays)."""
    det = m0 * (m2 * m4 - m3 * m3) - m1 * (m1 * m4 - m3 * m2) + m2 * (m1 * m3 - m2 * m2)
    r0, r1, r2 = -m3, -m4, -m5
    p0 = (r0 * (m2 * m4 - m3 * m3) - m1 * (r1 * m4 - m3 * r2) + m2 * (r1 * m3 - m2 * r2)) / det
    p1 = (m0 * (r1 * m4 - m3 * r2) - r0 * (m1 * m4 - m3 * m2) + m2 * (m1 * r2 - r1 * m2)) / det
    p2 = (m0 * (m2 * r2 - r1 * m3) - m1 * (m1 * r2 - r1 * m2) + r0 * (m1 * m3 - m2 * m2)) / det
    return p0, p1, p2


@njit(cache=True)
def series_tv_bound(b, c, K):
    """Bound on the total-variation distance between :func:`jstar_series`'s draw (``K`` exact
    terms) and ``PG(b, c)``, ``b >= 9``: ``d_1^8 G_8(b) E (T - mu)^8 / 8!`` (:func:`tv_factors`);
    infinite below 9."""
    if b < B_MIN:
        return math.inf
    d8, m8 = tv_factors(b, c, K)
    return d8 * _g8_upper(b) * m8 / 40320.0


@njit(cache=True)
def series_terms(b, c, k_cap):
    """Smallest ``K <= k_cap`` with :func:`series_tv_bound` under :data:`TV_TARGET`, else 0.

    ``K`` is also at least ``sqrt(14) a - 1/2``, where the remainder's sums converge fast
    (:func:`tail_sums`). The bound's leading term, ``105 kappa_2^4``, gives the starting ``K``.
    """
    if b < B_MIN:
        return 0
    a = abs(c) / (2.0 * _PI)
    d1 = 0.5 * (_PI * _PI + c * c)
    lead = d1**8 * _g8_upper(b) * 105.0 * (b / (3.0 * _TWO_PI2**2)) ** 4 / 40320.0
    K = max(1.0, math.ceil(math.sqrt(14.0) * a - 0.5), math.floor((lead / TV_TARGET) ** (1.0 / 12.0)))
    while K <= k_cap:
        if series_tv_bound(b, c, K) <= TV_TARGET:
            return int(K)
        K += 1.0
    return 0


@njit(cache=True)
def tail_sums(c, K, out):
    """``out[n] = sum_{k > K} d_k^-n`` for ``n = 1 .. 7`` (``(K + 1/2)^2 >= 14 a^2``; `out` has at
    least ``14 + _M_MAX`` entries, the ones from 14 on scratch).

    ``((k - 1/2)^2 + a^2)^-n = sum_i C(n+i-1, i) (-a^2)^i (k - 1/2)^{-2n-2i}``, so each sum is an
    alternating series in the tabulated Hurwitz zeta values; its terms shrink by at least
    ``7 a^2 / (K + 1/2)^2 <= 1/2`` from the first, and it is cut when they fall under ``_SUM_TOL`` of it.
    """
    a2 = (c / (2.0 * _PI)) ** 2
    pw = out[14:]  # (-a^2)^i, filled as far as needed
    pw[0] = 1.0
    filled = 0
    for n in range(1, _ORDER):
        s = 0.0
        for i in range(_M_MAX - n):
            if i > filled:
                pw[i] = -pw[i - 1] * a2
                filled = i
            term = _BINOM[n, i] * pw[i] * _ZETA[K, n + i]
            s += term
            if abs(term) <= _SUM_TOL * s:
                break
        out[n] = s * _TWO_PI2**-n


@njit(cache=True)
def _cubic_root(p0, p1, p2, rad, phi, k):
    """Root ``k`` of ``t^3 + p2 t^2 + p1 t + p0`` (three real roots), trigonometric form and two
    Newton steps."""
    t = 2.0 * rad * math.cos(phi - 2.0 * _PI * k / 3.0) - p2 / 3.0
    for _ in range(2):
        t -= (((t + p2) * t + p1) * t + p0) / ((3.0 * t + 2.0 * p2) * t + p1)
    return t


@njit(cache=True)
def remainder_law(b, c, K, work):
    """The three-Gamma remainder: ``work[8 + 2i] = theta_i``, ``work[9 + 2i] = alpha_i``
    (``work[:8]`` holds the sums of :func:`tail_sums`); returns the shift ``s``.

    Gauss rule of ``nu`` from its moments ``int t^j dnu = b S_{j+2}``, ``j = 0 .. 5``, scaled by
    ``tau = S_3 / S_2`` for conditioning: the monic orthogonal cubic from the Hankel system, its
    three real roots, the weights from the moments 0-2 (Lagrange form).
    """
    tail_sums(c, K, work)
    S2 = work[2]
    tau = work[3] / S2
    m0, m1, m2 = 1.0, 1.0, work[4] / (S2 * tau**2)
    m3, m4, m5 = work[5] / (S2 * tau**3), work[6] / (S2 * tau**4), work[7] / (S2 * tau**5)
    p0, p1, p2 = orthogonal_cubic(m0, m1, m2, m3, m4, m5)
    P = p1 - p2 * p2 / 3.0
    Q = 2.0 * p2**3 / 27.0 - p2 * p1 / 3.0 + p0
    rad = math.sqrt(-P / 3.0)
    phi = math.acos(min(1.0, max(-1.0, -Q / (2.0 * rad**3)))) / 3.0
    t0 = _cubic_root(p0, p1, p2, rad, phi, 0)
    t1 = _cubic_root(p0, p1, p2, rad, phi, 1)
    t2 = _cubic_root(p0, p1, p2, rad, phi, 2)
    shift = b * work[1]
    for i in range(3):
        ti, tj, tk = (t0, t1, t2) if i == 0 else ((t1, t2, t0) if i == 1 else (t2, t0, t1))
        w = (m2 - (tj + tk) * m1 + tj * tk * m0) / ((ti - tj) * (ti - tk))
        theta = tau * ti
        alpha = b * S2 * w / (theta * theta)
        work[8 + 2 * i] = theta
        work[9 + 2 * i] = alpha
        shift -= alpha * theta
    return max(shift, 0.0)


@njit(cache=True)
def jstar_series(rng, b, c, K, work):
    """``PG(b, c)``: the first ``K`` terms ``g_k / d_k`` exactly, the rest as :func:`remainder_law`
    (`work`: a scratch array of ``14 + _M_MAX`` floats)."""
    a2 = (c / (2.0 * _PI)) ** 2
    acc = 0.0
    for k in range(K):
        acc += rng.standard_gamma(b) / (_TWO_PI2 * ((k + 0.5) ** 2 + a2))
    acc += remainder_law(b, c, K, work)
    for i in range(3):
        acc += work[8 + 2 * i] * rng.standard_gamma(work[9 + 2 * i])
    return acc
