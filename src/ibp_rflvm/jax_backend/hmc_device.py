"""The HMC move of the continuous block on the device: the twin of :mod:`ibp_rflvm.samplers.hmc`
as a pure JAX function of the padded state, run by the sweep after the frequencies' move and
before the scale move, as on the host.

**The target** is the host's: ``q = (x_on, W)``, the coordinates ``x_id`` with ``z_id != 0`` on
live slots and the live slots' columns of ``W``, given ``Z``, the labels ``zeta`` and the
components ``(mu_k, Sigma_k)``::

    log pi(q) = log L(H, W) - sum x_on^2 / 2 - sum_m (w_m - mu_k)^T Sigma_k^-1 (w_m - mu_k) / 2

with ``H = X * Z`` and ``k = zeta_m``. ``log L`` is the sweep's float64 sum of the rows'
log-likelihoods given the weights; the caller gives it with its gradient
(:func:`feature_gradient`: the chain rule through the features written out, as the host's
:mod:`ibp_rflvm.targets.gradients`, so that every sum over rows is one of :mod:`.rowsum`'s
fixed-order sums: ``jax.grad`` of the whole would leave the order of the sums over rows in the
backward pass to XLA, which ordered them differently in a scan of sweeps than in one sweep).

**The move and its ratio** are the host's: momenta ``r ~ N(0, I)`` on the moving coordinates,
both steps times one ``u ~ U(0.8, 1.2)``, ``n`` leapfrog steps, and the end point (momentum
negated) accepted when ``log v < log r`` with::

    log r = E(q, r) - E(q', r')
          = [log L(q') - log L(q)] + [log prior(q') - log prior(q)] + [|r|^2 - |r'|^2] / 2

Leapfrog is volume-preserving and reversible, so the move leaves ``pi`` invariant (Neal 2011,
section 3.2). A trajectory that meets a non-finite energy is rejected (the decision is still a
function of the start and the momenta alone).

**Padding.** Dead slots and unused coordinates get zero momentum and zero gradient, so they stay
exactly as they are and add nothing to the kinetic energy; the components' covariances are read
on the live slots only (identity elsewhere), so the prior is the host's on the live block. The
draws are the device's own (momenta for every slot), so the stream is not the host's.

**The step factor** multiplies the base steps ``(eps_x, eps_w)``; over the warm-up it is moved
by :func:`adapt_factor`, the host's Robbins-Monro step towards
:data:`ibp_rflvm.samplers.hmc.TARGET_ACCEPTANCE`, and carried in the state's ``tuning``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ..samplers.hmc import TARGET_ACCEPTANCE
from . import jax, linalg
from .rowsum import pairwise_sum

jnp = jax.numpy
lax = jax.lax

#: The key of the step factor in the state's ``tuning`` (the host's name).
STEP_FACTOR = "hmc_step_factor"


def block_log_density(value_and_grad: Callable, X, W, Zf, on, live, zeta, mu, precision, total: Callable):
    """``log pi(q)`` of the module docstring at positions `X` and frequencies `W`, and its
    gradients (zero off the moving coordinates): `on` the used coordinates, `live` the live
    slots, ``total`` the sum over rows."""
    ll, d_h, d_w = value_and_grad(X * Zf, W)
    centred = jnp.where(live[None, :], W - mu[zeta], 0.0)
    pw = pairwise_sum(jnp.swapaxes(precision[zeta] * centred[:, None, :], 1, 2))
    x_on = jnp.where(on, X, 0.0)
    value = ll - 0.5 * total(pairwise_sum(x_on * x_on)) - 0.5 * _fixed_total(centred * pw)
    return value, jnp.where(on, d_h * Zf - X, 0.0), jnp.where(live[None, :], d_w - pw, 0.0)


def feature_gradient(psi_grad: Callable, H, W, beta, bias: bool, M: int, matmul: Callable, dot: Callable):
    """``(log L, dL/dH, dL/dW)`` at ``Phi(H, W)``, ``psi = Phi beta``, from `psi_grad`:
    ``psi -> (log L, dL/dpsi)`` (the entries' first derivatives: no sum over rows in them).

    ``dL/dPhi = g beta^T``; with ``P = H W^T``, ``dL/dP = (-sin P * dPhi_cos + cos P *
    dPhi_sin) / sqrt(M)``, ``dL/dH = dL/dP W`` and ``dL/dW = dL/dP^T H``. `matmul` is the
    product of rows by a small matrix and `dot` the sum over rows ``A^T B`` (:mod:`.rowsum`).
    """
    P = matmul(H, W.T)
    scale = 1.0 / math.sqrt(M)
    cos, sin = jnp.cos(P), jnp.sin(P)
    parts = [cos * scale, sin * scale] + ([jnp.ones((P.shape[0], 1))] if bias else [])
    ll, g = psi_grad(matmul(jnp.concatenate(parts, axis=1), beta))
    d_phi = matmul(g, beta.T)
    # Each product on its own: XLA fused ``cos * a - sin * b`` into a multiply-add in one program
    # (one sweep) and not in another (a scan of sweeps), and the chain's last bits followed.
    barrier = lax.optimization_barrier
    d_phi = d_phi * scale
    d_p = barrier(cos * d_phi[:, M : 2 * M]) - barrier(sin * d_phi[:, :M])
    return ll, matmul(d_p, W), dot(d_p, H)


def _sum(v):
    return jnp.sum(v, axis=0)


def _fixed_total(a) -> jax.Array:
    """The sum of a small array's entries in a fixed order (:func:`.rowsum.pairwise_sum`)."""
    return pairwise_sum(a.reshape(1, -1))[0]


def _kinetic(rx, rw, total: Callable = _sum) -> jax.Array:
    return 0.5 * (total(pairwise_sum(rx * rx)) + _fixed_total(rw * rw))


def adapt_factor(factor, log_r, sweep) -> jax.Array:
    """The host's :func:`ibp_rflvm.samplers.hmc.adapt_factor` on device scalars."""
    accept = jnp.where(jnp.isfinite(log_r), jnp.exp(jnp.minimum(0.0, log_r)), 0.0)
    gain = (sweep.astype(jnp.float64) + 1.0) ** -0.6
    return factor * jnp.exp(gain * (accept - TARGET_ACCEPTANCE))


def hmc_block(
    key,
    X,
    Z,
    W,
    zeta,
    mu,
    Sigma,
    active,
    value_and_grad: Callable,
    step_x,
    step_w,
    n_leapfrog: int,
    total: Callable = _sum,
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """One HMC move of the used coordinates of `X` and the live columns of `W` (module
    docstring).

    Parameters
    ----------
    key : jax.Array
        PRNG key: the momenta, the steps' jitter and the decision's uniform.
    X, Z : jax.Array
        ``(N, Kw)`` positions and which rows use which slot (``H = X * Z``).
    W : jax.Array
        ``(M, Kw)`` frequencies.
    zeta, mu, Sigma : jax.Array
        ``(M,)`` labels, ``(M, Kw)`` and ``(M, Kw, Kw)`` the label slots' means and covariances.
    active : jax.Array
        ``(Kw,)`` bool, the live slots.
    value_and_grad : callable
        ``(H, W) -> (log L, dL/dH, dL/dW)``, the first a float64 scalar.
    step_x, step_w : float or jax.Array
        Leapfrog steps of the coordinates and the frequencies (the factor applied).
    n_leapfrog : int
        Leapfrog steps per move (static).
    total : callable, default=sum over axis 0
        ``(N,) -> ()``, the sum over rows (the sweep passes its fixed-order sums).

    Returns
    -------
    X, W : jax.Array
        The end point if accepted, else the inputs.
    accepted : jax.Array
        Bool scalar.
    log_r : jax.Array
        The log acceptance ratio (``-inf`` for a trajectory that met a non-finite energy).
    """
    k_x, k_w, k_u, k_v = jax.random.split(key, 4)
    on = (Z != 0) & active[None, :]
    Zf = Z.astype(jnp.float64)
    mx = on.astype(jnp.float64)
    mw = jnp.broadcast_to(active[None, :], W.shape).astype(jnp.float64)
    precision = linalg.live_inverse(Sigma, active)  # each label slot's Sigma_k^-1 on the live slots

    def log_density(x, w):
        value, gx, gw = block_log_density(value_and_grad, x, w, Zf, on, active, zeta, mu, precision, total)
        return value, (gx, gw)

    def kinetic(rx, rw):
        return _kinetic(rx, rw, total)

    rx0 = jax.random.normal(k_x, X.shape, dtype=jnp.float64) * mx
    rw0 = jax.random.normal(k_w, W.shape, dtype=jnp.float64) * mw
    u = jax.random.uniform(k_u, (), dtype=jnp.float64, minval=0.8, maxval=1.2)
    log_v = jnp.log(jax.random.uniform(k_v, (), dtype=jnp.float64))
    ex, ew = step_x * u, step_w * u
    logp0, (gx, gw) = log_density(X, W)
    e0 = -logp0 + kinetic(rx0, rw0)
    rx = rx0 + 0.5 * ex * gx * mx
    rw = rw0 + 0.5 * ew * gw * mw

    def leapfrog(step, c):
        x, w, rx, rw, _, finite = c
        x = x + ex * rx
        w = w + ew * rw
        logp, (gx, gw) = log_density(x, w)
        half = jnp.where(step == n_leapfrog - 1, 0.5, 1.0)
        rx = rx + half * ex * gx * mx
        rw = rw + half * ew * gw * mw
        return x, w, rx, rw, logp, finite & jnp.isfinite(logp)

    start = (X, W, rx, rw, logp0, jnp.isfinite(logp0))
    x, w, rx, rw, logp, finite = lax.fori_loop(0, n_leapfrog, leapfrog, start)
    log_r = e0 - (-logp + kinetic(rx, rw))
    log_r = jnp.where(finite & jnp.isfinite(log_r), log_r, -jnp.inf)
    accepted = log_v < log_r
    return jnp.where(accepted, x, X), jnp.where(accepted, w, W), accepted, log_r


__all__ = [
    "STEP_FACTOR", "adapt_factor", "block_log_density", "feature_gradient", "hmc_block",
]  # fmt: skip
