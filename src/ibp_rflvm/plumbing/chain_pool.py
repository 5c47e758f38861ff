"""Several chains of one fit at once: joblib's worker processes, or tasks on a Dask cluster.

The backend is the one the caller chose with ``joblib.parallel_config``: loky's local processes
by default (through ``joblib.Parallel``, as any other local backend), or, for ``"dask"``, the
tasks of that backend's ``dask.distributed`` client. A chain's result depends only on its own
generator and data, never on where or in which order it ran, so every backend gives the same
fit bit for bit.

Stopping cleanly. Ctrl-C raises ``KeyboardInterrupt`` in the waiting process, and joblib then
kills its local workers. SIGTERM (``kill``, ``timeout``, a batch scheduler's time limit) would by
default end the waiting process at once and leave the workers computing chains nobody collects,
so while the chains run it is turned into the same interrupt; once the workers are stopped the
signal is delivered again with its default action, so the process still ends as SIGTERM ends it.
A handler of the caller's own (or an ignored SIGTERM) is left alone. Each local worker also
watches the process that dispatched its chain and exits when that process is gone (SIGKILL,
the out-of-memory killer), within about a second. Checkpoints are written atomically, so a
worker killed at any moment leaves its chain's last checkpoint whole and resumable.

Dask. Under ``joblib.parallel_config(backend="dask")`` the chains are submitted to that
backend's ``dask.distributed`` client directly, one task per chain. The data (the one large
argument, the same for every chain) are first scattered to as few workers as have threads for
all the chains (``client.scatter(..., broadcast=True)``), so they leave this process once and
reach each of those workers once, however many chains it runs; the tasks carry a reference to
them. A chain still runs where the scheduler puts it (a worker that joins or a busy one may
fetch the data once more). `n_jobs` does not apply there: the cluster's threads bound the
chains running at once. An interrupt cancels the chains not yet started; chains already running
on the cluster finish there (a Dask task cannot be killed), and their checkpoints, on a disk the
workers share, let ``fit(resume=True)`` pick them up.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from typing import Any

#: Seconds between a local worker's checks that the process that dispatched its chain lives.
WATCH_EVERY = 0.5


def run_chains(
    run: Callable[..., Any],
    jobs: Sequence[tuple],
    costs: Sequence[float],
    n_jobs: int | None = None,
    shared: int | None = None,
) -> list:
    """``[run(*job) for job in jobs]``, the jobs run in parallel by the active joblib backend.

    `costs` orders the dispatch (the costliest first, so that a long chain does not run alone at
    the end); the results come back in the order of `jobs` whatever the order of dispatch.
    `n_jobs` None: one local worker per chain, at most the CPU count. `shared`: the position in
    every job of an argument that is the same object for all (the data), which a cluster
    receives once instead of once per chain.
    """
    from joblib import Parallel, delayed
    from joblib.parallel import get_active_backend

    order = sorted(range(len(jobs)), key=lambda c: -costs[c])
    backend, _ = get_active_backend()
    with _sigterm_stops_workers():
        if _is_dask(backend):
            done = _run_on_dask(backend.client, run, [jobs[c] for c in order], shared)
        else:
            if n_jobs is None:
                n_jobs = min(len(jobs), os.cpu_count() or 1)
            # Loky and multiprocessing workers are children of this process; other backends' may not be.
            parent = os.getpid() if type(backend).__name__ in _CHILD_BACKENDS else None
            local = Parallel(n_jobs=n_jobs, backend=_loky_watching(backend, parent))
            done = local(delayed(_watched)(run, parent, *jobs[c]) for c in order)
    results: list = [None] * len(jobs)
    for c, res in zip(order, done, strict=True):
        results[c] = res
    return results


#: joblib backends whose workers are processes forked or spawned by the dispatching process.
_CHILD_BACKENDS = frozenset({"LokyBackend", "MultiprocessingBackend"})


def _loky_watching(backend, parent: int | None):
    """The active loky backend, remade so that each worker watches `parent` from its start
    (None: keep the active backend as it is). A worker watched only from its first chain could
    outlive a dispatcher killed before it had been given one: loky leaves such a worker waiting
    for work until its idle timeout, 300 s. A user's own initializer is left in place."""
    if parent is None or type(backend).__name__ != "LokyBackend" or "initializer" in backend.backend_kwargs:
        return None
    return type(backend)(
        nesting_level=backend.nesting_level,
        inner_max_num_threads=backend.inner_max_num_threads,
        **backend.backend_kwargs,
        initializer=_watch_parent,
        initargs=(parent,),
    )


