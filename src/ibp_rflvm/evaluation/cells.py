"""What one cell (data set, method, trial) computes, in whichever process runs it.

A worker loads its data set by name, draws the cell's hold-out mask and model seed (see
:mod:`.harness`), fits, scores and returns a JSON-ready record and the final latent matrix;
it writes nothing but its chain's checkpoint, so remote workers need no shared disk.
"""

from __future__ import annotations

import functools
import hashlib
import os
import socket
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..summaries.dimensions import effective_dimensions
from ..summaries.embedding import own_dimension, posterior_embedding
from ..summaries.posterior import Posterior
from .experiments import (
    FIGURES,
    HOLDOUT_FRACTION,
    LATENT_DATASETS,
    METHODS,
    SCHEMA_VERSION,
    Cell,
    ReproduceError,
    RunConfig,
    _dataset_kind,
    cell_settings,
    init_dims_for,
    mask_seed,
    model_seed,
)
from .metrics import KNN_FOLDS, KNN_NEIGHBOURS, knn_accuracy, knn_seed

if TYPE_CHECKING:  # pragma: no cover
    from ..baselines import LDA, BayesianGPLVM, IBPLinearFactorModel, PoissonFactorAnalysis
    from ..estimator import IBPRFLVM, RFLVM

    #: What a cell fits: an RFLVM (whose ``posterior_`` the cell reads) or a baseline.
    Estimator = IBPRFLVM | RFLVM | BayesianGPLVM | IBPLinearFactorModel | PoissonFactorAnalysis | LDA

__all__ = [
    "CHECKPOINT_EVERY",
    "Cell",
    "CellTask",
    "build_estimator",
    "compute_cell",
    "dataset_arrays",
    "mask_digest",
    "split_for",
    "subsample_rows",
]


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
    # Threads of the cell's sweep (`n_threads`): the cores left to each cell that runs at once,
    # so that cells in parallel do not oversubscribe the machine; the chain does not depend on it.
    n_threads: int = 1


#: Sweeps between the checkpoints of a cell's chain (a write costs far less than a sweep).
CHECKPOINT_EVERY = 5


def build_estimator(
    method: str, n_components: int | None, seed: int, cfg: RunConfig, n_threads: int = 1
) -> Estimator:
    """An unfitted estimator for `method` with the run's settings (`n_threads`: the RFLVMs' sweep)."""
    m = METHODS[method]
    if m.family == "rflvm":
        from ..estimator import IBPRFLVM, RFLVM

        common = {
            "likelihood": m.likelihood,
            "n_frequencies": cfg.n_frequencies,
            "n_iter": cfg.n_iter,
            "random_state": seed,
            "sampler": cfg.sampler,
            "n_threads": n_threads,
        }
        if m.ibp:
            return IBPRFLVM(init_dims=init_dims_for(cfg), z_prior=m.z_prior, **common)
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


def _optimizer_record(est: Estimator) -> dict[str, Any] | None:
    """Iterations, convergence and final bound of an optimised (not sampled) model, so a table
    can say whether the iteration budget, not convergence, ended a fit."""
    if not hasattr(est, "converged_"):
        return None
    record = {"iterations": int(est.n_iter_), "converged": bool(est.converged_), "elbo": _finite(est.elbo_)}
    if hasattr(est, "jitter_"):
        record["jitter"] = float(est.jitter_)  # above the default: the fit restarted (gplvm.py)
    return record


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
        Y, labels, _ = dataset_arrays(cell.dataset, cfg.sqrt, cfg.data_home, cfg.max_rows)
        Y_train, Y_test, m_seed, digest = split_for(Y, cell.dataset, cell.trial, cfg.seed)
        seed = model_seed(cell.dataset, cell.method, cell.trial, cfg.seed)
        est = build_estimator(cell.method, task.n_components, seed, cfg, task.n_threads)
        t0 = time.perf_counter()
        resumed_from, began_at, seconds_before = _fit_resumable(
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
    knn = _knn_record(cell.dataset, latent, labels, cfg.seed)
    # An RFLVM's chains are its Posterior; the baselines have their own attributes.
    post = est.posterior_ if method.family == "rflvm" else None
    if post is not None:
        trace = post.traces["n_active"][post.best_chain] if method.ibp else None
        loglik = post.traces["loglik"][post.best_chain]
    else:
        trace = getattr(est, "n_active_", None) if method.ibp else None
        loglik = getattr(est, "log_likelihood_", None)
    k_final = int(trace[-1]) if trace is not None else latent.shape[1]
    embedding_knn = None
    if post is not None:
        matched = max(1, k_final) if method.ibp else int(task.n_components)
        embedding_knn = _embedding_knn_record(cell.dataset, post, labels, cfg.seed, matched)
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
        # The dimensions of the final sample that matter (docs/sampler.md section 6), beside K+.
        "effective_dims_final": _final_effective(post) if post is not None and method.ibp else None,
        "log_likelihood_final": None if loglik is None else _finite(np.asarray(loglik).ravel()[-1]),
        "optimizer": _optimizer_record(est),
        "metrics": metrics,
        "knn": knn,
        # Table 3's scores of the posterior embedding at its own d, at the D of the PCA row and
        # of the finite models, at 2 and at 5 (latent_report.py).
        "embedding_knn": embedding_knn,
        # The figures' 2-D posterior embedding (trial 0 of the figures' data sets only).
        "embedding_2d": _embedding_2d(cell, post) if post is not None else None,
        "resumed_from_sweep": resumed_from,
        # The commit that ran the sweeps before the resume (see "versions" for the rest).
        "resumed_from_commit": began_at,
        "fit_seconds": round(fit_seconds, 3),
        "score_seconds": round(score_seconds, 3),
        "seconds": round(time.time() - started, 3),
        # The sweeps before a resume ran in an earlier process: their wall seconds, as the
        # checkpoint timed them, so the cell's worker time can be counted whole (None: unknown,
        # a checkpoint from before sweeps were timed).
        "seconds_before_resume": seconds_before,
        "latent_file": f"{cell.id}.latent.npy",
        "latent_shape": list(latent.shape),
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "worker": f"{socket.gethostname()}:{os.getpid()}",
        "versions": versions,
    }
    return record, latent


