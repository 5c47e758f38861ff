"""How many latent dimensions a fit uses: posteriors of ``K+`` and of the effective number.

``K+`` (the dimensions any row uses) is a trace of every sweep; the effective number
(docs/sampler.md, section 6) counts the dimensions whose removal costs the likelihood a real share of its gain
over none. :mod:`ibp_rflvm.mcmc.effective` scores one sample; here it is applied to a
:class:`~ibp_rflvm.summaries.posterior.Posterior`'s kept samples. Each sample costs one likelihood
evaluation per dimension, so only an evenly thinned subset of each chain's kept samples (at most
``EFFECTIVE_MAX_DRAWS``) is scored, once per posterior and number of draws.
"""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits

from ..mcmc.effective import DEFAULT_SHARE, effective_share, importance_and_gain
from ..mcmc.effective import effective_dimensions as _count_effective
from .posterior import Posterior, thin

#: At most this many kept samples per chain are scored for the effective number of dimensions.
EFFECTIVE_MAX_DRAWS = 50


def effective_draws(n_kept: int, max_draws: int = EFFECTIVE_MAX_DRAWS) -> np.ndarray:
    """Indices of `n_kept` samples thinned evenly to at most `max_draws`, the last one included
    (the final sample is the one ``latent_`` and ``transform`` use)."""
    return thin(n_kept, max_draws)


def effective_scores(
    posterior: Posterior, max_draws: int | None = None
) -> list[list[tuple[np.ndarray, float]]]:
    """``importance_and_gain`` of every chain's thinned kept samples (computed once per
    posterior and `max_draws`, default ``EFFECTIVE_MAX_DRAWS``)."""
    max_draws = EFFECTIVE_MAX_DRAWS if max_draws is None else max_draws

    def compute():
        with threadpool_limits(limits=1, user_api="blas"):
            return [
                [importance_and_gain(s.H, s.W, s.params, posterior.data, posterior.spec) for s in samples]
                for _, samples, _ in posterior.thinned(max_draws)
            ]

    return posterior.memo(("effective", max_draws), compute)


def effective_dimensions(
    posterior: Posterior, threshold: float | None = None, max_draws: int | None = None,
    share: float = DEFAULT_SHARE,
) -> np.ndarray:
    """Effective dimensions of each chain's thinned kept samples (``chains x draws`` ints).

    By default a dimension counts when removing it lowers the training log-likelihood by more
    than `share` of the sample's gain over no latent dimensions, a threshold free of the
    data's scale; with `threshold`, by more than `threshold` nats per observed entry instead
    (see :mod:`ibp_rflvm.mcmc.effective`). Other values reuse the stored scores, so it costs
    nothing to compare several. `max_draws` (default ``EFFECTIVE_MAX_DRAWS``) bounds the
    draws scored per chain; 1 scores only the final sample, the one ``latent_`` uses.
    """
    n_observed = int(posterior.data.observed.sum())
    if threshold is None:
        count = lambda imp, gain: effective_share(imp, gain, share)  # noqa: E731
    else:
        count = lambda imp, gain: _count_effective(imp, n_observed, threshold)  # noqa: E731
    return np.array(
        [[count(imp, gain) for imp, gain in chain] for chain in effective_scores(posterior, max_draws)],
        dtype=np.int64,
    )


def k_plus_posterior(posterior: Posterior) -> dict[int, float]:
    """Posterior of ``K+`` (the dense model: its fixed ``D``) over the kept sweeps, chain ``k``'s
    sweeps sharing its weight."""
    return weighted_posterior(posterior.kept("n_active"), posterior.weights)


def effective_dims_posterior(posterior: Posterior) -> dict[int, float]:
    """Posterior of the effective number of dimensions over every chain's thinned draws, chain
    ``k``'s draws sharing its weight."""
    return weighted_posterior(effective_dimensions(posterior), posterior.weights)


