"""Reading a user's data matrix: CSV/TSV (with or without a header), .npy and .npz."""

from __future__ import annotations

import csv
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


def read_matrix(path: str | Path, key: str | None = None) -> tuple[np.ndarray, list[str] | None]:
    """The data matrix in `path` (NaN = unobserved) and its column names, if the file has them.

    Text files: the delimiter is sniffed (comma, tab, semicolon or whitespace); the first line is
    a header when some of its cells are not numbers while the second line's are. Empty cells and
    ``NA``/``NaN``/``null``-like cells are unobserved. Any other cell that is not a number is an
    error naming its line and column.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such data file: {path}")
    suffix = path.suffix.lower()
    if suffix == ".npy":
        return np.load(path, allow_pickle=False), None
    if suffix == ".npz":
        with np.load(path, allow_pickle=False) as archive:
            names = list(archive.files)
            if key is None:
                if len(names) != 1:
                    raise ValueError(f"{path} holds arrays {names}; choose one with --key")
                key = names[0]
            if key not in names:
                raise ValueError(f"{path} has no array {key!r}; it holds {names}")
            return archive[key], None
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
    first = [c.strip() for c in rows[0]]
    second = [c.strip() for c in rows[1]] if len(rows) > 1 else []

    def numeric_or_missing(cells):
        return all(c.lower() in MISSING or _is_number(c) for c in cells)

    has_header = not numeric_or_missing(first) and numeric_or_missing(second)
    header = first if has_header else None
    body = rows[1:] if has_header else rows
    start_line = 2 if has_header else 1
    width = len(header) if header is not None else len(body[0])
    out = np.empty((len(body), width))
    for r, cells in enumerate(body):
        if len(cells) != width:
            raise ValueError(f"{path}, line {r + start_line}: {len(cells)} cells where {width} were expected")
        for c, cell in enumerate(cells):
            cell = cell.strip()
            if cell.lower() in MISSING:
                out[r, c] = np.nan
                continue
            try:
                out[r, c] = float(cell)
            except ValueError:
                column = f"column {c + 1}" + (f" ({header[c]!r})" if header is not None else "")
                raise ValueError(
                    f"{path}, line {r + start_line} (data row {r + 1}), {column}: {cell!r} is not a number "
                    "(leave the cell empty or write NA for an unobserved entry)"
                ) from None
    return out, header
