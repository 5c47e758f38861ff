"""Whether a dimension would be found again: in what share of the chains it appears.

Stacking weighs chains by their predictive scores and often gives one chain nearly all the
weight, so the reported dimensions (:mod:`.meaning`) are then one chain's. Consensus methods for
factorisations report instead how often a factor recurs across independent runs. Here each
chain is summarised on its own (its thinned kept samples matched to one another at equal
weights, the dimensions it has with probability at least 0.5), and a reported dimension
*appears* in a chain when the chain has a dimension whose posterior-mean effect on the columns
has cosine at least :data:`MIN_COSINE` with the reported one's, each chain dimension paired with
at most one reported dimension (the Hungarian assignment maximising the summed cosine). Every
chain counts alike, whatever its stacking weight.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

from .align import align
from .meaning import MIN_PROBABILITY, DimensionSummary, chain_effects, summarise_aligned
from .posterior import Posterior

#: Effect cosine at or above which a chain's dimension is the reported one.
MIN_COSINE = 0.8


def chain_summary(posterior: Posterior, chain: int) -> DimensionSummary:
    """The dimensions chain `chain` has on its own (computed once per posterior and chain)."""

    def compute():
        effects = chain_effects(posterior, chain)
        weights = np.full(len(effects), 1.0 / max(len(effects), 1))
        labels = align(effects, weights)
        return summarise_aligned(effects, labels, weights, posterior.shape, MIN_PROBABILITY, 0.9)

    return posterior.memo(("chain_summary", chain), compute)


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``len(a) x len(b)`` cosines of the rows of `a` and `b` (0 where either is zero)."""
    norms = np.linalg.norm(a, axis=1)[:, None] * np.linalg.norm(b, axis=1)[None, :]
    dots = a @ b.T
    return np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)


def found_in_chain(
    effect: np.ndarray, chain_effect: np.ndarray, min_cosine: float = MIN_COSINE
) -> np.ndarray:
    """Which rows of `effect` (reported dimensions) a chain with dimensions `chain_effect` has."""
    found = np.zeros(effect.shape[0], dtype=bool)
    if effect.shape[0] == 0 or chain_effect.shape[0] == 0:
        return found
    cos = cosines(effect, chain_effect)
    rows, cols = linear_sum_assignment(cos, maximize=True)
    found[rows] = cos[rows, cols] >= min_cosine
    return found


def chain_share(
    posterior: Posterior, summary: DimensionSummary, min_cosine: float = MIN_COSINE
) -> np.ndarray:
    """Share of the chains in which each reported dimension of `summary` appears.

    Parameters
    ----------
    posterior : Posterior
        A fit's posterior.
    summary : DimensionSummary
        Its reported dimensions (:func:`~ibp_rflvm.summaries.dimension_summary`).
    min_cosine : float, default=0.8
        A chain's dimension is a reported one when their effects have at least this cosine.

    Returns
    -------
    ndarray of shape (n_dims,)
        The share of chains, each counted alike; NaN for a fit of one chain, which says nothing
        about reproducibility.
    """
    if posterior.n_chains < 2:
        return np.full(len(summary.labels), np.nan)
    hits = np.zeros(len(summary.labels))
    for c in range(posterior.n_chains):
        hits += found_in_chain(summary.effect, chain_summary(posterior, c).effect, min_cosine)
    return hits / posterior.n_chains
