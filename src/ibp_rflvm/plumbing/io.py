"""Reading a user's data matrix (CSV/TSV with or without a header and row names, .npy, .npz)
and writing result tables the same way round."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

#: Cells read as unobserved.
MISSING = {"", "na", "nan", "n/a", "null", "none", "?", "."}


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _numeric_or_missing(cell: str) -> bool:
    return cell.lower() in MISSING or _is_number(cell)


@dataclass
class Table:
    """A data matrix read from a file: ``values`` (NaN = unobserved), the column names (None
    without a header), the row names (None unless the file had them), the header cell above the
    row names, and notes on how the file was read (e.g. which column became row names)."""

    values: np.ndarray
    columns: list[str] | None = None
    rows: list[str] | None = None
    index_label: str | None = None
    notes: list[str] = field(default_factory=list)
    labels: list[str] | None = None


def read_matrix(path: str | Path, key: str | None = None) -> tuple[np.ndarray, list[str] | None]:
    """The data matrix in `path` (NaN = unobserved) and its column names, if the file has them.

    See :func:`read_table`, which also returns the row names.
    """
    table = read_table(path, key)
    return table.values, table.columns


def read_table(path: str | Path, key: str | None = None, label_column: str | None = None) -> Table:
    """The data matrix in `path` with its column and row names, where the file has them.

    Text files: the delimiter is sniffed (comma, tab, semicolon or whitespace); the first line is
    a header when a column's first cell is text and the rest of that column is numbers. The
    first column holds row names when its header cell is empty (as pandas' ``to_csv`` and R's
    ``write.csv`` write the index), when the header is one cell shorter than the rows (R's
    ``write.table``), or when all its cells are distinct text. Empty cells and
    ``NA``/``NaN``/``null``-like cells are unobserved. Another column of text is an error naming
    the column (1-based, and its header name); any other cell that is not a number is an error
    naming its line and column. `label_column` (a header name, or a number counted from 1) is
    taken out first and kept as the rows' labels (text files only).
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such data file: {path}")
    suffix = path.suffix.lower()
    if label_column is not None and suffix in (".npy", ".npz"):
        raise ValueError(f"{path}: a label column needs a text table (CSV/TSV), not {suffix}")
    if suffix == ".npy":
        return Table(np.load(path, allow_pickle=False))
    if suffix == ".npz":
        with np.load(path, allow_pickle=False) as archive:
            names = list(archive.files)
            if key is None:
                if len(names) != 1:
                    raise ValueError(f"{path} holds arrays {names}; choose one with --key")
                key = names[0]
            if key not in names:
                raise ValueError(f"{path} has no array {key!r}; it holds {names}")
            return Table(archive[key])
    return _read_text(path, label_column)


def _split(path: Path) -> list[list[str]]:
    text = path.read_text(encoding="utf-8-sig")
    # Only lines of spaces are blank: a line of tabs (or commas) is a row of empty cells.
    lines = [ln for ln in text.splitlines() if ln.strip(" ")]
    if not lines:
        raise ValueError(f"{path} is empty")
    sample = "\n".join(lines[:20])
    try:
        dialect = csv.Sniffer().sniff(sample, delimiters=",\t;")
        rows = list(csv.reader(lines, dialect))
    except csv.Error:
        # The sniffer gives up on ragged files too; splitting "1,2" on whitespace would then
        # read it as one text cell (a header), so a delimiter seen on the first line wins.
        seen = [d for d in ",\t;" if d in lines[0]]
        rows = list(csv.reader(lines, delimiter=seen[0])) if seen else [ln.split() for ln in lines]
    return [[c.strip() for c in row] for row in rows]


def _counts_columns(first: list[str]) -> bool:
    """Whether a line is ``0,1,2,...`` or ``1,2,3,...`` (after an empty cell above row names): the
    names pandas gives unnamed columns, which no data row of 3 or more cells is likely to be."""
    cells = first[1:] if first and first[0] == "" else first
    counted = [str(i) for i in range(len(cells))]
    return len(cells) >= 3 and cells in (counted, counted[1:] + [str(len(cells))])


