"""Hold-out masks for the evaluation protocol (SPEC section 3)."""

from __future__ import annotations

import numpy as np

from .._validation import as_data_matrix, check_random_state


def holdout_mask(Y, fraction: float = 0.2, random_state=None) -> tuple[np.ndarray, np.ndarray]:
    """Split the observed entries of `Y` into a training and a held-out matrix.

    A `fraction` of the observed (non-NaN) entries, chosen uniformly at random, is set to NaN
    in the training matrix; the held-out matrix holds those entries and NaN elsewhere. Entries
    missing in the data itself are never held out. Every row and column keeps at least one
    observed training entry, so the training matrix is always fittable.

    Returns ``(Y_train, Y_heldout)``.
    """
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"fraction must be in (0, 1); got {fraction}")
    # Same reading as fit (pandas NA, numeric text, no inf); empty rows are the caller's choice.
    Y = as_data_matrix(Y, min_rows=1, allow_empty=("rows", "columns"))
    rng = check_random_state(random_state)
    observed = ~np.isnan(Y)
    flat = np.flatnonzero(observed)
    n_hold = int(round(fraction * flat.size))
    chosen = rng.permutation(flat)[:n_hold]
    held = np.zeros(Y.size, dtype=bool)
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
    Y_train = np.where(held, np.nan, Y)
    Y_heldout = np.where(held, Y, np.nan)
    return Y_train, Y_heldout
