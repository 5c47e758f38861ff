"""Polya-gamma draws ``PG(b, c)`` in JAX (float64), for arrays of fixed shape under ``jax.jit``.

The laws are those of the numba samplers (:mod:`ibp_rflvm.likelihoods.pg_draws`,
:mod:`ibp_rflvm.likelihoods.pg_series`; derivations in ``docs/polya_gamma.md``), with
``PG(b, c) = J*(b, |c| / 2) / 4`` and ``b = n + h``:

* ``b = 0``: exactly 0 (unobserved entries drop out).
* ``0 < b < 9``: the sum of ``n`` exact ``PG(1, c)`` draws (Devroye's alternating-series
  sampler) and one exact ``PG(h, c)`` draw for ``h in (0, 1)`` (the proved-envelope series
  sampler; below ``h = 1e-20`` cut at ``x = 6``, a change of law under ``1e-20``; below
  ``h = 1e-150`` the fractional part adds 0, as in the numba code).
* ``b >= 9``: ``K`` exact Gamma terms of the series and a three-Gamma remainder, total variation
  at most ``TV_TARGET = 1e-10`` from ``PG(b, c)`` (proved bound), ``K`` by the numba rule.

Where the numba code draws the exact sum for ``b >= 9`` because ``K`` Gamma draws would cost more
than ``n`` ``PG(1, c)`` draws on a CPU, this port uses the series whenever ``K <= 256``: a loop
pass costs the same for every entry, so its pass count (``max K + 3`` for the series, ``max n``
for the sum) is what matters, and for the negative binomial's ``b = y + r`` with counts in the
thousands the series is far shorter. Only entries needing ``K > 256`` (``|c|`` above about 110
at ``b = 9``, 135 for large ``b``) take the exact sum, whose passes then grow with ``b``. Either
way the law is exact or within the same bound.

Vectorisation: each regime is a ``lax.while_loop`` in which every entry advances its own
rejection sampler by one step per pass (a proposal, then up to :data:`_TERMS` terms of its
alternating series, an undecided series carrying over; for the series regime one
Marsaglia-Tsang attempt at its next Gamma variable) until every entry is done. It runs over the
entries of that regime only, largest work first, in chunks of fixed size
(:func:`.chunks.over_selected`); the exact sum's last passes, once at most 1/32 of a chunk is
still drawing, run on those entries alone. A pass draws its random numbers from
``fold_in(key, pass)`` (keys split per regime, chunk and stage), so one key fixes every draw on a
given device.
"""

from __future__ import annotations

import math
from functools import partial

import jax.numpy as jnp
from jax import lax, random
from jax.scipy.special import erfc, gammaln, ndtri

# The numba sampler's constants (split points, cut-offs, series rates), so the two laws cannot
# drift apart.
from ..likelihoods.pg_draws import _H_TINY, _H_ZERO, _KAPPA, _LAMBDA2, _LOG_2PI, _PI, _T_ONE
from . import jax
from . import pg_series as _series
from .chunks import over_selected

__all__ = ["draw_pg"]

#: Series terms evaluated per pass. PG(1) decides within 4 terms except with probability about
#: 1e-27; the fractional sampler's right proposals (x > 2) may need a few more, carried over.
_TERMS = 6
#: A bound on :func:`_exact_sum`'s passes: an entry makes at most 9 draws, each accepted within
#: a pass or two (probability of a rejection below 0.1), so finite inputs reach it with
#: probability below 1e-1000; an entry that does comes back NaN, never a wrong draw.
MAX_PASSES = 20_000
#: P(N < -1.25): the normal tail behind J*(1)'s Levy proposal (cut at t = 0.64, a = 0.64^-1/2).
_TAIL_ONE = 0.5 * math.erfc(1.25 / math.sqrt(2.0))


def _ig_cdf(t, z, h):
    """``P(X <= t)``, ``X ~ IG(mean h / z, shape h^2)`` (``z = 0``: Levy), as the numba helper."""
    # Products with ``rsqrt``, not quotients by ``sqrt`` (see :func:`_exact_sum`).
    r_inv = lax.rsqrt(2.0 * t)
    levy = erfc(h * r_inv)
    lower = 0.5 * erfc((h - t * z) * r_inv)
    arg = (t * z + h) * r_inv
    # e^{2hz} erfc(arg) / 2 in logs: the product underflows harmlessly where erfc does.
    upper = jnp.where(arg > 26.0, 0.0, jnp.exp(2.0 * h * z + jnp.log(0.5 * erfc(jnp.minimum(arg, 26.0)))))
    return jnp.where(z == 0.0, levy, lower + upper)


def _one_weight(z):
    """Probability of the right-hand (exponential) proposal for ``J*(1, z)``."""
    k = _KAPPA + 0.5 * z * z
    p = 0.5 * _PI / k * jnp.exp(-k * _T_ONE)
    q = 2.0 * jnp.exp(-z) * _ig_cdf(_T_ONE, z, 1.0)
    return p / (p + q)


