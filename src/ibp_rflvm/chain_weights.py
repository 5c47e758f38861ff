"""Weights of a fit's chains: stacking of their leave-one-entry-out predictive densities.

Chains started from different numbers of dimensions settle in different posterior modes
(docs/sampler.md section 5), and which mode predicts best differs by data set. Pooling their
samples with equal weights lets a poor mode dilute a good one; stacking (Yao, Vehtari and Gelman
2022, "Stacking for non-mixing Bayesian computations") weighs each chain by how well the mixture
predicts data it has not seen. Here the unit left out is one observed training entry ``y_ij``:
each chain's kept samples give the pointwise log-likelihoods ``log p(y_ij | theta_s)``, PSIS-LOO
(:mod:`.stacking`) turns them into ``log p_k(y_ij | y_-ij)`` with a Pareto ``k`` diagnostic per
entry, and the weights maximise ``sum_ij log sum_k w_k p_k(y_ij | y_-ij)``. A row's latent
position depends on all its entries, so leaving one entry out moves the posterior little and the
importance ratios stay usable; leaving out whole rows would not (SPEC section 2.3).

On large data the observed entries of a random subset of rows, about ``max_entries`` of them,
are scored (a fixed seed, so the weights are a deterministic function of the fit): the objective
is a sum over entries, so the subset estimates it without bias, with the standard error reported
per chain. Whole rows keep the cost proportional to the entries scored, since a sample's
predictors are then needed for those rows only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .predictive import pointwise_logpdf
from .stacking import pareto_k_summary, psis_loo, stacking_weights

#: Observed entries scored by default (a random subset above it).
MAX_ENTRIES = 100_000
#: Ways of combining chains.
COMBINE = ("stack", "pool")
#: Seed of the entry subset: not the chains' generators, which must stay untouched.
SUBSET_SEED = 20221


@dataclass(frozen=True)
class ChainWeights:
    """What stacking computed: ``weights`` (one per chain, summing to one), each chain's mean
    PSIS-LOO density per entry ``elpd`` with its standard error ``elpd_se`` over the scored
    entries, ``pareto_k_bad`` (share of entries whose ``k`` is above the reliability threshold
    for the chain's number of draws, ``min(1 - 1/log10 S, 0.7)``: 0.41 at 50 draws, 0.54 at 150)
    and ``pareto_k_above_07`` (above the classic 0.7), ``n_entries`` scored of ``n_observed``,
    and ``combine``."""

    weights: np.ndarray
    elpd: np.ndarray
    elpd_se: np.ndarray
    pareto_k_bad: np.ndarray
    pareto_k_above_07: np.ndarray
    n_entries: int
    n_observed: int
    combine: str


def scored_entries(observed: np.ndarray, max_entries: int = MAX_ENTRIES) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices of the observed entries to score: all of them, or all those of a
    fixed random subset of rows holding about `max_entries` (whole rows, so that each sample's
    predictors are computed for those rows only: the cost is that of the entries scored, not of
    the ``N x J`` matrix)."""
    rows, cols = np.nonzero(observed)
    if rows.size <= max_entries:
        return rows, cols
    per_row = observed.sum(axis=1)
    order = np.random.default_rng(SUBSET_SEED).permutation(observed.shape[0])
    # The first rows of the permutation whose entries reach max_entries (at least one row).
    n_rows = max(1, int(np.searchsorted(np.cumsum(per_row[order]), max_entries)))
    keep = np.zeros(observed.shape[0], dtype=bool)
    keep[order[:n_rows]] = True
    pick = keep[rows]
    return rows[pick], cols[pick]


def pointwise_loglik(samples: Sequence[dict], data, spec, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``S x n`` log-likelihoods ``log p(y_ij | theta_s)`` of the training entries ``(rows,
    cols)``, computed as held-out entries are scored (:func:`~ibp_rflvm.predictive.pointwise_logpdf`)."""
    unique_rows, row_pos = np.unique(rows, return_inverse=True)
    return pointwise_logpdf(samples, spec, data.prep, unique_rows, row_pos, cols, data.Y[rows, cols])


def chain_weights(
    chains: Sequence[Sequence[dict]], data, spec, combine: str = "stack", max_entries: int = MAX_ENTRIES
) -> ChainWeights:
    """Weights of `chains` (each a list of kept samples): stacking or equal pooling.

    With one chain the weight is 1 and nothing is scored. With equal pooling each chain weighs
    its share of the kept samples, and the LOO scores are still computed for the summary.
    """
    if combine not in COMBINE:
        raise ValueError(f"combine must be one of {list(COMBINE)}; got {combine!r}")
    n_chains = len(chains)
    n_observed = int(data.observed.sum())
    if n_chains == 1:
        nan = np.full(1, np.nan)
        return ChainWeights(np.ones(1), nan, nan, nan, nan, 0, n_observed, combine)
    rows, cols = scored_entries(data.observed, max_entries)
    elpd_i = np.empty((rows.size, n_chains))
    bad, above = np.empty(n_chains), np.empty(n_chains)
    for k, samples in enumerate(chains):
        elpd_i[:, k], pareto_k = psis_loo(pointwise_loglik(samples, data, spec, rows, cols))
        bad[k] = pareto_k_summary(pareto_k, len(samples))["bad"]
        above[k] = float(np.mean(~(pareto_k <= 0.7)))
    if combine == "stack":
        weights = stacking_weights(elpd_i)
    else:
        sizes = np.array([len(c) for c in chains], dtype=np.float64)
        weights = sizes / sizes.sum()
    n = rows.size
    elpd = elpd_i.mean(axis=0)
    se = elpd_i.std(axis=0, ddof=1) / np.sqrt(n) if n > 1 else np.full(n_chains, np.nan)
    return ChainWeights(weights, elpd, se, bad, above, n, n_observed, combine)


def sample_weights(chain_sizes: Sequence[int], weights: np.ndarray) -> np.ndarray:
    """Weight of every kept sample, chains in order: chain ``k``'s weight spread evenly over its
    samples, so a weighted sum over samples is the stacked mixture of the chains' posteriors."""
    return np.concatenate([np.full(n, w / n) for n, w in zip(chain_sizes, weights, strict=True) if n > 0])
