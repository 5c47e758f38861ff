"""A 2-D (or 3-D) picture of a fitted model that keeps the posterior's neighbours.

``embedding(2)`` is the first two kernel principal components of the posterior-mean kernel: a
linear projection that keeps the directions of largest posterior variance and throws away who is
near whom along the rest (Table 3: at d = 2 it is level with PCA(2), at its own d it is at
0.93-0.97). The view is a t-SNE map of ``embedding_`` instead, whose Euclidean distances are the
stacking-weighted posterior-mean kernel's over all kept samples and chains. So it is derived from
the whole posterior, and as ``embedding_``'s distances do not change when a sample relabels,
flips, rotates or splits its latent dimensions, neither does the view (t-SNE reads only the
distances, and its start is computed here from the distances' principal axes, not from any
coordinate system). Why t-SNE, measured: docs/record/view.md.

What its distances mean: rows that are near in the view are near under the posterior kernel
(their neighbourhoods are kept); distances between clusters, cluster sizes and densities are not
the posterior's and should not be read (t-SNE's map is not metric beyond the neighbourhood).

Determinism: the view is a function of the fit alone, the same array on every run (and across
machines where the libraries and their floating-point kernels are the same). Its start is the
principal axes of ``embedding_`` (signs fixed), not a random draw, and Barnes-Hut t-SNE draws
nothing else, so ``random_state`` is accepted (it is handed to scikit-learn's TSNE) but does not
change the picture. The gradient runs on one thread, since a threaded sum of its repulsive
forces depends on the thread count in its last bits and t-SNE amplifies them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

#: Rows a view needs (t-SNE's neighbourhoods need a few points).
MIN_ROWS = 5

__all__ = [
    "MAX_COMPONENTS",
    "MIN_ROWS",
    "PERPLEXITY",
    "check_view_components",
    "place_rows",
    "tsne_view",
    "view",
    "view_new_rows",
]

#: Most components the view gives: Barnes-Hut t-SNE's space-partitioning tree works in 2 or 3.
MAX_COMPONENTS = 3
#: t-SNE's perplexity (the effective number of neighbours each row's affinities spread over),
#: lowered to a third of the other rows for very small fits. 10, chosen by measurement on seven
#: data sets (the reason and the figures: :func:`view`; the table: docs/record/view.md).
PERPLEXITY = 10.0
#: Training neighbours a new row's place in the view is interpolated from.
NEW_ROW_NEIGHBOURS = 10


def check_view_components(n_components: Any) -> int:
    """`n_components` as an int in ``[2, MAX_COMPONENTS]``, or a ValueError naming the problem."""
    if isinstance(n_components, bool) or not isinstance(n_components, int | np.integer):
        raise ValueError(f"n_components must be an integer (2 or 3); got {n_components!r}")
    n = int(n_components)
    if n < 2 or n > MAX_COMPONENTS:
        raise ValueError(
            f"n_components must be 2 or {MAX_COMPONENTS} for a view (a t-SNE picture); got {n}. "
            f"For other numbers of coordinates use embedding_ or embedding(n)"
        )
    return n


def _start(X: np.ndarray, n: int) -> np.ndarray:
    """t-SNE's start: the rows' first `n` principal component scores, each column's sign fixed
    by its largest entry, scaled as scikit-learn scales its own PCA start (first column's
    standard deviation 1e-4). Rotating the rows' coordinates leaves it unchanged."""
    Xc = X - X.mean(axis=0)
    U, S, _ = np.linalg.svd(Xc, full_matrices=False)
    Y = np.zeros((X.shape[0], n))
    k = min(n, S.size)
    Y[:, :k] = U[:, :k] * S[:k]
    for j in range(k):
        big = np.argmax(np.abs(Y[:, j]))
        if Y[big, j] < 0:
            Y[:, j] = -Y[:, j]
    sd = Y[:, 0].std()
    return Y / sd * 1e-4 if sd > 0 else Y


