"""The Indian buffet process as a :class:`~.base.FeaturePrior`: one- and two-parameter.

Binary ``Z``. In the exchangeable view an entry of a dimension that ``m`` other rows use is on
with odds ``m / (N - 1 + beta - m)`` (:func:`ibp_rflvm.samplers.ibp.log_share_odds`); the move
proposes the other value (``z -> 1 - z``, a deterministic proposal whose ratio is 1), so its
prior ratio is those odds or their reciprocal. A row's own dimensions are
``Poisson(alpha beta / (N - 1 + beta))`` in number, each on (value 1). The sticks given ``Z``
are ``Beta(m_d, N - m_d + beta)``; ``alpha | Z ~ Gamma(a + K+, b + sum_i beta / (beta + i - 1))``.
The one-parameter IBP is ``beta = 1``, with the arithmetic of the stick-breaking sampler.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..samplers import ibp


@njit(cache=True)
def propose_flip(rng, z_cur: int) -> int:
    """The other value; draws nothing, so the one-parameter chains keep their random stream."""
    return 1 - z_cur


@njit(cache=True)
def share_log_ratio(z_cur: int, z_new: int, m_other: int, n: int, hyper) -> float:
    """``log m/(N - 1 + beta - m)`` for ``0 -> 1``, its negative for ``1 -> 0`` (``hyper = [beta]``)."""
    odds = ibp.log_share_odds(m_other, n, hyper[0])
    return odds if z_cur == 0 else -odds


class IndianBuffet:
    """The IBP with sharing parameter `beta` (1: the one-parameter IBP); see the module docstring.

    Parameters
    ----------
    beta : float
        The two-parameter IBP's sharing parameter (the chain's current value when learned).
    """

    name = "ibp"
    binary = True
    max_value = 1

    def __init__(self, beta: float = 1.0) -> None:
        self.beta = float(beta)
        self.hyper = np.array([self.beta])
        self.propose = propose_flip
        self.log_ratio = share_log_ratio
        # The flip's proposal ratio is 1: the prior's ratio alone is the same function.
        self.prior_ratio = share_log_ratio

    def propose_column(self, rng: np.random.Generator, z: np.ndarray) -> np.ndarray:
        """``1 - z``: the flip of every entry (draws nothing)."""
        return (1 - z).astype(np.int8)

    def singleton_rate(self, n: int, alpha: float) -> float:
        """``alpha beta / (N - 1 + beta)``."""
        return ibp.new_dims_rate(alpha, n, self.beta)

    def singleton_values(self, rng: np.random.Generator, k: int, n: int) -> np.ndarray:
        """``k`` ones (draws nothing)."""
        return np.ones(k, dtype=np.int8)

    def weights_given(self, rng: np.random.Generator, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The sticks ``Beta(m_d, N - m_d + beta)`` of the active dimensions."""
        return ibp.update_sticks(rng, Z, self.beta)

    def update_alpha(self, rng: np.random.Generator, k_plus: int, n: int, a: float, b: float) -> float:
        """``Gamma(a + K+, b + sum_i beta / (beta + i - 1))``."""
        return ibp.update_alpha(rng, k_plus, n, a, b, self.beta)

    def expected_k_plus(self, n: int, alpha: float) -> float:
        """``alpha sum_i beta / (beta + i - 1)``."""
        return alpha * ibp.sharing_sum(n, self.beta)

    def new_rows(self, rng: np.random.Generator, n: int, weights: np.ndarray) -> np.ndarray:
        """``z_id ~ Bern(pi_d)``."""
        pi = np.clip(weights, 1e-12, 1.0 - 1e-12)
        return (rng.random((n, pi.size)) < pi).astype(np.int8)

    def row_log_ratio(self, z_cur: np.ndarray, z_new: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """``log pi - log(1 - pi)`` for ``0 -> 1`` and its negative for ``1 -> 0``."""
        pi = np.clip(weights, 1e-12, 1.0 - 1e-12)
        odds = np.log(pi) - np.log1p(-pi)
        return np.where(z_cur == 0, odds, -odds)

    @staticmethod
    def in_support(values: np.ndarray) -> bool:
        """Always: the values it proposes are 0 and 1."""
        return True
