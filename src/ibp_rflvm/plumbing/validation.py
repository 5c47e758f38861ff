"""Input checks shared by every estimator.

Bad input must fail here with a message that names the problem, never deep inside a
sampler with a NumPy traceback, and never produce a silently wrong result.
"""

from __future__ import annotations

import numbers
import sys
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import NamedTuple

import numpy as np


class _Labels(NamedTuple):
    rows: Sequence | None  # names, or None: numbers
    columns: Sequence | None
    counted_from: int  # 1 for a file's rows and columns, 0 for a DataFrame's positions


#: Row and column names for messages, set by :func:`labelled` and :func:`frame_labels`; None:
#: Python's 0-based indices.
_LABELS: ContextVar[_Labels | None] = ContextVar("ibp_rflvm_labels", default=None)

_COUNTED = " (data rows and columns counted from 1)"


@contextmanager
def labelled(rows: Sequence[str] | None = None, columns: Sequence[str] | None = None) -> Iterator[None]:
    """Within the block, messages name rows and columns as a user's file shows them.

    A row or column is named by `rows[i]` / `columns[j]` where given, otherwise counted from 1
    (as a spreadsheet and the file reader count), instead of the 0-based index a Python caller
    uses. The command line wraps its checks and its fit in this.
    """
    token = _LABELS.set(_Labels(rows, columns, 1))
    try:
        yield
    finally:
        _LABELS.reset(token)


@contextmanager
def frame_labels(Y) -> Iterator[None]:
    """Within the block, messages name a pandas DataFrame `Y`'s columns by their names and its
    rows by its index, as the caller knows them; anything else changes nothing.

    A default index (0, 1, ..., the positions) or default column labels give the 0-based
    positions, as without this. :func:`as_data_matrix` reads a DataFrame in this; ``fit`` runs
    its checks in it, so that the scale warning and the likelihoods' data errors (non-binary
    values under ``bernoulli``, negative counts) say ``column 'proline'`` where the user passed a
    DataFrame.
    """
    if not is_frame(Y):
        yield
        return
    token = _LABELS.set(_Labels(_names(Y.index), _names(Y.columns), 0))
    try:
        yield
    finally:
        _LABELS.reset(token)


def is_frame(Y) -> bool:
    """Whether `Y` is a pandas DataFrame (without importing pandas)."""
    return type(Y).__module__.startswith("pandas") and hasattr(Y, "index") and hasattr(Y, "columns")


def _names(index) -> list | None:
    """A pandas index's labels, or None when they are the positions 0, 1, ... (a RangeIndex)."""
    if type(index).__name__ == "RangeIndex" and index.start == 0 and index.step == 1:
        return None
    return list(index)


def _row_label(i: int) -> str:
    """Row `i` as a message shows it (a bare number or a quoted name)."""
    labels = _LABELS.get()
    if labels is None:
        return str(int(i))
    rows = labels.rows
    return repr(str(rows[i])) if rows is not None else str(int(i) + labels.counted_from)


def column_label(j: int) -> str:
    """``column <j>``; under :func:`labelled` ``column <j+1> ('<name>')``, under
    :func:`frame_labels` ``column '<name>'``."""
    labels = _LABELS.get()
    if labels is None:
        return f"column {int(j)}"
    columns = labels.columns
    if labels.counted_from == 0 and columns is not None:
        return f"column {str(columns[j])!r}"
    name = f" ({str(columns[j])!r})" if columns is not None else ""
    return f"column {int(j) + labels.counted_from}{name}"


def _counted_note(*axes: str) -> str:
    """The note that numbers count from 1, when some of `axes` are shown as numbers."""
    labels = _LABELS.get()
    if labels is None or labels.counted_from == 0:
        return ""
    numbered = any((labels.rows if axis == "row" else labels.columns) is None for axis in axes)
    return _COUNTED if numbered else ""


def _column_short(j: int) -> str:
    labels = _LABELS.get()
    if labels is None:
        return str(int(j))
    columns = labels.columns
    return repr(str(columns[j])) if columns is not None else str(int(j) + labels.counted_from)


def _positions(mask: np.ndarray, limit: int = 5) -> str:
    idx = np.argwhere(mask)[:limit]
    text = ", ".join(f"({_row_label(r)}, {_column_short(c)})" for r, c in idx)
    more = int(mask.sum()) - len(idx)
    return text + (f" and {more} more" if more > 0 else "") + _counted_note("row", "column")


