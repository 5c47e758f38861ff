"""Finding a data set's files, checking their sha256 and downloading them (:func:`fetch`).

The search order is in :mod:`.loaders`; nothing here is downloaded unless asked for.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import tempfile
import urllib.error
import urllib.request
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

from .catalogue import OVARIAN_URL, _File, _get_spec, _Spec

#: Environment variable naming a data directory; it wins over ``data_home`` and the cache.
ENV_VAR = "IBP_RFLVM_DATA"


def cache_dir() -> Path:
    """The user cache directory, where :func:`fetch` puts files by default.

    Returns
    -------
    pathlib.Path
        ``$XDG_CACHE_HOME/ibp_rflvm``, else ``~/.cache/ibp_rflvm`` (not created).
    """
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "ibp_rflvm"


def _search_roots(data_home: str | os.PathLike | None) -> list[tuple[str, Path | None]]:
    env = os.environ.get(ENV_VAR)
    return [
        (f"${ENV_VAR}", Path(env).expanduser() if env else None),
        ("data_home argument", Path(data_home).expanduser() if data_home is not None else None),
        ("user cache directory", cache_dir()),
    ]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _verify(path: Path, sums: Sequence[str]) -> None:
    if not sums:
        return
    actual = _sha256(path)
    if actual not in sums:
        expected = " or ".join(sums)
        raise ValueError(
            f"sha256 mismatch for {path}: expected {expected}, got {actual}. The file is damaged or "
            f"is a different version; replace it, or pass verify=False if you know the contents "
            f"are right (e.g. another copy of the mice .xls, which differs only in container bytes)."
        )


def _put_hint(spec: _Spec, slot: tuple[_File, ...], data_home) -> str:
    target = (Path(data_home).expanduser() if data_home is not None else cache_dir()) / slot[0].relpath
    lines = [
        f"To fix: set {ENV_VAR} to a directory that contains '{slot[0].relpath}', "
        f"or copy the file to '{target}'."
    ]
    urls = [u for f in slot for u in f.urls]
    if spec.name == "ovarian":
        lines.append(
            f"The file is not distributed with this project. The paper gives its address as {OVARIAN_URL} "
            f"(an archived page); save it there or pass load('ovarian', path=<your file>)."
        )
    elif urls:
        lines.append(
            f"Or download it: ibp_rflvm.datasets.fetch('{spec.name}') or load('{spec.name}', "
            f"download=True) (source: {urls[0]})."
        )
    return "\n".join(lines)


def _missing_message(spec: _Spec, slot: tuple[_File, ...], searched: list[str], data_home) -> str:
    names = " or ".join(f"'{f.relpath}'" for f in slot)
    where = "\n".join(f"  - {s}" for s in searched)
    return (
        f"Dataset '{spec.name}' needs the file {names}, which was not found. Searched:\n{where}\n"
        + _put_hint(spec, slot, data_home)
    )


def _find_in_dir(directory: Path, f: _File) -> Path | None:
    for candidate in (directory / f.relpath, directory / Path(f.relpath).name):
        if candidate.is_file():
            return candidate
    return None


def _resolve(spec: _Spec, data_home, path) -> list[Path]:
    """The files of `spec`, one per slot; FileNotFoundError if one is missing.

    An explicit ``path`` is final: we do not fall back to other places, since a user who names
    a file wants that file and nothing else.
    """
    found: list[Path] = []
    if path is not None:
        given = Path(path).expanduser()
        for i, slot in enumerate(spec.files):
            hit: Path | None = None
            if given.is_file():
                # The named file fills the first slot; companions are looked for beside it.
                hit = (
                    given
                    if i == 0
                    else next((p for f in slot if (p := _find_in_dir(given.parent, f)) is not None), None)
                )
            elif given.is_dir():
                hit = next((p for f in slot if (p := _find_in_dir(given, f)) is not None), None)
            if hit is None:
                place = given.parent if given.is_file() else given
                state = "" if given.exists() else " (does not exist)"
                raise FileNotFoundError(
                    _missing_message(spec, slot, [f"path argument: {place}{state}"], None)
                )
            found.append(hit)
        return found

    roots = _search_roots(data_home)
    for slot in spec.files:
        hit = None
        searched = []
        for label, root in roots:
            if root is None:
                searched.append(f"{label} (not set)")
                continue
            if not root.is_dir():
                searched.append(f"{label}: {root} (directory does not exist)")
                continue
            searched.append(f"{label}: {root}")
            hit = next((p for f in slot if (p := _find_in_dir(root, f)) is not None), None)
            if hit is not None:
                break
        if hit is None:
            raise FileNotFoundError(_missing_message(spec, slot, searched, data_home))
        found.append(hit)
    return found


def _default_opener(url: str, timeout: float):
    # Looked up at call time so that tests can monkeypatch urllib.request.urlopen.
    request = urllib.request.Request(url, headers={"User-Agent": "ibp-rflvm dataset fetcher"})
    return urllib.request.urlopen(request, timeout=timeout)


def _download(f: _File, dest: Path, opener: Callable, verify: bool, timeout: float) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    errors = []
    for url in f.urls:
        fd, tmp_name = tempfile.mkstemp(prefix=dest.name + ".", suffix=".part", dir=dest.parent)
        tmp = Path(tmp_name)
        try:
            with os.fdopen(fd, "wb") as out, opener(url, timeout) as response:
                for block in iter(lambda r=response: r.read(1 << 20), b""):
                    out.write(block)
            if verify and f.sums:
                try:
                    _verify(tmp, f.sums)
                except ValueError as exc:
                    errors.append(f"{url}: {exc}")
                    continue
            elif not f.sums:
                warnings.warn(
                    f"{dest.name} has no known checksum; downloaded from {url} without verification",
                    stacklevel=3,
                )
            os.replace(tmp, dest)
            return dest
        except (OSError, urllib.error.URLError, http.client.HTTPException) as exc:
            errors.append(f"{url}: {exc}")
        finally:
            tmp.unlink(missing_ok=True)
    raise _DownloadFailed(errors)


class _DownloadFailed(Exception):
    def __init__(self, errors: list[str]):
        super().__init__("; ".join(errors))
        self.errors = errors


def fetch(
    name: str,
    data_home: str | os.PathLike | None = None,
    *,
    verify: bool = True,
    opener: Callable | None = None,
    timeout: float = 60.0,
) -> list[Path]:
    """Download the files of a data set.

    Files already present with a good checksum are kept. Sources are the original public
    addresses, pinned to the commit our reference copy came from where that is a GitHub file
    (:doc:`/datasets`).

    Parameters
    ----------
    name : str
        A data set name, as in :func:`load`.
    data_home : str, os.PathLike or None, default=None
        Where to put the files (None: :func:`cache_dir`).
    verify : bool, default=True
        Check each file's sha256 against the packaged checksums.
    opener : callable or None, default=None
        ``opener(url, timeout)`` returning a context manager with a ``read(n)`` method
        (None: :func:`urllib.request.urlopen`).
    timeout : float, default=60.0
        Seconds to wait for each address.

    Returns
    -------
    list of pathlib.Path
        The data set's files (empty for the data sets not read from files).

    Raises
    ------
    FileNotFoundError
        No source could be downloaded (e.g. offline), naming the file, the addresses tried and
        where to put the file by hand.
    ValueError
        Every source was reached but none had the right bytes.
    """
    spec = _get_spec(name)
    if not spec.files:
        return []
    opener = opener or _default_opener
    root = Path(data_home).expanduser() if data_home is not None else cache_dir()
    paths = []
    for slot in spec.files:
        present = next((p for f in slot if (p := _find_in_dir(root, f)) is not None), None)
        if present is not None:
            if verify:
                _verify(present, [s for f in slot for s in f.sums])
            paths.append(present)
            continue
        candidates = [f for f in slot if f.urls]
        errors: list[str] = []
        for f in candidates:
            try:
                paths.append(_download(f, root / f.relpath, opener, verify, timeout))
                break
            except _DownloadFailed as exc:
                errors.extend(exc.errors)
        else:
            tried = "\n".join(f"  - {e}" for e in errors) or "  - (no download address known)"
            reached_all = errors and all("sha256 mismatch" in e for e in errors)
            message = (
                f"Could not download '{slot[0].relpath}' for dataset '{spec.name}'. Tried:\n{tried}\n"
                f"If you are offline, get the file by hand and put it at '{root / slot[0].relpath}', "
                f"or set {ENV_VAR} to a directory that contains '{slot[0].relpath}'."
            )
            if reached_all:
                raise ValueError(message)
            raise FileNotFoundError(message)
    return paths
