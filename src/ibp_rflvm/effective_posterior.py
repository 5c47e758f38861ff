"""Effective number of dimensions (SPEC section 2.2) of a fitted estimator's chains.

:mod:`ibp_rflvm.effective` scores one posterior sample; here the estimators of
:mod:`ibp_rflvm.estimator` apply it to their kept samples, on first use, then cached. Each
sample costs one likelihood evaluation per dimension, so only an evenly thinned subset of the
kept samples (at most ``EFFECTIVE_MAX_DRAWS`` per chain) is scored.
"""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits

from .effective import DEFAULT_SHARE, effective_share, importance_and_gain
from .effective import effective_dimensions as _count_effective

#: At most this many kept samples per chain are scored for the effective number of dimensions.
EFFECTIVE_MAX_DRAWS = 50


def effective_draws(n_kept: int, max_draws: int = EFFECTIVE_MAX_DRAWS) -> np.ndarray:
    """Indices of `n_kept` samples thinned evenly to at most `max_draws`, the last one included
    (the final sample is the one ``latent_`` and ``transform`` use)."""
    if n_kept <= max_draws:
        return np.arange(n_kept)
    if max_draws == 1:
        return np.array([n_kept - 1])  # linspace would give the first sample
    return np.unique(np.round(np.linspace(0, n_kept - 1, max_draws)).astype(np.int64))


class EffectiveDimensionsMixin:
    """Effective dimensions of a fitted estimator's thinned kept samples, cached per fit.

    The estimator provides ``_check_fitted`` and the fitted ``_chains``, ``_data``, ``spec_``,
    ``traces_`` and ``chain_weights_``.
    """

    def _effective_importance(self, max_draws: int | None = None) -> list[list[np.ndarray]]:
        """``dimension_importance`` of every chain's thinned kept samples (cached per fit)."""
        return [[imp for imp, _ in chain] for chain in self._effective_scores(max_draws)]

    def _effective_scores(self, max_draws: int | None = None) -> list[list[tuple[np.ndarray, float]]]:
        """``importance_and_gain`` of every chain's thinned kept samples (cached per fit)."""
        self._check_fitted()
        max_draws = EFFECTIVE_MAX_DRAWS if max_draws is None else max_draws
        cache = getattr(self, "_effective_cache", None)
        # Keyed on the chains object itself, so a refit (new chains) recomputes.
        if cache is not None and cache[0] is self._chains and cache[2] == max_draws:
            return cache[1]
        draws = effective_draws(len(self._chains[0].record.samples), max_draws)
        with threadpool_limits(limits=1, user_api="blas"):
            importance = [
                [
                    importance_and_gain(s.H, s.W, s.params, self._data, self.spec_)
                    for s in (res.record.samples[i] for i in draws)
                ]
                for res in self._chains
            ]
        self._effective_cache = (self._chains, importance, max_draws)
        return importance

    def effective_dimensions(
        self, threshold: float | None = None, max_draws: int | None = None, share: float = DEFAULT_SHARE
    ) -> np.ndarray:
        """Effective dimensions of each chain's thinned kept samples (``chains x draws`` ints).

        By default a dimension counts when removing it lowers the training log-likelihood by more
        than `share` of the sample's gain over no latent dimensions, a threshold free of the
        data's scale; with `threshold`, by more than `threshold` nats per observed entry instead
        (see :mod:`ibp_rflvm.effective`). Other values reuse the cached scores, so it costs
        nothing to compare several. `max_draws` (default ``EFFECTIVE_MAX_DRAWS``) bounds the
        draws scored per chain; 1 scores only the final sample, the one ``latent_`` uses.
        """
        self._check_fitted()  # before _data is read, so an unfitted model says so
        n_observed = int(self._data.observed.sum())
        if threshold is None:
            count = lambda imp, gain: effective_share(imp, gain, share)  # noqa: E731
        else:
            count = lambda imp, gain: _count_effective(imp, n_observed, threshold)  # noqa: E731
        return np.array(
            [[count(imp, gain) for imp, gain in chain] for chain in self._effective_scores(max_draws)],
            dtype=np.int64,
        )

    @property
    def effective_dims_(self) -> np.ndarray:
        """Effective dimensions at the default share of the gain, ``chains x draws``; the draws are the
        kept samples thinned evenly to at most ``EFFECTIVE_MAX_DRAWS`` per chain
        (``effective_draws_`` gives their indices among the kept samples)."""
        return self.effective_dimensions()

    @property
    def effective_draws_(self) -> np.ndarray:
        """Indices, among each chain's kept samples, of the draws in ``effective_dims_``."""
        self._check_fitted()
        return effective_draws(len(self._chains[0].record.samples))

    @property
    def effective_dims_posterior_(self) -> dict[int, float]:
        """Posterior of the effective number of dimensions: value -> probability over all
        chains' thinned draws, chain ``k``'s draws sharing its weight ``chain_weights_[k]``
        (ascending values; probabilities sum to 1)."""
        return weighted_posterior(self.effective_dims_, self.chain_weights_)

    @property
    def k_plus_posterior_(self) -> dict[int, float]:
        """Posterior of ``K+`` (the dense model: its fixed ``D``) over the kept sweeps, chain
        ``k``'s sweeps sharing its weight ``chain_weights_[k]``."""
        return weighted_posterior(self._kept_k_plus(), self.chain_weights_)

    def _kept_k_plus(self) -> np.ndarray:
        """``K+`` of every chain's kept sweeps, ``chains x kept``."""
        self._check_fitted()
        kept = len(self._chains[0].record.samples)
        trace = self.traces_["n_active"]
        return trace[:, trace.shape[1] - kept :]


def posterior_median(posterior: dict[int, float]) -> int:
    """Lower median of an integer posterior (ascending value -> probability, as
    :func:`weighted_posterior` gives): the smallest value with half the mass at or below it."""
    values = np.fromiter(posterior.keys(), dtype=np.int64)
    cumulative = np.cumsum(np.fromiter(posterior.values(), dtype=np.float64))
    return int(values[min(np.searchsorted(cumulative, 0.5 - 1e-12), values.size - 1)])


def weighted_posterior(values: np.ndarray, chain_weights: np.ndarray) -> dict[int, float]:
    """value -> probability of a ``chains x draws`` integer array, each chain's draws sharing its
    weight equally (ascending values; zero-probability values left out)."""
    values = np.asarray(values)
    per_draw = np.repeat(np.asarray(chain_weights, dtype=np.float64) / values.shape[1], values.shape[1])
    uniq, inverse = np.unique(values.ravel(), return_inverse=True)
    prob = np.bincount(inverse, weights=per_draw, minlength=uniq.size)
    prob = prob / prob.sum()
    return {int(v): float(p) for v, p in zip(uniq, prob, strict=True) if p > 0}