def _knn_record(dataset: str, latent: np.ndarray, labels, base_seed: int) -> dict[str, Any] | None:
    """Table 3's score of the cell's latent space, kept in the record so that the table can be
    written from records alone (committed results keep the records, not the latent matrices).
    None for data sets that Table 3 does not show."""
    if labels is None or dataset not in LATENT_DATASETS:
        return None
    seed = knn_seed(dataset, base_seed)
    accuracy = knn_accuracy(latent, np.asarray(labels), random_state=seed)
    return {"accuracy": accuracy, "seed": seed, "n_neighbors": KNN_NEIGHBOURS, "n_folds": KNN_FOLDS}


#: Dimensions at which Table 3 scores the posterior embedding, beside its own and the matched D.
EMBEDDING_DIMS = (2, 5)


def _embedding_knn_record(
    dataset: str, post: Posterior, labels, base_seed: int, matched: int
) -> dict[str, Any] | None:
    """kNN accuracy of the fitted RFLVM's posterior embedding (its ``embedding_``) at its own
    dimension, at `matched` (the D its PCA reference row and finite counterparts get) and at
    ``EMBEDDING_DIMS``; a dimension beyond the components the kernel has uses all of them (the
    record says which d was used). None for data sets that Table 3 does not show."""
    if labels is None or dataset not in LATENT_DATASETS:
        return None
    from threadpoolctl import threadpool_limits

    seed = knn_seed(dataset, base_seed)
    with threadpool_limits(limits=1, user_api="blas"):
        emb = posterior_embedding(post)
        available = emb.n_available
        wanted = {"own": own_dimension(post), "matched": int(matched), **{str(d): d for d in EMBEDDING_DIMS}}
        out: dict[str, Any] = {"seed": seed, "n_neighbors": KNN_NEIGHBOURS, "n_folds": KNN_FOLDS}
        for name, d in wanted.items():
            used = max(1, min(int(d), available))
            coords = emb.scores[:, :used] if available else np.zeros((len(labels), 1))
            out[name] = {"d": used, "accuracy": knn_accuracy(coords, np.asarray(labels), random_state=seed)}
    return out


def _embedding_2d(cell: Cell, post: Posterior) -> list[list[float]] | None:
    """The fit's 2-D posterior embedding for Figures 1-2 (trial 0 of their data sets), rounded
    to 6 significant digits to keep the record small; None elsewhere."""
    if cell.trial != 0 or cell.dataset not in {f.dataset for f in FIGURES.values()}:
        return None
    emb = posterior_embedding(post)
    available = emb.n_available
    coords = np.zeros((post.shape[0], 2))
    if available:
        coords[:, : min(2, available)] = emb.scores[:, : min(2, available)]
    return [[float(f"{v:.6g}") for v in row] for row in coords]


def _final_effective(post: Posterior) -> int:
    """Effective dimensions of the final kept sample (one likelihood evaluation per dimension)."""
    return int(effective_dimensions(post, max_draws=1)[0, -1])


def _fit_resumable(
    est: Estimator, Y_train: np.ndarray, checkpoint: str | None
) -> tuple[int, str | None, float | None]:
    """Fit `est`, continuing from `checkpoint` when a usable one exists.

    Returns the sweep it resumed at (0 for a fresh chain), the source commit of the run that
    began the chain (None when fresh) and the wall seconds of the sweeps before the resume (0.0
    when fresh, None when the checkpoint did not time all of them). The resumed chain equals the
    uninterrupted one bit for bit (chain.run_chain) as long as the code is the same, which is why
    the beginning run's commit is kept beside the checkpoint and reported. A checkpoint that
    cannot be read or belongs to other data or settings is discarded and the chain starts afresh.
    """
    if checkpoint is None:
        est.fit(Y_train)
        return 0, None, 0.0
    from ..mcmc.driver import CheckpointMismatch, load_checkpoint

    path = Path(checkpoint)
    path.parent.mkdir(parents=True, exist_ok=True)
    began = Path(f"{path}.commit")
    start, before = 0, None
    if path.exists():
        try:
            saved = load_checkpoint(path)
            start = int(saved["sweep"])
            # Timed sweeps fall short of the sweeps done when an older code version began the chain.
            before = saved["seconds"] if saved["timed_sweeps"] == start else None
        except Exception:  # a truncated or foreign file: worthless, not an error
            path.unlink(missing_ok=True)
    est.set_params(checkpoint_path=str(path), checkpoint_every=CHECKPOINT_EVERY)
    if start:
        try:
            est.fit(Y_train, resume=True)
            return start, began.read_text().strip() if began.exists() else "unknown", before
        except CheckpointMismatch:
            path.unlink(missing_ok=True)
    began.write_text(f"{_source_commit() or 'unknown'}\n")
    est.fit(Y_train, resume=True)
    return 0, None, 0.0


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
