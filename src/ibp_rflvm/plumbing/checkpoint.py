"""The checkpoint file: a zip of ``.npy`` arrays plus one JSON member, never a pickle.

A checkpoint is a *tree*: nested dicts and lists whose leaves are NumPy arrays, strings,
booleans, ``None`` and Python numbers. :func:`write_tree` stores every array as its own
``.npy`` member (dtype, shape and memory order exact) and the rest of the tree as
``meta.json``, where each array is replaced by ``{"__npy__": member}``. Python floats go
through JSON as their shortest round-trip repr and integers of any size as JSON integers, so
every number comes back bit for bit.

Reading uses ``numpy.load(..., allow_pickle=False)``: the file can only yield arrays of plain
dtypes and JSON values, never run code, whatever its content. Anything that is not such a
file (truncated, corrupt, another format, an object array) raises :class:`CheckpointError`
naming the file, instead of a traceback from deep inside ``zipfile`` or ``numpy``.

A file is written to a temporary name in the same folder, flushed to disk and renamed over
the old one, so a process killed mid-write leaves the previous checkpoint whole (and a
``<name>.<random>.tmp`` file that :func:`remove_stale_temporaries` clears).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

#: What ``meta.json`` says the file is, and the layout version this library reads and writes.
FORMAT = "ibp-rflvm checkpoint"
VERSION = 2
_META = "meta.json"
_ARRAY = "__npy__"


class CheckpointError(ValueError):
    """A checkpoint file that cannot be used; the message names the file and the reason."""


class CheckpointMismatch(CheckpointError):
    """A checkpoint that belongs to other data or settings than the run asked to resume."""


def remove_stale_temporaries(path: Path) -> list[Path]:
    """Delete the temporary files a killed writer of checkpoint `path` left behind.

    A process killed while writing leaves ``<name>.<random>.tmp`` beside an intact checkpoint.
    Only names with exactly one random part between ``<name>.`` and ``.tmp`` are this
    checkpoint's: the checkpoints of other chains (``<name>.chain<c>``) have longer names, and
    their writers may be running.
    """
    path = Path(path)
    pattern = re.compile(re.escape(path.name) + r"\.[^.]+\.tmp")
    if not path.parent.is_dir():
        return []
    stale = [p for p in path.parent.iterdir() if pattern.fullmatch(p.name)]
    for p in stale:
        p.unlink(missing_ok=True)
    return stale


# ------------------------------------------------------------------------------------------
# Tree <-> (JSON, arrays)


def _encode(node: Any, name: str, arrays: dict[str, np.ndarray]) -> Any:
    if isinstance(node, np.ndarray):
        if node.dtype.hasobject:
            raise TypeError(f"checkpoint entry {name} is an object array, which cannot be stored")
        arrays[name] = node
        return {_ARRAY: name}
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if not isinstance(key, str) or key == _ARRAY or "/" in key:
                raise TypeError(f"checkpoint entry {name}: key {key!r} is not a plain name")
            out[key] = _encode(value, f"{name}/{key}" if name else key, arrays)
        return out
    if isinstance(node, list | tuple):
        return [_encode(v, f"{name}/{i}" if name else str(i), arrays) for i, v in enumerate(node)]
    if isinstance(node, bool | str) or node is None:
        return node
    if isinstance(node, int | np.integer):
        return int(node)
    if isinstance(node, float | np.floating):
        return float(node)
    raise TypeError(f"checkpoint entry {name} has type {type(node).__name__}, which cannot be stored")


def _decode(node: Any, arrays) -> Any:
    if isinstance(node, dict):
        if set(node) == {_ARRAY}:
            return arrays[node[_ARRAY]]
        return {key: _decode(value, arrays) for key, value in node.items()}
    if isinstance(node, list):
        return [_decode(v, arrays) for v in node]
    return node


def write_tree(path: str | os.PathLike, tree: dict) -> None:
    """Write `tree` to `path` atomically (temporary file in the same folder, fsync, rename)."""
    path = Path(path)
    arrays: dict[str, np.ndarray] = {}
    meta = {"format": FORMAT, "version": VERSION, "tree": _encode(tree, "", arrays)}
    text = json.dumps(meta, allow_nan=True, separators=(",", ":")).encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            # Stored, not deflated: the arrays are mostly floats, which barely compress, and a
            # checkpoint is written every few sweeps. The zip CRCs still catch corruption.
            with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
                for name, arr in arrays.items():
                    with zf.open(name + ".npy", "w", force_zip64=True) as member:
                        np.lib.format.write_array(member, arr, allow_pickle=False)
                zf.writestr(_META, text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _not_usable(path, why: str) -> CheckpointError:
    return CheckpointError(
        f"{os.fspath(path)} is not a usable ibp-rflvm checkpoint: {why}; "
        "remove it (or fit without resume=True) to start the chain afresh"
    )


def read_tree(path: str | os.PathLike) -> dict:
    """The tree stored in checkpoint `path`, every array read and checked.

    Raises :class:`CheckpointError` naming the file when it is truncated, corrupt, not a
    checkpoint, or of another format version; ``FileNotFoundError`` when it does not exist.
    """
    with open(path, "rb") as f:
        head = f.read(4)
    if head != b"PK\x03\x04":
        if not head:
            raise _not_usable(path, "the file is empty")
        if head[:1] == b"\x80":  # pickle protocol 2 or later
            raise _not_usable(path, "a pickle (the checkpoints before format version 2, no longer read)")
        raise _not_usable(path, "not a zip archive")
    try:
        with np.load(path, allow_pickle=False) as npz:
            if _META not in npz.files:
                raise _not_usable(path, f"a zip archive without {_META}")
            meta = json.loads(npz[_META])
            if not isinstance(meta, dict) or meta.get("format") != FORMAT:
                raise _not_usable(path, f"{_META} does not describe an ibp-rflvm checkpoint")
            if meta.get("version") != VERSION:
                raise _not_usable(
                    path,
                    f"format version {meta.get('version')!r}, but this version of ibp-rflvm reads "
                    f"version {VERSION}",
                )
            arrays = {name: npz[name] for name in npz.files if name != _META}
            for name, arr in arrays.items():
                if not isinstance(arr, np.ndarray):
                    raise _not_usable(path, f"member {name!r} is not a .npy array")
            return _decode(meta["tree"], arrays)
    except CheckpointError:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, KeyError, TypeError) as err:
        # BadZipFile: truncated (no central directory) or a bad CRC; ValueError: a member that
        # is not a plain .npy (an object array needs pickle and is refused) or bad JSON.
        if isinstance(err, FileNotFoundError):
            raise
        raise _not_usable(path, f"truncated or corrupt ({type(err).__name__}: {err})") from None
