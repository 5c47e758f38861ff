"""The output folder's cell files: ``OUT/cells/<cell>.json`` and ``<cell>.latent.npy``.

Each file is written to a temporary name and renamed, the JSON last, so a cell is done exactly
when its JSON exists.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .experiments import Cell, ReproduceError, RunConfig, cell_settings


def _atomic_write(path: Path, write: Callable[[Any], None], mode: str = "wb") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, mode) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def cell_path(out: str | Path, cell_id: str) -> Path:
    return Path(out) / "cells" / f"{cell_id}.json"


def save_record(out: str | Path, record: dict[str, Any]) -> Path:
    """Write (or rewrite) a cell's JSON record, atomically."""
    path = cell_path(out, record["cell"])
    _atomic_write(path, lambda f: json.dump(record, f, indent=1, allow_nan=False), mode="w")
    return path


def save_cell(out: str | Path, record: dict[str, Any], latent: np.ndarray) -> Path:
    """Write the latent matrix, then the JSON; the JSON's existence marks the cell done."""
    cells = Path(out) / "cells"
    _atomic_write(cells / record["latent_file"], lambda f: np.save(f, latent, allow_pickle=False))
    path = save_record(out, record)
    err = Path(out) / "errors" / f"{record['cell']}.txt"
    if err.exists():
        err.unlink()
    return path


def load_cell(out: str | Path, cell_id: str) -> dict[str, Any] | None:
    path = cell_path(out, cell_id)
    if not path.exists():
        return None
    with open(path) as f:
        return json.load(f)


def load_records(out: str | Path) -> list[dict[str, Any]]:
    """Every finished cell record under ``OUT/cells``."""
    cells = Path(out) / "cells"
    if not cells.is_dir():
        return []
    records = []
    for p in sorted(cells.glob("*.json")):
        with open(p) as f:
            records.append(json.load(f))
    return records


def worker_seconds(record: dict[str, Any]) -> tuple[float, bool]:
    """A cell's worker seconds over its whole chain, and whether they were measured (True) or
    estimated (False).

    A cell resumed from a checkpoint ran its first sweeps in an earlier process. Their seconds
    are in ``seconds_before_resume`` when the checkpoint timed them; otherwise (older records and
    checkpoints) the seconds after the resume are scaled by the share of the chain they ran. A
    chain resumed after its last sweep has nothing to scale, and counts its scoring only.
    """
    seconds = float(record["seconds"])
    resumed = int(record.get("resumed_from_sweep") or 0)
    if not resumed:
        return seconds, True
    before = record.get("seconds_before_resume")
    if before is not None:
        return seconds + float(before), True
    n_iter = record.get("settings", {}).get("n_iter")
    if n_iter and resumed < n_iter:
        seconds *= n_iter / (n_iter - resumed)
    return seconds, False


def load_latent(out: str | Path, record: dict[str, Any]) -> np.ndarray:
    return np.load(Path(out) / "cells" / record["latent_file"], allow_pickle=False)


def check_settings(out: Path, cells: Sequence[Cell], cfg: RunConfig) -> dict[str, dict]:
    """The records of `cells` already in `out`; ReproduceError if any was made with other
    settings than `cfg` (a run never mixes cells made with different settings)."""
    done: dict[str, dict] = {}
    clash = []
    for c in cells:
        rec = load_cell(out, c.id)
        if rec is None:
            continue
        if rec.get("settings") != cell_settings(c, cfg):
            clash.append(f"{c.id}: {rec.get('settings')}")
        done[c.id] = rec
    if clash:
        listed = "\n  ".join(clash[:5]) + ("\n  ..." if len(clash) > 5 else "")
        raise ReproduceError(
            f"{out} already holds {len(clash)} of these cells made with other settings; use another "
            f"--out or delete them. Now: n_iter={cfg.n_iter}, n_frequencies={cfg.n_frequencies}, "
            f"gplvm_iters={cfg.gplvm_iters}, max_rows={cfg.max_rows}, sqrt={cfg.sqrt}, "
            f"seed={cfg.seed}. On disk:\n  {listed}"
        )
    return done
