"""Hamiltonian Monte Carlo over the continuous block: every used latent coordinate and every
frequency at once, given ``Z`` and the frequencies' mixture.

The row-by-row and frequency-by-frequency moves change one row of ``X`` or one ``w_m`` with all
else fixed; the likelihood sees only the products ``h_i . w_m``, so directions that move rows
and frequencies together are crossed only slowly. This move follows the gradient of the
block's joint density through all of them at once.

**The target.** ``q = (x_on, W)``: the coordinates ``x_id`` with ``z_id != 0`` and all of ``W``
(``Z``, the assignments ``zeta`` and the components ``(mu_k, Sigma_k)`` are fixed). Its log
density, up to a constant, is

    log pi(q) = log L(H, W) - sum x_on^2 / 2 - sum_m (w_m - mu_k)^T Sigma_k^-1 (w_m - mu_k) / 2

(``H = X * Z``, ``k = zeta_m``): the likelihood (from the target, with its gradient) times the
standard normal prior of the used coordinates and each frequency's component.

**The move.** Momenta ``r ~ N(0, I)``; ``n`` leapfrog steps of the Hamiltonian
``E(q, r) = -log pi(q) + |r|^2 / 2`` with step ``eps_x`` on the coordinates and ``eps_w`` on
the frequencies (HMC with the diagonal mass ``eps^-2``, written in momenta scaled to unit
variance: ``r += eps / 2 grad; q += eps r; r += eps / 2 grad``). Both steps are multiplied by one
``u ~ U(0.8, 1.2)`` per move, drawn independently of the state, which avoids periodic
trajectories and keeps the kernel reversible. Leapfrog is volume-preserving and time-reversible,
so the Metropolis-Hastings ratio of the end point (momentum negated) is

    log r = E(q, r) - E(q', r')
          = [log L(q') - log L(q)]                                   (the likelihood's ratio)
            + [log prior(q') - log prior(q)]                         (the priors' ratio)
            + [|r|^2 - |r'|^2] / 2                                   (the kinetic energies)

and the move leaves ``pi`` invariant (Neal 2011, section 3.2). A non-finite energy at any step
rejects the move (the trajectory is then discarded, which is still exact: the decision depends
only on the trajectory, itself a deterministic function of the start and ``r``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

#: ``f(H, W) -> (log L, dL/dH, dL/dW)``: the likelihood of the block and its gradient.
ValueAndGrad = Callable[[np.ndarray, np.ndarray], tuple[float, np.ndarray, np.ndarray]]


def _prior_and_grad(x_on, W, zeta, mu, precision) -> tuple[float, np.ndarray, np.ndarray]:
    centred = W - mu[zeta]
    pw = np.einsum("mab,mb->ma", precision[zeta], centred)
    value = -0.5 * float(np.dot(x_on, x_on)) - 0.5 * float(np.sum(centred * pw))
    return value, -x_on, -pw


#: The acceptance rate the warm-up steers the step factor towards (Beskos et al. 2013: 0.651 is
#: optimal as the dimension grows; a little above it pays for the few leapfrog steps).
TARGET_ACCEPTANCE = 0.7


def adapt_factor(factor: float, log_r: float, sweep: int) -> float:
    """The step factor after one warm-up move: a Robbins-Monro step on its logarithm towards
    :data:`TARGET_ACCEPTANCE`, with gains ``(sweep + 1)^-0.6`` that shrink so the factor settles
    (a rejected non-finite trajectory counts as acceptance 0)."""
    accept = math.exp(min(0.0, log_r)) if math.isfinite(log_r) else 0.0
    return factor * math.exp((sweep + 1.0) ** -0.6 * (accept - TARGET_ACCEPTANCE))


def _kinetic(r_x: np.ndarray, r_w: np.ndarray) -> float:
    return 0.5 * (float(np.dot(r_x, r_x)) + float(np.sum(r_w * r_w)))


def hmc_block(
    rng: np.random.Generator,
    X: np.ndarray,
    Z: np.ndarray,
    W: np.ndarray,
    zeta: np.ndarray,
    mu: np.ndarray,
    Sigma: np.ndarray,
    value_and_grad: ValueAndGrad,
    step_x: float,
    step_w: float,
    n_leapfrog: int,
) -> tuple[bool, float]:
    """One HMC move of the used coordinates of `X` and of `W` (in place; see the module docstring).

    Parameters
    ----------
    rng : numpy.random.Generator
        The chain's generator: the momenta of ``x_on`` then ``W``, the step's jitter, then the
        accept decision's uniform.
    X, Z : ndarray of shape (N, K)
        Latent coordinates (those with ``Z != 0`` move) and the usage (counts allowed:
        ``H = X * Z``).
    W : ndarray of shape (M, K)
        Frequencies.
    zeta, mu, Sigma : ndarray
        Each frequency's component and the components' means and covariances.
    value_and_grad : callable
        ``f(H, W) -> (log L, dL/dH, dL/dW)``.
    step_x, step_w : float
        Leapfrog steps of the coordinates and the frequencies.
    n_leapfrog : int
        Leapfrog steps per move.

    Returns
    -------
    tuple
        ``(accepted, log_r)``: whether the end point was taken, and the log acceptance ratio.
    """
    on = Z != 0
    if W.shape[1] == 0 or n_leapfrog < 1:
        return False, math.nan
    zf = Z.astype(np.float64)
    precision = np.linalg.inv(Sigma)

    def energy_parts(x_on, Wq):
        Xq = np.zeros_like(X)
        Xq[on] = x_on
        ll, d_h, d_w = value_and_grad(Xq * zf, Wq)
        lp, gx, gw = _prior_and_grad(x_on, Wq, zeta, mu, precision)
        # H = X * Z: a used coordinate's gradient is Z times H's.
        return ll + lp, (d_h * zf)[on] + gx, d_w + gw

    x0, w0 = X[on].copy(), W.copy()
    r_x = rng.standard_normal(x0.size)
    r_w = rng.standard_normal(w0.shape)
    u = rng.uniform(0.8, 1.2)
    log_v = math.log(rng.random())
    ex, ew = step_x * u, step_w * u
    logp0, gx, gw = energy_parts(x0, w0)
    e0 = -logp0 + _kinetic(r_x, r_w)
    x, w = x0.copy(), w0.copy()
    r_x = r_x + 0.5 * ex * gx
    r_w = r_w + 0.5 * ew * gw
    logp = logp0
    for step in range(n_leapfrog):
        x = x + ex * r_x
        w = w + ew * r_w
        try:
            logp, gx, gw = energy_parts(x, w)
        except FloatingPointError:  # the likelihood's factorisation met a non-finite point
            return False, -math.inf
        if not math.isfinite(logp):
            return False, -math.inf
        half = 0.5 if step == n_leapfrog - 1 else 1.0
        r_x = r_x + half * ex * gx
        r_w = r_w + half * ew * gw
    e1 = -logp + _kinetic(r_x, r_w)
    log_r = e0 - e1
    if not math.isfinite(log_r) or log_v >= log_r:
        return False, log_r
    X[on] = x
    W[...] = w
    return True, log_r


__all__ = ["TARGET_ACCEPTANCE", "ValueAndGrad", "adapt_factor", "hmc_block"]
