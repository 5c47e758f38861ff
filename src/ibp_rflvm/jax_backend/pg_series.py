"""Large Polya-gamma shapes in JAX: ``K`` exact Gamma terms and the three-Gamma remainder.

The law is that of :mod:`ibp_rflvm.likelihoods.pg_series` (derivations and the total-variation
bound in ``docs/polya_gamma.md``, section 3): ``PG(b, c) = sum_k g_k / d_k``, ``g_k ~ Gamma(b, 1)``,
``d_k = 2 pi^2 ((k - 1/2)^2 + a^2)``, ``a = c / (2 pi)``; the first ``K`` terms exactly, the rest
``s + sum_i theta_i Gamma(alpha_i)`` matching its cumulants 1-7. ``K`` is the smallest (at most
:data:`K_MAX`) whose proved bound is under :data:`TV_TARGET`, the numba module's rule, and this
module reuses that module's tables (the Hurwitz zeta values, the binomials, ``b^4 G_8(b)``).

Everything here is elementwise over flat arrays with a mask of the entries it serves; entries
outside the mask carry harmless stand-in values so that no NaN is computed for them.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
from jax import lax, random

from ..likelihoods import pg_series as _pgs
from . import jax  # noqa: F401  (the package switches on float64)

B_MIN = _pgs.B_MIN
K_MAX = _pgs.K_MAX
TV_TARGET = _pgs.TV_TARGET

_PI = math.pi
#: A bound on :func:`series_draw`'s passes: an entry needs ``K + 3 <= 259`` accepted
#: Marsaglia-Tsang attempts, each accepted with probability above 0.95, so finite inputs reach
#: it with probability below 1e-1000; an entry that does comes back NaN, never a wrong draw.
MAX_PASSES = 20_000
_TWO_PI2 = 2.0 * _PI * _PI
_M_MAX = _pgs._M_MAX
_ORDER = _pgs._ORDER
_SUM_TOL = _pgs._SUM_TOL
_ZETA = jnp.asarray(_pgs._ZETA, dtype=jnp.float64)
_BINOM = jnp.asarray(_pgs._BINOM, dtype=jnp.float64)
_G8_EDGES = jnp.asarray(_pgs._G8_EDGES, dtype=jnp.float64)
_G8_SCALED = jnp.asarray(_pgs._G8_SCALED, dtype=jnp.float64)


def _g8_upper(b: jax.Array) -> jax.Array:
    """Upper bound on ``G_8(b)``, ``b >= 9`` (the tabulated ``b^4 G_8`` at the edge below ``b``)."""
    i = jnp.searchsorted(_G8_EDGES, b, side="right") - 1
    return _G8_SCALED[jnp.clip(i, 0, _G8_EDGES.size - 1)] / (b * b * b * b)


def _tv_bound(b: jax.Array, c: jax.Array, K: jax.Array) -> jax.Array:
    """:func:`ibp_rflvm.likelihoods.pg_series.series_tv_bound`, elementwise (``b >= 9``): the same
    arithmetic (its Python function), times the device's table of ``G_8``."""
    d8, m8 = _pgs.tv_factors.py_func(b, c, K)
    return d8 * _g8_upper(b) * m8 / 40320.0


