"""The Indian buffet process as a :class:`~.base.FeaturePrior`: one- and two-parameter.

Binary ``Z``. In the exchangeable view an entry of a dimension that ``m`` other rows use is on
with odds ``m / (N - 1 + beta - m)`` (:func:`ibp_rflvm.samplers.ibp.log_share_odds`); the move
proposes the other value (``z -> 1 - z``, a deterministic proposal whose ratio is 1), so its
prior ratio is those odds or their reciprocal. A row's own dimensions are
``Poisson(alpha beta / (N - 1 + beta))`` in number, each on (value 1). The sticks given ``Z``
are ``Beta(m_d, N - m_d + beta)``; ``alpha | Z ~ Gamma(a + K+, b + sum_i beta / (beta + i - 1))``.
The one-parameter IBP is ``beta = 1``, with the arithmetic of the stick-breaking sampler.

The IBP's own steps: the paper's stick-breaking slice step (:meth:`IndianBuffet.update_z`), for
``beta = 1`` only, and, when ``beta`` is learned, its slice-sampling update
(:mod:`ibp_rflvm.samplers.ibp_beta`). ``beta`` is the prior's one chain variable, recorded as
the trace ``ibp_beta``.
"""

from __future__ import annotations

import copy
import math
import numbers
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from numba import njit

from ..samplers import ibp, z_prior
from ..samplers.ibp_beta import update_beta

#: The name of the prior's chain variable: the state's key and the record's trace.
BETA = "ibp_beta"


@njit(cache=True)
def propose_flip(rng, z_cur: int) -> int:
    """The other value; draws nothing, so the one-parameter chains keep their random stream."""
    return 1 - z_cur


@z_prior.hyper_class
class IBPHyper(NamedTuple):
    """The IBP's ``hyper``: what its compiled functions read, the sharing parameter ``beta``."""

    beta: float


@njit(cache=True)
def share_log_ratio(z_cur: int, z_new: int, m_other: int, n: int, hyper: IBPHyper) -> float:
    """``log m/(N - 1 + beta - m)`` for ``0 -> 1``, its negative for ``1 -> 0``."""
    odds = ibp.log_share_odds(m_other, n, hyper.beta)
    return odds if z_cur == 0 else -odds


# The moves' compiled questions (samplers.z_prior) for the IBP's hyper. The flip's proposal ratio
# is 1: the prior's ratio alone is the same function.
z_prior.register(IBPHyper, propose_flip, share_log_ratio, share_log_ratio)


