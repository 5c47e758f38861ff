"""How sure the posterior is about each row's place in the embedding.

The posterior embedding (:mod:`ibp_rflvm.summaries.embedding`) is the kernel principal components of
``Kbar = sum_s w_s C_s C_s^T``, with ``C_s`` sample ``s``'s centred block of per-row function
values (``N x J``, in the data's columns, so comparable across samples). With
``U = V / sqrt(lambda)`` (``V`` the eigenvectors), the embedded rows are

    Kbar U = sum_s w_s C_s L_s,    L_s = C_s^T U  (``J x n``, sample ``s``'s loadings):

each sample places every row at ``C_s L_s`` and ``embedding_`` is the weighted mean of those
places. Their spread mixes two things: how much the row's own function values vary between
samples, and how much the loadings vary, which moves every row together, in proportion to
its distance from the centre, whether its data pin it down or not. Only the first is the row's
uncertainty, so ``embedding_std_`` is

    sd_i = sqrt( sum_s w_s ((c_is - cbar_i) L_s)^2 ),    cbar = sum_s w_s C_s,

the spread of the row's function values about their posterior mean, expressed in each
sample's loadings. A row whose entries are mostly unobserved has a latent position the data
pin down less, so its function values vary more between samples, and so does its place.
"""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits

from .embedding import embedding_samples, posterior_block, posterior_embedding
from .posterior import Posterior


def _directions(posterior: Posterior, n: int) -> np.ndarray:
    emb = posterior_embedding(posterior)
    return emb.scores[:, :n] / emb.eigenvalues[:n]


def embedding_std(posterior: Posterior, n: int) -> np.ndarray:
    """Posterior standard deviation of the training rows' first `n` embedding coordinates.

    One pass over the embedding's samples keeps each sample's places ``C_s L_s`` and loadings
    ``L_s`` and sums the posterior-mean function values ``cbar``; the deviations
    ``(C_s - cbar) L_s = C_s L_s - cbar L_s`` then need no sample's block again (see the
    module's docstring). Computed once per posterior and `n`.

    Parameters
    ----------
    posterior : Posterior
        A fit's posterior.
    n : int
        Leading coordinates of the embedding (at most those it has).

    Returns
    -------
    ndarray of shape (n_samples, n)
        Each row's standard deviation on each coordinate.
    """

    def compute() -> np.ndarray:
        samples, weights, _ = embedding_samples(posterior)
        U = _directions(posterior, n)
        total = float(np.sum(weights))
        with threadpool_limits(limits=1, user_api="blas"):
            mean, kept = None, []
            for smp, w in zip(samples, weights, strict=True):
                C = _centred(posterior, smp)
                loadings = C.T @ U
                kept.append((w, C @ loadings, loadings))
                mean = w * C if mean is None else mean + w * C
            mean /= total
            second = np.zeros((posterior.shape[0], n))
            for w, places, loadings in kept:
                second += w * (places - mean @ loadings) ** 2
        return np.sqrt(second / total)

    return posterior.memo(("embedding_std", int(n)), compute)


def _centred(posterior: Posterior, sample) -> np.ndarray:
    block = posterior_block(posterior, sample)
    return block - block.mean(axis=0)