def _is_dask(backend) -> bool:
    # By class name: importing joblib's Dask backend module would import distributed.
    return type(backend).__name__ == "DaskDistributedBackend"


def _run_on_dask(client, run: Callable[..., Any], jobs: Sequence[tuple], shared: int | None) -> list:
    """Each job as one task of `client`'s cluster; the `shared` argument scattered once."""
    import uuid

    if shared is not None:
        workers = _workers_for(client, len(jobs))
        ref = client.scatter(jobs[0][shared], workers=workers, broadcast=True, hash=False)
        jobs = [(*job[:shared], ref, *job[shared + 1 :]) for job in jobs]
    tag = uuid.uuid4().hex[:8]
    futures = [
        client.submit(run, *job, key=f"ibp-rflvm-chain-{tag}-{i}", pure=False) for i, job in enumerate(jobs)
    ]
    try:
        return client.gather(futures)
    except BaseException:
        client.cancel(futures)
        raise


def _workers_for(client, n_chains: int) -> list[str]:
    """The fewest workers (most threads first) whose threads can run `n_chains` chains at once."""
    threads = client.nthreads()
    if not threads:
        raise RuntimeError("the Dask cluster has no workers to run the chains on")
    chosen, room = [], 0
    for address, n in sorted(threads.items(), key=lambda kv: (-kv[1], kv[0])):
        if room >= n_chains:
            break
        chosen.append(address)
        room += n
    return chosen


class _Terminated(KeyboardInterrupt):
    """SIGTERM arrived while the chains ran; raised where the dispatching thread waits."""


@contextmanager
def _sigterm_stops_workers():
    """Within the block SIGTERM raises :class:`_Terminated` (joblib then stops its workers);
    leaving the block that way re-delivers SIGTERM with its default action."""
    if threading.current_thread() is not threading.main_thread():
        # Only the main thread may set handlers; a fit run from another thread keeps the default.
        yield
        return
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return

    def interrupt(signum, frame):
        raise _Terminated("SIGTERM")

    signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    except _Terminated:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
        raise  # reached only where the signal cannot end the process (it is blocked)
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _watched(run: Callable[..., Any], parent: int | None, *args):
    """`run(*args)` in a worker process that `parent` started, which from now on exits as soon
    as `parent` is gone, so a dispatcher killed outright leaves no worker behind. `parent` None,
    or this process itself (the threading backend): no watch."""
    if parent is not None and os.getpid() != parent:
        _watch_parent(parent)
    return run(*args)


_watch_lock = threading.Lock()
_watched_parent: int | None = None


def _watch_parent(parent: int) -> None:
    """Exit this process once it is no longer `parent`'s child, checking until it ends.

    The watch outlives the chain: a worker that has finished its chain waits idle for the next
    one, and an idle worker does not notice on its own that the dispatcher has gone (two chains
    at different speeds left the faster one's worker running after a SIGKILL)."""
    global _watched_parent
    with _watch_lock:
        if _watched_parent == parent:
            return
        _watched_parent = parent
    if os.getppid() != parent:
        # Re-parented already: the dispatcher died while this worker was starting (importing,
        # compiling), and the chain it would run has no one to return to.
        os._exit(1)

    def watch():
        while True:
            time.sleep(WATCH_EVERY)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="ibp-rflvm-parent-watch", daemon=True).start()
