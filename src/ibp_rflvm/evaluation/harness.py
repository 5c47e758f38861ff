"""The experiment harness behind ``ibp-rflvm reproduce``: the paper's Tables 1-2 and Figures 1-2.

Cells
-----
The unit of work is a *cell*: one (data set, method, trial). Its identifier is
``<dataset>__<method>__t<trial>``, e.g. ``cancer__ibp-rflvm__t3``.

Seeds. Two seeds are derived per cell, both from :class:`numpy.random.SeedSequence` over stable
integers (``zlib.crc32`` of the names, never Python's salted ``hash``):

* the *mask seed* ``SeedSequence([base_seed, crc32(dataset), trial])``: it depends on the data set
  and trial only, so every method of a trial is scored on the same hold-out mask, made by
  ``holdout_mask(Y, 0.2, random_state=mask_seed)`` (entries missing in the data are never held
  out);
* the *model seed* ``SeedSequence([base_seed, crc32(dataset), trial, crc32(method)])``: each
  method's chain has its own stream.

Dimensions of the finite models. A finite model takes ``D`` = the final ``K+`` (active
dimensions in the last sample, at least 1) of its IBP counterpart in the same trial (SPEC 3):

==========================  =============================
finite model                D taken from
==========================  =============================
RFLVM, GPLVM                IBP-RFLVM
NB RFLVM                    NB IBP-RFLVM
Poisson RFLVM               Poisson IBP-RFLVM
Multinomial RFLVM, LDA      Multinomial IBP-RFLVM (as the paper says)
PFA                         Poisson IBP-RFLVM
==========================  =============================

PFA is paired with the Poisson model because it is a Poisson factorisation of the counts (its
gamma-distributed factor scores make it a Poisson-rate model, the same observation family as
the Poisson RFLVM); the paper does not say. IBP-LFM is infinite and starts, like the RFLVMs, at
``K = 2``. A dependent cell runs only after its parent's cell has finished; asking for a finite
model alone adds its parent's cells.

Iterations. ``n_iter`` is the number of MCMC sweeps of every sampler (the RFLVMs, IBP-LFM, PFA,
LDA; burn-in the first half). GPLVM is fitted by L-BFGS-B and takes ``gplvm_iters`` optimiser
iterations instead (default 1000, the estimator's own default).

Subsets for tests. ``max_rows`` (CLI ``--max-rows``, hidden from ``--help``) keeps ``max_rows``
rows evenly spaced over the data set (``linspace`` over the row indices, so label blocks such
as congress's parties keep their share); it exists to make smoke tests fast and is recorded in
every cell, and a run never mixes cells made with different settings.

Output folder
-------------
``OUT/cells/<cell>.json`` (metrics, timings, seeds, D, K+ trace, settings) and
``OUT/cells/<cell>.latent.npy`` (the final latent matrix, for the figures), each written to a
temporary file and renamed, the JSON last: a cell is done exactly when its JSON exists, and a
rerun skips it. ``OUT/partial/<cell>.ckpt`` is the checkpoint of an RFLVM-family cell's chain
in flight, written every ``CHECKPOINT_EVERY`` sweeps and removed when the cell is saved: a rerun
after Ctrl-C, a kill or the end of a session continues that chain where its checkpoint left it,
with the same result as an uninterrupted run, bit for bit (``resumed_from_sweep`` in the cell
says where it picked up). Local workers only: Dask workers may not share the disk, and the
baselines (GPLVM, IBP-LFM, PFA, LDA) are short enough to restart. ``OUT/errors/<cell>.txt``
holds the traceback of a failed cell (removed when it later succeeds). ``OUT/reproduce.log``
has one line per finished cell. Tables go to ``OUT/tables`` and figures to ``OUT/figures`` (see
:mod:`.report`).

Execution
---------
Cells run in worker processes on this machine (``n_jobs``; loky, joblib's process pool), or in
the current process when ``n_jobs == 1``, or on an existing Dask cluster when ``scheduler`` is
an address (``distributed.Client(address)`` and futures). Workers load the data sets
themselves by name, so on a remote cluster every worker needs ``ibp_rflvm`` and the data files
(``IBP_RFLVM_DATA``); results come back to this process, which writes every file, so the
workers need no shared disk. At most one cell per worker slot is in flight, so a dependent cell
can start as soon as its parent ends; the ready queue is ordered by a rough cost estimate (data
size x a per-method factor, plus the cells waiting for this one), longest first, so the slowest
cells (GPLVM on the larger data sets) do not start last.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import socket
import time
import traceback
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

SCHEMA_VERSION = 1
HOLDOUT_FRACTION = 0.2
INIT_DIMS = 2  # SPEC 3: infinite models start at K = 2 (the paper's sampler)


def init_dims_for(cfg: RunConfig) -> int:
    """The IBP models' starting dimensions: the paper's 2, or the library's default start."""
    if cfg.sampler == "paper":
        return INIT_DIMS
    from ..estimator import IBPRFLVM

    return int(IBPRFLVM().init_dims)


class ReproduceError(ValueError):
    """A request the harness cannot carry out (unknown names, settings clash with OUT)."""


# ------------------------------------------------------------------------------------------
# Methods, tables and figures
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Method:
    """One row of a table.

    `family` is ``"rflvm"`` (IBPRFLVM/RFLVM with `likelihood`), ``"gplvm"``, ``"ibp-lfm"``,
    ``"pfa"`` or ``"lda"``; `ibp` says whether the model is infinite; `parent` names the method
    whose final K+ sets this one's D.
    """

    key: str
    name: str
    family: str
    ibp: bool
    likelihood: str | None = None
    parent: str | None = None


