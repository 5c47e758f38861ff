"""What a fit leaves: :class:`Posterior`, the chains' kept samples and traces with their weights.

Every summary of a fit is a function of one of these (as numpyro's ``Predictive`` and
``diagnostics.summary`` are functions of the posterior samples): held-out scoring and new rows
(:mod:`ibp_rflvm.summaries.predictive`), the number of dimensions (:mod:`ibp_rflvm.summaries.dimensions`), the
embedding (:mod:`ibp_rflvm.summaries.embedding`), the ArviZ export and summary
(:mod:`ibp_rflvm.summaries.diagnostics`), the AnnData tool and the reproduction harness. The estimators
hold theirs as ``posterior_``.

Latent dimensions have no identity across chains, so what needs one coordinate system (the
final state, ``latent_``, new rows) uses the chain of largest weight, :attr:`Posterior.best_chain`;
what a mixture can answer (scores, the reconstruction, the embedding, posteriors of ``K+``) uses
every chain, chain ``k``'s kept samples sharing its weight.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from ..mcmc.record import ChainResult, MoveCounts, Sample
from .stacking import ChainWeights, sample_weights

if TYPE_CHECKING:  # pragma: no cover
    from ..model import ChainState, Data, ModelSpec


@dataclass(frozen=True, eq=False)
class Posterior:
    """The chains of one fit and what combines them (an estimator's ``posterior_``).

    Derived values that cost a pass over the samples (the reconstruction, effective dimensions,
    the embedding) are computed once, on first use.

    Parameters
    ----------
    chains : tuple of ibp_rflvm.mcmc.record.ChainResult
        Each chain's final state, per-sweep traces and kept samples.
    data : Data
        The training data as the sampler saw them.
    spec : ModelSpec
        The model.
    chain_starts : ndarray of shape (n_chains,)
        Each chain's starting number of dimensions.
    stacking : ibp_rflvm.summaries.stacking.ChainWeights
        The chains' weights and their PSIS-LOO scores.
    burn_in : int
        The sweeps before the first kept sample.
    """

    chains: tuple[ChainResult, ...]
    data: Data
    spec: ModelSpec
    chain_starts: np.ndarray
    stacking: ChainWeights
    burn_in: int
    _memo: dict = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.chains:
            raise ValueError("a posterior needs at least one chain")
        if len(self.stacking.weights) != len(self.chains) or len(self.chain_starts) != len(self.chains):
            raise ValueError(
                f"{len(self.chains)} chains but {len(self.stacking.weights)} weights and "
                f"{len(self.chain_starts)} starts"
            )
        kept = {len(res.record.samples) for res in self.chains}
        if len(kept) != 1:
            raise ValueError(f"every chain must keep as many samples; got {sorted(kept)}")

    # -- the chains ---------------------------------------------------------------------------

    @property
    def n_chains(self) -> int:
        return len(self.chains)

    @property
    def n_kept(self) -> int:
        """Kept samples per chain (the same for every chain)."""
        return len(self.chains[0].record.samples)

    @property
    def n_iter(self) -> int:
        """Sweeps each chain ran, burn-in included."""
        return len(self.chains[0].record.n_active)

    @property
    def shape(self) -> tuple[int, int]:
        """``(rows, columns)`` of the training data."""
        return self.data.Y.shape

    @property
    def weights(self) -> np.ndarray:
        """Each chain's weight (summing to one): stacking's, or its share of the samples."""
        return self.stacking.weights

    @property
    def best_chain(self) -> int:
        """The chain of largest weight (the first among equals): the one whose final state
        fixes the coordinate system of ``latent_``, ``transform`` and the single-chain traces."""
        return int(np.argmax(self.weights))

    @property
    def state(self) -> ChainState:
        """The best chain's final state."""
        return self.chains[self.best_chain].state

    def chain_samples(self, chain: int) -> list[Sample]:
        """Chain `chain`'s kept samples, in sweep order."""
        return self.chains[chain].record.samples

    @cached_property
    def samples(self) -> tuple[Sample, ...]:
        """Every kept sample, chain after chain, in sweep order within a chain."""
        return tuple(smp for res in self.chains for smp in res.record.samples)

    @cached_property
    def sample_weights(self) -> np.ndarray:
        """Weight of each of :attr:`samples`: chain ``k``'s weight spread evenly over its samples,
        so a weighted sum over samples is the mixture of the chains' posteriors."""
        return sample_weights([len(r.record.samples) for r in self.chains], self.weights)

    @cached_property
    def traces(self) -> dict[str, np.ndarray]:
        """Per-sweep traces, ``chains x sweeps`` arrays: ``n_active`` (``K+``), ``loglik``
        (observed-data log-likelihood), ``alpha``, ``eta``, ``n_components`` (frequency mixture
        components) and one for each of the prior on ``Z``'s own variables (the IBP's
        ``ibp_beta``)."""
        names = self.chains[0].record.traces()
        return {name: np.array([res.record.traces()[name] for res in self.chains]) for name in names}

    @cached_property
    def moves(self) -> MoveCounts:
        """Per-sweep counts of what the sweep's moves did, each a ``chains x sweeps`` int array
        (the fields of :class:`~ibp_rflvm.mcmc.record.MoveCounts`; ``-1`` for the sweeps of a
        checkpoint written before the counts were kept). Rates per move are in
        :func:`ibp_rflvm.summaries.diagnostics.move_table`."""
        per_chain = [np.array(res.record.moves, dtype=np.int64).reshape(-1, len(MoveCounts._fields))
                     for res in self.chains]  # fmt: skip
        return MoveCounts(*np.moveaxis(np.stack(per_chain), 2, 0))

    def kept(self, name: str) -> np.ndarray:
        """Trace `name` over the kept sweeps, ``chains x kept``."""
        trace = self.traces[name]
        return trace[:, trace.shape[1] - self.n_kept :]

    # -- derived values -----------------------------------------------------------------------

    def memo(self, key: Any, compute: Callable[[], Any]) -> Any:
        """``compute()``, evaluated once per posterior and `key` (a posterior never changes, so
        nothing derived from it goes stale)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def reconstruction(self) -> np.ndarray:
        """Posterior-mean reconstruction of the training matrix: the likelihood's mean averaged
        over every chain's kept samples, chain ``k`` weighted by its weight (computed once)."""

        def compute() -> np.ndarray:
            return sum(
                (w / len(res.record.samples)) * res.record.reconstruction_sum(self.spec, self.data.prep)
                for res, w in zip(self.chains, self.weights, strict=True)
                if w > 0 and res.record.samples
            )

        return self.memo("reconstruction", compute)

    def thinned(self, max_draws: int) -> list[tuple[int, Sequence[Sample], np.ndarray]]:
        """For each chain: its index, its kept samples thinned evenly to at most `max_draws`
        (the last one included) and their indices among the kept samples."""
        idx = thin(self.n_kept, max_draws)
        return [(c, [res.record.samples[i] for i in idx], idx) for c, res in enumerate(self.chains)]


def thin(n_kept: int, max_draws: int) -> np.ndarray:
    """Indices of `n_kept` samples thinned evenly to at most `max_draws`, the last one included
    (the final sample is the one ``latent_`` and ``transform`` use)."""
    if n_kept <= max_draws:
        return np.arange(n_kept)
    if max_draws == 1:
        return np.array([n_kept - 1])  # linspace would give the first sample
    return np.unique(np.round(np.linspace(0, n_kept - 1, max_draws)).astype(np.int64))


def ordered_latent(H: np.ndarray) -> np.ndarray:
    """Active dimensions of ``H = X * Z``, most used first (the order of ``latent_``)."""
    usage = np.count_nonzero(H, axis=0)
    order = np.argsort(-usage, kind="stable")
    return H[:, order[usage[order] > 0]]
