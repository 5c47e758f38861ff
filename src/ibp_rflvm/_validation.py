"""Input checks shared by every estimator.

Bad input must fail here with a message that names the problem, never deep inside a
sampler with a NumPy traceback, and never produce a silently wrong result.
"""

from __future__ import annotations

import numbers

import numpy as np


def _positions(mask: np.ndarray, limit: int = 5) -> str:
    idx = np.argwhere(mask)[:limit]
    text = ", ".join(f"({int(r)}, {int(c)})" for r, c in idx)
    more = int(mask.sum()) - len(idx)
    return text + (f" and {more} more" if more > 0 else "")


def _indices(flags: np.ndarray, limit: int = 8) -> str:
    idx = np.flatnonzero(flags)
    text = ", ".join(str(int(i)) for i in idx[:limit])
    return text + (f" and {len(idx) - limit} more" if len(idx) > limit else "")


def as_data_matrix(Y, name: str = "Y", min_rows: int = 2) -> np.ndarray:
    """Return `Y` as a float64 ``N x J`` array with NaN marking unobserved entries.

    Raises ValueError for non-numeric data, the wrong number of dimensions, infinite values,
    and rows or columns with no observed entry at all (a latent position or a column weight
    with nothing to learn from is almost always a data-preparation mistake).
    """
    if hasattr(Y, "tocsr") or type(Y).__module__.startswith("scipy.sparse"):
        raise TypeError(
            f"Sparse data was passed as {name}, but dense data is required (sparse input is not "
            "supported); use .toarray(), with NaN for unobserved entries"
        )
    try:
        arr = np.asarray(Y)
    except Exception as exc:  # ragged nested lists and similar
        raise ValueError(f"{name} could not be read as an array: {exc}") from exc
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)
    ):
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError) as exc:
            # Keep Python's own exception type (ValueError for text such as "abc", TypeError for
            # objects that are not numbers at all) and say what was expected.
            raise type(exc)(
                f"{name} must be numeric (use NaN for unobserved entries); found dtype "
                f"{arr.dtype}: {exc}"
            ) from exc
    if np.iscomplexobj(arr):
        raise ValueError(f"Complex data not supported: {name} must be real-valued; got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D array (rows = observations, columns = features); "
            f"got {arr.ndim}-D with shape {arr.shape}. Reshape your data, e.g. with "
            "array.reshape(1, -1) for a single row"
        )
    n, j = arr.shape
    if j < 1:
        raise ValueError(f"0 feature(s) (shape={arr.shape}) while a minimum of 1 is required by {name}.")
    if n < min_rows:
        raise ValueError(f"{name} needs at least {min_rows} rows; got n_samples = {n} (shape {arr.shape})")
    arr = np.array(arr, dtype=np.float64, copy=True)
    inf = np.isinf(arr)
    if inf.any():
        raise ValueError(
            f"{name} contains {int(inf.sum())} infinite value(s) at (row, column) "
            f"{_positions(inf)}; use NaN for unobserved entries"
        )
    nan = np.isnan(arr)
    empty_rows = nan.all(axis=1)
    if empty_rows.any():
        raise ValueError(
            f"{name} has {int(empty_rows.sum())} row(s) with no observed entry (all NaN): "
            f"rows {_indices(empty_rows)}; drop them before fitting"
        )
    empty_cols = nan.all(axis=0)
    if empty_cols.any():
        raise ValueError(
            f"{name} has {int(empty_cols.sum())} column(s) with no observed entry (all NaN): "
            f"columns {_indices(empty_cols)}; drop them before fitting"
        )
    return arr


def check_counts(Y: np.ndarray, name: str = "Y", what: str = "a count likelihood") -> None:
    """Observed entries must be finite non-negative integers."""
    obs = ~np.isnan(Y)
    neg = obs & (Y < 0)
    if neg.any():
        raise ValueError(
            f"{name} has {int(neg.sum())} negative value(s) at (row, column) {_positions(neg)}; "
            f"{what} needs non-negative integer counts"
        )
    frac = obs & (np.floor(np.where(obs, Y, 0.0)) != np.where(obs, Y, 0.0))
    if frac.any():
        raise ValueError(
            f"{name} has {int(frac.sum())} non-integer value(s) at (row, column) "
            f"{_positions(frac)}; {what} needs integer counts (round or choose "
            f"likelihood='gaussian')"
        )


def check_random_state(random_state) -> np.random.Generator:
    """One Generator per chain: an int seed, a SeedSequence, a Generator, or None."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or isinstance(random_state, (int, np.integer, np.random.SeedSequence)):
        return np.random.default_rng(random_state)
    raise ValueError(
        f"random_state must be None, an int, a SeedSequence or a numpy Generator; got "
        f"{type(random_state).__name__}"
    )


def check_int(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")
    return int(value)


def check_positive(name: str, value) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a positive number; got {value!r}") from exc
    if not np.isfinite(out) or out <= 0.0:
        raise ValueError(f"{name} must be a positive finite number; got {value!r}")
    return out


def resolve_burn_in(n_iter, burn_in) -> tuple[int, int]:
    """Validated ``(n_iter, burn_in)``; the default burn-in is the first half (SPEC section 3)."""
    n_iter = check_int("n_iter", n_iter, 1)
    if burn_in is None:
        burn_in = n_iter // 2
    burn_in = check_int("burn_in", burn_in, 0)
    if burn_in >= n_iter:
        raise ValueError(
            f"burn_in ({burn_in}) must be smaller than n_iter ({n_iter}) so that at least one "
            f"sample is kept"
        )
    return n_iter, burn_in
