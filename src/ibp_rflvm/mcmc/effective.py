"""Effective number of latent dimensions (docs/sampler.md, section 6).

The posterior of ``K+`` counts every represented dimension, including ones whose ``x`` values
or frequency coordinates are so small that the features barely notice them: such a dimension
costs the prior little and the likelihood nothing, so the sampler keeps it around. A user asking
"how many dimensions does my data need?" wants instead the dimensions the data would miss. For
one posterior sample, the importance of dimension ``d`` is the drop in training log-likelihood
when ``d`` is removed (its column deleted from ``H = X * Z`` and from ``W``, which for the
features is the same as setting ``H[:, d] = 0``).

A dimension counts when that drop exceeds a share (:data:`DEFAULT_SHARE`) of the sample's
*gain*: its log-likelihood minus that of the same sample with every latent dimension removed
(``H = 0``, features constant). The threshold is then free of the data's scale: on sparse counts
(SMS spam, -0.03 nats per entry in all) an absolute threshold of 0.01 nats per entry counted no
dimension at all (docs/sampler.md section 6). The absolute threshold, in nats per observed entry,
is still available (:func:`effective_dimensions`).
"""

from __future__ import annotations

import numpy as np

from ..features import feature_map
from ..likelihoods.base import LikelihoodParams
from ..state import Data, ModelSpec
from ..targets import likelihood_target

#: Nats per observed entry that removing a dimension must cost before it counts as effective.
#: The threshold scales with the number of observed entries because a dimension should matter
#: for the data as a whole, not improve one row: a dimension used by a single row still buys
#: that row's fit some nats (17 on Cambridge bars, 500 x 36), which a fixed threshold in nats
#: would count on large data sets and a per-entry one does not. On Cambridge bars the four
#: generating dimensions score 0.16-0.24 nats per entry and the extra ones 0.001-0.022, so
#: 0.01 can still admit an extra dimension used by a few percent of the rows.
DEFAULT_THRESHOLD = 0.01

#: Share of a sample's gain over no latent dimensions that removing a dimension must cost before
#: it counts (the default). Measured in docs/sampler.md section 6.
DEFAULT_SHARE = 0.05


def dimension_importance(
    H: np.ndarray, W: np.ndarray, params: LikelihoodParams, data: Data, spec: ModelSpec
) -> np.ndarray:
    """Drop in training log-likelihood when each column of `H` (``N x K``) is removed
    (the first of :func:`importance_and_gain`)."""
    return importance_and_gain(H, W, params, data, spec)[0]


def importance_and_gain(
    H: np.ndarray, W: np.ndarray, params: LikelihoodParams, data: Data, spec: ModelSpec
) -> tuple[np.ndarray, float]:
    """Drop in training log-likelihood when each column of `H` (``N x K``) is removed, and the
    drop when all of them are (the gain of the fit over no latent dimensions).

    `W` is the sample's ``M x K`` frequencies and `params` its likelihood variables (``beta``,
    ``L x J``, always). Returns ``K`` values; positive means the data prefer the dimension.

    * Collapsed Gaussian: the unobserved entries are completed with the sample's own mean
      ``Phi beta``, and the collapsed marginal likelihood (weights and noise integrated out) is
      compared with and without the dimension, so the weights can adapt to the removal: a
      dimension whose job another one can take over is not counted as important.
    * Other likelihoods (factorised given the weights): the log-likelihood of the observed
      entries with the sample's weights held fixed, with and without the dimension. The weights
      cannot adapt, so this tends to overstate what the dimension is worth, but it needs no
      refit of ``beta`` (these models have no closed-form marginal to compare).

    Dimensions no row uses (``H[:, d] = 0``) get exactly 0 without any evaluation. The gain
    costs one more evaluation, with the same weights or marginal as the importances.
    """
    H = np.asarray(H, dtype=np.float64)
    W = np.asarray(W, dtype=np.float64)
    K = H.shape[1]
    out = np.zeros(K)
    if K == 0 or not np.any(H):
        return out, 0.0
    Phi = feature_map(H, W, spec.bias)
    loglik = likelihood_target(spec, data).scorer(Phi, params)
    full = loglik(Phi)
    H_d = H.copy()
    for d in range(K):
        if not np.any(H[:, d]):
            continue
        # Zeroing column d is deleting it from H and W: H W^T no longer sees W[:, d].
        H_d[:, d] = 0.0
        out[d] = full - loglik(feature_map(H_d, W, spec.bias))
        H_d[:, d] = H[:, d]
    gain = full - loglik(feature_map(np.zeros_like(H), W, spec.bias))
    return out, float(gain)


def effective_dimensions(
    importance: np.ndarray, n_observed: int, threshold: float = DEFAULT_THRESHOLD
) -> int:
    """Number of dimensions whose removal lowers the log-likelihood by more than
    ``threshold * n_observed`` nats (`threshold` is in nats per observed entry)."""
    if threshold < 0:
        raise ValueError(f"threshold must be non-negative; got {threshold}")
    return int(np.count_nonzero(np.asarray(importance) > threshold * float(n_observed)))


def effective_share(importance: np.ndarray, gain: float, share: float = DEFAULT_SHARE) -> int:
    """Number of dimensions whose removal lowers the log-likelihood by more than `share` of the
    sample's `gain` over no latent dimensions (:func:`importance_and_gain`); none when there is
    no gain."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"share must be in [0, 1]; got {share}")
    if not gain > 0.0:
        return 0
    return int(np.count_nonzero(np.asarray(importance) > share * gain))
