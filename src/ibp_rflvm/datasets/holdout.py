"""Hold-out masks: the held-out entries of the evaluation protocol (docs/reproducing.md)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..plumbing.sparse import check_missing_mask, is_sparse
from ..plumbing.validation import as_data_matrix, check_random_state, is_frame


class HoldoutMasks(NamedTuple):
    """What ``holdout_mask(..., return_mask=True)`` returns: two ``missing_mask`` arrays, named
    for where each goes. ``train_missing`` (``True`` at the held-out and the missing entries) is
    ``fit``'s; ``test_missing`` (``True`` everywhere but at the held-out entries) the scoring
    methods'. It unpacks as a pair, in that order."""

    train_missing: np.ndarray
    test_missing: np.ndarray


def holdout_mask(
    Y, fraction: float = 0.2, random_state=None, missing_mask=None, return_mask: bool = False
) -> tuple[Any, Any]:
    """Split the observed entries of `Y` into a training and a held-out matrix.

    A `fraction` of the observed entries, chosen uniformly at random, is held out. Entries
    missing in the data itself (NaN, or ``True`` in `missing_mask`) are never held out. Every
    row and column keeps at least one observed training entry, so the training matrix is always
    fittable. Both return forms draw the same entries for the same seed. A pandas DataFrame
    gives DataFrames with its index and columns (so a fit on the training one keeps the column
    names, ``feature_names_in_``).

    Parameters
    ----------
    Y : array-like, pandas.DataFrame or scipy.sparse matrix of shape (n_samples, n_features)
        The data; NaN marks unobserved entries of dense input.
    fraction : float, default=0.2
        Share of the observed entries to hold out, in ``(0, 1)``.
    random_state : int, numpy.random.Generator or None, default=None
        Seed of the draw.
    missing_mask : array-like of bool of shape (n_samples, n_features), default=None
        ``True`` marks an entry unobserved in the data itself, as in ``fit``.
    return_mask : bool, default=False
        Return boolean masks instead of NaN-filled copies. The only form for
        ``scipy.sparse`` `Y`, whose zeros are observed (NaN would have to be stored at every
        held-out zero).

    Returns
    -------
    Y_train, Y_heldout : ndarray or pandas.DataFrame of shape (n_samples, n_features)
        Without `return_mask`: `Y` with the held-out and the missing entries set to NaN, and
        the held-out entries with NaN elsewhere; float64 DataFrames with `Y`'s index and columns
        when `Y` is a DataFrame, arrays otherwise.
    train_missing, test_missing : ndarray of bool of shape (n_samples, n_features)
        With `return_mask`: a :class:`HoldoutMasks`, the masks to pass as ``missing_mask`` to
        ``fit`` (``masks.train_missing``) and to the scoring methods
        (``masks.test_missing``), each together with `Y` itself (arrays, for a DataFrame too).
        ``train_missing`` is ``True`` at the held-out and the missing entries, ``test_missing``
        everywhere but at the held-out entries.

    Raises
    ------
    ValueError
        `fraction` outside ``(0, 1)``; sparse `Y` without `return_mask`; data that cannot be
        read as a 2-D numeric matrix.

    See Also
    --------
    IBPRFLVM.score : The mean held-out log predictive density per entry.

    Examples
    --------
    >>> import numpy as np
    >>> from ibp_rflvm import holdout_mask
    >>> Y = np.arange(20.0).reshape(4, 5)
    >>> Y_train, Y_test = holdout_mask(Y, fraction=0.25, random_state=0)
    >>> int(np.isnan(Y_train).sum()), int((~np.isnan(Y_test)).sum())
    (5, 5)
    """
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"fraction must be in (0, 1); got {fraction}")
    frame = Y if is_frame(Y) else None  # its index and columns go on the two tables
    if is_sparse(Y):
        if not return_mask:
            raise ValueError(
                "holdout_mask cannot mark held-out entries of a sparse matrix with NaN; call it with "
                "return_mask=True and pass the masks as missing_mask to fit and to the scoring methods"
            )
        if Y.ndim != 2:
            raise ValueError(f"Y must be 2-D; got shape {Y.shape}")
        observed = np.ones(Y.shape, dtype=bool)
        coo = Y.tocoo()
        stored_nan = np.isnan(np.asarray(coo.data, dtype=np.float64))
        observed[coo.row[stored_nan], coo.col[stored_nan]] = False
    else:
        # Same reading as fit (pandas NA, numeric text, no inf); empty rows are the caller's choice.
        Y = as_data_matrix(Y, min_rows=1, allow_empty=("rows", "columns"))
        observed = ~np.isnan(Y)
    if missing_mask is not None:
        observed &= ~check_missing_mask(missing_mask, Y.shape)
    rng = check_random_state(random_state)
    flat = np.flatnonzero(observed)
    n_hold = int(round(fraction * flat.size))
    chosen = rng.permutation(flat)[:n_hold]
    held = np.zeros(observed.size, dtype=bool)
    held[chosen] = True
    held = held.reshape(Y.shape)
    # Give back one entry to any row or column the draw emptied; rare except for tiny data.
    for axis in (1, 0):
        left = (observed & ~held).sum(axis=axis)
        for k in np.flatnonzero(left == 0):
            line = held[k] if axis == 1 else held[:, k]
            cand = np.flatnonzero(line)
            if cand.size:
                pick = cand[rng.integers(cand.size)]
                if axis == 1:
                    held[k, pick] = False
                else:
                    held[pick, k] = False
    if return_mask:
        return HoldoutMasks(train_missing=held | ~observed, test_missing=~held)
    if missing_mask is not None:
        Y = np.where(observed, Y, np.nan)
    Y_train = np.where(held, np.nan, Y)
    Y_heldout = np.where(held, Y, np.nan)
    if frame is not None:
        import pandas as pd

        like = {"index": frame.index, "columns": frame.columns}
        return pd.DataFrame(Y_train, **like), pd.DataFrame(Y_heldout, **like)
    return Y_train, Y_heldout