class IndianBuffet:
    """The IBP with sharing parameter `beta` (1: the one-parameter IBP); see the module docstring.

    Parameters
    ----------
    beta : float or None
        The two-parameter IBP's sharing parameter; None learns it under `beta_prior`, from 1.
        Other than a fixed 1 the slice step, which is for ``beta = 1`` only, is left out: ``Z``
        is updated by its exchangeable conditionals alone (the dimension moves).
    beta_prior : tuple of (float, float)
        ``(shape, rate)`` of the gamma prior of a learned `beta`.
    beta_warmup : int
        Sweeps from the start for which a learned `beta` is held at 1, with the slice step (the
        all-on start is no evidence about it; docs/sampler.md section 10). The burn-in must
        cover them.
    """

    name = "ibp"
    max_value = 1

    def __init__(
        self, beta: float | None = 1.0, beta_prior: tuple[float, float] = (1.0, 1.0), beta_warmup: int = 0
    ) -> None:
        _check(beta, beta_prior, beta_warmup)
        self.learned = beta is None
        #: The current value (a learned one starts at 1, the one-parameter IBP).
        self.beta = 1.0 if beta is None else float(beta)
        self.beta_prior = tuple(beta_prior)
        self.beta_warmup = int(beta_warmup)
        self.hyper = IBPHyper(self.beta)

    def __repr__(self) -> str:
        beta = None if self.learned else self.beta
        return f"IndianBuffet({beta!r}, {self.beta_prior!r}, {self.beta_warmup!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IndianBuffet) and self.settings() == other.settings()

    def __hash__(self) -> int:
        return hash(repr(self))

    def settings(self) -> dict:
        """The settings a resumed chain must share, under the names checkpoints store."""
        return {
            "z_prior": self.name, BETA: None if self.learned else self.beta,
            "ibp_beta_prior": list(self.beta_prior), "ibp_beta_warmup": self.beta_warmup,
        }  # fmt: skip

    def start_state(self) -> dict[str, float]:
        """``{"ibp_beta": beta}``: a learned ``beta`` starts at 1."""
        return {BETA: self.beta}

    def at(self, state: dict[str, float]) -> IndianBuffet:
        """The prior at the chain's `state` (its current ``beta``)."""
        out = copy.copy(self)
        out.beta = float(state[BETA])
        out.hyper = IBPHyper(out.beta)
        return out

    @property
    def learned_traces(self) -> tuple[str, ...]:
        """The chain variables that move (``ibp_beta`` when learned)."""
        return (BETA,) if self.learned else ()

    def needs_moves(self) -> str | None:
        """Why ``Z`` needs the dimension moves (None: the slice step alone suffices)."""
        if not self.learned and self.beta == 1.0:
            return None
        return (
            f"the two-parameter IBP (ibp_beta={None if self.learned else self.beta!r}, other than 1) "
            "updates Z by the dimension moves (the paper's slice sampler is for beta = 1 only)"
        )

    def _warming(self, sweep: int) -> bool:
        return self.learned and sweep < self.beta_warmup

    def update_z(
        self, rng: np.random.Generator, w, sweep: int, view_of: Callable, lam0: float, max_dims: int | None,
        moves,
    ) -> tuple[object | None, object, float]:
        """The paper's stick-breaking slice step (the one-parameter IBP, and a learned ``beta``
        while it is held at 1): represent the sticks above the slice, then the Gibbs pass of
        ``Z`` in decreasing-stick order. ``(view, moves, slice)``: the view it used
        (``view_of()``), `moves` (the sweep's ``MoveCounts``) with the entries it changed and
        the dimensions it added, and the slice level; ``(None, moves, nan)`` for the
        two-parameter IBP, which has no such step."""
        if self.needs_moves() is not None and not self._warming(sweep):
            return None, moves, math.nan
        keep, new_pi, s = ibp.extend(rng, w.Z, w.pi, w.alpha)
        w.resize(rng, keep, new_pi.size, lam0)
        w.pi = np.concatenate([w.pi[keep], new_pi])
        order = ibp.scan_order(w.pi)
        w.resize(rng, order, 0, lam0)
        w.pi = w.pi[order]
        counts = w.Z.sum(axis=0).astype(np.int64)
        room = ibp.room(int(np.count_nonzero(counts)), max_dims)
        view = view_of()
        rows = view.row_target(w)
        z_flips = int(ibp.gibbs_z(rng, w.X, w.Z, w.W, ibp.Sticks(w.pi), counts, room, rows))
        return view, moves._replace(z_flips=z_flips, new_dims=int(new_pi.size)), s

    def update_state(self, rng: np.random.Generator, w, sweep: int) -> dict[str, float]:
        """A learned ``beta``'s slice-sampling update given ``Z`` and ``alpha`` (none while it
        is held at 1); the prior's new chain state."""
        if not self.learned or self._warming(sweep):
            return {BETA: self.beta}
        counts = w.Z.sum(axis=0)
        return {BETA: update_beta(rng, counts, w.Z.shape[0], w.alpha, self.beta, self.beta_prior)}

    def on_device(self, n_rows: int) -> tuple[float, float, float]:
        """What the device sweep (:mod:`ibp_rflvm.jax_backend`) needs: ``(beta, sum_i beta /
        (beta + i - 1), the singleton rate per unit alpha)``; it runs a fixed ``beta``."""
        if self.learned:
            raise ValueError(
                "backend='jax' runs the IBP with a fixed ibp_beta (1.0 by default); a learned "
                "ibp_beta (ibp_beta=None) runs on backend='numba'"
            )
        return self.beta, ibp.sharing_sum(n_rows, self.beta), ibp.new_dims_rate(1.0, n_rows, self.beta)

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


def _check(beta, beta_prior, beta_warmup) -> None:
    if beta is not None and (
        isinstance(beta, bool) or not isinstance(beta, numbers.Real) or not 0.0 < beta < math.inf
    ):
        raise ValueError(f"ibp_beta must be a positive number or None (learned); got {beta!r}")
    if isinstance(beta_warmup, bool) or not isinstance(beta_warmup, numbers.Integral) or beta_warmup < 0:
        raise ValueError(f"ibp_beta_warmup must be a non-negative integer; got {beta_warmup!r}")
    if len(beta_prior) != 2 or not all(
        isinstance(v, numbers.Real) and 0.0 < v < math.inf for v in beta_prior
    ):
        raise ValueError(f"ibp_beta_prior must be (shape, rate), both positive; got {beta_prior!r}")
