"""What each latent dimension means, read from the whole posterior.

Every kept sample (at most ``SUMMARY_MAX_DRAWS`` per chain, evenly thinned; chain ``k``'s sharing
its weight) is reduced to its dimensions' effects
(:mod:`.effects`), the dimensions are matched across samples (:mod:`.align`), and each aligned
dimension ``d`` is summarised over the samples:

* ``probability``: the posterior probability that it exists (the weight of the samples that
  have it);
* ``usage``: per row, the posterior probability that the row uses it (0 in samples without
  it); its mean over rows is the expected share of rows that use it;
* ``share``: its posterior-mean share of the fit, each sample's dimensions dividing the summed
  squared change of the linear predictor that switching each off causes (0 where absent);
* ``effect``, ``lower``, ``upper``: the posterior mean of its effect on each column given that
  it exists, and an equal-tailed credible interval from the weighted quantiles of the samples
  that have it.

Reported are the dimensions that exist with probability at least ``min_probability``, largest
share first, named ``"d1"``, ``"d2"``, ...
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from .align import MIN_SIMILARITY, align
from .effects import sample_effects
from .posterior import Posterior

#: Reported dimensions exist in at least this share of the posterior.
MIN_PROBABILITY = 0.5
#: Mass of the effects' equal-tailed credible intervals.
LEVEL = 0.9
#: Kept samples per chain summarised (evenly thinned, the last included): consecutive samples are
#: strongly correlated, and each costs trigonometry over its used rows for every dimension.
SUMMARY_MAX_DRAWS = 100
#: Top columns named in ``dimensions_``.
N_TOP_NAMED = 5


def weighted_quantiles(values: np.ndarray, weights: np.ndarray, qs: Sequence[float]) -> np.ndarray:
    """Quantiles `qs` of each column of `values` (``S x J``) under sample `weights` (``S``),
    the inverse of the weighted step CDF, vectorised over the columns: ``len(qs) x J``."""
    values = np.asarray(values, dtype=np.float64)
    order = np.argsort(values, axis=0, kind="stable")
    sorted_values = np.take_along_axis(values, order, axis=0)
    cdf = np.cumsum(np.asarray(weights, dtype=np.float64)[order], axis=0)
    cdf /= cdf[-1]
    out = np.empty((len(qs), values.shape[1]))
    for t, q in enumerate(qs):
        idx = np.minimum(np.sum(cdf < q - 1e-12, axis=0), values.shape[0] - 1)
        out[t] = np.take_along_axis(sorted_values, idx[None, :], axis=0)[0]
    return out


@dataclass(frozen=True)
class DimensionSummary:
    """The reported latent dimensions of a posterior (:func:`dimension_summary`).

    Parameters
    ----------
    labels : tuple of str
        The dimensions' names, ``"d1"``, ``"d2"``, ..., largest share first.
    probability : ndarray of shape (n_dims,)
        Posterior probability that each exists.
    share : ndarray of shape (n_dims,)
        Posterior-mean share of the fit.
    usage : ndarray of shape (n_samples, n_dims)
        Posterior probability that each row uses each dimension.
    effect, lower, upper : ndarray of shape (n_dims, n_features)
        Posterior-mean effect on each column given that the dimension exists, and the bounds
        of its equal-tailed credible interval.
    level : float
        The interval's mass.
    n_samples : int
        Kept samples summarised.
    n_aligned : int
        Dimensions the alignment found, reported or not.
    ids : ndarray of int of shape (n_dims,)
        Each reported dimension's label in :func:`aligned_draws`'s ``labels``.
    """

    labels: tuple[str, ...]
    probability: np.ndarray
    share: np.ndarray
    usage: np.ndarray
    effect: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    level: float
    n_samples: int
    n_aligned: int
    ids: np.ndarray


def dimension_summary(
    posterior: Posterior,
    min_probability: float = MIN_PROBABILITY,
    level: float = LEVEL,
    min_similarity: float = MIN_SIMILARITY,
) -> DimensionSummary:
    """The reported dimensions of `posterior` (computed once per posterior and settings).

    Parameters
    ----------
    posterior : Posterior
        A fit's posterior.
    min_probability : float, default=0.5
        Report dimensions that exist with at least this posterior probability.
    level : float, default=0.9
        Mass of the effects' credible intervals.
    min_similarity : float, default=0.4
        The alignment's threshold (:func:`.align.align`).

    Returns
    -------
    DimensionSummary
        The reported dimensions, largest share first.
    """
    if not 0.0 < min_probability <= 1.0:
        raise ValueError(f"min_probability must be in (0, 1]; got {min_probability!r}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1); got {level!r}")
    key = ("dimension_summary", float(min_probability), float(level), float(min_similarity))
    return posterior.memo(key, lambda: _summarise(posterior, min_probability, level, min_similarity))


@dataclass(frozen=True)
class AlignedDraws:
    """The kept samples the summaries read, with their dimensions matched to one another.

    Parameters
    ----------
    samples : list of ibp_rflvm.mcmc.record.Sample
        Every chain of positive weight's kept samples, thinned to at most ``SUMMARY_MAX_DRAWS``.
    weights : ndarray of shape (n_draws,)
        Their posterior weights, summing to one.
    effects : list of SampleEffects
        Each sample's active dimensions and their effects (:mod:`.effects`).
    labels : list of ndarray of int
        The aligned label of each of a sample's active dimensions (:func:`.align.align`).
    """

    samples: list
    weights: np.ndarray
    effects: list
    labels: list


def aligned_draws(posterior: Posterior, min_similarity: float = MIN_SIMILARITY) -> AlignedDraws:
    """The matched kept samples of `posterior` (computed once per posterior and threshold)."""
    key = ("aligned_draws", float(min_similarity))
    return posterior.memo(key, lambda: _align_draws(posterior, min_similarity))


def _align_draws(posterior: Posterior, min_similarity: float) -> AlignedDraws:
    samples, weights, effects = [], [], []
    for c, kept, _ in posterior.thinned(SUMMARY_MAX_DRAWS):
        if posterior.weights[c] > 0 and kept:
            samples.extend(kept)
            weights.extend([posterior.weights[c] / len(kept)] * len(kept))
            effects.extend(chain_effects(posterior, c))
    weights = np.asarray(weights) / np.sum(weights)
    with threadpool_limits(limits=1, user_api="blas"):
        labels = align(effects, weights, min_similarity)
    return AlignedDraws(samples, weights, effects, labels)


def chain_effects(posterior: Posterior, chain: int) -> list:
    """:func:`.effects.sample_effects` of chain `chain`'s kept samples, thinned to at most
    ``SUMMARY_MAX_DRAWS`` (computed once per posterior and chain)."""

    def compute():
        spec = posterior.spec
        shift = spec.likelihood.row_shift_invariant
        kept = posterior.thinned(SUMMARY_MAX_DRAWS)[chain][1]
        with threadpool_limits(limits=1, user_api="blas"):
            return [sample_effects(s.H, s.W, s.params.beta, spec.bias, shift) for s in kept]

    return posterior.memo(("chain_effects", chain), compute)


def _summarise(posterior: Posterior, min_probability: float, level: float, min_similarity: float):
    draws = aligned_draws(posterior, min_similarity)
    shape = posterior.shape
    return summarise_aligned(draws.effects, draws.labels, draws.weights, shape, min_probability, level)


def summarise_aligned(
    effects: Sequence, labels: Sequence, weights: np.ndarray, shape: tuple[int, int],
    min_probability: float, level: float,
) -> DimensionSummary:
    """The reported dimensions of matched samples (`labels` from :func:`.align.align`)."""  # fmt: skip
    n_rows, n_cols = shape
    n_aligned = 1 + max((int(lab.max()) for lab in labels if lab.size), default=-1)
    probability = np.zeros(n_aligned)
    share = np.zeros(n_aligned)
    for eff, lab, w in zip(effects, labels, weights, strict=True):
        probability[lab] += w
        total = eff.weight.sum()
        if total > 0:
            share[lab] += w * eff.weight / total
    reported = np.flatnonzero(probability >= min_probability - 1e-12)
    reported = reported[np.argsort(-share[reported], kind="stable")]
    # Rows' usage only for the reported dimensions: samples unlike the rest can each add
    # dimensions of their own, and an N-long column for each would cost memory for nothing.
    slot = np.full(n_aligned, -1)
    slot[reported] = np.arange(reported.size)
    usage = np.zeros((n_rows, reported.size))
    for eff, lab, w in zip(effects, labels, weights, strict=True):
        keep = slot[lab] >= 0
        usage[:, slot[lab[keep]]] += w * eff.used[:, keep]
    tails = ((1.0 - level) / 2, (1.0 + level) / 2)
    mean = np.zeros((reported.size, n_cols))
    bounds = np.zeros((2, reported.size, n_cols))
    for t, d in enumerate(reported):
        values, w = _effects_of(d, effects, labels, weights)
        mean[t] = w @ values / w.sum()
        bounds[:, t] = weighted_quantiles(values, w, tails)
    return DimensionSummary(
        labels=tuple(f"d{t + 1}" for t in range(reported.size)),
        probability=probability[reported], share=share[reported], usage=usage,
        effect=mean, lower=bounds[0], upper=bounds[1], level=float(level),
        n_samples=len(effects), n_aligned=n_aligned, ids=reported.astype(np.int64),
    )  # fmt: skip


def _effects_of(d: int, effects, labels, weights) -> tuple[np.ndarray, np.ndarray]:
    """The effects of aligned dimension `d` in the samples that have it, and their weights."""
    values, w = [], []
    for eff, lab, wt in zip(effects, labels, weights, strict=True):
        hit = np.flatnonzero(lab == d)
        if hit.size:
            values.append(eff.effect[hit[0]])
            w.append(wt)
    return np.asarray(values), np.asarray(w)
