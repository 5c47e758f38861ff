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
from ..priors import RENAMED_TRACES
from ..state import ChainState, ModelSpec, MoveCounts

#: The traces every chain keeps; the prior on ``Z`` adds one per variable of its own
#: (:attr:`ChainRecord.z_traces`).
TRACES = ("n_active", "loglik", "alpha", "eta", "n_components")
#: A move count of a sweep run before the counts were kept (a checkpoint of an older version).
NOT_RECORDED = -1


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
    #: A trace of each of the prior on ``Z``'s own variables (``ChainState.z_state``; the IBP's
    #: ``ibp_beta``), by name.
    z_traces: dict = field(default_factory=dict)
    samples: list = field(default_factory=list)
    #: Each sweep's :class:`MoveCounts`.
    moves: list = field(default_factory=list)

    def add(self, state: ChainState, info, keep: bool) -> None:
        """Append `state`'s traces and its sweep's move counts (`info`: the sweep's; its
        ``recorded`` :class:`~ibp_rflvm.state.SweepInfo` is the recorded state's) and, with
        `keep`, the state as a sample."""
        info = info.recorded
        self.moves.append(info.moves)
        self.n_active.append(info.k_plus)
        self.loglik.append(state.loglik)
        self.alpha.append(state.alpha)
        self.eta.append(state.eta)
        self.n_components.append(info.n_components)
        self._add_z_state(state.z_state)
        if keep:
            # C order, as a checkpoint gives them back: predictions from a resumed chain's
            # samples then take the same arithmetic path as from the uninterrupted chain's.
            self.samples.append(
                Sample(
                    np.ascontiguousarray(state.H), np.ascontiguousarray(state.W), state.params.contiguous(),
                    np.ascontiguousarray(state.pi),
                )
            )  # fmt: skip

    def _add_z_state(self, z_state: dict) -> None:
        # A record resumed from an older version's checkpoint may lack a variable of the prior
        # (it then ran at the value it has now: the settings' check refuses a chain that did
        # not) or hold one the prior has no more (recorded for every prior, at its neutral value).
        sweeps = len(self.n_active) - 1
        for name in [n for n in self.z_traces if n not in z_state]:
            del self.z_traces[name]
        for name, value in z_state.items():
            self.z_traces.setdefault(name, [float(value)] * sweeps).append(float(value))

    def traces(self) -> dict[str, list]:
        """Every trace by name: :data:`TRACES` and the prior's."""
        return {**{n: getattr(self, n) for n in TRACES}, **self.z_traces}

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
            n: np.asarray(v, dtype=np.int64 if n in ints else np.float64) for n, v in self.traces().items()
        }
        moves = np.array(self.moves, dtype=np.int64).reshape(len(self.moves), len(MoveCounts._fields))
        return {
            "traces": traces,
            "moves": {name: moves[:, i] for i, name in enumerate(MoveCounts._fields)},
            "samples": [s.to_tree() for s in self.samples],
        }

    @classmethod
    def from_tree(cls, tree: dict) -> ChainRecord:
        saved = {RENAMED_TRACES.get(n, n): np.asarray(v).tolist() for n, v in tree["traces"].items()}
        n_sweeps = len(saved["n_active"])
        traces = {n: saved.pop(n) for n in TRACES}
        # Counts a checkpoint written before they were kept lacks: NOT_RECORDED for its sweeps.
        saved_moves = tree.get("moves", {})
        columns = [
            np.asarray(saved_moves[name]).tolist() if name in saved_moves else [NOT_RECORDED] * n_sweeps
            for name in MoveCounts._fields
        ]
        moves = [MoveCounts(*row) for row in zip(*columns, strict=True)]
        samples = [Sample.from_tree(s) for s in tree["samples"]]
        return cls(**traces, z_traces=saved, samples=samples, moves=moves)


@dataclass
class ChainResult:
    state: ChainState
    record: ChainRecord