def _has_header(rows: list[list[str]]) -> bool:
    first, rest = rows[0], rows[1:]
    if _counts_columns(first):
        return True
    if not rest:
        return not all(_numeric_or_missing(c) for c in first)
    # A header names columns of numbers: some column is text on the first line only. Columns
    # of text throughout (row names, or a mistake reported later) say nothing either way.
    width = min(len(r) for r in rows)
    for c in range(width):
        if not _numeric_or_missing(first[c]) and all(_numeric_or_missing(r[c]) for r in rest):
            return True
    # R's write.table: one header cell fewer than the rows, which start with their names.
    short = len(first) == len(rest[0]) - 1 and all(not _numeric_or_missing(c) for c in first)
    return short


def _take_labels(path: Path, rows: list[list[str]], column: str) -> tuple[list[list[str]], list[str], bool]:
    """`rows` without the label column `column` (a header name, or a number counted from 1), the
    labels and whether the first line was the header that named it."""
    first = rows[0]
    # A number counts columns: a first line of data could hold it as a cell.
    named = column in first and not column.isdigit()
    if named:
        c = first.index(column)
        # R's write.table: a header one cell shorter than the rows, which start with row names.
        body_c = c + 1 if len(rows) > 1 and len(first) == len(rows[1]) - 1 else c
    elif column.isdigit() and 1 <= int(column) <= max(len(r) for r in rows):
        c = body_c = int(column) - 1
    else:
        hint = f"; the header's names: {first[:8]}" if not all(_numeric_or_missing(x) for x in first) else ""
        raise ValueError(
            f"{path}: no label column {column!r} (give its header name or its number from 1){hint}"
        )
    body = rows[1:] if named else rows
    if any(len(r) <= body_c for r in body):
        raise ValueError(f"{path}: some rows have no cell in label column {column!r}")
    labels = [r[body_c] for r in body]
    out = [[x for j, x in enumerate(r) if j != body_c] for r in body]
    if named:
        out.insert(0, [x for j, x in enumerate(first) if j != c])
    return out, labels, named


def _read_text(path: Path, label_column: str | None = None) -> Table:
    rows = _split(path)
    labels = None
    if label_column is not None:
        rows, labels, named = _take_labels(path, rows, str(label_column))
        if not named and _has_header(rows):
            labels = labels[1:]  # the label column's own header cell
    has_header = _has_header(rows)
    header = rows[0] if has_header else None
    body = rows[1:] if has_header else rows
    start_line = 2 if has_header else 1
    notes: list[str] = []
    width = len(body[0]) if body else len(header or [])
    if header is not None and len(header) == width - 1:
        header = ["", *header]
        notes.append("the header has one cell fewer than the rows: their first cells are row names")
    if header is not None and _counts_columns(header):
        notes.append("the first line numbers the columns (as pandas names unnamed columns): read as a header")
    names_first = _row_names_column(header, body)
    if names_first and header is not None and header[0] == "" and not notes:
        notes.append(
            "the first column has no name in the header (an index, as pandas' to_csv writes it): "
            "read as row names, not data"
        )
    elif names_first and not notes:
        notes.append("the first column is text: read as row names, not data")
    expect = len(header) if header is not None else width
    for r, cells in enumerate(body):
        if len(cells) != expect:
            raise ValueError(
                f"{path}, line {r + start_line}: {len(cells)} cells where {expect} were expected"
            )
    first_data = 1 if names_first else 0
    _refuse_text_columns(path, header, body, first_data, start_line)
    out = np.empty((len(body), expect - first_data))
    for r, cells in enumerate(body):
        for c in range(first_data, expect):
            cell = cells[c]
            if cell.lower() in MISSING:
                out[r, c - first_data] = np.nan
                continue
            try:
                out[r, c - first_data] = float(cell)
            except ValueError:
                raise ValueError(
                    f"{path}, line {r + start_line} (data row {r + 1}), {_column(header, c)}: {cell!r} is "
                    "not a number (leave the cell empty or write NA for an unobserved entry)"
                ) from None
    return Table(
        out,
        columns=None if header is None else header[first_data:],
        rows=[cells[0] for cells in body] if names_first else None,
        index_label=(header[0] or None) if names_first and header is not None else None,
        notes=notes,
        labels=labels,
    )


