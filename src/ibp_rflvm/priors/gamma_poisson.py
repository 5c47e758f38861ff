"""The infinite gamma-Poisson feature model (Titsias 2007) as a :class:`~.base.FeaturePrior`.

The finite model has ``K`` dimensions with rates ``lambda_k ~ Gamma(alpha / K, rate b)`` and
counts ``z_nk | lambda_k ~ Poisson(lambda_k)``; its limit ``K -> infinity`` over the equivalence
classes of ``Z`` (columns in any order) is

    p([Z]) = alpha^K+ / prod_h K_h! * (b / (N + b))^alpha
             * prod_{k <= K+} (m_k - 1)! / ((N + b)^m_k prod_n z_nk!)

with ``m_k = sum_n z_nk``. Zero still means "row n does not use dimension k"; a count scales the
coordinate, ``h_nk = z_nk x_nk`` (docs/model.md says why). What the moves use:

* **An entry of a dimension the other rows use** (``m = m_-n,k > 0``). Given the others,
  ``lambda_k ~ Gamma(m, N - 1 + b)`` and ``z_nk`` is negative binomial:
  ``p(z) = Gamma(m + z) / (Gamma(m) z!) (r / (r + 1))^m (r + 1)^-z`` with ``r = N - 1 + b``, so
  ``log p(z') - log p(z) = lgamma(m + z') - lgamma(m + z) - lgamma(z' + 1) + lgamma(z + 1)
  - (z' - z) log(r + 1)``. The proposal is a walk that does not read ``m``: ``0 -> 1``, and from
  ``z >= 1`` up or down by one with probability 1/2 each, so ``q(0 | 1) / q(1 | 0) = 1/2`` and the
  other ratios are 1.
* **The dimensions a row uses alone**: a ``Poisson(alpha log((N + b) / (N - 1 + b)))`` number,
  each with a logarithmic count, ``P(z) = -p^z / (z log(1 - p))`` with ``p = 1 / (N + b)`` (the
  limit of the finite predictive ``Gamma(alpha/K + z) / (Gamma(alpha/K) z!) ...`` for ``z >= 1``).
* ``lambda_k | Z ~ Gamma(m_k, N + b)`` for the active dimensions, and
  ``alpha | Z ~ Gamma(a + K+, rate b_alpha + log((N + b) / b))``.

Closed forms for the prior check: ``K+ ~ Poisson(alpha log(1 + N / b))``; one row uses a
``Poisson(alpha log(1 + 1 / b))`` number of dimensions; its total ``sum_k z_nk`` is negative
binomial with mean ``alpha / b`` and variance ``alpha (1 + b) / b^2``.

``Z`` is int8: the support is conditioned on ``z <= 127`` (a proposal past it is rejected, as a
proposal past a cap on ``K+`` is). At the rates a data set of ``N`` rows gives (``lambda`` about
``m / N``), a count past 127 has a probability far below double precision's resolution.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit
from scipy.special import gammaln

from ..samplers import z_prior

#: The largest count ``Z`` (int8) holds.
MAX_COUNT = 127


@z_prior.hyper_class
class GammaPoissonHyper(NamedTuple):
    """The gamma-Poisson prior's ``hyper``: what its compiled functions read, the rate ``b``."""

    rate: float


@njit(cache=True)
def propose_walk(rng, z_cur: int) -> int:
    """``0 -> 1``; from ``z >= 1``, ``z + 1`` or ``z - 1`` with probability 1/2 each."""
    if z_cur == 0:
        return 1
    return z_cur + 1 if rng.random() < 0.5 else z_cur - 1


@njit(cache=True)
def walk_log_q_ratio(z_cur: int, z_new: int) -> float:
    """``log q(z_cur | z_new) - log q(z_new | z_cur)`` of :func:`propose_walk`."""
    if z_cur == 0:
        return -math.log(2.0)
    if z_new == 0:
        return math.log(2.0)
    return 0.0


