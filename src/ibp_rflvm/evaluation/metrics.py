"""Held-out metrics shared by every model, so the numbers in the tables are comparable, and the
k-nearest-neighbour accuracy by which Table 3 judges a latent space."""

from __future__ import annotations

import warnings
import zlib

import numpy as np
from scipy.special import gammaln, logsumexp

LOG_2PI = float(np.log(2.0 * np.pi))


def log_mean_exp(logp: np.ndarray, axis: int = 0) -> np.ndarray:
    """``log(mean(exp(logp)))`` along `axis`, stable for very negative values."""
    logp = np.asarray(logp, dtype=np.float64)
    return logsumexp(logp, axis=axis) - np.log(logp.shape[axis])


def gaussian_logpdf(y: np.ndarray, mean: np.ndarray, var: np.ndarray) -> np.ndarray:
    """Normal log density with every constant included."""
    return -0.5 * (LOG_2PI + np.log(var) + (y - mean) ** 2 / var)


def poisson_logpmf(y: np.ndarray, log_rate: np.ndarray) -> np.ndarray:
    return y * log_rate - np.exp(log_rate) - gammaln(y + 1.0)


def lpd_from_samples(logp: np.ndarray, weights: np.ndarray | None = None) -> float:
    """Held-out log predictive density from per-sample pointwise log densities.

    `logp` is ``S x n_test``: row s holds ``log p(y_t | theta_s)`` for each test entry t.
    Returns ``sum_t log(sum_s w_s p(y_t | theta_s))`` with `weights` ``w`` (non-negative, summing
    to one; default ``1/S`` each, the plain posterior average).
    """
    if weights is None:
        return float(np.sum(log_mean_exp(logp, axis=0), dtype=np.float64))
    w = np.asarray(weights, dtype=np.float64)
    logp = np.asarray(logp, dtype=np.float64)
    if w.shape != (logp.shape[0],):
        raise ValueError(f"weights must have one entry per sample ({logp.shape[0]}); got shape {w.shape}")
    return float(np.sum(logsumexp(logp, axis=0, b=w[:, None]), dtype=np.float64))


def perplexity(y_test: np.ndarray, p_test: np.ndarray) -> float:
    """``exp(-sum_t y_t log p_t / sum_t y_t)`` over held-out count entries.

    `p_test` holds each test entry's predicted probability of its word/column within its row,
    already averaged over posterior samples (SPEC section 3).
    """
    y_test = np.asarray(y_test, dtype=np.float64)
    p_test = np.asarray(p_test, dtype=np.float64)
    if y_test.shape != p_test.shape:
        raise ValueError(f"y_test shape {y_test.shape} and p_test shape {p_test.shape} differ")
    total = y_test.sum()
    if total <= 0:
        raise ValueError("perplexity needs at least one held-out count greater than zero")
    with np.errstate(divide="ignore"):
        logp = np.where(y_test > 0, np.log(p_test), 0.0)
    return float(np.exp(-np.sum(y_test * logp, dtype=np.float64) / total))


def heldout_entries(Y_heldout) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row indices, column indices and values of the non-NaN entries of a held-out matrix."""
    Yh = np.asarray(Y_heldout, dtype=np.float64)
    if Yh.ndim != 2:
        raise ValueError(f"Y_heldout must be 2-D; got shape {Yh.shape}")
    rows, cols = np.nonzero(~np.isnan(Yh))
    if rows.size == 0:
        raise ValueError("Y_heldout has no entries to score (all NaN)")
    vals = Yh[rows, cols]
    if not np.all(np.isfinite(vals)):
        raise ValueError("Y_heldout contains infinite values")
    return rows, cols, vals


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