def series_terms(b: jax.Array, c: jax.Array, mask: jax.Array) -> jax.Array:
    """``K`` per entry (float64; 0 where the series is not used): the numba rule with the cap
    :data:`K_MAX`, i.e. the smallest ``K >= max(1, sqrt(14) a - 1/2)`` with the bound under
    :data:`TV_TARGET`. Entries outside `mask`, or needing more than ``K_MAX`` terms, get 0."""
    b = jnp.where(mask, b, B_MIN)
    c = jnp.where(mask, c, 0.0)
    a = jnp.abs(c) / (2.0 * _PI)
    d1 = 0.5 * (_PI * _PI + c * c)
    lead = d1**8 * _g8_upper(b) * 105.0 * (b / (3.0 * _TWO_PI2**2)) ** 4 / 40320.0
    k0 = jnp.maximum(
        jnp.maximum(1.0, jnp.ceil(math.sqrt(14.0) * a - 0.5)), jnp.floor((lead / TV_TARGET) ** (1.0 / 12.0))
    )

    def short(K: jax.Array) -> jax.Array:
        return mask & (K <= K_MAX) & ~(_tv_bound(b, c, K) <= TV_TARGET)

    # The bound decreases in K, so stepping up from the leading-term estimate finds the smallest.
    K = lax.while_loop(lambda K: jnp.any(short(K)), lambda K: jnp.where(short(K), K + 1.0, K), k0)
    return jnp.where(mask & (K <= K_MAX), K, 0.0)


def _tail_sums(c: jax.Array, Ki: jax.Array, mask: jax.Array) -> list[jax.Array]:
    """``[S_1, ..., S_7]``, ``S_n = sum_{k > K} d_k^-n``, as :func:`.pg_series.tail_sums`: the
    alternating series in tabulated Hurwitz zeta values, each cut at its first term under
    ``_SUM_TOL`` of its sum (the loop runs as far as the slowest entry in `mask` needs)."""
    a2 = (c / (2.0 * _PI)) ** 2
    orders = jnp.arange(1, _ORDER, dtype=jnp.int32)[:, None]  # n = 1 .. 7, one row each

    def body(carry):
        i, pw, sums, opens = carry
        live = opens & (i < _M_MAX - orders)
        zeta = _ZETA[Ki[None, :], jnp.minimum(orders + i, _M_MAX - 1)]
        term = _BINOM[1:_ORDER, i][:, None] * pw[None, :] * zeta
        sums = jnp.where(live, sums + term, sums)
        return i + 1, -pw * a2, sums, live & ~(jnp.abs(term) <= _SUM_TOL * sums)

    rows = (_ORDER - 1, *c.shape)
    init = (jnp.int32(0), jnp.ones_like(c), jnp.zeros(rows), jnp.broadcast_to(mask, rows))
    _, _, sums, _ = lax.while_loop(lambda carry: jnp.any(carry[3]), body, init)
    return [sums[n - 1] * _TWO_PI2**-n for n in range(1, _ORDER)]


def _cubic_root(p0, p1, p2, rad, phi, k):
    t = 2.0 * rad * jnp.cos(phi - 2.0 * _PI * k / 3.0) - p2 / 3.0
    for _ in range(2):
        t = t - (((t + p2) * t + p1) * t + p0) / ((3.0 * t + 2.0 * p2) * t + p1)
    return t