@njit(cache=True)
def count_prior_ratio(z_cur: int, z_new: int, m_other: int, n: int, hyper: GammaPoissonHyper) -> float:
    """``log p(z_new | rest) - log p(z_cur | rest)``: the negative binomial predictive;
    ``-inf`` outside ``0..MAX_COUNT``."""
    if z_new > MAX_COUNT or z_new < 0:
        return -math.inf
    log_r1 = math.log(n + hyper.rate)  # log(r + 1) with r = N - 1 + b
    m = float(m_other)
    return (
        math.lgamma(m + z_new) - math.lgamma(m + z_cur) - math.lgamma(z_new + 1.0) + math.lgamma(z_cur + 1.0)
        - (z_new - z_cur) * log_r1
    )  # fmt: skip


@njit(cache=True)
def count_log_ratio(z_cur: int, z_new: int, m_other: int, n: int, hyper: GammaPoissonHyper) -> float:
    """The negative binomial predictive's log ratio plus the walk's."""
    return count_prior_ratio(z_cur, z_new, m_other, n, hyper) + walk_log_q_ratio(z_cur, z_new)


# The moves' compiled questions (samplers.z_prior) for this prior's hyper.
z_prior.register(GammaPoissonHyper, propose_walk, count_log_ratio, count_prior_ratio)


