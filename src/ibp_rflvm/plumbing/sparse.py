"""Sparse input and explicit missing-entry masks.

Two ways to say which entries are unobserved, usable together:

* NaN in a dense array (the original convention);
* ``missing_mask``, a boolean array of the data's shape, ``True`` where an entry is unobserved
  (the orientation of ``np.isnan(Y)``), for any input, dense or ``scipy.sparse``.

An entry is unobserved when either says so. In a sparse matrix every entry not stored is an
observed zero; NaN stored explicitly counts as unobserved, like NaN in a dense array.

The sampler's compiled kernels index the data densely, so a sparse matrix is turned into the
same dense ``float64`` array (NaN at the unobserved entries) that the equivalent dense input
gives: the two inputs give the same chain bit for bit. Everything that can be checked on the
stored values alone (shape, dtype, infinities) is checked before that one dense allocation.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .validation import as_data_matrix, check_not_empty


def is_sparse(Y) -> bool:
    """True for ``scipy.sparse`` matrices and arrays of any format, subclasses included (an
    AnnData view's ``X`` is one)."""
    return sp.issparse(Y)


def check_missing_mask(missing_mask, shape: tuple[int, ...], name: str = "missing_mask") -> np.ndarray:
    """`missing_mask` as a dense boolean array of `shape` (``True`` = unobserved).

    A ``scipy.sparse`` boolean matrix (``True`` stored) is accepted and densified: the sampler
    holds an ``N x J`` boolean mask of the observed entries anyway.
    """
    if is_sparse(missing_mask):
        dtype = missing_mask.dtype
        if dtype != np.bool_:
            raise ValueError(
                f"{name} must be boolean (True = unobserved); got a sparse matrix of dtype {dtype}"
            )
        mask = np.asarray(missing_mask.toarray(), dtype=bool)
    else:
        mask = np.asarray(missing_mask)
        if mask.dtype != np.bool_:
            raise ValueError(
                f"{name} must be a boolean array (True = unobserved, like np.isnan); got dtype {mask.dtype}"
            )
    if mask.shape != tuple(shape):
        raise ValueError(f"{name} has shape {mask.shape}, but the data has shape {tuple(shape)}")
    return mask


def data_matrix(
    Y, missing_mask=None, name: str = "Y", min_rows: int = 2, allow_empty: tuple[str, ...] = ()
) -> np.ndarray:
    """The ``N x J`` float64 array the chain works on, NaN at the unobserved entries.

    Dense input without a mask goes through :func:`as_data_matrix` unchanged. Otherwise the
    mask is applied first, so entries it hides may hold anything finite or not (a masked
    ``inf`` is not an error), and then the same checks run.
    """
    if is_sparse(Y):
        return _sparse_matrix(Y, missing_mask, name, min_rows, allow_empty)
    kw = {"name": name, "min_rows": min_rows, "allow_empty": allow_empty}
    if missing_mask is None:
        return as_data_matrix(Y, **kw)
    arr = _real_copy(Y)
    if arr is None or arr.ndim != 2:
        # Not real numbers, ragged, or the wrong shape: as_data_matrix says which.
        return as_data_matrix(Y, **kw)
    arr[check_missing_mask(missing_mask, arr.shape)] = np.nan
    return as_data_matrix(arr, **kw)


def _real_copy(Y) -> np.ndarray | None:
    """A float64 copy of `Y` when it is an array of real numbers (or bools), else None."""
    try:
        arr = np.asarray(Y)
    except Exception:  # ragged nested lists and similar
        return None
    if not (np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)):
        return None
    if np.iscomplexobj(arr):
        return None
    return arr.astype(np.float64, copy=True)


def _sparse_matrix(
    Y, missing_mask, name: str, min_rows: int, allow_empty: tuple[str, ...] = ()
) -> np.ndarray:
    if Y.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix; got a {Y.ndim}-D sparse array with shape {Y.shape}")
    dtype = Y.dtype
    if np.issubdtype(dtype, np.complexfloating) or not (
        np.issubdtype(dtype, np.number) or np.issubdtype(dtype, np.bool_)
    ):
        raise ValueError(f"{name} must be a real-valued sparse matrix; got dtype {dtype}")
    n, j = Y.shape
    if j < 1:
        raise ValueError(f"0 feature(s) (shape={Y.shape}) while a minimum of 1 is required by {name}.")
    if n < min_rows:
        raise ValueError(f"{name} needs at least {min_rows} rows; got n_samples = {n} (shape {Y.shape})")
    # COO after summing duplicates: the values the dense array will hold, with their positions.
    coo = Y.tocoo(copy=True)
    coo.sum_duplicates()
    data = np.asarray(coo.data, dtype=np.float64)
    inf = np.isinf(data)
    if inf.any():
        rows, cols = coo.row[inf][:5], coo.col[inf][:5]
        where = ", ".join(f"({int(r)}, {int(c)})" for r, c in zip(rows, cols, strict=True))
        raise ValueError(
            f"{name} contains {int(inf.sum())} infinite value(s) at (row, column) {where}; "
            "use missing_mask (or a stored NaN) for unobserved entries"
        )
    mask = None if missing_mask is None else check_missing_mask(missing_mask, Y.shape)
    # The one dense allocation: N x J float64, what the chain holds as its data.
    out = np.zeros(Y.shape, dtype=np.float64)
    out[coo.row, coo.col] = data
    del coo, data
    if mask is not None:
        out[mask] = np.nan
    check_not_empty(np.isnan(out), name, allow_empty, how="all masked or NaN")
    return out


def heldout_matrix(Y_heldout, missing_mask=None) -> np.ndarray:
    """A held-out matrix, dense or sparse, with its mask, as the dense NaN-marked form.

    ``missing_mask`` is ``True`` at the entries NOT to score (as NaN in a dense held-out
    matrix); for a sparse matrix without a mask every entry is scored, zeros included.
    """
    if is_sparse(Y_heldout):
        if Y_heldout.ndim != 2:
            raise ValueError(f"Y_heldout must be 2-D; got shape {Y_heldout.shape}")
        out = np.asarray(Y_heldout.toarray(), dtype=np.float64)
    elif missing_mask is None:
        return Y_heldout
    else:
        out = _real_copy(Y_heldout)
        if out is None or out.ndim != 2:
            return Y_heldout  # the caller reports what is wrong with it
    if missing_mask is not None:
        out[check_missing_mask(missing_mask, out.shape)] = np.nan
    return out
