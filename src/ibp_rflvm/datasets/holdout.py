"""Hold-out masks for the evaluation protocol (SPEC section 3)."""

from __future__ import annotations

import numpy as np

from .._sparse import check_missing_mask, is_sparse
from .._validation import as_data_matrix, check_random_state


def holdout_mask(
    Y, fraction: float = 0.2, random_state=None, missing_mask=None, return_mask: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Split the observed entries of `Y` into a training and a held-out matrix.

    A `fraction` of the observed (non-NaN) entries, chosen uniformly at random, is set to NaN
    in the training matrix; the held-out matrix holds those entries and NaN elsewhere. Entries
    missing in the data itself (NaN, or ``True`` in `missing_mask`) are never held out. Every
    row and column keeps at least one observed training entry, so the training matrix is always
    fittable.

    Returns ``(Y_train, Y_heldout)``; with ``return_mask=True`` instead the two boolean masks
    ``(train_missing, test_missing)`` to pass as ``missing_mask`` to ``fit`` and to the scoring
    methods together with `Y` itself: ``train_missing`` is ``True`` at the held-out and the
    missing entries, ``test_missing`` everywhere but at the held-out entries. The masks are the
    only form for ``scipy.sparse`` `Y`, whose zeros are observed (NaN would have to be stored at
    every held-out zero). Both forms draw the same entries for the same seed.
    """
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"fraction must be in (0, 1); got {fraction}")
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
        return held | ~observed, ~held
    if missing_mask is not None:
        Y = np.where(observed, Y, np.nan)
    Y_train = np.where(held, np.nan, Y)
    Y_heldout = np.where(held, Y, np.nan)
    return Y_train, Y_heldout
