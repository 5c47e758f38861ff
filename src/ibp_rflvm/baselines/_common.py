"""Pieces shared by the baseline estimators: argument checks, held-out scoring for count
models, and a numba multinomial split used by the count samplers."""

from __future__ import annotations

import numpy as np
from numba import njit

from ..plumbing.sparse import data_matrix
from ..plumbing.validation import check_counts, check_int, check_positive, resolve_burn_in  # noqa: F401 (re-exported)
from ..summaries.scoring import heldout_entries, lpd_from_samples, perplexity


def check_fitted(est, attribute: str) -> None:
    if not hasattr(est, attribute):
        raise RuntimeError(f"{type(est).__name__} is not fitted yet; call fit(Y) first")


def heldout_matrix(Y_heldout, shape: tuple[int, int], missing_mask=None) -> np.ndarray:
    """`Y_heldout` (dense or sparse) as a dense array with NaN where nothing is scored (NaN, or
    ``True`` in `missing_mask`), checked against the training shape."""
    Yh = data_matrix(Y_heldout, missing_mask, name="Y_heldout", min_rows=1, allow_empty=("rows", "columns"))
    if Yh.shape != tuple(shape):
        raise ValueError(
            f"Y_heldout must have the training shape {tuple(shape)} (NaN where nothing is "
            f"scored); got {Yh.shape}"
        )
    return Yh


def heldout_for(
    Y_heldout, shape: tuple[int, int], counts: bool, missing_mask=None
) -> tuple[np.ndarray, ...]:
    """Rows, columns and values of the entries to score, checked against the training shape."""
    Yh = heldout_matrix(Y_heldout, shape, missing_mask)
    if Yh.shape != tuple(shape):
        raise ValueError(
            f"Y_heldout must have the training shape {tuple(shape)} (NaN where nothing is "
            f"scored); got {Yh.shape}"
        )
    rows, cols, vals = heldout_entries(Yh)
    if counts:
        check_counts(Yh, name="Y_heldout")
    return rows, cols, vals


def dirichlet_rows(rng: np.random.Generator, conc: np.ndarray) -> np.ndarray:
    """Independent Dirichlet draws, one per row of `conc`, by normalised gamma variates."""
    g = rng.standard_gamma(conc)
    s = g.sum(axis=1, keepdims=True)
    # Only when every variate underflows (tiny concentrations, few columns): fall back to uniform.
    bad = ~(s[:, 0] > 0.0)
    if bad.any():
        g[bad] = 1.0
        s[bad] = conc.shape[1]
    return g / s


class CountScoresMixin:
    """Held-out metrics for count models (the paper's, :doc:`/getting_started`, *Held-out scores*).

    Subclasses provide ``_sample_row_probs(rows, cols)`` (``S x T``: each sample's probability
    of column ``cols[t]`` within row ``rows[t]``, i.e. ``mu_ij / sum_j' mu_ij'``) and
    ``_sample_logpmf(rows, cols, vals)`` (``S x T`` log densities under the model's likelihood).
    """

    _fitted_attr = "latent_"

    def perplexity(self, Y_heldout, missing_mask=None) -> float:
        """Held-out perplexity (lower is better).

        Parameters
        ----------
        Y_heldout : array-like or scipy.sparse matrix of shape (n_samples, n_features)
            The held-out counts of the training rows, in the training shape; NaN where
            nothing is scored.
        missing_mask : array-like of bool of shape (n_samples, n_features), default=None
            ``True`` marks an entry not to score, as in the estimators' scoring methods (for
            example ``holdout_mask(..., return_mask=True).test_missing``). A sparse
            `Y_heldout` without a mask scores every entry, zeros included.

        Returns
        -------
        float
            ``exp(-sum_t y_t log p_t / sum_t y_t)`` with ``p_t`` the kept samples' mean share
            of the entry's column within its row.
        """
        check_fitted(self, self._fitted_attr)
        rows, cols, vals = heldout_for(Y_heldout, self._shape, counts=True, missing_mask=missing_mask)
        p = self._sample_row_probs(rows, cols).mean(axis=0)
        return perplexity(vals, p)

    def log_predictive_density(self, Y_heldout, missing_mask=None) -> float:
        """Held-out log predictive density, summed over the held-out entries.

        Parameters
        ----------
        Y_heldout : array-like or scipy.sparse matrix of shape (n_samples, n_features)
            The held-out counts of the training rows, in the training shape; NaN where
            nothing is scored.
        missing_mask : array-like of bool of shape (n_samples, n_features), default=None
            ``True`` marks an entry not to score, as in the estimators' scoring methods (for
            example ``holdout_mask(..., return_mask=True).test_missing``). A sparse
            `Y_heldout` without a mask scores every entry, zeros included.

        Returns
        -------
        float
            ``sum_t log((1/S) sum_s p(y_t | theta_s))`` under the model's likelihood.
        """
        check_fitted(self, self._fitted_attr)
        rows, cols, vals = heldout_for(Y_heldout, self._shape, counts=True, missing_mask=missing_mask)
        return lpd_from_samples(self._sample_logpmf(rows, cols, vals))

    def score(self, Y_heldout, missing_mask=None) -> float:
        """Mean held-out log predictive density per scored entry (higher is better).

        Parameters
        ----------
        Y_heldout : array-like or scipy.sparse matrix of shape (n_samples, n_features)
            The held-out counts of the training rows, in the training shape; NaN where
            nothing is scored.
        missing_mask : array-like of bool of shape (n_samples, n_features), default=None
            ``True`` marks an entry not to score, as in the estimators' scoring methods (for
            example ``holdout_mask(..., return_mask=True).test_missing``). A sparse
            `Y_heldout` without a mask scores every entry, zeros included.

        Returns
        -------
        float
            :meth:`log_predictive_density` divided by the number of scored entries.
        """
        rows, _, _ = heldout_for(Y_heldout, self._shape, counts=True, missing_mask=missing_mask)
        return self.log_predictive_density(Y_heldout, missing_mask) / rows.size


@njit(cache=True)
def split_count(rng, y, prob, out):
    """Draw ``out ~ Multinomial(y, prob / sum(prob))`` into the length-K buffer `out`.

    Small counts (the usual case for sparse count data) take one categorical draw per unit;
    large counts use K - 1 conditional binomials so the cost does not grow with `y`. If every
    weight underflowed to zero the split is uniform, which only happens at rates that carry
    no information anyway.
    """
    K = prob.shape[0]
    for k in range(K):
        out[k] = 0
    total = 0.0
    for k in range(K):
        total += prob[k]
    uniform = not (total > 0.0)
    if y <= 4:
        for _ in range(y):
            if uniform:
                out[rng.integers(0, K)] += 1
                continue
            u = rng.random() * total
            acc = 0.0
            chosen = K - 1
            for k in range(K):
                acc += prob[k]
                if u < acc:
                    chosen = k
                    break
            out[chosen] += 1
        return
    remaining = y
    for k in range(K - 1):
        if remaining == 0:
            return
        if uniform:
            q = 1.0 / (K - k)
        else:
            # Recompute the tail mass instead of subtracting, so rounding cannot push q past 1.
            tail = 0.0
            for kk in range(k, K):
                tail += prob[kk]
            q = prob[k] / tail if tail > 0.0 else 0.0
            if q > 1.0:
                q = 1.0
        x = rng.binomial(remaining, q) if q < 1.0 else remaining
        out[k] = x
        remaining -= x
    out[K - 1] = remaining
