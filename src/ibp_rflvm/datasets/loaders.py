"""Loaders for the data sets of the paper's Tables 1 and 2 (docs/datasets.md).

Every loader returns a :class:`Dataset`. Files are found in this order:

1. the explicit ``path`` argument (a file, or a directory);
2. the directory named by the environment variable ``IBP_RFLVM_DATA``;
3. the ``data_home`` argument;
4. the user cache directory, ``$XDG_CACHE_HOME/ibp_rflvm`` or ``~/.cache/ibp_rflvm``.

Directories in 2-4 (and a directory given as ``path``) are laid out like the project's shared
data folder, e.g. ``<dir>/congress109/congress109.csv``. Each file's sha256 is checked against
:data:`SHA256`. Nothing is downloaded unless asked for (``download=True`` or :func:`fetch`).
The choices made for each data set are written out in ``docs/datasets.md`` and in each
data set's ``description``.

The loaders live by family: :mod:`.tabular` (cancer, mice, ovarian), :mod:`.images` (olivetti,
cambridge), :mod:`.counts` (montreal, congress) and :mod:`.text` (spam, newsgroups); the
catalogue of files and sources is :mod:`.catalogue`, and finding, checking and downloading
the files is :mod:`.files`. This module picks the loader and re-exports the public names.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from .base import Dataset
from .catalogue import _SPECS, DATASET_NAMES, OVARIAN_URL, SHA256, _get_spec
from .counts import MONTREAL_DROPPED, _load_congress, _load_montreal
from .files import ENV_VAR, _find_in_dir, _resolve, _search_roots, _verify, cache_dir, fetch
from .images import _load_cambridge, _load_olivetti
from .tabular import _load_cancer, _load_mice, _load_ovarian
from .text import NEWSGROUPS_CATEGORIES, _load_newsgroups, _load_spam

__all__ = [
    "DATASET_NAMES",
    "ENV_VAR",
    "MONTREAL_DROPPED",
    "NEWSGROUPS_CATEGORIES",
    "OVARIAN_URL",
    "SHA256",
    "Dataset",
    "available_datasets",
    "cache_dir",
    "fetch",
    "load",
]


_BUILDERS: dict[str, Callable[..., Dataset]] = {
    "cancer": _load_cancer,
    "mice": _load_mice,
    "ovarian": _load_ovarian,
    "olivetti": _load_olivetti,
    "cambridge": _load_cambridge,
    "montreal": _load_montreal,
    "congress": _load_congress,
    "spam": _load_spam,
    "newsgroups": _load_newsgroups,
}


def load(
    name: str,
    data_home: str | os.PathLike | None = None,
    *,
    sqrt: bool = False,
    path: str | os.PathLike | None = None,
    verify: bool = True,
    download: bool = False,
    **options: Any,
) -> Dataset:
    """Load one of the paper's data sets.

    Files are looked for in ``$IBP_RFLVM_DATA``, then `data_home`, then the user cache
    (:func:`cache_dir`); nothing is downloaded unless asked. Where each file comes from and
    where to put it: :doc:`/datasets`.

    Parameters
    ----------
    name : str
        One of ``DATASET_NAMES``: ``"cancer"``, ``"mice"``, ``"ovarian"``, ``"olivetti"``,
        ``"cambridge"``, ``"montreal"``, ``"congress"``, ``"spam"``, ``"newsgroups"``.
    data_home : str, os.PathLike or None, default=None
        A data directory searched after ``$IBP_RFLVM_DATA`` and before the cache.
    sqrt : bool, default=False
        Count data only: apply the paper's square-root transform, rounded to the nearest
        integer so that count likelihoods still apply.
    path : str, os.PathLike or None, default=None
        An explicit file or directory; when given, nothing else is searched.
    verify : bool, default=True
        Check the sha256 of each file against the packaged checksums.
    download : bool, default=False
        If a file is missing, :func:`fetch` it into `data_home` (or the cache) first.
    **options : dict
        Data-set specific: ``random_state`` (cambridge, default 0), ``samples_as_rows``
        (ovarian, default: guessed from the shape), ``n_terms`` (spam, newsgroups, default
        1000), ``categories`` and ``split`` (newsgroups, default ``NEWSGROUPS_CATEGORIES`` and
        ``"test"``).

    Returns
    -------
    Dataset
        The data (``N x J`` float64, NaN only where the source has no value), labels, names
        and the files read.

    Raises
    ------
    FileNotFoundError
        A file missing and not downloaded, naming the file, the places searched and where to
        put it.
    ValueError
        A checksum mismatch; ``sqrt=True`` for real-valued data; `path` for a data set not
        read from a file; an unknown `name`.
    TypeError
        An option the data set does not take.

    See Also
    --------
    available_datasets : Which data sets' files are found, and where.

    Examples
    --------
    >>> from ibp_rflvm.datasets import load
    >>> load("cancer").shape                # bundled with scikit-learn
    (569, 30)
    """
    spec = _get_spec(name)
    unknown = sorted(set(options) - set(spec.options))
    if unknown:
        allowed = ", ".join(spec.options) or "none"
        raise TypeError(f"load({spec.name!r}) got unexpected options {unknown}; allowed: {allowed}")
    if sqrt and spec.kind != "counts":
        raise ValueError(f"sqrt=True applies to count data only; {spec.name!r} is {spec.kind}-valued")
    if path is not None and not spec.files:
        raise ValueError(f"{spec.name!r} is not read from a file, so path= does not apply")

    files: list[Path] = []
    if spec.files:
        try:
            files = _resolve(spec, data_home, path)
        except FileNotFoundError:
            if not download or path is not None:
                raise
            fetch(spec.name, data_home, verify=verify)
            files = _resolve(spec, data_home, None)
        if verify:
            for slot, p in zip(spec.files, files, strict=True):
                _verify(p, [s for f in slot for s in f.sums])

    ds = _BUILDERS[spec.name](files, **options)
    ds = replace(ds, files=tuple(files))
    if sqrt:
        ds = replace(
            ds,
            data=np.rint(np.sqrt(ds.data)),
            description=ds.description
            + " Square-root transform applied (the paper's sqrt(Y)), rounded to the nearest integer.",
        )
    return ds


def available_datasets(data_home: str | os.PathLike | None = None) -> list[dict[str, Any]]:
    """Which data sets' files are found, and where; nothing is parsed or checksummed.

    Parameters
    ----------
    data_home : str, os.PathLike or None, default=None
        A data directory searched after ``$IBP_RFLVM_DATA`` and before the cache, as in
        :func:`load`.

    Returns
    -------
    list of dict
        One dict per data set, in ``DATASET_NAMES`` order: ``"name"``, ``"kind"``, ``"shape"``
        (after loading with default options; None when unknown), ``"source"``, ``"files"``
        (each with ``"relpath"``, ``"found"``, ``"location"``, ``"sources"``), ``"found"``
        (all files present) and ``"put_missing_in"`` (where to put missing files, or None).
    """
    roots = [(label, root) for label, root in _search_roots(data_home) if root is not None]
    target = Path(data_home).expanduser() if data_home is not None else cache_dir()
    out = []
    for name in DATASET_NAMES:
        spec = _SPECS[name]
        entries = []
        for slot in spec.files:
            location = None
            for label, root in roots:
                hit = next((p for f in slot if (p := _find_in_dir(root, f)) is not None), None)
                if hit is not None:
                    location = f"{hit} ({label})"
                    break
            entries.append(
                {
                    "relpath": slot[0].relpath,
                    "alternatives": [f.relpath for f in slot[1:]],
                    "found": location is not None,
                    "location": location,
                    "sources": [u for f in slot for u in f.urls],
                }
            )
        if not spec.files:
            place = "generated in code" if name == "cambridge" else "bundled with scikit-learn"
            put = None
        else:
            missing = [e["relpath"] for e in entries if not e["found"]]
            put = (
                None
                if not missing
                else f"set {ENV_VAR} to a directory holding {', '.join(missing)}, or copy "
                f"{'them' if len(missing) > 1 else 'it'} under {target}"
                + (f"; original address: {OVARIAN_URL}" if name == "ovarian" else "")
            )
            place = "; ".join(e["location"] for e in entries if e["location"]) or None
        out.append(
            {
                "name": name,
                "kind": spec.kind,
                "shape": spec.shape,
                "source": spec.source,
                "files": entries,
                "found": all(e["found"] for e in entries),
                "location": place,
                "put_missing_in": put,
            }
        )
    return out