def _indices(flags: np.ndarray, limit: int = 8, axis: str = "row") -> str:
    idx = np.flatnonzero(flags)
    name = _row_label if axis == "row" else _column_short
    text = ", ".join(name(int(i)) for i in idx[:limit])
    more = f" and {len(idx) - limit} more" if len(idx) > limit else ""
    return text + more + _counted_note(axis)


def as_data_matrix(Y, name: str = "Y", min_rows: int = 2, allow_empty: tuple[str, ...] = ()) -> np.ndarray:
    """Return `Y` as a float64 ``N x J`` array with NaN marking unobserved entries.

    Raises ValueError for non-numeric data, the wrong number of dimensions, infinite values,
    and rows or columns with no observed entry at all (a latent position or a column weight
    with nothing to learn from is almost always a data-preparation mistake), unless
    `allow_empty` holds ``"rows"`` or ``"columns"`` (held-out matrices are mostly NaN by design;
    new rows for ``transform`` need not observe every column). pandas ``NA`` counts as NaN.
    """
    if hasattr(Y, "tocsr") or type(Y).__module__.startswith("scipy.sparse"):
        raise TypeError(
            f"Sparse data was passed as {name}, but dense data is required (sparse input is not "
            "supported); use .toarray(), with NaN for unobserved entries"
        )
    original = Y
    Y = _na_as_nan(Y)
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
                f"{arr.dtype}{_non_numeric_columns(original)}: {exc}"
            ) from exc
    if np.iscomplexobj(arr):
        raise ValueError(f"Complex data not supported: {name} must be real-valued; got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D array (rows = observations, columns = features); "
            f"got {arr.ndim}-D with shape {arr.shape}. Reshape your data: "
            + ("array.reshape(-1, 1) for one feature measured on many rows (at least "
               f"{min_rows} are needed)" if min_rows > 1 else "array.reshape(1, -1) for a single row")
        )  # fmt: skip
    n, j = arr.shape
    if j < 1:
        raise ValueError(f"0 feature(s) (shape={arr.shape}) while a minimum of 1 is required by {name}.")
    if n < min_rows:
        raise ValueError(f"{name} needs at least {min_rows} rows; got n_samples = {n} (shape {arr.shape})")
    arr = np.array(arr, dtype=np.float64, copy=True)
    with frame_labels(original):  # a DataFrame's rows and columns by their names
        inf = np.isinf(arr)
        if inf.any():
            raise ValueError(
                f"{name} contains {int(inf.sum())} infinite value(s) at (row, column) "
                f"{_positions(inf)}; use NaN for unobserved entries"
            )
        check_not_empty(np.isnan(arr), name, allow_empty)
    return arr


def check_not_empty(
    unobserved: np.ndarray, name: str, allow_empty: tuple[str, ...] = (), how: str = "all NaN"
) -> None:
    """Refuse rows or columns with no observed entry (nothing to learn from), unless
    `allow_empty` names them; `how` says in the message what made them unobserved."""
    for axis, what in ((1, "row"), (0, "column")):
        if what + "s" in allow_empty:
            continue
        empty = unobserved.all(axis=axis)
        if empty.any():
            raise ValueError(
                f"{name} has {int(empty.sum())} {what}(s) with no observed entry ({how}): "
                f"{what}s {_indices(empty, axis=what)}; drop them before fitting"
            )


def _non_numeric_columns(Y) -> str:
    """`` in column(s) 'a', 'b'`` naming a DataFrame's columns that are not numbers, or ""."""
    columns = getattr(Y, "columns", None)
    if columns is None or not hasattr(Y, "__getitem__"):
        return ""
    bad = []
    for c in columns:  # only on the error path: which of the columns could not be read
        try:
            np.asarray(_na_as_nan(Y[c]), dtype=np.float64)
        except (TypeError, ValueError):
            bad.append(repr(str(c)))
    return f" in column(s) {', '.join(bad[:5])}{' ...' if len(bad) > 5 else ''}" if bad else ""