def posterior_median(posterior: dict[int, float]) -> int:
    """Lower median of an integer posterior (ascending value -> probability, as
    :func:`weighted_posterior` gives): the smallest value with half the mass at or below it."""
    values = np.fromiter(posterior.keys(), dtype=np.int64)
    cumulative = np.cumsum(np.fromiter(posterior.values(), dtype=np.float64))
    return int(values[min(np.searchsorted(cumulative, 0.5 - 1e-12), values.size - 1)])


class Distribution(dict):
    """An integer posterior, value -> probability, that prints its probabilities rounded to three
    decimals (the values themselves are exact: ``d[k]`` is the float)."""

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{k}: {v:.3f}" for k, v in self.items()) + "}"


def weighted_posterior(values: np.ndarray, chain_weights: np.ndarray) -> dict[int, float]:
    """value -> probability of a ``chains x draws`` integer array, each chain's draws sharing its
    weight equally (ascending values; zero-probability values left out)."""
    values = np.asarray(values)
    per_draw = np.repeat(np.asarray(chain_weights, dtype=np.float64) / values.shape[1], values.shape[1])
    uniq, inverse = np.unique(values.ravel(), return_inverse=True)
    prob = np.bincount(inverse, weights=per_draw, minlength=uniq.size)
    prob = prob / prob.sum()
    return Distribution({int(v): float(p) for v, p in zip(uniq, prob, strict=True) if p > 0})


class EffectiveDimensionsMixin:
    """The estimators' names for the functions above, applied to their ``posterior_``."""

    def effective_dimensions(
        self, threshold: float | None = None, max_draws: int | None = None, share: float = DEFAULT_SHARE
    ) -> np.ndarray:
        """Effective number of dimensions of each chain's thinned kept samples.

        A dimension counts when removing it from a sample lowers the training log-likelihood by
        a real share of the sample's gain over no latent dimensions (:doc:`/sampler`, section
        6). Other thresholds reuse the stored scores, so comparing several costs nothing.

        Parameters
        ----------
        threshold : float or None, default=None
            None: count by `share`, a threshold free of the data's scale. A number: count a
            dimension when removing it costs more than `threshold` nats per observed entry.
        max_draws : int or None, default=None
            At most this many kept samples per chain, thinned evenly with the last one included
            (None: ``EFFECTIVE_MAX_DRAWS``, 50); 1 scores only the final sample, the one
            ``latent_`` uses.
        share : float, default=0.05
            The share of the sample's gain a dimension must carry (with ``threshold=None``).

        Returns
        -------
        ndarray of int of shape (n_chains, n_draws)
            The effective number of dimensions of each chain's thinned draws
            (``effective_draws_`` gives their indices among the kept samples).
        """
        return effective_dimensions(self._posterior(), threshold, max_draws, share)

    @property
    def effective_dims_(self) -> np.ndarray:
        """Effective number of dimensions of each chain's thinned draws, ``n_chains x n_draws``.

        At the default share of the gain (:meth:`effective_dimensions`); the draws are the kept
        samples thinned evenly to at most ``EFFECTIVE_MAX_DRAWS`` (50) per chain
        (``effective_draws_`` gives their indices among the kept samples).
        """
        return self.effective_dimensions()

    @property
    def effective_draws_(self) -> np.ndarray:
        """Indices, among each chain's kept samples, of the draws in ``effective_dims_``."""
        return effective_draws(self._posterior().n_kept)

    @property
    def effective_dims_posterior_(self) -> dict[int, float]:
        """Posterior of the effective number of dimensions, as a dict from value to probability.

        Over all chains' thinned draws (``effective_dims_``), chain ``k``'s draws sharing its
        weight ``chain_weights_[k]``; ascending values, probabilities summing to 1.
        """
        return effective_dims_posterior(self._posterior())

    @property
    def k_plus_posterior_(self) -> dict[int, float]:
        """Posterior of ``K+`` over the kept sweeps, as a dict from value to probability.

        Chain ``k``'s kept sweeps share its weight ``chain_weights_[k]``; ascending values,
        probabilities summing to 1. The dense model's is its fixed `n_components` with
        probability 1.
        """
        return k_plus_posterior(self._posterior())
