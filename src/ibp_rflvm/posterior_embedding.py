"""The posterior embedding of a fitted estimator (:mod:`.embedding` does the linear algebra).

The kernel is ``"signal"``: each kept sample's noise-free linear predictor ``Phi_s beta_s``, so
rows are close when the posterior expects the data to respond alike to them. Measured against the
GP kernel of the features alone on cancer, mice and congress (docs/embedding.md), it places rows
as well for nearest neighbours at 5 dimensions and beyond, and its spectrum is concentrated
enough that "the components carrying 90% of the centred kernel's trace" gives a compact
dimension (cancer 6, mice 11), where the features kernel spreads its trace like a squared
exponential kernel and needs more than 50.

Samples are each chain's kept samples thinned evenly to at most ``EMBEDDING_MAX_DRAWS``, each
chain's weight (``chain_weights_``) spread over its thinned samples.
"""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits

from ._validation import check_int, check_random_state
from .effective_posterior import effective_draws, posterior_median
from .embedding import Embedding, check_n_components, fit_embedding, sample_block

#: Kept samples per chain that enter the kernel (evenly thinned, the last one included).
EMBEDDING_MAX_DRAWS = 50
#: Kernel of the estimators' embedding (one of ``embedding.KERNELS``).
EMBEDDING_KERNEL = "signal"


class PosteriorEmbeddingMixin:
    """``embedding_``, ``embedding(n_components)`` and ``embed(Y_new)`` of a fitted estimator.

    The estimator provides ``_check_fitted``, ``_new_data`` (new rows checked and prepared, from
    :class:`~ibp_rflvm.predictive.PredictiveMixin`), ``k_plus_posterior_`` (from
    :class:`~ibp_rflvm.effective_posterior.EffectiveDimensionsMixin`) and the fitted
    ``_chains``, ``chain_weights_`` and ``spec_``.
    """

    def _embedding_samples(self) -> tuple[list[dict], np.ndarray, np.ndarray]:
        """The samples the kernel uses, their weights and their chains."""
        samples, weights, chains = [], [], []
        for c, (res, w) in enumerate(zip(self._chains, self.chain_weights_, strict=True)):
            kept = res.record.samples
            if w <= 0 or not kept:
                continue
            draws = effective_draws(len(kept), EMBEDDING_MAX_DRAWS)
            samples.extend(kept[i] for i in draws)
            weights.extend([w / draws.size] * draws.size)
            chains.extend([c] * draws.size)
        return samples, np.asarray(weights), np.asarray(chains)

    def _block(self, sample: dict) -> np.ndarray:
        """One sample's unweighted kernel block (rows centred for a row-shift-invariant model)."""
        centre = self.spec_.likelihood.row_shift_invariant
        return sample_block(sample, self.spec_.bias, EMBEDDING_KERNEL, centre_rows=centre)

    def _training_blocks(self) -> list[np.ndarray]:
        samples, weights, _ = self._embedding_samples()
        return [np.sqrt(w) * self._block(s) for s, w in zip(samples, weights, strict=True)]

    def _embedding(self) -> Embedding:
        self._check_fitted()
        cache = getattr(self, "_embedding_cache", None)
        if cache is not None and cache[0] is self._chains and cache[1] is self.chain_weights_:
            return cache[2]
        with threadpool_limits(limits=1, user_api="blas"):
            emb = fit_embedding(self._training_blocks())
        self._embedding_cache = (self._chains, self.chain_weights_, emb)
        return emb

    @property
    def embedding_dims_(self) -> int:
        """The fit's own embedding dimension: the fewest kernel principal components that carry
        90% of the centred posterior kernel's trace (``embedding.VARIANCE_SHARE``), raised to
        the latent's width (the posterior median of ``K+``; the dense model's ``D``) where that
        is more, and at most the components there are."""
        return self._embedding().own_dimension(self._latent_width())

    def _latent_width(self) -> int:
        """Median of the (stacked) posterior of ``K+``."""
        return posterior_median(self.k_plus_posterior_)

    @property
    def embedding_(self) -> np.ndarray:
        """Posterior embedding of the training rows, ``N x embedding_dims_``: kernel principal
        components of the posterior-mean kernel, invariant to how any sample labels, flips,
        rotates or splits its latent dimensions (:mod:`ibp_rflvm.embedding`)."""
        return self._embedding().scores[:, : self.embedding_dims_].copy()

    def embedding(self, n_components: int) -> np.ndarray:
        """The training rows' posterior embedding with `n_components` coordinates (2 for a plot).

        The first coordinates are the same whatever `n_components`; at most as many as the
        centred posterior kernel has non-zero eigenvalues (and ``embedding.MAX_COMPONENTS``).
        """
        emb = self._embedding()
        n = check_n_components(n_components, emb.n_available)
        return emb.scores[:, :n].copy()

    def embed(
        self,
        Y_new,
        n_components: int | None = None,
        n_draws: int = 10,
        n_sweeps: int = 40,
        burn_in: int = 15,
        random_state=None,
        missing_mask=None,
        size_factors=None,
    ) -> np.ndarray:
        """New rows placed in the training rows' posterior embedding (``n_new x n_components``,
        default ``embedding_dims_``).

        Under each of `n_draws` kept samples per chain (evenly spaced among those the embedding
        uses, with the weights it gives them) the new rows' latent positions are sampled as in
        :meth:`transform` (`n_sweeps`, `burn_in`), their kernel block averaged over the kept
        sweeps, and projected on the training embedding's components. A training row given as a
        new row lands near its own coordinates: exactly there if its sampled latent positions
        were the training chain's and every embedding sample were used (`n_draws` at least
        ``EMBEDDING_MAX_DRAWS``), since the projection of the training blocks is the embedding.
        """
        from .predictive import sample_new_rows

        emb = self._embedding()
        if n_components is None:
            n = self.embedding_dims_
        else:
            n = check_n_components(n_components, emb.n_available)
        Yn, lik, prep = self._new_data(Y_new, missing_mask, size_factors)
        if not 0 <= burn_in < n_sweeps:
            raise ValueError(f"burn_in must be in [0, n_sweeps); got {burn_in} with n_sweeps={n_sweeps}")
        n_draws = check_int("n_draws", n_draws, 1)
        rng = check_random_state(0 if random_state is None else random_state)
        samples, weights, chains = self._embedding_samples()
        chosen = _spread(chains, n_draws)
        new_blocks, train_blocks = [], []
        with threadpool_limits(limits=1, user_api="blas"):
            for i, scale in chosen:
                smp = samples[i]
                _, _, block = sample_new_rows(
                    rng,
                    Yn,
                    lik,
                    prep,
                    smp,
                    self.spec_.ibp,
                    self.spec_.bias,
                    n_sweeps,
                    burn_in,
                    block=lambda H, smp=smp: self._block(smp._replace(H=H)),
                )
                w = np.sqrt(weights[i] * scale)
                new_blocks.append(w * block)
                train_blocks.append(w * self._block(smp))
            return emb.project(new_blocks, train_blocks, n)


def _spread(chains: np.ndarray, n_draws: int) -> list[tuple[int, float]]:
    """At most `n_draws` evenly spaced embedding samples of each chain, each with the factor
    (samples of its chain over those chosen) that keeps its chain's total weight."""
    out = []
    for c in np.unique(chains):
        idx = np.flatnonzero(chains == c)
        pick = idx[effective_draws(idx.size, n_draws)]
        out.extend((int(i), idx.size / pick.size) for i in pick)
    return out
