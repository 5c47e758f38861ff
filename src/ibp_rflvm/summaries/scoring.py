"""Held-out scores shared by every model, so that the numbers in the tables are comparable.

Pure functions of arrays (and, for :func:`pointwise_logpdf`, of kept samples and a likelihood):
the estimators, the stacking of chains, the baselines and the reproduction harness all score
through them, and they import nothing above the feature map.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.special import gammaln, logsumexp

from ..features import feature_map

LOG_2PI = float(np.log(2.0 * np.pi))


def log_mean_exp(logp: np.ndarray, axis: int = 0) -> np.ndarray:
    """``log(mean(exp(logp)))`` along `axis`, stable for very negative values."""
    logp = np.asarray(logp, dtype=np.float64)
    return logsumexp(logp, axis=axis) - np.log(logp.shape[axis])


def gaussian_logpdf(y: np.ndarray, mean: np.ndarray, var: np.ndarray) -> np.ndarray:
    """Normal log density with every constant included."""
    return -0.5 * (LOG_2PI + np.log(var) + (y - mean) ** 2 / var)


def poisson_logpmf(y: np.ndarray, log_rate: np.ndarray) -> np.ndarray:
    """Poisson log mass of counts `y` at rates ``exp(log_rate)``, constants included."""
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
    already averaged over posterior samples (the paper's protocol, docs/reproducing.md).
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


def pointwise_logpdf(
    samples: Sequence, spec, prep, unique_rows: np.ndarray, row_pos: np.ndarray, cols: np.ndarray,
    vals: np.ndarray,
) -> np.ndarray:
    """``S x n`` log densities ``log p(y_t | theta_s)`` of entries `vals` of training rows
    ``unique_rows[row_pos]`` and columns `cols`, one row per kept sample (``H``, ``W``,
    ``params``). For the collapsed Gaussian each sample carries the ``(beta_j, sigma_j^2)`` drawn
    given its features (docs/likelihoods.md), so an entry's density is a plain normal."""
    lik = spec.likelihood
    kw = rows_kw(lik, unique_rows)
    out = np.empty((len(samples), vals.size))
    for s, smp in enumerate(samples):
        psi_u = feature_map(smp.H[unique_rows], smp.W, spec.bias) @ smp.params.beta
        out[s] = lik.logpdf_entries(vals, psi_u, row_pos, cols, smp.params, prep, **kw)
    return out


def rows_kw(lik, unique_rows: np.ndarray, prep=None) -> dict:
    """The training-row index of each row of ``psi``, for likelihoods with per-entry constants
    (binomial trials), and with `prep` per-row ones (size factors); every likelihood takes both
    (the Gaussian ignores them)."""
    return {"rows": unique_rows} if prep is None else {"rows": unique_rows, "prep": prep}
