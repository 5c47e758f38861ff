"""Loaders of the real-valued measurement tables: breast cancer, mice proteins, ovarian genes."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from .base import Dataset, _standardise
from .catalogue import OVARIAN_URL


def _load_cancer(files: list[Path]) -> Dataset:
    from sklearn.datasets import load_breast_cancer

    bunch = load_breast_cancer()
    X = np.asarray(bunch.data, dtype=np.float64)
    y = np.asarray(bunch.target, dtype=np.int64)
    if X.shape != (569, 30):
        raise ValueError(f"scikit-learn's breast cancer data has shape {X.shape}, expected (569, 30)")
    return Dataset(
        name="cancer",
        data=_standardise(X),
        labels=y,
        label_names=[str(s) for s in bunch.target_names],
        kind="real",
        feature_names=[str(s) for s in bunch.feature_names],
        description=(
            "Wisconsin diagnostic breast cancer (UCI), as bundled with scikit-learn "
            "(load_breast_cancer; no separate file or checksum). 569 x 30; each column "
            "standardised to mean 0, population sd 1. Labels: 0 malignant (212), 1 benign (357)."
        ),
    )


def _load_mice(files: list[Path]) -> Dataset:
    import pandas as pd

    with warnings.catch_warnings():
        # pandas 3 deprecates the xlrd engine, but it is the only reader of this .xls format here.
        warnings.filterwarnings("ignore", message=".*xlrd.*")
        df = pd.read_excel(files[0], engine="xlrd")
    cols = list(df.columns)
    try:
        start, stop = cols.index("MouseID") + 1, cols.index("Genotype")
    except ValueError as exc:
        raise ValueError(f"{files[0]}: expected columns MouseID ... Genotype; found {cols[:5]}...") from exc
    proteins = cols[start:stop]
    if len(proteins) != 77:
        raise ValueError(f"{files[0]}: expected 77 protein columns, found {len(proteins)}")
    X = df[proteins].to_numpy(dtype=np.float64)
    classes = sorted(str(c) for c in df["class"].unique())
    code = {c: k for k, c in enumerate(classes)}
    labels = np.array([code[str(c)] for c in df["class"]], dtype=np.int64)
    n_missing = int(np.isnan(X).sum())
    return Dataset(
        name="mice",
        data=_standardise(X),
        labels=labels,
        label_names=classes,
        kind="real",
        feature_names=[str(p) for p in proteins],
        description=(
            f"UCI Mice Protein Expression, {files[0].name}: the 77 protein columns, 1080 x 77. "
            f"The {n_missing} missing cells are kept as NaN (the paper's imputation is not stated; "
            "the models treat NaN as unobserved and never score it). Columns standardised ignoring "
            "NaN (nanmean, population nanstd). Labels: the 8 'class' values in sorted order."
        ),
        row_names=[str(m) for m in df["MouseID"]],
    )


def _parse_table(path: Path) -> tuple[np.ndarray, list[str] | None, list[str] | None]:
    """A whitespace/tab separated numeric table with optional header row and label columns.

    Returns (values, row labels from the first non-numeric column, header of numeric columns).
    """
    na = {"", "na", "nan", "null", "n/a", "-", "?"}
    lines = [ln.rstrip("\r\n") for ln in path.read_text(encoding="latin-1").splitlines()]
    lines = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        raise ValueError(f"{path} is empty")
    # Tabs allow gene descriptions with spaces in them; without tabs any whitespace separates.
    sep = "\t" if any("\t" in ln for ln in lines) else None
    rows = [ln.split(sep) for ln in lines]
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]

    def numeric(cell: str) -> bool:
        c = cell.strip()
        if c.lower() in na:
            return True
        try:
            float(c)
        except ValueError:
            return False
        return True

    def n_text(r: list[str]) -> int:
        return sum(not numeric(c) for c in r)

    has_header = len(rows) > 1 and n_text(rows[0]) > n_text(rows[1])
    header = rows[0] if has_header else None
    body = rows[1:] if has_header else rows
    num_cols = [j for j in range(width) if all(numeric(r[j]) for r in body)]
    num_cols = [j for j in num_cols if any(r[j].strip().lower() not in na for r in body)]
    text_cols = [j for j in range(width) if j not in num_cols]
    if not num_cols:
        raise ValueError(f"{path}: no numeric columns found")
    values = np.array(
        [[np.nan if r[j].strip().lower() in na else float(r[j]) for j in num_cols] for r in body]
    )
    row_ids = [r[text_cols[0]].strip() for r in body] if text_cols else None
    col_ids = [header[j].strip() for j in num_cols] if header is not None else None
    return values, row_ids, col_ids


def _load_ovarian(files: list[Path], samples_as_rows: bool | None = None) -> Dataset:
    values, row_ids, col_ids = _parse_table(files[0])
    if samples_as_rows is None:
        # Expression tables list genes down the rows and far outnumber the samples.
        samples_as_rows = values.shape[0] <= values.shape[1]
    if not samples_as_rows:
        values, row_ids, col_ids = values.T, col_ids, row_ids
    n = values.shape[0]
    return Dataset(
        name="ovarian",
        data=_standardise(values),
        labels=np.zeros(n, dtype=np.int64),
        label_names=["unlabelled"],
        kind="real",
        feature_names=col_ids,
        description=(
            f"Ovarian cancer gene expression (Martoglio et al. 2002), user file {files[0]} "
            f"(original: {OVARIAN_URL}). Parsed as a tab/whitespace table; non-numeric columns "
            f"and a header row are taken as identifiers. Orientation: "
            f"{'samples as rows' if samples_as_rows else 'genes as rows, transposed'}, giving "
            f"{values.shape[0]} samples x {values.shape[1]} genes. Columns standardised ignoring "
            "NaN. No labels (the file layout is not known to this project)."
        ),
        row_names=row_ids,
    )