def _frac_setup(h):
    """Split point ``t`` and ``log K_h`` of the right envelope for ``J*(h)``, ``0 < h < 1``
    (:func:`ibp_rflvm.likelihoods.pg_draws._frac_setup`, elementwise)."""
    tiny = h < _H_TINY
    h = jnp.where(tiny, 0.5, h)
    m = jnp.ceil(1.0 / h)
    s = m * h
    log_odd = gammaln(2.0 * m + 2.0) - m * math.log(2.0) - gammaln(m + 1.0)
    log_d = (
        2.0 * h * (log_odd - m * math.log(3.0))
        + s * math.log(_LAMBDA2)
        + h * math.log(32.0 / (3.0 * _PI))
        - gammaln(s)
    )
    first = h * math.log(0.5 * _PI) - gammaln(h)
    t = jnp.maximum(2.0, (log_d + _LAMBDA2 - first + 5.0) / (8.0 * _KAPPA))
    t = jnp.maximum(2.0, (log_d + (s - 1.0) * jnp.log(t - 1.0) + _LAMBDA2 - first + 5.0) / (8.0 * _KAPPA))
    log_q = jnp.log((1.0 + h) * (4.0 + h) / (2.0 * (2.0 + h)))
    cap = jnp.where(log_q <= 0.0, 42.0, jnp.minimum(42.0, 2.0 * (3.0 + h) / jnp.where(log_q > 0, log_q, 1.0)))
    t = jnp.minimum(t, cap)
    second = log_d + (s - 1.0) * jnp.log(t - 1.0) + _LAMBDA2 - 8.0 * _KAPPA * t
    log_k = jnp.logaddexp(first, second)
    return jnp.where(tiny, 6.0, t), jnp.where(tiny, -jnp.inf, log_k)


def _frac_weight(h, z, t, log_k):
    """Probability of the right-hand proposal for ``J*(h, z)``, ``0 < h < 1``."""
    rate = _KAPPA + 0.5 * z * z
    left = jnp.exp(h * (math.log(2.0) - z)) * _ig_cdf(t, z, h)
    right = jnp.exp(log_k - rate * t) / rate
    return right / (left + right)


