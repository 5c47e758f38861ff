"""Posterior embedding of the training rows: kernel PCA of a posterior-mean kernel.

One posterior sample's latent matrix ``H = X * Z`` has no identity across samples: its columns
can be relabelled, flipped, rotated or split between several IBP dimensions without changing the
model, so neither one sample nor an average of samples is a summary a user can trust. The random
Fourier features do not see those changes, since they depend on ``H`` only through ``H W^T``, and
neither does anything computed from them. Each kept sample ``s`` (weight ``w_s``, the weights
summing to one) gives a block ``B_s`` of per-row quantities, and the posterior-mean kernel

    Kbar = sum_s w_s B_s B_s^T

is invariant to all those changes (docs/embedding.md, section 1), and so are its distances
``Kbar_ii + Kbar_jj - 2 Kbar_ij``: posterior-expected squared distances between rows. Two blocks
are offered (:data:`KERNELS`):

* ``"features"``: ``B_s = Phi_s``, the random features; ``Kbar`` is the posterior mean of the
  GP's kernel.
* ``"signal"``: ``B_s = Phi_s beta_s``, each row's noise-free linear predictor (``N x J``); the
  kernel of the GP's function values, in which a latent direction counts as much as the data
  respond to it (an automatic relevance weighting, like the ARD sensitivity of a GPLVM).

The embedding is the kernel principal components: the top eigenvectors of the doubly-centred
``Kbar``, each scaled by the square root of its eigenvalue, so that Euclidean distances between
embedded rows approximate the centred kernel's distances as closely as ``d`` coordinates can.
Signs are fixed (the largest entry of each component positive) so the result does not depend on
the eigensolver. They are also the principal components of the stacked, centred blocks
``[sqrt(w_1) B_1, ..., sqrt(w_S) B_S]``, which is how a large ``N`` is handled without an
``N x N`` matrix (a randomized range finder with power iterations, Halko, Martinsson and Tropp
2011, multiplying by one block at a time), and how new rows are placed: their blocks, centred by
the training means, projected on the same directions.

The fitted estimators' embedding (``embedding_``, ``embedding(n)``, ``embed``) is a function of
their :class:`~ibp_rflvm.summaries.posterior.Posterior` (:func:`posterior_embedding`): the ``"signal"``
kernel over each chain's kept samples thinned evenly to at most ``EMBEDDING_MAX_DRAWS``, each
chain's weight spread over its thinned samples. Measured against the ``"features"`` kernel on
cancer, mice and congress (docs/embedding.md), the signal kernel places rows as well for nearest
neighbours at 5 dimensions and beyond, and its spectrum is concentrated enough that "the
components carrying 90% of the centred kernel's trace" gives a compact dimension (cancer 6, mice
11), where the features kernel spreads its trace like a squared exponential kernel and needs
more than 50.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from ..features import feature_map
from ..plumbing.validation import check_int, check_random_state
from .dimensions import k_plus_posterior, posterior_median
from .posterior import Posterior, thin
from .predictive import new_data, sample_new_rows

#: Per-sample blocks the kernel can be built from.
KERNELS = ("signal", "features")
#: Above this many rows the ``N x N`` kernel is not formed; the randomized solver is used.
EXACT_MAX_ROWS = 3000
#: Components kept by a fit (``embedding(n)`` gives at most this many).
MAX_COMPONENTS = 50
#: Oversampling and power iterations of the randomized solver.
OVERSAMPLE = 10
POWER_ITERATIONS = 6
#: The fit's own dimension carries at least this share of the centred kernel's trace.
VARIANCE_SHARE = 0.9
#: Kept samples per chain that enter a fit's kernel (evenly thinned, the last one included).
EMBEDDING_MAX_DRAWS = 50
#: Kernel of the estimators' embedding (one of :data:`KERNELS`).
EMBEDDING_KERNEL = "signal"


def sample_block(
    sample, bias: bool, kind: str, rows: np.ndarray | None = None, centre_rows: bool = False
) -> np.ndarray:
    """One kept sample's block for `rows` (all rows by default), unweighted.

    The bias feature is constant over rows, so centring removes it from ``"features"``; it stays
    in ``"signal"``, where it shifts every row's predictor alike and is removed the same way.
    `centre_rows` subtracts each row's mean predictor, for likelihoods that ignore it (the
    multinomial's softmax), so that an unidentified offset does not count as a difference.
    """
    H = sample.H if rows is None else sample.H[rows]
    if kind == "features":
        return feature_map(H, sample.W, False)
    if kind == "signal":
        block = feature_map(H, sample.W, bias) @ sample.params.beta
        return block - block.mean(axis=1, keepdims=True) if centre_rows else block
    raise ValueError(f"kernel must be one of {list(KERNELS)}; got {kind!r}")


@dataclass(frozen=True)
class Embedding:
    """Kernel principal components of a posterior-mean kernel: ``scores`` (``N x r``, the
    embedded training rows; column ``k`` has squared norm ``eigenvalues[k]``), the centred
    kernel's top ``eigenvalues`` and its trace ``total_variance``."""

    scores: np.ndarray
    eigenvalues: np.ndarray
    total_variance: float

    @property
    def n_available(self) -> int:
        return int(self.scores.shape[1])

    def explained_share(self) -> np.ndarray:
        """Cumulative share of the centred kernel's trace carried by the first 1, 2, ... components."""
        if self.total_variance <= 0:
            return np.ones(self.n_available)
        return np.cumsum(self.eigenvalues) / self.total_variance

    def own_dimension(self, latent_width: int, share: float = VARIANCE_SHARE) -> int:
        """The fit's own dimension: the components carrying `share` of the trace, but never
        fewer than the latent has columns (`latent_width`), and never more than there are.

        Why the floor: the trace share weighs a direction by how much output variance it
        carries, and a latent direction with little output variance can still order
        neighbours (Table 3's cells, docs/embedding.md section 1: at the latent's width 1-NN
        accuracy was level or higher than at the 90% dimension on all six real-valued fits).
        So the embedding that replaces ``latent_`` is never narrower than it."""
        return int(min(max(self.default_dimension(share), int(latent_width)), self.n_available))

    def default_dimension(self, share: float = VARIANCE_SHARE) -> int:
        """Fewest components carrying `share` of the centred kernel's trace (all there are when
        even they do not, at least 1 when any exists)."""
        cum = self.explained_share()
        if cum.size == 0:
            return 0
        return int(min(np.searchsorted(cum, share - 1e-12) + 1, cum.size))

    def project(
        self, new_blocks: Sequence[np.ndarray], train_blocks: Sequence[np.ndarray], n: int
    ) -> np.ndarray:
        """Coordinates of new rows, from their weighted blocks and the training rows' (same
        samples, same order and weights as the fit): the centred cross-kernel times the
        eigenvectors, over the eigenvalues. A training row given as a new row gets its own
        score back."""
        U = self.scores[:, :n] / self.eigenvalues[:n]
        out = np.zeros((new_blocks[0].shape[0], n))
        for new, train in zip(new_blocks, train_blocks, strict=True):
            mean = train.mean(axis=0)
            out += (new - mean) @ ((train - mean).T @ U)
        return out