def remainder_law(
    b: jax.Array, c: jax.Array, K: jax.Array, mask: jax.Array
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(theta, alpha, shift)``: the three-Gamma remainder of :func:`.pg_series.remainder_law`
    (``theta``, ``alpha`` of shape ``(3,) + b.shape``), from the Gauss rule of the remainder's
    cumulant measure; stand-ins outside `mask`."""
    b = jnp.where(mask, b, B_MIN)
    c = jnp.where(mask, c, 0.0)
    Ki = jnp.where(mask, K, 1.0).astype(jnp.int32)
    S = _tail_sums(c, Ki, mask)
    S1, S2 = S[0], S[1]
    tau = S[2] / S2
    m0, m1, m2 = 1.0, 1.0, S[3] / (S2 * tau**2)
    m3, m4, m5 = S[4] / (S2 * tau**3), S[5] / (S2 * tau**4), S[6] / (S2 * tau**5)
    p0, p1, p2 = _pgs.orthogonal_cubic.py_func(m0, m1, m2, m3, m4, m5)
    P = p1 - p2 * p2 / 3.0
    Q = 2.0 * p2**3 / 27.0 - p2 * p1 / 3.0 + p0
    rad = jnp.sqrt(-P / 3.0)
    phi = jnp.arccos(jnp.clip(-Q / (2.0 * rad**3), -1.0, 1.0)) / 3.0
    roots = [_cubic_root(p0, p1, p2, rad, phi, k) for k in range(3)]
    thetas, alphas = [], []
    shift = b * S1
    for i in range(3):
        ti, tj, tk = roots[i], roots[(i + 1) % 3], roots[(i + 2) % 3]
        w = (m2 - (tj + tk) * m1 + tj * tk * m0) / ((ti - tj) * (ti - tk))
        theta = tau * ti
        alpha = b * S2 * w / (theta * theta)
        thetas.append(theta)
        alphas.append(alpha)
        shift = shift - alpha * theta
    return jnp.stack(thetas), jnp.stack(alphas), jnp.maximum(shift, 0.0)


def series_draw(key: jax.Array, b: jax.Array, c: jax.Array, K: jax.Array) -> jax.Array:
    """``PG(b, c)`` where ``K > 0`` (0 elsewhere): ``K`` terms ``g_k / d_k`` and the remainder.

    The ``K + 3`` Gamma variables of an entry are drawn one after another, each by one
    Marsaglia-Tsang attempt per loop pass (exact rejection; shapes below 1 boosted by
    ``U^(1/alpha)``), so the loop runs about ``max K + 3`` passes rather than ``K + 3`` separate
    Gamma calls each looping to its own slowest entry.
    """
    # Non-finite inputs never pass the acceptance test: left out, they come back NaN.
    bad = (K > 0) & ~(jnp.isfinite(b) & jnp.isfinite(c))
    mask = (K > 0) & ~bad
    theta, alpha, shift = remainder_law(b, c, K, mask)
    a2 = (jnp.where(mask, c, 0.0) / (2.0 * _PI)) ** 2
    b_safe = jnp.where(mask, b, B_MIN)
    total = K + 3.0

    def body(carry):
        it, k, acc = carry
        kn, ku, kb = random.split(random.fold_in(key, it), 3)
        live = mask & (k < total)
        j = k - K
        shape = jnp.where(k < K, b_safe, jnp.where(j < 0.5, alpha[0], jnp.where(j < 1.5, alpha[1], alpha[2])))
        scale = jnp.where(
            k < K,
            1.0 / (_TWO_PI2 * ((k + 0.5) ** 2 + a2)),
            jnp.where(j < 0.5, theta[0], jnp.where(j < 1.5, theta[1], theta[2])),
        )
        boost = shape < 1.0
        al = jnp.where(boost, shape + 1.0, shape)
        d = al - 1.0 / 3.0
        cc = lax.rsqrt(9.0 * d)  # not 1 / sqrt: see polya_gamma._exact_sum
        x = random.normal(kn, k.shape, dtype=jnp.float64)
        v = (1.0 + cc * x) ** 3
        vs = jnp.where(v > 0.0, v, 1.0)
        u = random.uniform(ku, k.shape, dtype=jnp.float64)
        ok = (v > 0.0) & (jnp.log(u) < 0.5 * x * x + d - d * vs + d * jnp.log(vs))
        ub = random.uniform(kb, k.shape, dtype=jnp.float64, minval=jnp.finfo(jnp.float64).tiny)
        g = d * vs * jnp.where(boost, ub ** (1.0 / shape), 1.0)
        step = live & ok
        return it + 1, jnp.where(step, k + 1.0, k), jnp.where(step, acc + scale * g, acc)

    def cond(carry):
        return jnp.any(mask & (carry[1] < total)) & (carry[0] < MAX_PASSES)

    _, k, acc = lax.while_loop(cond, body, (jnp.int32(0), jnp.zeros_like(b), jnp.zeros_like(b)))
    return jnp.where(bad | (mask & (k < total)), jnp.nan, jnp.where(mask, acc + shift, 0.0))
