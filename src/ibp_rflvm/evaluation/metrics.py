"""The k-nearest-neighbour accuracy by which Table 3 judges a latent space, with the seed of each
data set's cross-validation split. Held-out densities and perplexity are
:mod:`ibp_rflvm.summaries.scoring`."""

from __future__ import annotations

import warnings
import zlib

import numpy as np

#: Neighbours of the classifier: one, as in the RFLVM authors' evaluation code.
KNN_NEIGHBOURS = 1
#: Folds of the stratified cross-validation.
KNN_FOLDS = 5


def knn_seed(dataset: str, base_seed: int = 0) -> int:
    """Seed of the cross-validation split of `dataset`: the same for every method and trial."""
    ss = np.random.SeedSequence([int(base_seed), zlib.crc32(b"knn"), zlib.crc32(dataset.encode("utf-8"))])
    return int(ss.generate_state(1, dtype=np.uint32)[0])


def knn_accuracy(
    latent: np.ndarray,
    labels: np.ndarray,
    n_neighbors: int = KNN_NEIGHBOURS,
    n_folds: int = KNN_FOLDS,
    random_state: int = 0,
) -> float:
    """Stratified `n_folds`-fold cross-validated accuracy of `n_neighbors`-NN on `latent`'s rows.

    Returns the fraction of rows whose label the classifier fitted on the other folds predicts
    correctly. Constant columns are dropped (they leave distances unchanged); with none left,
    each fold is predicted as its training folds' most frequent label.
    """
    from sklearn.model_selection import StratifiedKFold
    from sklearn.neighbors import KNeighborsClassifier

    X = np.asarray(latent, dtype=np.float64)
    y = np.asarray(labels)
    if X.ndim != 2:
        raise ValueError(f"latent must be a 2-D (rows x dimensions) array; got shape {X.shape}")
    if y.shape != (X.shape[0],):
        raise ValueError(
            f"labels must be 1-D with one label per latent row ({X.shape[0]}); got shape {y.shape}"
        )
    if not np.isfinite(X).all():
        raise ValueError("latent has non-finite entries (NaN or inf)")
    if n_folds < 2 or X.shape[0] < n_folds:
        raise ValueError(f"need 2 <= n_folds <= rows; got n_folds={n_folds} for {X.shape[0]} rows")
    if n_neighbors < 1:
        raise ValueError(f"n_neighbors must be at least 1; got {n_neighbors}")
    X = X[:, np.any(X != X[:1], axis=0)]
    folds = StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=random_state)
    correct = 0
    with warnings.catch_warnings():
        # A class with fewer rows than folds (congress's two independents) is spread over as many
        # folds as it has rows; scikit-learn warns about it, which is expected here.
        warnings.filterwarnings("ignore", message="The least populated class", category=UserWarning)
        splits = list(folds.split(np.zeros((len(y), 1)), y))
    for train, test in splits:
        if X.shape[1] == 0:
            values, counts = np.unique(y[train], return_counts=True)
            pred = np.full(test.size, values[np.argmax(counts)])
        else:
            k = min(int(n_neighbors), train.size)
            pred = KNeighborsClassifier(n_neighbors=k).fit(X[train], y[train]).predict(X[test])
        correct += int(np.count_nonzero(pred == y[test]))
    return correct / len(y)