def logarithmic(rng: np.random.Generator, p: float, size: int) -> np.ndarray:
    """Draws of the logarithmic law ``P(z) = -p^z / (z log(1 - p))``, ``z >= 1``, by its inverse CDF.

    Written here rather than taken from ``Generator.logseries`` so that its law is the one the
    prior checks test. ``p <= 1/2`` in this model, so the CDF is tabulated until its tail is
    below double precision's resolution (60 terms at ``p = 1/2``); a uniform beyond the table
    walks on term by term."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"the logarithmic law needs 0 < p < 1; got {p!r}")
    # Enough terms to reach the first below 1e-18: p^z / (z L) <= 1e-18 once
    # z >= (log(1e-18) + log(L)) / log(p), L = -log(1 - p).
    norm = -math.log1p(-p)
    z = np.arange(1, int((math.log(1e-18) + math.log(norm)) / math.log(p)) + 2, dtype=np.float64)
    terms = np.exp(z * math.log(p) - np.log(z)) / norm
    cdf = np.cumsum(terms[: int(np.searchsorted(-terms, -1e-18)) + 1])
    u = rng.random(size)
    out = np.searchsorted(cdf, u, side="right").astype(np.int64) + 1
    for j in np.flatnonzero(out > cdf.size):  # probability below 1e-17 per draw
        k, c, t = cdf.size, cdf[-1], terms[cdf.size - 1]
        while u[j] > c:
            t *= p * k / (k + 1)
            k += 1
            c += t
        out[j] = k
    return out


class GammaPoisson:
    """The gamma-Poisson feature model's prior on ``Z`` (see the module docstring).

    Parameters
    ----------
    rate : float
        ``b``, the rate of the gamma prior of the dimensions' Poisson rates.
    """

    name = "gamma-poisson"
    max_value = MAX_COUNT
    #: No chain variable of its own (``b`` is fixed).
    learned_traces: tuple[str, ...] = ()

    def __init__(self, rate: float = 1.0) -> None:
        if not (isinstance(rate, (int, float)) and 0.0 < float(rate) < math.inf):
            raise ValueError(f"the gamma-Poisson prior's rate must be a positive number; got {rate!r}")
        self.rate = float(rate)
        self.hyper = GammaPoissonHyper(self.rate)

    def __repr__(self) -> str:
        return f"GammaPoisson(rate={self.rate!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GammaPoisson) and self.rate == other.rate

    def __hash__(self) -> int:
        return hash(repr(self))

    def settings(self) -> dict:
        """The settings a resumed chain must share, under the names checkpoints store."""
        return {"z_prior": self.name, "z_prior_rate": self.rate}

    def start_state(self) -> dict[str, float]:
        """None: ``b`` is fixed."""
        return {}

    def at(self, state: dict[str, float]) -> GammaPoisson:
        """Itself: it has no chain variable."""
        return self

    def needs_moves(self) -> str | None:
        """Always: it has no slice step, ``Z`` moves by the dimension moves alone."""
        return f"z_prior={self.name!r} updates Z by the dimension moves (it has no slice step)"

    def update_z(self, rng, w, sweep: int, view_of, lam0: float, max_dims: int | None, moves):
        """No step of its own: ``Z`` moves by the dimension moves."""
        return None, moves, math.nan

    def update_state(self, rng: np.random.Generator, w, sweep: int) -> dict[str, float]:
        """Nothing to update."""
        return {}

    def on_device(self, n_rows: int) -> tuple[float, float, float]:
        """Refused: the device sweep runs the IBP's moves only."""
        raise ValueError(
            f"backend='jax' runs the IBP's moves only; z_prior={self.name!r} runs on backend='numba'"
        )

    def propose_column(self, rng: np.random.Generator, z: np.ndarray) -> np.ndarray:
        """:func:`propose_walk` for every entry of `z`."""
        up = rng.random(z.shape) < 0.5
        z = z.astype(np.int64)
        return np.where(z == 0, 1, np.where(up, z + 1, z - 1))

    def singleton_rate(self, n: int, alpha: float) -> float:
        """``alpha log((N + b) / (N - 1 + b))``."""
        return alpha * math.log1p(1.0 / (n - 1.0 + self.rate))

    def singleton_values(self, rng: np.random.Generator, k: int, n: int) -> np.ndarray:
        """Logarithmic counts with ``p = 1 / (N + b)`` (a count past 127 is outside the support,
        and the caller's proposal with it is rejected: see :meth:`in_support`)."""
        return logarithmic(rng, 1.0 / (n + self.rate), k)

    def weights_given(self, rng: np.random.Generator, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``lambda_k ~ Gamma(m_k, rate N + b)`` for the active dimensions."""
        m = Z.sum(axis=0, dtype=np.int64)
        keep = np.flatnonzero(m > 0)
        if not keep.size:
            return keep, np.empty(0)
        return keep, rng.gamma(m[keep].astype(np.float64), 1.0 / (Z.shape[0] + self.rate))

    def update_alpha(self, rng: np.random.Generator, k_plus: int, n: int, a: float, b: float) -> float:
        """``Gamma(a + K+, rate b + log((N + b) / b))``."""
        return float(rng.gamma(a + k_plus, 1.0 / (b + math.log1p(n / self.rate))))

    def expected_k_plus(self, n: int, alpha: float) -> float:
        """``alpha log(1 + N / b)``."""
        return alpha * math.log1p(n / self.rate)

    def new_rows(self, rng: np.random.Generator, n: int, weights: np.ndarray) -> np.ndarray:
        """``z_id ~ Poisson(lambda_d)``, at most :data:`MAX_COUNT`."""
        return np.minimum(rng.poisson(weights, size=(n, weights.size)), MAX_COUNT).astype(np.int8)

    def row_log_ratio(self, z_cur: np.ndarray, z_new: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """Poisson(``lambda``) prior ratio plus the walk's proposal ratio."""
        z_cur = np.asarray(z_cur, dtype=np.float64)
        z_new = np.asarray(z_new, dtype=np.float64)
        lam = np.maximum(weights, 1e-300)
        prior = (z_new - z_cur) * np.log(lam) - gammaln(z_new + 1.0) + gammaln(z_cur + 1.0)
        q = np.where(z_cur == 0, -math.log(2.0), np.where(z_new == 0, math.log(2.0), 0.0))
        return np.where(z_new > MAX_COUNT, -np.inf, prior + q)

    @staticmethod
    def in_support(values: np.ndarray) -> bool:
        """Whether every value fits ``Z`` (at most :data:`MAX_COUNT`)."""
        return bool(np.all(values <= MAX_COUNT))
