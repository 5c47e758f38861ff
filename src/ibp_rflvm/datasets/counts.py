"""Loaders of the count tables: Montreal bike counters and congress109 phrase counts."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .base import Dataset

#: Counters with gaps in 2015 (257, 267, 110 and 269 missing days); dropped to keep the
#: matrix complete.
MONTREAL_DROPPED: tuple[str, ...] = (
    "Maisonneuve_1",
    "Parc U-Zelt Test",
    "Pont_Jacques_Cartier",
    "Saint-Laurent U-Zelt Test",
)


_MONTHS = [
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
]  # fmt: skip


def _load_montreal(files: list[Path]) -> Dataset:
    import pandas as pd

    df = pd.read_csv(files[0], encoding="utf-8")
    if df.columns[0] != "Date" or not all(c in df.columns for c in MONTREAL_DROPPED):
        raise ValueError(f"{files[0]}: unexpected columns {list(df.columns)}")
    dates = pd.to_datetime(df["Date"], format="%d/%m/%Y")
    # Column 1 is the unnamed, always-00:00 time of day.
    counters = [c for c in df.columns[2:] if c not in MONTREAL_DROPPED]
    Y = df[counters].to_numpy(dtype=np.float64)
    if np.isnan(Y).any():
        raise ValueError(f"{files[0]}: the kept counters have missing days")
    months = dates.dt.month.to_numpy().astype(np.int64)
    return Dataset(
        name="montreal",
        data=Y,
        labels=months,
        label_names=[_MONTHS[m - 1] for m in np.unique(months)],
        kind="counts",
        feature_names=[str(c) for c in counters],
        description=(
            f"Montreal bike-lane daily counts 2015, {files[0].name}: 319 days (1 Jan - 15 Nov) x 17 "
            "counters. Dropped Date, the constant time column and the 4 counters with gaps "
            f"({', '.join(MONTREAL_DROPPED)}), leaving a complete matrix (the paper does not state "
            "its J). Raw counts. Labels: month of the day, 1..11 (label_names[k] is month k+1)."
        ),
        row_names=[d.strftime("%Y-%m-%d") for d in dates],
    )


_PARTY_ORDER = {"D": 0, "I": 1, "R": 2}


_PARTY_NAMES = ["Democrat", "Independent", "Republican"]


def _load_congress(files: list[Path]) -> Dataset:
    import pandas as pd

    counts = pd.read_csv(files[0])
    members = pd.read_csv(files[1])
    if counts.columns[0] != "name" or counts.shape != (529, 1001):
        raise ValueError(f"{files[0]}: expected 529 rows of name + 1000 counts; got {counts.shape}")
    if not members["name"].is_unique or set(members["name"]) != set(counts["name"]):
        raise ValueError(f"{files[1]} does not list the same members as {files[0]}")
    # Join on the name rather than trusting that both files share a row order.
    party = members.set_index("name").loc[counts["name"], "party"].to_numpy()
    if not set(party) <= set(_PARTY_ORDER):
        raise ValueError(f"{files[1]}: unexpected party codes {sorted(set(party))}")
    rank = np.array([_PARTY_ORDER[p] for p in party], dtype=np.int64)
    names = counts["name"].to_numpy().astype(str)
    order = np.lexsort((names, rank))
    Y = counts.iloc[:, 1:].to_numpy(dtype=np.float64)[order]
    n_by_party = {p: int((party == p).sum()) for p in _PARTY_ORDER}
    independents = ", ".join(sorted(names[party == "I"])) or "none"
    return Dataset(
        name="congress",
        data=Y,
        labels=rank[order],
        label_names=list(_PARTY_NAMES),
        kind="counts",
        feature_names=[str(c) for c in counts.columns[1:]],
        description=(
            "congress109 phrase counts (Gentzkow & Shapiro 2010, as in github.com/jgscott/STA380): "
            "529 members x 1000 phrases, raw counts. Rows sorted by party - Democrats "
            f"({n_by_party['D']}), then Independents ({n_by_party['I']}: {independents}), then "
            f"Republicans ({n_by_party['R']}) - and by name within a party. Labels: 0 D, 1 I, 2 R. "
            "The paper's caption says the first 285 rows are Democrats, but the file has 242 D and "
            "285 R; its plot most likely had the Republicans first."
        ),
        row_names=[str(n) for n in names[order]],
    )
