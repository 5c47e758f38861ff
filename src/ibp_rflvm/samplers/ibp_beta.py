"""The sharing parameter ``beta`` of the two-parameter IBP (Ghahramani, Griffiths and Sollich 2007).

Under the one-parameter IBP a row's number of dimensions and the total share one parameter:
``E[dims per row] = alpha`` and ``E[K+] = alpha H_N``. The two-parameter IBP keeps the first and
makes the second ``alpha sum_{i=1..N} beta / (beta + i - 1)``: a small ``beta`` lets rows share
few, widely used dimensions; ``beta = 1`` is the one-parameter IBP.

**The prior of Z in closed form.** The finite model with sticks ``pi_k ~ Beta(alpha beta / K,
beta)`` has, for a column with ``m_k`` ones, ``B(m_k + alpha beta / K, N - m_k + beta) /
B(alpha beta / K, beta)``. As ``K -> inf`` (``Gamma(x) ~ 1/x`` near 0) an active column gives
``(alpha beta / K) B(m_k, N - m_k + beta)``, and the ``K - K+`` empty columns together give
``exp(-alpha beta (psi(N + beta) - psi(beta))) = exp(-alpha sum_i beta / (beta + i - 1))``. The
``K^-K+`` cancels against the number of matrices in the equivalence class, which leaves
``1 / prod_h K_h!``, free of ``beta``:

    p([Z] | alpha, beta) = (alpha beta)^K+ / prod_h K_h!
                           * exp(-alpha sum_{i=1..N} beta / (beta + i - 1))
                           * prod_{k <= K+} Gamma(m_k) Gamma(N - m_k + beta) / Gamma(N + beta).

Its conditionals are the exchangeable odds every move uses: switching ``z_ik`` on in a column
others use multiplies it by ``m / (N - m - 1 + beta)`` (:func:`ibp.log_share_odds`), and each
dimension a row owns alone by ``alpha beta / (N - 1 + beta)`` (:func:`ibp.new_dims_rate`).

**The update.** ``beta | Z, alpha`` under a ``Gamma(a, rate b)`` prior, by slice sampling
(stepping out, then shrinkage; Neal 2003) of ``u = log beta``, whose target is

    K+ log beta - alpha beta (psi(N + beta) - psi(beta))
      + sum_k [log Gamma(N - m_k + beta) - log Gamma(N + beta)]
      + (a - 1) log beta - b beta + log beta          (the last term: the Jacobian of u)

A cap on ``K+`` conditions the joint prior on ``K+ <= cap``, an event of ``Z`` alone, so this
target is unchanged by it.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

#: Width of the slice sampler's initial interval in ``log beta``, and the cap on its steps out.
SLICE_WIDTH = 1.0
SLICE_MAX_STEPS = 20

#: Bounds on ``log beta``: far outside anything a prior here puts mass on, they only keep the
#: arithmetic finite (``psi`` and ``log Gamma`` of ``beta`` near 0 or beyond 1e8).
LOG_BETA_BOUNDS = (-30.0, 30.0)


def log_z_prior(counts: np.ndarray, n: int, alpha: float, beta: float) -> float:
    """``log p([Z] | alpha, beta)`` but for ``alpha^K+ / prod_h K_h!`` (free of ``beta``, and fixed
    by any change of one entry that keeps ``K+`` and the columns' histories), from the column
    counts of the active dimensions (zeros are ignored)."""
    m = np.asarray(counts, dtype=np.float64)
    m = m[m > 0]
    share = beta * (special.digamma(n + beta) - special.digamma(beta))
    columns = special.gammaln(m) + special.gammaln(n - m + beta) - special.gammaln(n + beta)
    return float(m.size * math.log(beta) - alpha * share + np.sum(columns, dtype=np.float64))


def log_target(u: float, counts: np.ndarray, n: int, alpha: float, prior: tuple[float, float]) -> float:
    """The slice sampler's target in ``u = log beta`` (module docstring)."""
    lo, hi = LOG_BETA_BOUNDS
    if not lo < u < hi:
        return -math.inf
    a, b = prior
    beta = math.exp(u)
    return log_z_prior(counts, n, alpha, beta) + a * u - b * beta


def update_beta(
    rng: np.random.Generator, counts: np.ndarray, n: int, alpha: float, beta: float,
    prior: tuple[float, float],
) -> float:
    """One slice-sampling update of ``beta | Z, alpha`` (``counts``: column sums of ``Z``)."""
    u0 = math.log(beta)
    level = log_target(u0, counts, n, alpha, prior) + math.log(rng.random())
    left = u0 - SLICE_WIDTH * rng.random()
    right = left + SLICE_WIDTH
    # Stepping out with the steps split at random between the two sides keeps the update
    # reversible (Neal 2003, section 4.1).
    steps_left = int(rng.integers(SLICE_MAX_STEPS))
    steps_right = SLICE_MAX_STEPS - 1 - steps_left
    while steps_left > 0 and log_target(left, counts, n, alpha, prior) > level:
        left -= SLICE_WIDTH
        steps_left -= 1
    while steps_right > 0 and log_target(right, counts, n, alpha, prior) > level:
        right += SLICE_WIDTH
        steps_right -= 1
    while True:
        u = left + (right - left) * rng.random()
        if log_target(u, counts, n, alpha, prior) > level:
            return math.exp(u)
        if u < u0:
            left = u
        else:
            right = u


def prior_moments(prior: tuple[float, float]) -> dict[str, float]:
    """``E[beta]`` and ``E[log beta]`` under the ``Gamma(a, rate b)`` prior (for the checks)."""
    a, b = prior
    return {"beta": a / b, "log_beta": float(special.digamma(a)) - math.log(b)}