def _column(header: list[str] | None, c: int) -> str:
    return f"column {c + 1}" + (f" ({header[c]!r})" if header is not None and header[c] else "")


def _row_names_column(header: list[str] | None, body: list[list[str]]) -> bool:
    """Whether the first column holds row names rather than data."""
    if not body or len(body[0]) < 2:
        return False
    if header is not None and header[0] == "":
        return True
    cells = [cells[0] for cells in body]
    text = all(not _numeric_or_missing(c) for c in cells)
    return text and len(set(cells)) == len(cells)


def _refuse_text_columns(path: Path, header, body, first: int, start_line: int) -> None:
    """A column of text (every observed cell not a number) is an error naming the column."""
    if not body:
        return
    for c in range(first, len(body[0])):
        observed = [(r, cells[c]) for r, cells in enumerate(body) if cells[c].lower() not in MISSING]
        if observed and not any(_is_number(cell) for _, cell in observed):
            r, cell = observed[0]
            where = ""
            if c == 0:
                repeated = _repeated([cells[0] for cells in body], start_line)
                where = f" (a first column of text is read as row names only if its cells differ{repeated})"
            raise ValueError(
                f"{path}: {_column(header, c)} holds text, not numbers (e.g. {cell!r} on line "
                f"{r + start_line}); every column but the row names must be numeric: remove it or "
                f"encode it as numbers{where}"
            )


def _repeated(cells: list[str], start_line: int) -> str:
    """``; 'x' is on lines 2 and 5``, naming the first value that repeats (and how many others
    do), or "" when every cell differs."""
    first_seen: dict[str, int] = {}
    repeats: dict[str, int] = {}  # each repeated value, at its second line
    for r, cell in enumerate(cells):
        if cell not in first_seen:
            first_seen[cell] = r
        elif cell not in repeats:
            repeats[cell] = r
    if not repeats:
        return ""
    cell, r = next(iter(repeats.items()))
    more = f", and {len(repeats) - 1} other value(s) repeat" if len(repeats) > 1 else ""
    return f"; {cell!r} is on lines {first_seen[cell] + start_line} and {r + start_line}{more}"


def format_number(value: float) -> str:
    """`value` with 6 significant digits, never ``-0`` (a zero's sign is noise here)."""
    return "NA" if np.isnan(value) else f"{float(value) + 0.0:.6g}"


def write_table(
    path: str | Path,
    values: np.ndarray,
    columns: Sequence[str],
    rows: Sequence[str] | None = None,
    index_label: str = "row",
) -> Path:
    """Write `values` as CSV: a header (`index_label`, then `columns`) and one line per row,
    led by its name (`rows`, default the row numbers counted from 1), every number formatted by
    :func:`format_number`. ``pandas.read_csv(path, index_col=0)`` reads it back."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2 or values.shape[1] != len(columns):
        raise ValueError(f"{len(columns)} column names for a table of shape {values.shape}")
    names = [str(i + 1) for i in range(values.shape[0])] if rows is None else [str(r) for r in rows]
    if len(names) != values.shape[0]:
        raise ValueError(f"{len(names)} row names for {values.shape[0]} rows")
    path = Path(path)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow([index_label, *columns])
        for name, row in zip(names, values, strict=True):
            writer.writerow([name, *(format_number(v) for v in row)])
    return path
