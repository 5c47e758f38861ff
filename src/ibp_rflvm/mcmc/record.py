"""What a chain keeps: per-sweep traces, move counts and the samples after burn-in (:class:`ChainRecord`).

A kept sample is a :class:`Sample`; the reconstruction (the likelihood's mean averaged over the
kept samples) is computed from them on demand rather than summed during the chain, so that a
resumed chain and an uninterrupted one give it bit for bit (and checkpoints stay small).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ..features import feature_map
from ..likelihoods.base import LikelihoodParams
from ..state import ChainState, ModelSpec

TRACES = ("n_active", "loglik", "alpha", "eta", "n_components", "ibp_beta")
#: Traces a checkpoint written before they existed may lack, with the value they had then.
_LATER_TRACES = {"ibp_beta": 1.0}
#: Traces stored under another name by earlier versions.
_OLD_NAMES = {"ibp_beta": "beta"}
#: A move count of a sweep run before the counts were kept (a checkpoint of an older version).
NOT_RECORDED = -1


class MoveCounts(NamedTuple):
    """What a sweep's moves did: the counts of :class:`ibp_rflvm.model.SweepInfo` (0 for a move
    the sweep does not run). One sweep's are ints; :attr:`ibp_rflvm.posterior.Posterior.moves`
    holds each as a ``chains x sweeps`` array.

    ``z_flips``: entries of ``Z`` the slice step's Gibbs pass changed, ``new_dims``: the
    dimensions it added; ``flips``: accepted joint ``(z, x)`` flips; ``transfers`` and
    ``absorbs``: accepted pair moves, of ``transfers_proposed`` and ``absorbs_proposed``;
    ``births`` and ``deaths``: singleton dimensions born and removed; ``x_evals``: likelihood
    evaluations of the rows' elliptical slice sampling; ``w_accepted``: accepted frequencies;
    ``flips_proposed``: proposed joint flips; ``singletons``: accepted singleton birth/death
    proposals (one a row), of ``singletons_proposed``; ``w_moved``: frequencies whose value
    changed.
    """

    z_flips: int
    new_dims: int
    flips: int
    transfers_proposed: int
    transfers: int
    absorbs_proposed: int
    absorbs: int
    births: int
    deaths: int
    x_evals: int
    w_accepted: int
    flips_proposed: int
    singletons_proposed: int
    singletons: int
    w_moved: int

    @classmethod
    def of(cls, info) -> MoveCounts:
        """The counts of one sweep's info (a :class:`~ibp_rflvm.model.SweepInfo`)."""
        return cls(*(int(getattr(info, name)) for name in cls._fields))


class Sample(NamedTuple):
    """One kept sample: the latent positions ``H = X * Z``, the frequencies ``W``, the
    likelihood's variables (``params.beta``: the weights) and the IBP's sticks ``pi``."""

    H: np.ndarray
    W: np.ndarray
    params: LikelihoodParams
    pi: np.ndarray

    def to_tree(self) -> dict:
        """The sample for a checkpoint (its variables by name, as checkpoints store them)."""
        return {**self._asdict(), "params": self.params.arrays()}

    @classmethod
    def from_tree(cls, tree: dict) -> Sample:
        return cls(**{**tree, "params": LikelihoodParams.from_arrays(tree["params"])})


@dataclass
class ChainRecord:
    """What a run keeps: per-sweep traces and the samples after burn-in."""

    n_active: list = field(default_factory=list)
    loglik: list = field(default_factory=list)
    alpha: list = field(default_factory=list)
    eta: list = field(default_factory=list)
    n_components: list = field(default_factory=list)
    #: The IBP's sharing parameter (1 throughout for the one-parameter IBP).
    ibp_beta: list = field(default_factory=list)
    samples: list = field(default_factory=list)
    #: Each sweep's :class:`MoveCounts`.
    moves: list = field(default_factory=list)

    def add(self, state: ChainState, info, keep: bool) -> None:
        """Append `state`'s traces and its sweep's move counts (`info`: the sweep's; its
        ``recorded`` :class:`~ibp_rflvm.model.SweepInfo` is the recorded state's) and, with
        `keep`, the state as a sample."""
        info = info.recorded
        self.moves.append(MoveCounts.of(info))
        self.n_active.append(info.k_plus)
        self.loglik.append(state.loglik)
        self.alpha.append(state.alpha)
        self.eta.append(state.eta)
        self.n_components.append(info.n_components)
        self.ibp_beta.append(state.ibp_beta)
        if keep:
            # C order, as a checkpoint gives them back: predictions from a resumed chain's
            # samples then take the same arithmetic path as from the uninterrupted chain's.
            self.samples.append(
                Sample(
                    np.ascontiguousarray(state.H), np.ascontiguousarray(state.W), state.params.contiguous(),
                    np.ascontiguousarray(state.pi),
                )
            )  # fmt: skip

    def reconstruction_sum(self, spec: ModelSpec, prep=None) -> np.ndarray | None:
        """The sum over the kept samples, in their order, of each one's reconstruction (the
        likelihood's mean). Computed on demand rather than during the chain: a count model's
        mean costs a softmax or exponential over all ``N x J`` entries per sample, and an
        ``N x J`` running sum would dominate the checkpoint (43 MB for spam)."""
        lik = spec.likelihood
        total = None
        for sample in self.samples:
            psi = feature_map(sample.H, sample.W, spec.bias) @ sample.params.beta
            # Count likelihoods may need the training-row index and per-row constants (binomial
            # trials per entry, size factors), which `prep` holds.
            mean = lik.mean(psi, sample.params, rows=np.arange(psi.shape[0]), prep=prep)
            if total is None:
                total = np.zeros_like(mean)
            total += mean
        return total

    def to_tree(self) -> dict:
        ints = {"n_active", "n_components"}
        traces = {
            n: np.asarray(getattr(self, n), dtype=np.int64 if n in ints else np.float64) for n in TRACES
        }
        moves = np.array(self.moves, dtype=np.int64).reshape(len(self.moves), len(MoveCounts._fields))
        return {
            "traces": traces,
            "moves": {name: moves[:, i] for i, name in enumerate(MoveCounts._fields)},
            "samples": [s.to_tree() for s in self.samples],
        }

    @classmethod
    def from_tree(cls, tree: dict) -> ChainRecord:
        saved = tree["traces"]
        n_sweeps = len(saved["n_active"])
        saved = {n: saved[_OLD_NAMES[n]] if n not in saved and _OLD_NAMES.get(n) in saved else saved.get(n)
                 for n in TRACES}  # fmt: skip
        traces = {
            n: np.asarray(saved[n]).tolist() if saved[n] is not None else [_LATER_TRACES[n]] * n_sweeps
            for n in TRACES
        }
        # Counts a checkpoint written before they were kept lacks: NOT_RECORDED for its sweeps.
        saved_moves = tree.get("moves", {})
        columns = [
            np.asarray(saved_moves[name]).tolist() if name in saved_moves else [NOT_RECORDED] * n_sweeps
            for name in MoveCounts._fields
        ]
        moves = [MoveCounts(*row) for row in zip(*columns, strict=True)]
        return cls(**traces, samples=[Sample.from_tree(s) for s in tree["samples"]], moves=moves)


@dataclass
class ChainResult:
    state: ChainState
    record: ChainRecord
