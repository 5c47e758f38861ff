"""Chinese restaurant table (CRT) draws, shared by the negative binomial likelihood and PFA.

``CRT(n, r)`` is the number of tables after ``n`` customers of a Chinese restaurant process
with concentration ``r``: ``sum_{t=0}^{n-1} Bernoulli(r / (r + t))``. It is the augmentation
that makes a negative binomial dispersion (or a gamma shape) conjugate (Zhou and Carin).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

# Up to this many customers, one uniform per customer is cheapest.
_CRT_DIRECT_MAX = 200


def crt_mean(n: int, r: float) -> float:
    """``E[CRT(n, r)] = sum_{i < n} r / (r + i)``."""
    i = np.arange(int(n), dtype=np.float64)
    return float(np.sum(r / (r + i)))


@njit(cache=True)
def _log_no_table(t0, u, r):
    """log P(no new table for customers t0..u) = log prod_{t=t0}^{u} t / (t + r)."""
    return math.lgamma(u + 1.0) - math.lgamma(float(t0)) - math.lgamma(u + 1.0 + r) + math.lgamma(t0 + r)


@njit(cache=True)
def crt_draw(rng, n, r):
    """One draw of ``CRT(n, r) = sum_{t=0}^{n-1} Bernoulli(r / (r + t))``.

    Few customers, or tables expected at most customers: one uniform per customer. Otherwise
    jump straight to the next customer who opens a table by inverting ``P(no table for
    t0..u)``, which decreases in ``u`` (bisection), so the cost grows with the number of tables
    (about ``r log(1 + n / r)``), not with `n`.
    """
    if n <= 0:
        return 0
    tables = 1
    if n <= _CRT_DIRECT_MAX or n < 64.0 * r * math.log1p(n / r):
        for t in range(1, n):
            if rng.random() * (r + t) < r:
                tables += 1
        return tables
    t0 = 1
    while t0 < n:
        log_v = math.log(rng.random())
        if _log_no_table(t0, n - 1, r) >= log_v:
            break
        lo = t0
        hi = n - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if _log_no_table(t0, mid, r) < log_v:
                hi = mid
            else:
                lo = mid + 1
        tables += 1
        t0 = lo + 1
    return tables


