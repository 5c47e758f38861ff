"""What a move asks of the prior on ``Z``: the :class:`FeaturePrior` protocol.

The prior on the sparsity indicators ``Z`` (which latent dimensions each row uses, and with
what multiplicity) is a component of the model, chosen once (:func:`ibp_rflvm.priors.make_prior`).
A move that changes ``Z`` multiplies two ratios and never asks which prior or which likelihood
it has: the prior's (with the move's proposal ratio, which depends on the values the prior
allows) and the target's likelihood ratio. The moves work in the exchangeable view, where the
prior's per-dimension weights (the IBP's sticks, the gamma-Poisson rates) are integrated out:

* an entry ``z_id`` of a dimension other rows use (``m_-i,d``, the sum of the other rows'
  values, is positive): the prior proposes a new value and scores it, in compiled code (below);
* the dimensions row ``i`` uses alone: a ``Poisson(singleton_rate(N))`` number of them, each
  with a value from :meth:`FeaturePrior.singleton_values` (births and deaths propose them from
  this prior, so only the likelihood is left in their acceptance ratio).

The sweep then draws the weights given ``Z`` (:meth:`FeaturePrior.weights_given`) and the
concentration (:meth:`FeaturePrior.update_alpha`); new rows take their prior from the weights
(:meth:`FeaturePrior.row_log_ratio`).

How the prior travels into the compiled moves: as one value, :attr:`FeaturePrior.hyper`, a
named tuple of a type of the prior's own (made by
:func:`ibp_rflvm.samplers.z_prior.hyper_class`). The moves call the generic functions of
:mod:`ibp_rflvm.samplers.z_prior` on it (``propose``, ``log_ratio``, ``prior_ratio``), and the
prior's module registers its compiled functions for its type
(:func:`ibp_rflvm.samplers.z_prior.register`; the IBP's in :mod:`.indian_buffet`). The
kernels are compiled once per type of ``hyper`` and loaded from numba's on-disk cache by later
processes; a compiled function handed to them as an argument
would be compiled into them again in every process. A prior defined in a script's ``__main__``
works too, but its kernels are compiled again in every process (numba's cache writes such a
class by value): define it in a module.

The prior owns its hyperparameters, its chain variables and its own steps, and the sweep asks
for them through the protocol without naming any prior: :meth:`FeaturePrior.start_state` (the
variables by name; the record keeps a trace of each), :meth:`FeaturePrior.at` (the prior at the
chain's current values), :meth:`FeaturePrior.update_z` (a step of ``Z`` of its own before the
dimension moves, such as the IBP's stick-breaking slice step) and
:meth:`FeaturePrior.update_state` (its variables' update after them, such as a learned IBP
``beta``). A new prior is one module that implements this protocol and registers the three compiled
functions for its ``hyper``'s type.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np


class FeaturePrior(Protocol):
    """A prior on ``Z`` as the sweep's moves use it (see the module docstring).

    Attributes
    ----------
    name : str
        The name users pass (``z_prior=``).
    learned_traces : tuple of str
        The chain variables (keys of :meth:`start_state`) that move, which the diagnostics
        summarise (a fixed one has a constant trace).
    max_value : int
        The largest value an entry may take (the support is conditioned on it; ``Z`` is int8).
    hyper : NamedTuple
        The prior's parameters as its compiled functions read them, a named tuple of a type of
        its own (:func:`ibp_rflvm.samplers.z_prior.hyper_class`), for which its module
        registers the generic functions of :mod:`ibp_rflvm.samplers.z_prior`:

        * ``propose(rng, z_cur, hyper) -> z_new``: the proposal for one entry of a dimension
          other rows use. It must not depend on ``m_-i,d``, so that the proposals of a whole
          column can be drawn before any of them is accepted;
        * ``log_ratio(z_cur, z_new, m_other, n, hyper)``: log of ``p(z_new | rest) q(z_cur |
          z_new) / (p(z_cur | rest) q(z_new | z_cur))``; ``-inf`` outside the support;
        * ``prior_ratio(z_cur, z_new, m_other, n, hyper)``: the same without the proposal's
          ratio, ``log p(z_new | rest) - log p(z_cur | rest)``, for moves that propose values
          their own way (the pair moves' deterministic swaps).
    """

    name: str
    learned_traces: tuple[str, ...]
    max_value: int
    hyper: tuple

    def settings(self) -> dict:
        """The settings a resumed chain must share (JSON values by name, ``z_prior`` the name)."""

    def start_state(self) -> dict[str, float]:
        """The prior's own chain variables at the start, by name (empty: none)."""

    def at(self, state: dict[str, float]) -> FeaturePrior:
        """The prior at the chain's current variables `state` (its :attr:`hyper` set from them)."""

    def needs_moves(self) -> str | None:
        """Why ``Z`` needs the dimension moves, for the error that refuses a sampler without
        them; None when the prior's own :meth:`update_z` moves ``Z`` on its own."""

    def update_z(
        self, rng: np.random.Generator, w, sweep: int, view_of, lam0: float, max_dims: int | None, moves
    ) -> tuple[object | None, object, float]:
        """The prior's own step of ``Z`` (on the sweep's working state `w`, at sweep number
        `sweep`), before the dimension moves: ``(view, moves, slice)``, the likelihood view it
        used (from ``view_of()``), the sweep's :class:`~ibp_rflvm.state.MoveCounts` `moves`
        with its own counts set, and its slice level; ``(None, moves, nan)`` when it has none."""

    def update_state(self, rng: np.random.Generator, w, sweep: int) -> dict[str, float]:
        """The prior's chain variables after the sweep's update of ``Z`` and ``alpha``."""

    def on_device(self, n_rows: int) -> tuple[float, float, float]:
        """What the device sweep's stick moves need, ``(beta, sum_i beta / (beta + i - 1), the
        singleton rate per unit alpha)``; raises ValueError, with the reason, for a prior the
        device does not run."""

    def propose_column(self, rng: np.random.Generator, z: np.ndarray) -> np.ndarray:
        """:attr:`propose` for every entry of a column `z` at once (the same law)."""

    def singleton_rate(self, n: int, alpha: float) -> float:
        """Poisson mean of the dimensions one row of `n` uses alone, given the others."""

    def singleton_values(self, rng: np.random.Generator, k: int, n: int) -> np.ndarray:
        """The values of `k` dimensions born to one row of `n` (int8)."""

    def weights_given(self, rng: np.random.Generator, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(keep, weights)``: the active dimensions and a draw of their weights given `Z`."""

    def update_alpha(self, rng: np.random.Generator, k_plus: int, n: int, a: float, b: float) -> float:
        """The concentration's conjugate update, prior ``Gamma(a, rate b)``."""

    def expected_k_plus(self, n: int, alpha: float) -> float:
        """``E[K+]`` of `n` rows at concentration `alpha`."""

    def in_support(self, values: np.ndarray) -> bool:
        """Whether every one of `values` is a value ``Z`` may hold."""

    def new_rows(self, rng: np.random.Generator, n: int, weights: np.ndarray) -> np.ndarray:
        """``n`` new rows of ``Z`` (int8) drawn from the prior given the weights."""

    def row_log_ratio(self, z_cur: np.ndarray, z_new: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """For new rows given the weights (prediction): ``log p(z_new) q(z_cur | z_new) /
        (p(z_cur) q(z_new | z_cur))`` with the proposal of :meth:`propose_column`."""
