"""Per-row size factors of the Poisson and negative binomial likelihoods.

Rows of count data differ in depth (a cell's library size, a document's length). With size
factor ``s_i`` the linear predictor of row ``i`` is ``psi_ij = phi_i beta_j + log s_i``, so the
latent space need not spend a dimension on depth. The offset ``log s_i`` is a per-data constant:
it lives in ``Prepared.offset`` and the likelihood adds it wherever it evaluates
``psi``; everything outside the likelihood keeps working with ``psi = Phi beta``.

``size_factors`` is one of

* ``None`` — no offset (``log s_i = 0``);
* ``"total"`` — ``s_i`` = the row's total count over its observed entries divided by the number
  of observed entries (its mean count). A constant rescaling of every ``s_i`` would be absorbed
  by the bias weight; this choice makes each row's factor depend on that row alone, so new rows
  (``transform``) get theirs the same way, and a typical column has ``phi beta`` near 0;
* an array of ``N`` positive numbers, one per training row.
"""

from __future__ import annotations

import copy

import numpy as np

from .base import Likelihood

TOTAL = "total"
_WHAT = "size_factors must be None, 'total' or an array of positive numbers"


def check_size_factors(value) -> np.ndarray | str | None:
    """`value` as stored on a likelihood: None, ``"total"`` or a 1-D float array of positives."""
    if value is None:
        return None
    if isinstance(value, str):
        if value != TOTAL:
            raise ValueError(f"{_WHAT}; got {value!r}")
        return TOTAL
    try:
        s = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{_WHAT}; got {value!r}") from None
    if s.ndim != 1:
        raise ValueError(f"size_factors must be one number per row (a 1-D array); got shape {s.shape}")
    bad = ~(np.isfinite(s) & (s > 0.0))
    if bad.any():
        raise ValueError(
            f"size_factors must be finite and positive; {int(bad.sum())} are not, at rows "
            f"{np.flatnonzero(bad)[:5].tolist()}"
        )
    return s


def row_offsets(size_factors, Y: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """``log s_i`` for every row of `Y` (zeros without size factors)."""
    N = Y.shape[0]
    if size_factors is None:
        return np.zeros(N)
    if isinstance(size_factors, str):
        n_obs = observed.sum(axis=1)
        totals = np.sum(np.where(observed, Y, 0.0), axis=1, dtype=np.float64)
        empty = totals <= 0.0
        if empty.any():
            raise ValueError(
                f"size_factors='total' needs a positive count in every row; {int(empty.sum())} row(s) "
                f"have none (rows {np.flatnonzero(empty)[:5].tolist()}): remove them or give size_factors"
            )
        return np.log(totals / n_obs)
    if size_factors.shape[0] != N:
        raise ValueError(
            f"size_factors has {size_factors.shape[0]} entries but the data have {N} rows; give one per row "
            "(new rows in transform/predict need size_factors='total')"
        )
    return np.log(size_factors)


def offset_arrays(size_factors, Y: np.ndarray, observed: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    """``(offset, row_offset)`` of :class:`~.base.Prepared`: ``offset`` None without size factors
    (so the NumPy paths skip the addition), ``row_offset`` always an array (zeros without size
    factors, for the compiled kernels: adding 0.0 leaves every value, and so the chain, unchanged)."""
    off = row_offsets(size_factors, Y, observed)
    return (None if size_factors is None else off), off


def offset_of(prep, rows=None) -> np.ndarray | None:
    """The offsets of `rows` (all rows when None) from `prep`, or None when there are none."""
    if prep is None:
        return None
    off = prep.offset
    if off is None:
        return None
    return off if rows is None else off[np.asarray(rows)]


def add_offset(psi: np.ndarray, prep, rows=None) -> np.ndarray:
    """``psi + log s_i`` row by row (`psi` itself when there is no offset)."""
    off = offset_of(prep, rows)
    return psi if off is None else psi + off[:, None]




def for_new_rows(lik: Likelihood, size_factors=None) -> Likelihood:
    """The likelihood to score new rows with (``transform``/``predict``).

    ``"total"`` factors are computed from the new rows themselves; one factor per training row
    says nothing about other rows, so then the new rows' `size_factors` must be given.
    """
    fitted = getattr(lik, "size_factors", None)
    if size_factors is None:
        if isinstance(fitted, np.ndarray):
            raise ValueError(
                "the model was fitted with one size factor per training row; give the new rows' "
                "size_factors (an array, or 'total' to use their mean counts)"
            )
        return lik
    if not hasattr(lik, "size_factors"):
        raise ValueError(f"size_factors apply to the poisson and negbinom likelihoods, not {lik.name!r}")
    if fitted is None:
        raise ValueError("the model was fitted without size factors; new rows cannot have them")
    new = copy.copy(lik)
    new.size_factors = check_size_factors(size_factors)
    return new


__all__ = [
    "TOTAL", "add_offset", "check_size_factors", "for_new_rows", "offset_arrays", "offset_of", "row_offsets",
]  # fmt: skip