METHODS: dict[str, Method] = {
    m.key: m
    for m in (
        Method("ibp-rflvm", "IBP-RFLVM", "rflvm", True, "gaussian"),
        Method("rflvm", "RFLVM", "rflvm", False, "gaussian", parent="ibp-rflvm"),
        Method("gplvm", "GPLVM", "gplvm", False, parent="ibp-rflvm"),
        Method("ibp-lfm", "IBP-LFM", "ibp-lfm", True),
        Method("nb-ibp-rflvm", "NB IBP-RFLVM", "rflvm", True, "negbinom"),
        Method("nb-rflvm", "NB RFLVM", "rflvm", False, "negbinom", parent="nb-ibp-rflvm"),
        Method("poisson-ibp-rflvm", "Poisson IBP-RFLVM", "rflvm", True, "poisson"),
        Method("poisson-rflvm", "Poisson RFLVM", "rflvm", False, "poisson", parent="poisson-ibp-rflvm"),
        Method("multinomial-ibp-rflvm", "Multinomial IBP-RFLVM", "rflvm", True, "multinomial"),
        Method(
            "multinomial-rflvm",
            "Multinomial RFLVM",
            "rflvm",
            False,
            "multinomial",
            parent="multinomial-ibp-rflvm",
        ),
        Method("pfa", "PFA", "pfa", False, parent="poisson-ibp-rflvm"),
        Method("lda", "LDA", "lda", False, parent="multinomial-ibp-rflvm"),
    )
}

_ALIASES = {
    "ibp": "ibp-rflvm",
    "bgplvm": "gplvm",
    "bayesiangplvm": "gplvm",
    "lfm": "ibp-lfm",
    "nb-ibp": "nb-ibp-rflvm",
    "nb": "nb-rflvm",
    "poisson-ibp": "poisson-ibp-rflvm",
    "poisson": "poisson-rflvm",
    "mult-ibp-rflvm": "multinomial-ibp-rflvm",
    "mult-rflvm": "multinomial-rflvm",
    "mult-ibp": "multinomial-ibp-rflvm",
    "mult": "multinomial-rflvm",
}


@dataclass(frozen=True)
class TableDef:
    datasets: tuple[str, ...]
    methods: tuple[str, ...]
    kind: str  # "real" or "counts"


TABLES: dict[str, TableDef] = {
    "table1": TableDef(
        ("cancer", "mice", "ovarian", "olivetti", "cambridge"),
        ("ibp-rflvm", "rflvm", "gplvm", "ibp-lfm"),
        "real",
    ),
    "table2": TableDef(
        ("montreal", "congress", "newsgroups", "spam"),
        (
            "nb-ibp-rflvm",
            "nb-rflvm",
            "poisson-ibp-rflvm",
            "poisson-rflvm",
            "multinomial-ibp-rflvm",
            "multinomial-rflvm",
            "pfa",
            "lda",
        ),
        "counts",
    ),
}


@dataclass(frozen=True)
class FigureDef:
    dataset: str
    methods: tuple[str, ...]
    table: str  # the table whose methods these are (for the kind of data)


FIGURES: dict[str, FigureDef] = {
    "fig1": FigureDef("cancer", ("ibp-rflvm", "rflvm", "gplvm", "ibp-lfm"), "table1"),
    "fig2": FigureDef("congress", TABLES["table2"].methods, "table2"),
}

TARGETS = ("table1", "table2", "fig1", "fig2", "all")


def method_key(name: str) -> str:
    """The method key for a key, display name or alias (case, spaces and ``_`` ignored)."""
    norm = "-".join(str(name).strip().lower().replace("_", " ").replace("-", " ").split())
    norm = _ALIASES.get(norm, norm)
    if norm not in METHODS:
        raise ReproduceError(f"unknown method {name!r}; choose from {', '.join(METHODS)}")
    return norm