def fit_embedding(
    blocks: Sequence[np.ndarray],
    n_components: int = MAX_COMPONENTS,
    random_state: int = 0,
    exact_max_rows: int = EXACT_MAX_ROWS,
) -> Embedding:
    """Kernel PCA of ``Kbar = sum_s B_s B_s^T`` with ``B_s`` the (already weighted) `blocks`.

    Exact (an ``N x N`` symmetric eigenproblem) up to `exact_max_rows` rows; above, a
    randomized solver whose only randomness is a Generator seeded with `random_state`, so the
    embedding is a deterministic function of the samples.
    """
    if not blocks:
        raise ValueError("no posterior sample with positive weight to embed")
    N = blocks[0].shape[0]
    centred = [b - b.mean(axis=0) for b in blocks]
    total = float(sum(np.sum(c * c, dtype=np.float64) for c in centred))
    width = sum(c.shape[1] for c in centred)
    r = max(0, min(int(n_components), N - 1, width))
    if r == 0 or total <= 0:
        return Embedding(np.zeros((N, 0)), np.zeros(0), total)
    if N <= exact_max_rows:
        K = np.zeros((N, N))
        for c in centred:
            K += c @ c.T
        vals, vecs = np.linalg.eigh(K)
        vals, vecs = vals[::-1][:r], vecs[:, ::-1][:, :r]
    else:
        vals, vecs = _randomized_eigs(centred, r, np.random.default_rng(random_state))
    # Directions with (numerically) no variance carry no coordinate worth reporting.
    keep = vals > max(vals[0], 0.0) * 1e-10
    vals, vecs = vals[keep], vecs[:, keep]
    signs = np.sign(vecs[np.argmax(np.abs(vecs), axis=0), np.arange(vecs.shape[1])])
    vecs = vecs * np.where(signs == 0, 1.0, signs)
    return Embedding(vecs * np.sqrt(vals), vals, total)