def _exact_sum(key, n_one, h, z, has_frac):
    """``J*(n_one + h, z)`` per entry: ``n_one`` exact ``J*(1, z)`` draws, then one ``J*(h, z)``
    draw where `has_frac` (0 for an entry with neither).

    Both samplers share one machine: the proposal ``h^2 IG(1/(hz), 1)`` cut at ``t / h^2`` with
    probability ``1 - p``, else ``t + Exp(kappa + z^2/2)``, and the acceptance test on the
    partial sums of ``sum_n (-1)^n a_n / a_0`` with ``a_n / a_0 = C(n) (2n + h) / h e^{-n (n + h) R}``
    (``C(n) = Gamma(n + h) / (Gamma(h) n!)``): ``h = 1``, ``t = 0.64`` and the series of
    ``J*(1)``'s own side (``R = pi^2 x / 2`` right, ``2 / x`` left) for the ``PG(1)`` draws;
    ``R = 2 / x`` on both sides, with the scale of the right envelope and the check of when a
    partial sum brackets the density, for the fractional one. A proposal rejected inside the
    inverse-Gaussian routine is redrawn from the same piece (the piece is kept until a proposal
    exists), as in the numba loops.
    """
    # Non-finite inputs never pass the acceptance test: left out, they come back NaN.
    bad = ((n_one > 0.5) | has_frac) & ~(jnp.isfinite(z) & jnp.isfinite(h) & jnp.isfinite(n_one))
    n_one = jnp.where(bad, 0.0, n_one)
    has_frac = has_frac & ~bad
    z = jnp.where(bad, 0.0, z)
    hf = jnp.where(has_frac, h, 0.5)
    t_h, logk_h = _frac_setup(hf)
    # P(N < -a), a = h / sqrt(t): the Levy proposal's normal tail for J*(h) (left piece).
    # Written ``hf * rsqrt(2 t)``, not ``hf / sqrt(2 t)``: XLA's simplifier rewrites a quotient
    # by a square root into that product only where the root has one user, which differs
    # between the one-device program and the rows-sharded one (whose fusion and CSE differ), and
    # the two round differently: the chain on 1 and on 4 devices departed by an ulp here.
    tail_frac = 0.5 * erfc(hf * lax.rsqrt(2.0 * t_h))
    p_frac = _frac_weight(hf, z, t_h, logk_h)
    consts = (z, _KAPPA + 0.5 * z * z, _one_weight(z), hf, t_h, logk_h, p_frac, tail_frac)
    f0 = jnp.zeros_like(z)
    b0 = jnp.zeros(z.shape, dtype=bool)
    st = (jnp.int32(0), n_one, has_frac, f0, b0, b0, b0, f0 + 1.0, f0, f0 + 1.0, f0 + 1.0, f0, f0 + 1.0)
    # A pass costs every slot, and the last passes serve a few slow entries (a sum of up to 8
    # draws, each rejected now and then): once at most 1/32 of the entries are live, they move
    # into a buffer of that size and finish there.
    size = z.shape[0]
    few = max(1, size // 32)
    k_all, k_few = random.split(key)
    st = lax.while_loop(lambda st: (jnp.sum(_live(st)) > few) & (st[0] < MAX_PASSES),
                        partial(_exact_pass, k_all, consts), st)  # fmt: skip
    # The live entries first, in order (a stable sort; no scatter, which a GPU may serialise),
    # then dead ones that fill the buffer and are written back unchanged.
    live = _live(st)
    slot = jnp.argsort(~live, stable=True)[:few]
    used = live[slot]
    safe = slot
    sub = [v[safe] for v in st[1:]]
    sub[0] = jnp.where(used, sub[0], 0.0)
    sub[1] = sub[1] & used
    sub_consts = tuple(v[safe] for v in consts)
    sub_st = lax.while_loop(
        lambda st: jnp.any(_live(st)) & (st[0] < MAX_PASSES), partial(_exact_pass, k_few, sub_consts),
        (st[0], *sub),
    )
    # An entry still drawing at the bound (finite inputs: probability below 1e-1000) is NaN.
    unfinished = jnp.zeros(z.shape, bool).at[slot].set(used & _live(sub_st), unique_indices=True)
    unfinished = unfinished | (live & ~jnp.zeros(z.shape, bool).at[slot].set(used, unique_indices=True))
    out = st[3].at[slot].set(jnp.where(used, sub_st[3], st[3][slot]), unique_indices=True)
    return jnp.where(bad | unfinished, jnp.nan, out)


def _live(st):
    """Entries of :func:`_exact_sum`'s machine with a draw still to make."""
    return (st[1] > 0.5) | st[2]


def _exact_pass(key, consts, st):
    """One pass of :func:`_exact_sum`'s machine: every live entry makes one step."""
    z, rate, p_one, hf, t_h, logk_h, p_frac, tail_frac = consts
    b0 = jnp.zeros(z.shape, dtype=bool)
    it, n_rem, pend, acc, has_piece, right, in_ser, x, u, scale, s, idx, coef = st
    one = n_rem > 0.5
    active = one | pend
    hc = jnp.where(one, 1.0, hf)
    tc = jnp.where(one, _T_ONE, t_h)
    pr = jnp.where(one, p_one, p_frac)
    # Four uniforms a pass: the piece, the tilt or MSH flip, the series, and u3 for the
    # proposal itself (by inversion: the right piece's exponential, the left piece's
    # truncated or plain normal; an entry uses one of the three).
    u0, u1, u2, u3 = random.uniform(
        random.fold_in(key, it), (4, *z.shape), dtype=jnp.float64, minval=jnp.finfo(jnp.float64).tiny
    )

    need = active & ~in_ser
    new_piece = need & ~has_piece
    right = jnp.where(new_piece, u0 < pr, right)
    has_piece = has_piece | new_piece
    x_right = tc - jnp.log(u3) / rate
    # Left: IG(mean 1/zeta, shape 1) cut at tmax, one attempt (failures retry next pass).
    zeta = hc * z
    tmax = tc / (hc * hc)
    levy = zeta * tmax < 1.0
    # The Levy law cut at tmax is 1 / N^2 with |N| >= tmax^-1/2: N by inversion of the normal
    # tail (mass tail = P(N < -a)), where the numba code rejects normals or uses Devroye's
    # tail algorithm (the same law; no failures to retry).
    n_levy = ndtri(u3 * jnp.where(one, _TAIL_ONE, tail_frac))
    y_levy = 1.0 / (n_levy * n_levy)
    ok_levy = (zeta == 0.0) | (u1 <= jnp.exp(-0.5 * zeta * zeta * y_levy))
    nrm = ndtri(u3)
    mu = 1.0 / jnp.where(levy, 1.0, zeta)
    w = 0.5 * mu * nrm * nrm
    y1 = mu / (1.0 + w + jnp.sqrt(w * (w + 2.0)))
    y_msh = jnp.where(u1 * (mu + y1) > mu, mu * mu / y1, y1)
    y_left = jnp.where(levy, y_levy, y_msh)
    ok_left = jnp.where(levy, ok_levy, y_msh <= tmax)
    made = need & (right | ok_left)
    xn = jnp.where(right, x_right, hc * hc * y_left)
    x = jnp.where(made, xn, x)
    u = jnp.where(made, u2, u)
    # f / g on the right of the fractional envelope (the PG(1) and left envelopes have scale 1).
    sc_frac = jnp.exp(
        hc * math.log(2.0) + jnp.log(hc) - 0.5 * _LOG_2PI - 1.5 * jnp.log(x)
        + _KAPPA * x - 0.5 * hc * hc / x - logk_h
    )  # fmt: skip
    scale = jnp.where(made, jnp.where(one | ~right, 1.0, sc_frac), scale)
    s = jnp.where(made, 1.0, s)
    idx = jnp.where(made, 0.0, idx)
    coef = jnp.where(made, 1.0, coef)
    in_ser = in_ser | made

    # The alternating series: accept under an odd partial sum, reject above an even one,
    # each only once it brackets the density (always for J*(1), which decreases from n = 0).
    always = one & right
    rr = jnp.where(always, 0.5 * _PI * _PI * x, 2.0 / x)
    und = in_ser
    rej = und & (idx == 0.0) & (always | (x <= (2.0 + hc) * (3.0 + hc))) & (u > scale)
    und = und & ~rej

    def term_step(_, ts):
        und, acc_x, rej, s, idx, coef = ts
        nn = idx + 1.0
        coef = jnp.where(und, coef * (nn - 1.0 + hc) / nn, coef)
        term = coef * (2.0 * nn + hc) / hc * jnp.exp(-nn * (nn + hc) * rr)
        odd = jnp.mod(nn, 2.0) == 1.0
        s = jnp.where(und, jnp.where(odd, s - term, s + term), s)
        valid = always | (x <= (2.0 * nn + 2.0 + hc) * (2.0 * nn + 3.0 + hc))
        under = u <= scale * s
        # Underflowed terms: the partial sum is the ratio to the last bit.
        yes = und & ((valid & odd & under) | ((term == 0.0) & under))
        no = und & ~yes & ((valid & ~odd & ~under) | (term == 0.0))
        idx = jnp.where(und, nn, idx)
        return und & ~yes & ~no, acc_x | yes, rej | no, s, idx, coef

    _, acc_x, rej, s, idx, coef = lax.fori_loop(0, _TERMS, term_step, (und, b0, rej, s, idx, coef))
    acc = jnp.where(acc_x, acc + x, acc)
    n_rem = jnp.where(acc_x & one, n_rem - 1.0, n_rem)
    pend = pend & ~(acc_x & ~one)
    done = acc_x | rej
    return (it + 1, n_rem, pend, acc, has_piece & ~done, right, in_ser & ~done, x, u, scale, s, idx, coef)


@jax.jit
def draw_pg(key: jax.Array, b: jax.Array, c: jax.Array) -> jax.Array:
    """``omega ~ PG(b, c)`` elementwise, float64, with the shape of `b` (`c` broadcast to it).

    ``b >= 0``; ``b = 0`` gives exactly 0. Non-finite or negative ``b``, or non-finite ``c``,
    give NaN (no check can stop a compiled program). Exact for ``b < 9`` (and for ``b >= 9``
    at ``|c|`` above about 110-135); otherwise for ``b >= 9`` within total variation ``1e-10`` of
    ``PG(b, c)`` (see the module docstring). Usable inside ``jax.jit``; one key in, split here;
    the same key gives the same draws on the same device.
    """
    b = jnp.asarray(b, dtype=jnp.float64)
    c = jnp.broadcast_to(jnp.asarray(c, dtype=jnp.float64), b.shape)
    shape = b.shape
    bf, cf = b.ravel(), c.ravel()
    finite = jnp.isfinite(bf) & jnp.isfinite(cf) & (bf >= 0.0)
    pos = finite & (bf > 0.0)
    K = _series.series_terms(bf, cf, pos & (bf >= _series.B_MIN))
    series = K > 0.0
    exact = pos & ~series
    n = jnp.floor(jnp.where(exact, bf, 0.0))
    h = jnp.where(exact, bf, 0.0) - n
    z = 0.5 * jnp.abs(jnp.where(finite, cf, 0.0))
    k_sum, k_series = random.split(key)
    has_frac = exact & (h >= _H_ZERO)

    def exact_part(k, n, h, z, has_frac, live):
        return 0.25 * _exact_sum(k, jnp.where(live, n, 0.0), h, z, has_frac & live)

    def series_part(k, b, c, K, live):
        return _series.series_draw(k, b, c, jnp.where(live, K, 0.0))

    x_sum = over_selected(exact_part, k_sum, exact & ((n > 0.0) | has_frac), n, n, h, z, has_frac)
    x_series = over_selected(series_part, k_series, series, K, jnp.where(series, bf, 0.0), cf, K)
    out = jnp.where(series, x_series, jnp.where(exact, x_sum, 0.0))
    return jnp.where(finite, out, jnp.nan).reshape(shape)
