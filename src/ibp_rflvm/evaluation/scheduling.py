"""Running the cells: local processes (loky), this process, or a Dask cluster.

The coordinating process hands ready cells to the backend, at most one per worker slot, longest
work first; it saves each finished cell at once, checkpoints the chains of local workers, and
starts a finite model's cell when its IBP counterpart's cell has given it its D.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..plumbing.blocks import threads_per_chain
from . import cells as _cells
from .cells import CellTask, _drop_checkpoint, compute_cell, dataset_arrays
from .experiments import METHODS, Cell, ReproduceError, RunConfig
from .store import _atomic_write, check_settings, save_cell


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


def n_workers(n_jobs: int | None) -> int:
    """Local worker processes for `n_jobs`: None or 0 one per core, -1 all cores, -2 all but one."""
    n = (os.cpu_count() or 1) if n_jobs is None or n_jobs == 0 else int(n_jobs)
    if n < 0:
        n = max(1, (os.cpu_count() or 1) + 1 + n)
    return n


def _backend(n_jobs: int | None, scheduler: str | None):
    if scheduler:
        return _Dask(scheduler)
    n = n_workers(n_jobs)
    return _Serial() if n == 1 else _Loky(n)


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


def _sigterm_as_interrupt() -> Callable[[], None]:
    """Make SIGTERM stop the run as Ctrl-C does; returns the function that undoes it.

    `kill`, `timeout` and batch schedulers' time limits send SIGTERM to this process alone. Its
    default action would end the coordinator without shutting the pool down, and the workers
    would go on computing cells nobody collects. Raised as KeyboardInterrupt, it takes the Ctrl-C
    path: workers stopped, checkpoints kept, what was saved said. Only the main thread may set a
    handler (a run driven from another thread keeps the default).
    """
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    return lambda: signal.signal(signal.SIGTERM, previous)


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
    depending on it are reported as blocked; Ctrl-C or SIGTERM stops the run, keeping every saved
    cell and the checkpoints of the cells in flight.
    """
    from tqdm.auto import tqdm

    out = Path(out)
    t_start = time.perf_counter()
    done = check_settings(out, cells, cfg)
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
    # A Dask worker runs one cell per thread; local workers share this machine's cores as the
    # chains of one fit do (each cell is one chain, `capacity` of them at once).
    at_once = backend.capacity()
    threads = 1 if scheduler else threads_per_chain(None, at_once, at_once)

    def make_task(c: Cell) -> CellTask:
        ckpt = None if partial is None else str(partial / f"{c.id}.ckpt")
        p = c.parent()
        if p is None:
            return CellTask(c, cfg, None, checkpoint=ckpt, n_threads=threads)
        return CellTask(c, cfg, _dims_from(done[p.id]), p.id, checkpoint=ckpt, n_threads=threads)

    restore_sigterm = _sigterm_as_interrupt()
    try:
        while ready or in_flight:
            # Longest work first (then a fixed order), so the slowest cells are not left for last.
            ready.sort(key=lambda c: (-prio[c], c.trial, c.dataset, c.method))
            while ready and len(in_flight) < backend.capacity():
                c = ready.pop(0)
                # Looked up at call time (scheduling.compute_cell) so that tests can wrap it.
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
            else f"keep their chains' last checkpoints (every {_cells.CHECKPOINT_EVERY} sweeps)"
        )
        log(
            f"interrupted: {len(summary.computed)} cells finished in this run are saved; "
            f"{len(in_flight)} in flight {kept}; run the same command again to continue"
        )
    finally:
        restore_sigterm()
        bar.close()
        backend.close(interrupted, list(in_flight))
    summary.seconds = time.perf_counter() - t_start
    return summary