def _randomized_eigs(centred: Sequence[np.ndarray], r: int, rng: np.random.Generator):
    """Top `r` eigenpairs of ``sum_s C_s C_s^T`` from products with the blocks ``C_s`` only."""
    N = centred[0].shape[0]

    def kernel_times(Q: np.ndarray) -> np.ndarray:
        out = np.zeros_like(Q)
        for c in centred:
            out += c @ (c.T @ Q)
        return out

    Q, _ = np.linalg.qr(kernel_times(rng.standard_normal((N, min(N, r + OVERSAMPLE)))))
    for _ in range(POWER_ITERATIONS):
        Q, _ = np.linalg.qr(kernel_times(Q))
    small = Q.T @ kernel_times(Q)
    vals, vecs = np.linalg.eigh((small + small.T) / 2)
    order = np.argsort(vals)[::-1][:r]
    return vals[order], Q @ vecs[:, order]


def check_n_components(n_components, available: int) -> int:
    """`n_components` as an int in ``[1, available]``, or a ValueError naming the problem."""
    if isinstance(n_components, bool) or not isinstance(n_components, int | np.integer):
        raise ValueError(f"n_components must be a positive integer; got {n_components!r}")
    n = int(n_components)
    if n < 1:
        raise ValueError(f"n_components must be at least 1; got {n}")
    if n > available:
        raise ValueError(
            f"n_components={n} is more than the {available} components this fit's posterior kernel "
            f"has (at most its rank, the rows minus one and MAX_COMPONENTS={MAX_COMPONENTS})"
        )
    return n


# A fit's embedding ---------------------------------------------------------------------------


def embedding_samples(posterior: Posterior) -> tuple[list, np.ndarray, np.ndarray]:
    """The samples a fit's kernel uses (each chain of positive weight thinned to at most
    ``EMBEDDING_MAX_DRAWS``), their weights and their chains."""
    samples, weights, chains = [], [], []
    for c, kept, _ in posterior.thinned(EMBEDDING_MAX_DRAWS):
        w = posterior.weights[c]
        if w <= 0 or not kept:
            continue
        samples.extend(kept)
        weights.extend([w / len(kept)] * len(kept))
        chains.extend([c] * len(kept))
    return samples, np.asarray(weights), np.asarray(chains)


def posterior_block(posterior: Posterior, sample) -> np.ndarray:
    """One sample's unweighted kernel block (rows centred for a row-shift-invariant model)."""
    centre = posterior.spec.likelihood.row_shift_invariant
    return sample_block(sample, posterior.spec.bias, EMBEDDING_KERNEL, centre_rows=centre)


def posterior_embedding(posterior: Posterior) -> Embedding:
    """Kernel principal components of the posterior-mean kernel of a fit (computed once)."""

    def compute() -> Embedding:
        samples, weights, _ = embedding_samples(posterior)
        with threadpool_limits(limits=1, user_api="blas"):
            pairs = zip(samples, weights, strict=True)
            blocks = [np.sqrt(w) * posterior_block(posterior, s) for s, w in pairs]
            return fit_embedding(blocks)

    return posterior.memo("embedding", compute)