def _na_as_nan(Y):
    """pandas objects and object arrays with ``pd.NA`` (nullable dtypes), NaN in place of NA.

    numpy cannot turn ``pd.NA`` into a float, so without this a frame with a missing value in
    an ``Int64`` column fails with a TypeError about ``NAType``. Anything that is not numeric
    is left for the caller's own message.
    """
    if type(Y).__module__.startswith("pandas") and hasattr(Y, "to_numpy"):
        try:
            return Y.to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError):
            Y = Y.to_numpy(dtype=object)
    pd = sys.modules.get("pandas")  # pd.NA can only exist when pandas is imported
    if pd is not None and isinstance(Y, np.ndarray) and Y.dtype == object:
        na = np.asarray(pd.isna(Y), dtype=bool)
        if na.any():
            Y = np.where(na, np.nan, Y)
    return Y


#: The largest count accepted: float64 holds every integer up to 2^53, none reliably above.
MAX_COUNT = 2.0**53


def check_counts(Y: np.ndarray, name: str = "Y", what: str = "a count likelihood") -> None:
    """Observed entries must be finite non-negative integers, at most :data:`MAX_COUNT`."""
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
    huge = obs & (np.where(obs, Y, 0.0) > MAX_COUNT)
    if huge.any():
        raise ValueError(
            f"{name} has {int(huge.sum())} count(s) above 2^53 (float64 cannot hold such integers "
            f"exactly) at (row, column) {_positions(huge)}; {what} needs smaller counts: rescale "
            "them or model log counts with likelihood='gaussian'"
        )


#: Gaussian data beyond this magnitude would overflow float64 in the sums of squares.
MAX_GAUSSIAN = 1e100

#: Column root-mean-squares outside this range warn (so do scales more than a factor of 100
#: apart, which no two inside it are). A standardised column has 1; the paper's synthetic
#: Cambridge data (not standardised) has 0.49-2.4; sklearn's raw wine data 0.38-810, its
#: pre-scaled diabetes data 0.048.
SCALE_RANGE = (0.1, 10.0)


class UnscaledDataWarning(UserWarning):
    """Gaussian data far from unit scale: the priors assume centred, standardised columns."""


def check_magnitude(Y: np.ndarray, name: str = "Y") -> None:
    """Gaussian entries must be below :data:`MAX_GAUSSIAN` in absolute value."""
    big = np.abs(np.nan_to_num(Y, nan=0.0)) > MAX_GAUSSIAN
    if big.any():
        raise ValueError(
            f"{name} has {int(big.sum())} value(s) above {MAX_GAUSSIAN:.0e} in absolute value at "
            f"(row, column) {_positions(big)}; their squares overflow float64 in the Gaussian "
            "likelihood: standardise the columns (e.g. sklearn.preprocessing.StandardScaler)"
        )


def warn_if_unscaled(Y: np.ndarray, name: str = "Y") -> None:
    """Warn when Gaussian columns are far from unit scale.

    The Gaussian likelihood has no bias feature by default, unit-scale weight priors and an
    ``InvGamma(1, 1)`` noise prior, so it expects centred columns of scale about 1. The scale
    of a column is the root-mean-square of its observed entries, so a column far from centred
    counts as large (wine's proline: mean 747, sd 315, scale 810); all-zero columns are ignored.
    A column whose scale is outside :data:`SCALE_RANGE` warns.
    """
    # Scaled by each column's largest entry first, so that neither 1e150 nor 1e-300 over- or
    # underflows in the square.
    top = np.nanmax(np.abs(Y), axis=0)
    unit = np.where(top > 0, top, 1.0)
    rms = top * np.sqrt(np.nanmean(np.square(Y / unit), axis=0))
    live = rms > 0
    if not live.any():
        return
    lo, hi = SCALE_RANGE
    outside = live & ((rms < lo) | (rms > hi))
    if outside.any():
        small, large = np.min(rms[live]), np.max(rms[live])
        j_small = int(np.flatnonzero(rms == small)[0])
        j_large = int(np.flatnonzero(rms == large)[0])
        warnings.warn(
            f"columns of {name} are not standardised: their root-mean-square ranges from "
            f"{small:.3g} ({column_label(j_small)}) to {large:.3g} ({column_label(j_large)}), "
            f"{int(outside.sum())} of {rms.size} outside {lo:g}..{hi:g}; the Gaussian likelihood "
            "expects centred columns of scale about 1. Standardise them (e.g. "
            "sklearn.preprocessing.StandardScaler, ignoring NaN) "
            "and undo the scaling on predictions; otherwise small-scale columns are fitted as noise"
            + _counted_note("column"),
            UnscaledDataWarning,
            stacklevel=4,
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
    """Validated ``(n_iter, burn_in)``; the default burn-in is the first half (the paper's protocol)."""
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