# ------------------------------------------------------------------------------------------
# Settings, cells and seeds
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunConfig:
    """Settings shared by every cell of a run (recorded per cell, see :func:`cell_settings`)."""

    n_iter: int = 100
    n_frequencies: int = 50
    gplvm_iters: int = 1000
    max_rows: int | None = None
    sqrt: bool = False
    seed: int = 0
    data_home: str | None = None
    # The committed cells were made with the paper's sweep and start; "default" is the library's
    # mixing sampler (docs/sampler.md).
    sampler: str = "paper"

    def __post_init__(self) -> None:
        for name in ("n_iter", "n_frequencies"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 2:
                raise ReproduceError(f"{name} must be an integer >= 2; got {value!r}")
        if self.gplvm_iters < 0:
            raise ReproduceError(f"gplvm_iters must be >= 0; got {self.gplvm_iters!r}")
        if self.max_rows is not None and self.max_rows < 10:
            raise ReproduceError(f"max_rows must be at least 10; got {self.max_rows!r}")


@dataclass(frozen=True, order=True)
class Cell:
    dataset: str
    method: str
    trial: int

    @property
    def id(self) -> str:
        return f"{self.dataset}__{self.method}__t{self.trial}"

    def parent(self) -> Cell | None:
        p = METHODS[self.method].parent
        return None if p is None else Cell(self.dataset, p, self.trial)


def _crc(text: str) -> int:
    return zlib.crc32(text.encode("utf-8"))


def mask_seed(dataset: str, trial: int, base_seed: int = 0) -> int:
    """Seed of the hold-out mask of `dataset` in `trial`; the same for every method."""
    ss = np.random.SeedSequence([int(base_seed), _crc(dataset), int(trial)])
    return int(ss.generate_state(1, dtype=np.uint32)[0])


def model_seed(dataset: str, method: str, trial: int, base_seed: int = 0) -> int:
    """Seed of one method's chain (or optimiser initialisation) in one cell."""
    ss = np.random.SeedSequence([int(base_seed), _crc(dataset), int(trial), _crc(method)])
    return int(ss.generate_state(1, dtype=np.uint32)[0])


def cell_settings(cell: Cell, cfg: RunConfig) -> dict[str, Any]:
    """The settings a cell's result depends on; a rerun refuses cells made with others."""
    m = METHODS[cell.method]
    s: dict[str, Any] = {
        "holdout_fraction": HOLDOUT_FRACTION,
        "max_rows": cfg.max_rows,
        "base_seed": cfg.seed,
    }
    if _dataset_kind(cell.dataset) == "counts":
        s["sqrt"] = cfg.sqrt
    if m.family == "gplvm":
        s["gplvm_iters"] = cfg.gplvm_iters
    else:
        s["n_iter"] = cfg.n_iter
    if m.family == "rflvm":
        s["n_frequencies"] = cfg.n_frequencies
    if m.family in ("rflvm", "ibp-lfm") and cfg.sampler != "paper":
        s["sampler"] = cfg.sampler  # absent for the paper's sampler: the committed cells stay valid
    return s


def _dataset_kind(name: str) -> str:
    for t in TABLES.values():
        if name in t.datasets:
            return t.kind
    raise ReproduceError(f"unknown dataset {name!r}")


def subsample_rows(n_rows: int, max_rows: int | None) -> np.ndarray:
    """Row indices kept by ``max_rows``: evenly spaced, so sorted label blocks keep their share."""
    if max_rows is None or max_rows >= n_rows:
        return np.arange(n_rows)
    return np.unique(np.linspace(0, n_rows - 1, int(max_rows)).round().astype(np.int64))


@functools.lru_cache(maxsize=4)
def dataset_arrays(
    name: str, sqrt: bool, data_home: str | None, max_rows: int | None
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """``(data, labels, label_names)`` of a data set after the row subset; cached per process
    because a worker usually runs several cells of the same data set."""
    from ..datasets import load

    kw: dict[str, Any] = {"sqrt": True} if sqrt and _dataset_kind(name) == "counts" else {}
    ds = load(name, data_home, **kw)
    rows = subsample_rows(ds.shape[0], max_rows)
    data = np.ascontiguousarray(ds.data[rows])
    data.flags.writeable = False
    return data, np.asarray(ds.labels)[rows], list(ds.label_names)


def split_for(
    Y: np.ndarray, dataset: str, trial: int, base_seed: int = 0
) -> tuple[np.ndarray, np.ndarray, int, str]:
    """``(Y_train, Y_test, mask_seed, mask_digest)`` of `dataset` in `trial`."""
    from ..datasets import holdout_mask

    seed = mask_seed(dataset, trial, base_seed)
    Y_train, Y_test = holdout_mask(Y, HOLDOUT_FRACTION, random_state=seed)
    return Y_train, Y_test, seed, mask_digest(Y_test)


def mask_digest(Y_test: np.ndarray) -> str:
    """A short digest of which entries are held out (for checking that masks agree)."""
    held = ~np.isnan(np.asarray(Y_test, dtype=np.float64))
    h = hashlib.sha256(repr(held.shape).encode())
    h.update(np.packbits(held).tobytes())
    return h.hexdigest()[:16]


# ------------------------------------------------------------------------------------------
# Computing one cell (runs in a worker)
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CellTask:
    cell: Cell
    config: RunConfig
    n_components: int | None  # D of a finite model; None for the infinite ones
    parent_id: str | None = None
    # Where an MCMC cell saves its chain every CHECKPOINT_EVERY sweeps and resumes from, so an
    # interrupted run loses at most that many sweeps of a cell in flight (None: no checkpoint).
    checkpoint: str | None = None


#: Sweeps between the checkpoints of a cell's chain (a write costs far less than a sweep).
CHECKPOINT_EVERY = 5


def build_estimator(method: str, n_components: int | None, seed: int, cfg: RunConfig) -> Any:
    """An unfitted estimator for `method` with the run's settings."""
    m = METHODS[method]
    if m.family == "rflvm":
        from ..estimator import IBPRFLVM, RFLVM

        common = {
            "likelihood": m.likelihood,
            "n_frequencies": cfg.n_frequencies,
            "n_iter": cfg.n_iter,
            "random_state": seed,
            "sampler": cfg.sampler,
        }
        if m.ibp:
            return IBPRFLVM(init_dims=init_dims_for(cfg), **common)
        return RFLVM(n_components=int(n_components), **common)
    if m.family == "gplvm":
        from ..baselines import BayesianGPLVM

        return BayesianGPLVM(n_components=int(n_components), max_iters=cfg.gplvm_iters, random_state=seed)
    if m.family == "ibp-lfm":
        from ..baselines import IBPLinearFactorModel

        return IBPLinearFactorModel(
            n_iter=cfg.n_iter, init_dims=init_dims_for(cfg), random_state=seed, sampler=cfg.sampler
        )
    if m.family == "pfa":
        from ..baselines import PoissonFactorAnalysis

        return PoissonFactorAnalysis(n_components=int(n_components), n_iter=cfg.n_iter, random_state=seed)
    if m.family == "lda":
        from ..baselines import LDA

        return LDA(n_components=int(n_components), n_iter=cfg.n_iter, random_state=seed)
    raise ReproduceError(f"no estimator for method family {m.family!r}")  # pragma: no cover


def _finite(x) -> float | None:
    x = float(x)
    return x if np.isfinite(x) else None


def _optimizer_record(est: Any) -> dict[str, Any] | None:
    """Iterations, convergence and final bound of an optimised (not sampled) model, so a table
    can say whether the iteration budget, not convergence, ended a fit."""
    if not hasattr(est, "converged_"):
        return None
    return {"iterations": int(est.n_iter_), "converged": bool(est.converged_), "elbo": _finite(est.elbo_)}


def compute_cell(task: CellTask) -> tuple[dict[str, Any], np.ndarray]:
    """Fit one cell's model on its training matrix and score its held-out entries.

    Returns the cell record (JSON-ready) and the final latent matrix. Nothing is written here:
    the coordinating process writes files, so remote workers need no shared disk.
    """
    from threadpoolctl import threadpool_limits

    cell, cfg = task.cell, task.config
    method = METHODS[cell.method]
    started = time.time()
    # Read now, not when the cell ends: the code that runs is what was imported, and the source
    # tree may move on during a long cell (the commit is cached for the process's life).
    versions = _versions()
    # One BLAS thread per worker: the cells are the parallelism, and threaded BLAS on small
    # matrices only oversubscribes the cores.
    with threadpool_limits(limits=1, user_api="blas"):
        Y, _, _ = dataset_arrays(cell.dataset, cfg.sqrt, cfg.data_home, cfg.max_rows)
        Y_train, Y_test, m_seed, digest = split_for(Y, cell.dataset, cell.trial, cfg.seed)
        seed = model_seed(cell.dataset, cell.method, cell.trial, cfg.seed)
        est = build_estimator(cell.method, task.n_components, seed, cfg)
        t0 = time.perf_counter()
        resumed_from, began_at = _fit_resumable(
            est, Y_train, task.checkpoint if method.family == "rflvm" else None
        )
        fit_seconds = time.perf_counter() - t0
        t0 = time.perf_counter()
        n_test = int(np.count_nonzero(~np.isnan(Y_test)))
        lpd = float(est.log_predictive_density(Y_test))
        metrics: dict[str, float | None] = {"lpd_sum": _finite(lpd), "lpd_per_entry": _finite(lpd / n_test)}
        if _dataset_kind(cell.dataset) == "counts":
            metrics["perplexity"] = _finite(est.perplexity(Y_test))
        score_seconds = time.perf_counter() - t0
    latent = np.asarray(est.latent_, dtype=np.float64)
    trace = getattr(est, "n_active_", None) if method.ibp else None
    k_final = int(trace[-1]) if trace is not None else latent.shape[1]
    loglik = getattr(est, "log_likelihood_", None)
    record = {
        "schema": SCHEMA_VERSION,
        "cell": cell.id,
        "dataset": cell.dataset,
        "method": cell.method,
        "method_name": method.name,
        "trial": cell.trial,
        "mask_seed": m_seed,
        "model_seed": seed,
        "mask_digest": digest,
        "settings": cell_settings(cell, cfg),
        "shape": list(Y.shape),
        "n_train": int(np.count_nonzero(~np.isnan(Y_train))),
        "n_test": n_test,
        "D": None if method.ibp else int(task.n_components),
        "D_from": task.parent_id,
        "init_dims": init_dims_for(cfg) if method.ibp else None,
        "k_plus_final": k_final,
        "k_plus_trace": None if trace is None else [int(k) for k in np.asarray(trace).ravel()],
        "log_likelihood_final": None if loglik is None else _finite(np.asarray(loglik).ravel()[-1]),
        "optimizer": _optimizer_record(est),
        "metrics": metrics,
        "resumed_from_sweep": resumed_from,
        # The commit that ran the sweeps before the resume (see "versions" for the rest).
        "resumed_from_commit": began_at,
        "fit_seconds": round(fit_seconds, 3),
        "score_seconds": round(score_seconds, 3),
        "seconds": round(time.time() - started, 3),
        "latent_file": f"{cell.id}.latent.npy",
        "latent_shape": list(latent.shape),
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "worker": f"{socket.gethostname()}:{os.getpid()}",
        "versions": versions,
    }
    return record, latent


def _fit_resumable(est: Any, Y_train: np.ndarray, checkpoint: str | None) -> tuple[int, str | None]:
    """Fit `est`, continuing from `checkpoint` when a usable one exists.

    Returns the sweep it resumed at (0 for a fresh chain) and the source commit of the run that
    began the chain (None when fresh). The resumed chain equals the uninterrupted one bit for
    bit (chain.run_chain) as long as the code is the same, which is why the beginning run's
    commit is kept beside the checkpoint and reported. A checkpoint that cannot be read or
    belongs to other data or settings is discarded and the chain starts afresh.
    """
    if checkpoint is None:
        est.fit(Y_train)
        return 0, None
    from ..chain import CheckpointMismatch, load_checkpoint

    path = Path(checkpoint)
    path.parent.mkdir(parents=True, exist_ok=True)
    began = Path(f"{path}.commit")
    start = 0
    if path.exists():
        try:
            start = int(load_checkpoint(path)["sweep"])
        except Exception:  # a truncated or foreign file: worthless, not an error
            path.unlink(missing_ok=True)
    est.set_params(checkpoint_path=str(path), checkpoint_every=CHECKPOINT_EVERY)
    if start:
        try:
            est.fit(Y_train, resume=True)
            return start, began.read_text().strip() if began.exists() else "unknown"
        except CheckpointMismatch:
            path.unlink(missing_ok=True)
    began.write_text(f"{_source_commit() or 'unknown'}\n")
    est.fit(Y_train, resume=True)
    return 0, None


def _drop_checkpoint(partial: Path, cell_id: str) -> None:
    for name in (f"{cell_id}.ckpt", f"{cell_id}.ckpt.commit"):
        (partial / name).unlink(missing_ok=True)


def _versions() -> dict[str, str]:
    import numpy

    from .. import __version__

    found = {"ibp_rflvm": __version__, "numpy": numpy.__version__}
    commit = _source_commit()
    if commit:
        found["commit"] = commit
    return found


@functools.lru_cache(maxsize=1)
def _source_commit() -> str | None:
    """The git commit of the source tree that ran a cell (``+dirty`` with local edits), or None
    for an installed copy: a cell's numbers are reproducible bit for bit only with its code."""
    import subprocess

    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
        )
        if head.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no", "--", str(here.parent)],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


# ------------------------------------------------------------------------------------------
# Files
# ------------------------------------------------------------------------------------------


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


def save_cell(out: str | Path, record: dict[str, Any], latent: np.ndarray) -> Path:
    """Write the latent matrix, then the JSON; the JSON's existence marks the cell done."""
    cells = Path(out) / "cells"
    _atomic_write(cells / record["latent_file"], lambda f: np.save(f, latent, allow_pickle=False))
    path = cell_path(out, record["cell"])
    _atomic_write(path, lambda f: json.dump(record, f, indent=1, allow_nan=False), mode="w")
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


def load_latent(out: str | Path, record: dict[str, Any]) -> np.ndarray:
    return np.load(Path(out) / "cells" / record["latent_file"], allow_pickle=False)


# ------------------------------------------------------------------------------------------
# Planning
# ------------------------------------------------------------------------------------------


@dataclass
class Plan:
    cells: list[Cell]
    tables: list[str]
    figures: list[str]
    datasets: dict[str, list[str]]  # per table: the data sets to report
    methods: dict[str, list[str]]  # per table: the methods to report
    notes: list[str] = field(default_factory=list)


def _parse_names(names: str | Sequence[str] | None, resolve: Callable[[str], str]) -> list[str] | None:
    if names is None:
        return None
    if isinstance(names, str):
        names = [n for n in names.split(",") if n.strip()]
    return [resolve(n) for n in names]


def _dataset_name(name: str) -> str:
    key = str(name).strip().lower()
    known = {d for t in TABLES.values() for d in t.datasets}
    if key not in known:
        raise ReproduceError(f"unknown dataset {name!r}; choose from {', '.join(sorted(known))}")
    return key


def method_available(method: str) -> str | None:
    """Why `method` cannot run in this environment, or None if it can."""
    m = METHODS[method]
    if m.likelihood is not None:
        from ..likelihoods import REGISTRY

        if m.likelihood not in REGISTRY:
            return f"likelihood {m.likelihood!r} is not registered in ibp_rflvm.likelihoods.REGISTRY"
    if m.parent is not None:
        why = method_available(m.parent)
        if why is not None:
            return f"its D comes from {METHODS[m.parent].name}, which cannot run: {why}"
    return None


def dataset_available(name: str, cfg: RunConfig) -> str | None:
    """Why data set `name` cannot be loaded, or None if it can."""
    try:
        dataset_arrays(name, cfg.sqrt, cfg.data_home, cfg.max_rows)
    except FileNotFoundError as exc:
        first = str(exc).splitlines()[0].removesuffix(" Searched:")
        return f"data file absent ({first} `ibp-rflvm datasets` says where to put it)"
    except (OSError, ValueError, ImportError) as exc:
        return f"could not be loaded ({type(exc).__name__}: {exc})"
    return None


def make_plan(
    target: str,
    trials: int,
    cfg: RunConfig,
    datasets: str | Sequence[str] | None = None,
    methods: str | Sequence[str] | None = None,
) -> Plan:
    """The cells of `target` (``table1``, ``table2``, ``fig1``, ``fig2`` or ``all``), after the
    data set / method filters, with unavailable data sets and methods dropped and noted."""
    if target not in TARGETS:
        raise ReproduceError(f"unknown target {target!r}; choose from {', '.join(TARGETS)}")
    if not isinstance(trials, (int, np.integer)) or trials < 1:
        raise ReproduceError(f"trials must be a positive integer; got {trials!r}")
    ds_filter = _parse_names(datasets, _dataset_name)
    m_filter = _parse_names(methods, method_key)
    tables = [t for t in ("table1", "table2") if target in (t, "all")]
    figures = [f for f in ("fig1", "fig2") if target in (f, "all")]
    involved_ds = {d for t in tables for d in TABLES[t].datasets} | {FIGURES[f].dataset for f in figures}
    involved_m = {m for t in tables for m in TABLES[t].methods}
    involved_m |= {m for f in figures for m in FIGURES[f].methods}
    for name in ds_filter or ():
        if name not in involved_ds:
            raise ReproduceError(f"dataset {name!r} is not part of {target}")
    for name in m_filter or ():
        if name not in involved_m:
            raise ReproduceError(f"method {name!r} is not part of {target}")

    notes: list[str] = []
    ds_ok: dict[str, bool] = {}
    m_ok: dict[str, bool] = {}

    def ds_usable(name: str) -> bool:
        if name not in ds_ok:
            why = dataset_available(name, cfg)
            if why:
                notes.append(f"{name}: skipped, {why}")
            ds_ok[name] = why is None
        return ds_ok[name]

    def m_usable(name: str) -> bool:
        if name not in m_ok:
            why = method_available(name)
            if why:
                notes.append(f"{METHODS[name].name}: skipped, {why}")
            m_ok[name] = why is None
        return m_ok[name]

    wanted: set[Cell] = set()
    plan_ds: dict[str, list[str]] = {}
    plan_m: dict[str, list[str]] = {}
    for t in tables:
        tdef = TABLES[t]
        dsel = [d for d in tdef.datasets if ds_filter is None or d in ds_filter]
        msel = [m for m in tdef.methods if m_filter is None or m in m_filter]
        plan_ds[t], plan_m[t] = dsel, msel
        for d in dsel:
            for m in msel:
                if ds_usable(d) and m_usable(m):
                    wanted.update(Cell(d, m, k) for k in range(trials))
    for f in figures:
        fdef = FIGURES[f]
        if ds_filter is not None and fdef.dataset not in ds_filter:
            continue
        for m in fdef.methods:
            if (m_filter is None or m in m_filter) and ds_usable(fdef.dataset) and m_usable(m):
                wanted.add(Cell(fdef.dataset, m, 0))
    added = set()
    for c in list(wanted):
        p = c.parent()
        if p is not None and p not in wanted:
            wanted.add(p)
            added.add(p.method)
    for m in sorted(added):
        notes.append(f"{METHODS[m].name}: added, since the finite models paired with it take their D from it")
    order = {m: i for i, m in enumerate(METHODS)}
    cells = sorted(wanted, key=lambda c: (c.trial, c.dataset, order[c.method]))
    return Plan(cells, tables, figures, plan_ds, plan_m, notes)


# ------------------------------------------------------------------------------------------
# Backends
# ------------------------------------------------------------------------------------------


class _Serial:
    """Runs a cell in this process when it is waited for, so each is saved as soon as it ends."""

    name = "this process"

    class _Handle:
        def __init__(self, fn, task):
            self.fn, self.task, self.value, self.error = fn, task, None, None

        def result(self):
            if self.error is not None:
                raise self.error
            return self.value

    def capacity(self) -> int:
        return 1

    def submit(self, fn, task):
        return self._Handle(fn, task)

    def wait_any(self, handles: Iterable) -> list:
        h = next(iter(handles))
        try:
            h.value = h.fn(h.task)
        except Exception as exc:  # a failed cell is reported; BaseException (Ctrl-C) propagates
            h.error = exc
        return [h]

    def close(self, cancel: bool, handles: Iterable = ()) -> None:
        pass


class _Loky:
    def __init__(self, n_jobs: int):
        from joblib.externals.loky import ProcessPoolExecutor

        self.n_jobs = n_jobs
        self.name = f"{n_jobs} local worker processes"
        # A private pool, not loky's process-wide reusable one: joblib.Parallel reuses that one
        # and expects its own bookkeeping on it, and this run should not keep workers alive.
        self.executor = ProcessPoolExecutor(max_workers=n_jobs)

    def capacity(self) -> int:
        return self.n_jobs

    def submit(self, fn, task):
        return self.executor.submit(fn, task)

    def wait_any(self, handles: Iterable) -> list:
        import concurrent.futures as cf

        done, _ = cf.wait(list(handles), return_when=cf.FIRST_COMPLETED)
        return list(done)

    def close(self, cancel: bool, handles: Iterable = ()) -> None:
        # On Ctrl-C do not leave workers computing: what the cells in flight keep is their last
        # checkpoint, written atomically, which a kill cannot corrupt.
        self.executor.shutdown(wait=not cancel, kill_workers=cancel)


class _Dask:
    def __init__(self, address: str):
        try:
            from distributed import Client
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ReproduceError("--scheduler needs dask.distributed: pip install 'ibp-rflvm[dask]'") from exc
        try:
            self.client = Client(address, timeout=30)
        except (OSError, TimeoutError) as exc:
            raise ReproduceError(f"cannot connect to the Dask scheduler at {address!r}: {exc}") from exc
        self.name = f"Dask cluster at {address}"
        self._n = 0

    def capacity(self) -> int:
        return max(1, sum(self.client.nthreads().values()))

    def submit(self, fn, task):
        self._n += 1
        key = f"ibp-rflvm-cell-{task.cell.id}-{os.getpid()}-{self._n}"
        return self.client.submit(fn, task, pure=False, key=key)

    def wait_any(self, handles: Iterable) -> list:
        from distributed import wait

        done, _ = wait(list(handles), return_when="FIRST_COMPLETED")
        return list(done)

    def close(self, cancel: bool, handles: Iterable = ()) -> None:
        handles = list(handles)
        if cancel and handles:
            # The cluster outlives this run: free its workers from cells nobody will collect.
            self.client.cancel(handles)
        self.client.close()


def _backend(n_jobs: int | None, scheduler: str | None):
    if scheduler:
        return _Dask(scheduler)
    n = (os.cpu_count() or 1) if n_jobs is None or n_jobs == 0 else int(n_jobs)
    if n < 0:
        n = max(1, (os.cpu_count() or 1) + 1 + n)
    return _Serial() if n == 1 else _Loky(n)


# ------------------------------------------------------------------------------------------
# Running
# ------------------------------------------------------------------------------------------


@dataclass
class RunSummary:
    """What a call of :func:`reproduce` did."""

    out: Path
    planned: list[str]
    skipped: list[str]  # already on disk
    computed: list[str]
    failed: list[str]
    blocked: list[str]  # not run because the cell giving their D failed
    interrupted: bool = False
    notes: list[str] = field(default_factory=list)
    outputs: list[Path] = field(default_factory=list)
    seconds: float = 0.0


class _Log:
    def __init__(self, path: Path, echo: Callable[[str], None]):
        self.path, self.echo = path, echo
        path.parent.mkdir(parents=True, exist_ok=True)

    def __call__(self, msg: str) -> None:
        stamp = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
        with open(self.path, "a") as f:
            f.write(f"{stamp} {msg}\n")
        self.echo(msg)


def _describe(record: dict[str, Any]) -> str:
    m = record["metrics"]
    parts = [
        f"LPD {m['lpd_sum']:.4g} ({m['lpd_per_entry']:.4f}/entry)"
        if m.get("lpd_sum") is not None
        else "LPD n/a"
    ]
    if m.get("perplexity") is not None:
        parts.append(f"perplexity {m['perplexity']:.4g}")
    dims = f"K+={record['k_plus_final']}" if record["D"] is None else f"D={record['D']}"
    resumed = record.get("resumed_from_sweep")
    since = f" (resumed at sweep {resumed})" if resumed else ""
    return f"{', '.join(parts)}, {dims}, {record['seconds']:.1f} s{since}"


def _check_settings(out: Path, cells: Sequence[Cell], cfg: RunConfig) -> dict[str, dict]:
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


# Rough seconds per data entry relative to an RFLVM chain, measured on this project's 2-core
# machine (a GPLVM fit of 1000 L-BFGS-B iterations costs about three 100-sweep RFLVM chains).
# Only the order in which cells start depends on it.
_RELATIVE_COST = {"rflvm": 1.0, "gplvm": 3.0, "ibp-lfm": 0.05, "pfa": 0.05, "lda": 0.02}


def _priorities(todo: Sequence[Cell], sizes: dict[str, int]) -> dict[Cell, float]:
    """A cell's own estimated cost plus its dependents': long chains of work start first."""
    cost = {c: sizes[c.dataset] * _RELATIVE_COST[METHODS[c.method].family] for c in todo}
    prio = dict(cost)
    for c in todo:
        p = c.parent()
        if p in prio:
            prio[p] += cost[c]
    return prio


def _dims_from(parent: dict[str, Any]) -> int:
    # An IBP chain can end with no active dimension; a finite model needs at least one.
    return max(1, int(parent["k_plus_final"]))


def run_cells(
    cells: Sequence[Cell],
    cfg: RunConfig,
    out: str | Path,
    n_jobs: int | None = None,
    scheduler: str | None = None,
    progress: bool = True,
    echo: Callable[[str], None] | None = None,
) -> RunSummary:
    """Compute every cell of `cells` not yet on disk under `out`, parents before dependents.

    Each finished cell is saved at once; a failed cell is logged (``OUT/errors``) and the cells
    depending on it are reported as blocked; Ctrl-C stops the run, keeping every saved cell.
    """
    from tqdm.auto import tqdm

    out = Path(out)
    t_start = time.perf_counter()
    done = _check_settings(out, cells, cfg)
    todo = [c for c in cells if c.id not in done]
    todo_ids = {c.id for c in todo}
    orphans = [c.id for c in todo if c.parent() is not None and c.parent().id not in set(done) | todo_ids]
    if orphans:
        raise ReproduceError(
            f"cells {orphans[:3]} need their IBP counterpart's cell, which is neither done nor planned"
        )
    summary = RunSummary(out, [c.id for c in cells], sorted(done), [], [], [])
    bar = tqdm(
        total=len(todo), unit="cell", desc="reproduce", disable=not progress or not todo, dynamic_ncols=True
    )
    log = _Log(out / "reproduce.log", echo or (lambda s: tqdm.write(s)))
    if not todo:
        bar.close()
        if cells:
            log(f"all {len(cells)} cells already done in {out / 'cells'}")
        return summary

    sizes = {
        d: dataset_arrays(d, cfg.sqrt, cfg.data_home, cfg.max_rows)[0].size for d in {c.dataset for c in todo}
    }
    prio = _priorities(todo, sizes)
    waiting = {c for c in todo if c.parent() is not None and c.parent().id not in done}
    ready = [c for c in todo if c not in waiting]
    backend = _backend(n_jobs, scheduler)
    log(f"{len(todo)} cells to compute ({len(done)} already done) on {backend.name}")
    in_flight: dict[Any, Cell] = {}
    interrupted = False
    # Chains checkpoint beside the cells when the workers share this disk (local processes);
    # Dask workers may run on other machines, so their cells restart when interrupted.
    partial = None if scheduler else out / "partial"

    def make_task(c: Cell) -> CellTask:
        ckpt = None if partial is None else str(partial / f"{c.id}.ckpt")
        p = c.parent()
        if p is None:
            return CellTask(c, cfg, None, checkpoint=ckpt)
        return CellTask(c, cfg, _dims_from(done[p.id]), p.id, checkpoint=ckpt)

    try:
        while ready or in_flight:
            # Longest work first (then a fixed order), so the slowest cells are not left for last.
            ready.sort(key=lambda c: (-prio[c], c.trial, c.dataset, c.method))
            while ready and len(in_flight) < backend.capacity():
                c = ready.pop(0)
                # Looked up at call time so that tests can wrap it.
                in_flight[backend.submit(compute_cell, make_task(c))] = c
            for handle in backend.wait_any(in_flight):
                c = in_flight.pop(handle)
                bar.update(1)
                try:
                    record, latent = handle.result()
                except Exception as exc:
                    summary.failed.append(c.id)
                    if partial is not None:  # a chain that failed is not worth resuming
                        _drop_checkpoint(partial, c.id)
                    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
                    _atomic_write(out / "errors" / f"{c.id}.txt", lambda f, tb=tb: f.write(tb), mode="w")
                    log(f"FAILED {c.id}: {type(exc).__name__}: {exc} (traceback in errors/{c.id}.txt)")
                    for w in sorted(w for w in waiting if w.parent() == c):
                        waiting.discard(w)
                        summary.blocked.append(w.id)
                        bar.update(1)
                        log(f"blocked {w.id}: the cell giving its D failed")
                    continue
                save_cell(out, record, latent)
                if partial is not None:
                    _drop_checkpoint(partial, c.id)
                done[c.id] = record
                summary.computed.append(c.id)
                n_done = len(summary.computed) + len(summary.failed) + len(summary.blocked)
                log(f"[{n_done}/{len(todo)}] {c.id}: {_describe(record)}")
                for w in sorted(w for w in waiting if w.parent() == c):
                    waiting.discard(w)
                    ready.append(w)
    except KeyboardInterrupt:
        interrupted = True
        summary.interrupted = True
        kept = (
            "stop here"
            if partial is None
            else f"keep their chains' last checkpoints (every {CHECKPOINT_EVERY} sweeps)"
        )
        log(
            f"interrupted: {len(summary.computed)} cells finished in this run are saved; "
            f"{len(in_flight)} in flight {kept}; run the same command again to continue"
        )
    finally:
        bar.close()
        backend.close(interrupted, list(in_flight))
    summary.seconds = time.perf_counter() - t_start
    return summary


def status(
    target: str,
    out: str | Path = "results",
    trials: int = 5,
    config: RunConfig | None = None,
    datasets: str | Sequence[str] | None = None,
    methods: str | Sequence[str] | None = None,
) -> str:
    """Where a reproduction stands, as Markdown: per data set and method, the trials done and
    the cells in flight with the sweep their checkpoint reached. Computes and writes nothing."""
    from ..chain import load_checkpoint

    cfg = config or RunConfig()
    out = Path(out)
    plan = make_plan(target, trials, cfg, datasets, methods)
    done = _check_settings(out, plan.cells, cfg)
    grid: dict[str, dict[str, list[Cell]]] = {}
    for c in plan.cells:
        grid.setdefault(c.dataset, {}).setdefault(c.method, []).append(c)
    cols = list(dict.fromkeys(c.method for c in plan.cells))
    lines = [
        "| data set | " + " | ".join(METHODS[m].name for m in cols) + " |",
        "|---|" + "---|" * len(cols),
    ]
    n_flight = 0
    for d, by_method in grid.items():
        row = []
        for m in cols:
            cells = by_method.get(m)
            if not cells:
                row.append("")
                continue
            text = f"{sum(c.id in done for c in cells)}/{len(cells)}"
            for c in cells:
                ckpt = out / "partial" / f"{c.id}.ckpt"
                if c.id in done or not ckpt.exists():
                    continue
                try:
                    sweep = f"sweep {int(load_checkpoint(ckpt)['sweep'])}"
                except Exception:  # being replaced, or unreadable (a rerun discards it)
                    sweep = "unreadable checkpoint"
                text += f", t{c.trial} at {sweep}"
                n_flight += 1
            row.append(text)
        lines.append(f"| {d} | " + " | ".join(row) + " |")
    lines.append("")
    lines.append(
        f"{len(done)} of {len(plan.cells)} cells done, {n_flight} in flight (checkpointed), "
        f"{len(plan.cells) - len(done) - n_flight} not started"
    )
    return "\n".join(lines + plan.notes)


def reproduce(
    target: str,
    out: str | Path = "results",
    trials: int = 5,
    config: RunConfig | None = None,
    datasets: str | Sequence[str] | None = None,
    methods: str | Sequence[str] | None = None,
    n_jobs: int | None = None,
    scheduler: str | None = None,
    progress: bool = True,
    echo: Callable[[str], None] | None = None,
    report_only: bool = False,
) -> RunSummary:
    """Plan, run and report one ``ibp-rflvm reproduce`` target (see the module docstring).

    `report_only` computes nothing: it writes the tables and figures of the plan from the cells
    already in `out`. A reproduction run in parts (one data set or method at a time, whose own
    tables show only what that part selected) ends with one such call over the whole target.
    """
    from . import report

    cfg = config or RunConfig()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    plan = make_plan(target, trials, cfg, datasets, methods)
    say = echo or print
    for note in plan.notes:
        say(f"note: {note}")
    if report_only:
        # The same refusal as a run: the notes describe the settings, so they must be the cells'.
        present = _check_settings(out, plan.cells, cfg)
        planned = [c.id for c in plan.cells]
        summary = RunSummary(out, planned, [c for c in planned if c in present], [], [], [])
        missing = len(planned) - len(summary.skipped)
        if missing:
            summary.notes.append(f"{missing} of {len(planned)} planned cells are not computed yet")
    else:
        summary = run_cells(plan.cells, cfg, out, n_jobs, scheduler, progress, echo)
    summary.notes = list(plan.notes) + summary.notes
    if summary.interrupted:
        return summary
    records = load_records(out)
    for t in plan.tables:
        if not plan.datasets[t] or not plan.methods[t]:
            summary.notes.append(f"{t}: no data set or method of it selected; not written")
            continue
        summary.outputs += report.write_table(
            out, t, records, plan.datasets[t], plan.methods[t], trials, cfg, plan.notes
        )
    for f in plan.figures:
        path = report.write_figure(out, f, records, cfg, _parse_names(methods, method_key))
        if path is None:
            summary.notes.append(f"{f}: no trial-0 latent matrices to draw")
        else:
            summary.outputs.append(path)
    if plan.tables:
        summary.outputs.append(report.write_timings(out, records))
    for note in summary.notes[len(plan.notes) :]:
        say(f"note: {note}")
    for p in summary.outputs:
        say(f"wrote {p}")
    return summary