def latent_width(posterior: Posterior) -> int:
    """Median of the (stacked) posterior of ``K+`` (the dense model: its ``D``)."""
    return posterior_median(k_plus_posterior(posterior))


def own_dimension(posterior: Posterior) -> int:
    """The fit's own embedding dimension (:meth:`Embedding.own_dimension` at :func:`latent_width`)."""
    return posterior_embedding(posterior).own_dimension(latent_width(posterior))


def embed_new_rows(
    posterior: Posterior, Yn: np.ndarray, lik, prep, n: int, n_draws: int, n_sweeps: int, burn_in: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Checked new rows `Yn` (with their likelihood and constants) placed in the first `n`
    coordinates of the fit's embedding; see :meth:`PosteriorEmbeddingMixin.embed`."""
    emb = posterior_embedding(posterior)
    samples, weights, chains = embedding_samples(posterior)
    spec = posterior.spec
    new_blocks, train_blocks = [], []
    with threadpool_limits(limits=1, user_api="blas"):
        for i, scale in _spread(chains, n_draws):
            smp = samples[i]
            _, _, block = sample_new_rows(
                rng, Yn, lik, prep, smp, spec.z_prior if spec.ibp else None, spec.bias, n_sweeps, burn_in,
                block=lambda H, smp=smp: posterior_block(posterior, smp._replace(H=H)),
            )  # fmt: skip
            w = np.sqrt(weights[i] * scale)
            new_blocks.append(w * block)
            train_blocks.append(w * posterior_block(posterior, smp))
        return emb.project(new_blocks, train_blocks, n)


def embed_new_rows_with_std(
    posterior: Posterior, Yn: np.ndarray, lik, prep, n: int, n_draws: int, n_sweeps: int, burn_in: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """New rows' first `n` embedding coordinates and their posterior standard deviations.

    The same draws as :func:`embed_new_rows`, so the coordinates are its result. The standard
    deviation is that of ``embedding_std_`` (:mod:`ibp_rflvm.summaries.uncertainty`): the
    spread of the rows' function values about their posterior mean, over the sampler's kept
    sweeps and the posterior samples, expressed in each sample's loadings.
    """
    samples, weights, chains = embedding_samples(posterior)
    spec = posterior.spec
    emb = posterior_embedding(posterior)
    U = emb.scores[:, :n] / emb.eigenvalues[:n]
    # Per sample: its weight, loadings, the rows' mean centred block and mean squared place.
    parts = []
    with threadpool_limits(limits=1, user_api="blas"):
        for i, scale in _spread(chains, n_draws):
            smp = samples[i]
            train = posterior_block(posterior, smp)
            centre = train.mean(axis=0)
            loadings = (train - centre).T @ U

            def moments(H, smp=smp, centre=centre, loadings=loadings):
                block = posterior_block(posterior, smp._replace(H=H)) - centre
                return np.hstack([block, (block @ loadings) ** 2])

            _, _, m = sample_new_rows(
                rng, Yn, lik, prep, smp, spec.z_prior if spec.ibp else None, spec.bias, n_sweeps, burn_in,
                block=moments,
            )  # fmt: skip
            J = m.shape[1] - n
            parts.append((weights[i] * scale, loadings, m[:, :J], m[:, J:]))
        total = sum(p[0] for p in parts)
        mean_block = sum(w * b for w, _, b, _ in parts) / total
        coords = sum(w * (b @ L) for w, L, b, _ in parts)
        # E[((a - abar) L)^2] = E[(a L)^2] - 2 (E[a] L)(abar L) + (abar L)^2 within each sample.
        var = sum(
            w * (sq - 2 * (b @ L) * (mean_block @ L) + (mean_block @ L) ** 2) for w, L, b, sq in parts
        ) / total
    return coords, np.sqrt(np.maximum(var, 0.0))


def _spread(chains: np.ndarray, n_draws: int) -> list[tuple[int, float]]:
    """At most `n_draws` evenly spaced embedding samples of each chain, each with the factor
    (samples of its chain over those chosen) that keeps its chain's total weight."""
    out = []
    for c in np.unique(chains):
        idx = np.flatnonzero(chains == c)
        pick = idx[thin(idx.size, n_draws)]
        out.extend((int(i), idx.size / pick.size) for i in pick)
    return out


class PosteriorEmbeddingMixin:
    """``embedding_``, ``embedding(n_components)``, ``embed(Y_new)`` and the 2-D ``view`` of a
    fitted estimator, functions of its ``posterior_``."""

    @property
    def embedding_dims_(self) -> int:
        """The width of ``embedding_``: the fit's own embedding dimension.

        The fewest kernel principal components that carry 90% of the centred posterior
        kernel's trace (``VARIANCE_SHARE``), raised to the latent's width (the posterior median
        of ``K+``; the dense model's `n_components`) where that is more, and at most the
        components there are. It can exceed the data's number of columns: see ``embedding_``.
        """
        return own_dimension(self._posterior())

    @property
    def embedding_(self) -> np.ndarray:
        """Posterior embedding of the training rows, ``n_samples x embedding_dims_``.

        Kernel principal components of the posterior-mean kernel over every chain's kept
        samples, invariant to how any sample labels, flips, rotates or splits its latent
        dimensions (:doc:`/embedding`). Use it, not ``latent_``, for coordinates that
        summarise the posterior; for a picture use :meth:`view`.

        Its width is not bounded by the data's ``J`` columns, for two reasons. The kernel is a
        mixture: one sample's block has rank at most ``J``, but samples, and chains in other
        modes, that place rows differently add components of their own, so carrying 90% of
        the trace can take more than ``J`` (more with more chains in different modes: 20 columns
        on 13-column wine in a default fit, 30 with 4 chains). And the width is never below the posterior
        median of ``K+``, which the IBP does not bound by ``J``. ``embedding(n)`` gives any
        narrower embedding; its first coordinates are the same whatever ``n``."""
        return posterior_embedding(self._posterior()).scores[:, : self.embedding_dims_].copy()

    def embedding(self, n_components: int) -> np.ndarray:
        """The training rows' first `n_components` kernel principal components of the posterior.

        The leading columns of ``embedding_``, as coordinates for computation: the first
        coordinates are the same whatever `n_components`. Two of them are a linear projection
        that loses most of who is near whom: for a picture use :meth:`view`.

        Parameters
        ----------
        n_components : int
            At least 1, at most as many as the centred posterior kernel has non-zero
            eigenvalues (and ``MAX_COMPONENTS``, 50).

        Returns
        -------
        ndarray of shape (n_samples, n_components)
            The embedded training rows.

        Raises
        ------
        ValueError
            `n_components` not a positive integer, or more than the kernel has.
        """
        emb = posterior_embedding(self._posterior())
        n = check_n_components(n_components, emb.n_available)
        return emb.scores[:, :n].copy()

    def view(
        self, n_components: int = 2, random_state: int = 0, return_std: bool = False
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """A 2-D (or 3-D) picture of the training rows that keeps the posterior's neighbourhoods.

        A t-SNE map of ``embedding_`` (:func:`ibp_rflvm.summaries.view.view`, perplexity 10, chosen by
        measurement there): near rows are near under the posterior kernel; distances between
        clusters mean nothing. The same fit gives the same picture. Computed on first use and
        kept (:doc:`/embedding`, section 4).

        Parameters
        ----------
        n_components : {2, 3}, default=2
            Dimensions of the picture.
        random_state : int, default=0
            Handed to scikit-learn's ``TSNE``; it does not change the picture, whose start is
            the principal axes of ``embedding_`` (:mod:`ibp_rflvm.summaries.view`), so the view is a
            function of the fit alone.
        return_std : bool, default=False
            Also return each row's posterior standard deviation in ``embedding_`` (the norm of
            its row of ``embedding_std_``), to draw as point size or transparency: t-SNE's map
            has no axes of its own on which a spread could be measured.

        Returns
        -------
        positions : ndarray of shape (n_samples, n_components)
            The training rows' positions in the picture.
        std : ndarray of shape (n_samples,)
            Only with `return_std`: each row's posterior standard deviation.
        """
        from .view import view

        post = self._posterior()
        key = ("view", int(n_components))
        positions = post.memo(key, lambda: view(self, n_components, random_state)).copy()
        if return_std:
            return positions, np.linalg.norm(self.embedding_std_, axis=1)
        return positions

    def view_new_rows(self, Y_new, n_components: int = 2, **embed_kw) -> np.ndarray:
        """New rows placed in :meth:`view`'s picture.

        :meth:`embed` positions them in the posterior embedding, then each lands at the
        weighted mean of the view positions of its nearest training rows: t-SNE has no map for
        unseen rows, so they are interpolated, not optimised into the picture.

        Parameters
        ----------
        Y_new : array-like or scipy.sparse matrix of shape (n_new, n_features)
            New rows, as in :meth:`transform`.
        n_components : {2, 3}, default=2
            Dimensions of the picture (that of ``view(n_components)``).
        **embed_kw : dict
            Arguments of :meth:`embed` (`n_draws`, `n_sweeps`, `missing_mask`, ...).

        Returns
        -------
        ndarray of shape (n_new, n_components)
            The new rows' positions in the training rows' picture.
        """
        from .view import view_new_rows

        return view_new_rows(self, Y_new, self.view(n_components), **embed_kw)

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
        return_std: bool = False,
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """New rows placed in the training rows' posterior embedding.

        Under each of `n_draws` kept samples per chain (evenly spaced among those the embedding
        uses, with the weights it gives them) the new rows' latent positions are sampled as in
        :meth:`transform`, their kernel block averaged over the kept sweeps, and projected on
        the training embedding's components. A training row given as a new row lands near its
        own coordinates: exactly there if its sampled latent positions were the training
        chain's and every embedding sample were used (`n_draws` at least
        ``EMBEDDING_MAX_DRAWS``, 50).

        Parameters
        ----------
        Y_new : array-like or scipy.sparse matrix of shape (n_new, n_features)
            New rows; NaN (dense) or `missing_mask` marks unobserved entries.
        n_components : int or None, default=None
            Coordinates to return (None: ``embedding_dims_``).
        n_draws : int, default=10
            Kept samples per chain under which the new rows are sampled.
        n_sweeps : int, default=40
            Sweeps of the new rows' sampler under each sample.
        burn_in : int, default=15
            Sweeps discarded before averaging; must be smaller than `n_sweeps`.
        random_state : int, numpy.random.Generator or None, default=None
            Seed of the new rows' sampler (None: 0, so that the result is repeatable).
        missing_mask : array-like of bool of shape (n_new, n_features), default=None
            ``True`` marks an unobserved entry, as in :meth:`fit`.
        size_factors : array-like of shape (n_new,), default=None
            The new rows' size factors, as in :meth:`transform`.
        return_std : bool, default=False
            Also return each coordinate's posterior standard deviation, over the sampler's
            kept sweeps and the posterior samples (the counterpart of ``embedding_std_``).

        Returns
        -------
        coords : ndarray of shape (n_new, n_components)
            The new rows' coordinates, comparable with ``embedding_``'s leading columns.
        std : ndarray of shape (n_new, n_components)
            Only with `return_std`: their posterior standard deviations.
        """
        post = self._posterior()
        emb = posterior_embedding(post)
        if n_components is None:
            n = self.embedding_dims_
        else:
            n = check_n_components(n_components, emb.n_available)
        Yn, lik, prep = new_data(post, Y_new, missing_mask, size_factors, owner=type(self).__name__)
        if not 0 <= burn_in < n_sweeps:
            raise ValueError(f"burn_in must be in [0, n_sweeps); got {burn_in} with n_sweeps={n_sweeps}")
        n_draws = check_int("n_draws", n_draws, 1)
        rng = check_random_state(0 if random_state is None else random_state)
        if return_std:
            return embed_new_rows_with_std(post, Yn, lik, prep, n, n_draws, n_sweeps, burn_in, rng)
        return embed_new_rows(post, Yn, lik, prep, n, n_draws, n_sweeps, burn_in, rng)