def tsne_view(X, n_components: int = 2, random_state: int = 0, perplexity: float = PERPLEXITY) -> np.ndarray:
    """t-SNE map of the rows of `X` by their Euclidean distances, as the view makes it.

    Barnes-Hut t-SNE (scikit-learn, 1,000 iterations, learning rate ``"auto"``, one thread)
    started from the rows' principal axes with their signs fixed, so the map is a function of
    `X` alone.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The rows' coordinates: at least ``MIN_ROWS`` rows, all entries finite.
    n_components : {2, 3}, default=2
        Dimensions of the map.
    random_state : int, default=0
        Handed to scikit-learn's ``TSNE``; it does not change the map (nothing is drawn).
    perplexity : float, default=10.0
        t-SNE's perplexity, lowered to ``(n_samples - 1) / 3`` for very small `X`. The default
        is ``PERPLEXITY``; why 10: :func:`view`.

    Returns
    -------
    ndarray of shape (n_samples, n_components)
        The rows' positions in the map.

    Raises
    ------
    ValueError
        `X` not 2-D, with fewer than ``MIN_ROWS`` rows or non-finite entries; `n_components`
        not 2 or 3; `random_state` not an integer; `perplexity` not positive.
    """
    from sklearn.manifold import TSNE

    n = check_view_components(n_components)
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < MIN_ROWS:
        raise ValueError(f"a view needs a 2-D array of at least {MIN_ROWS} rows; got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("the coordinates to view contain NaN or infinite entries")
    if isinstance(random_state, bool) or not isinstance(random_state, int | np.integer):
        raise ValueError(f"random_state must be an integer; got {random_state!r}")
    if not perplexity > 0:
        raise ValueError(f"perplexity must be positive; got {perplexity!r}")
    perp = min(float(perplexity), (X.shape[0] - 1) / 3.0)
    tsne = TSNE(n_components=n, perplexity=perp, init=_start(X, n), random_state=int(random_state),
                learning_rate="auto", method="barnes_hut")
    with threadpool_limits(limits=1):
        return tsne.fit_transform(X)


def view(model, n_components: int = 2, random_state: int = 0, perplexity: float = PERPLEXITY) -> np.ndarray:
    """The fitted `model`'s view: a t-SNE map of its posterior embedding ``embedding_``.

    A picture that keeps the posterior's neighbourhoods. Only neighbourhoods are meaningful:
    near rows are near under the posterior kernel, but distances between clusters, cluster sizes
    and how many islands the picture breaks into are not the posterior's. A function of the fit
    alone (the module docstring says why `random_state` does not change it). New rows:
    :func:`view_new_rows`.

    Parameters
    ----------
    model : fitted IBPRFLVM or RFLVM
        Anything with an ``embedding_`` (``n_samples x d``) of at least ``MIN_ROWS`` rows.
    n_components : {2, 3}, default=2
        Dimensions of the picture.
    random_state : int, default=0
        Handed to scikit-learn's ``TSNE``; it does not change the picture.
    perplexity : float, default=10.0
        t-SNE's perplexity (``PERPLEXITY``), lowered to ``(n_samples - 1) / 3`` for very small
        fits. See Notes for why 10.

    Returns
    -------
    ndarray of shape (n_samples, n_components)
        The training rows' positions in the picture.

    Raises
    ------
    ValueError
        `n_components` not 2 or 3, or an ``embedding_`` or argument :func:`tsne_view` refuses.

    See Also
    --------
    tsne_view : The map itself, for any coordinates.
    view_new_rows : New rows placed in the picture.

    Notes
    -----
    The default perplexity, 10, was chosen by measurement (2026-11-27; the table and command:
    docs/record/view.md). On stored fits of seven sets (cancer, mice, olivetti, congress, spam
    and newsgroups, Table 3's trial 0, and the PBMC example) the view's 1-NN and 5-NN label
    accuracy (5-fold) was measured at perplexities 5, 10, 15, 20, 30 and 50 and at two rules
    from the number of rows N (N/100 and N/50, each clipped to [5, 50]), each over three t-SNE
    starts. Against the former default 30, perplexity 10 raised 5-NN accuracy on all seven sets
    (by 0.001-0.018, mean +0.009: cancer +0.013, mice +0.018, congress +0.015, where the
    starts' spread is at most 0.009) and 1-NN by 0.007 on average (congress +0.023; PBMC -0.002,
    inside its starts' spread of 0.003): the best mean 5-NN of the grid and the rules. 50 was
    behind 30 (5-NN -0.009 on average, -0.036 on olivetti) and 5 behind 10 at 5-NN (congress
    -0.028). Neither rule did better: spam, the largest set (5,403 rows), is flat from 5 to 50
    (within 0.002), so nothing measured asks for a larger perplexity at larger N, and N/100 puts
    the small sets at 5-7. The cost of 10: the picture breaks into more, smaller islands. A
    Leiden clustering of PBMC's picture finds 27 communities against 21 at 30 (ARI with the cell
    types 0.205 against 0.243), so cluster ``embedding_`` or the posterior's neighbour graph
    (:func:`ibp_rflvm.adata.ibp_rflvm`), not the picture; for a coarser picture pass
    ``perplexity=30``.
    """
    n = check_view_components(n_components)
    return tsne_view(model.embedding_, n, random_state, perplexity)


def place_rows(
    train_coords: np.ndarray, train_view: np.ndarray, new_coords: np.ndarray, k: int = NEW_ROW_NEIGHBOURS
) -> np.ndarray:
    """New rows in a view by interpolation: each at the weighted mean of the view positions of
    its `k` nearest training rows in `train_coords`' space, weights ``exp(-d^2 / (2 s^2))`` with
    ``s`` its distance to the `k`-th neighbour, so that the nearest neighbours dominate."""
    from sklearn.neighbors import NearestNeighbors

    train_coords = np.asarray(train_coords, dtype=np.float64)
    new_coords = np.asarray(new_coords, dtype=np.float64)
    if new_coords.ndim != 2 or new_coords.shape[1] != train_coords.shape[1]:
        raise ValueError(
            f"new rows must have the training coordinates' {train_coords.shape[1]} columns; got shape "
            f"{new_coords.shape}"
        )
    if train_view.shape[0] != train_coords.shape[0]:
        raise ValueError(
            f"the view has {train_view.shape[0]} rows, the training coordinates {train_coords.shape[0]}"
        )
    k = min(int(k), train_coords.shape[0])
    dist, idx = NearestNeighbors(n_neighbors=k).fit(train_coords).kneighbors(new_coords)
    scale = np.maximum(dist[:, -1:], 1e-12)
    w = np.exp(-0.5 * (dist / scale) ** 2)
    w /= w.sum(axis=1, keepdims=True)
    return np.einsum("nk,nkc->nc", w, train_view[idx])


def view_new_rows(
    model, Y_new, training_view: np.ndarray | None = None, random_state: int = 0, **embed_kw
) -> np.ndarray:
    """New rows placed in the view (``n_new x n_components`` of `training_view`).

    t-SNE has no out-of-sample map, so the rows are not optimised into the picture: each new row
    is placed by ``model.embed(Y_new)`` in the posterior embedding and then interpolated from its
    nearest training rows there (:func:`place_rows`). A new row near training rows lands among
    them; a row unlike any training row lands between its nearest ones, not in a place of its
    own. `training_view` is the training rows' view (computed with `random_state` if not given);
    `embed_kw` go to ``model.embed``.
    """
    train = model.embedding_
    if training_view is None:
        training_view = view(model, 2, random_state)
    training_view = np.asarray(training_view, dtype=np.float64)
    if training_view.ndim != 2 or training_view.shape[0] != train.shape[0]:
        raise ValueError(
            f"training_view must be the training rows' view ({train.shape[0]} rows); "
            f"got shape {training_view.shape}"
        )
    new = model.embed(Y_new, n_components=train.shape[1], **embed_kw)
    return place_rows(train, training_view, new)
