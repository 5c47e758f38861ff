"""One chain's sweep on several threads, with a chain that does not depend on the thread count.

The sweep's row-wise and column-wise work is cut into blocks of a FIXED size (:data:`ROW_BLOCK`
rows, :data:`COLUMN_BLOCK` columns: constants of the code, never derived from the thread count),
and a thread pool runs the blocks in any order (docs/scaling.md, "A sweep on several cores").
Two rules make every number the same whatever the pool size:

* work without random draws (products, log-likelihood rows, column sums) is split over its
  OUTPUTS, never over a sum, and each block is computed by compiled code or by BLAS on one thread,
  so each output element comes from the same operations in the same order;
* work with random draws takes, per step, ONE 64-bit key from the chain's Generator (the same one
  draw whatever the thread count, so the chain's own stream, and its checkpoint, keep their form),
  and block ``b`` draws from ``Generator(Philox(key=(key, b)))``: a counter-based stream that needs
  no state between sweeps and is made in about 10 microseconds.

Which :class:`Blocks` a sweep uses is set for its duration by :func:`active` (``run_chain`` and
``sweep`` do); the kernels below read it with :func:`current`. Outside :func:`active` the default
is one thread with the code's block sizes, which gives the same numbers as any other thread count.
The block sizes are fields of :class:`Blocks` only so that tests can make small data span several
blocks; a fit always uses the constants.

Compiled kernels run from the pool must be ``nogil=True``, or the threads would take turns.
"""

from __future__ import annotations

import contextvars
import numbers
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
from threadpoolctl import threadpool_limits

__all__ = [
    "COLUMN_BLOCK", "ROW_BLOCK", "Blocks", "active", "available_cpus", "current", "matmul_columns",
    "matmul_rows", "row_kernel", "slices", "step_key", "stream", "threads_per_chain",
]  # fmt: skip

#: Rows per block. The blocks define the chain (each has its own stream), so they are fixed
#: once, for the largest thread counts in view: 10,000 rows make 40 blocks, enough to keep 16-32
#: threads busy and to share the work evenly between 2, while a block of 256 rows by even 16
#: columns is thousands of draws, far more than a thread hand-off costs.
ROW_BLOCK = 256
#: Columns per block (weight precisions, Cholesky draws, CRT totals, column sums): 2,000
#: columns make 32 blocks, and a precision block still reuses each row outer product 64 times.
COLUMN_BLOCK = 64

T = TypeVar("T")


@dataclass(frozen=True)
class Blocks:
    """How a sweep's blocked work runs: `n_threads` threads over blocks of `rows` rows or
    `columns` columns. The numbers depend on the block sizes, never on `n_threads`."""

    n_threads: int = 1
    rows: int = ROW_BLOCK
    columns: int = COLUMN_BLOCK
    #: The JAX backend's devices, over which one chain's rows are sharded (None: every device).
    devices: tuple | None = None

    def __post_init__(self) -> None:
        for name in ("n_threads", "rows", "columns"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
                raise ValueError(f"{name} must be a positive integer; got {value!r}")

    def row_slices(self, n: int) -> list[slice]:
        return slices(n, self.rows)

    def column_slices(self, n: int) -> list[slice]:
        return slices(n, self.columns)

    def run(self, fn: Callable[[int, slice], T], parts: list[slice]) -> list[T]:
        """``[fn(b, part) for b, part in enumerate(parts)]``, the calls spread over the threads.

        Each call must write only its own part of any shared output; the results come back in
        the order of `parts` whatever the order the calls ran in.
        """
        if self.n_threads == 1 or len(parts) <= 1:
            return [fn(b, part) for b, part in enumerate(parts)]
        pool = _pool(self.n_threads)
        futures = [pool.submit(fn, b, part) for b, part in enumerate(parts)]
        try:
            return [f.result() for f in futures]
        except BaseException:
            # A failed block or Ctrl-C: blocks not yet started are dropped, not left to run on.
            for f in futures:
                f.cancel()
            raise


def row_kernel(kernel: Callable, psi: np.ndarray, rows, *args) -> np.ndarray:
    """One value per row from a compiled row kernel ``kernel(psi_rows, rows, *args, out)``, run
    over the sweep's row blocks. Each row's value is one kernel call's, whatever the blocks, so
    splitting the rows over threads changes no number."""
    rows = np.asarray(rows, dtype=np.int64)
    psi = np.ascontiguousarray(psi)
    out = np.empty(rows.size)

    def part(_b: int, ks: slice) -> None:
        kernel(psi[ks], rows[ks], *args, out[ks])

    blocks = current()
    blocks.run(part, blocks.row_slices(rows.size))
    return out


def slices(n: int, size: int) -> list[slice]:
    """``0..n`` cut into consecutive slices of `size` (the last one shorter)."""
    return [slice(start, min(n, start + size)) for start in range(0, n, size)]


_SERIAL = Blocks()
_current: contextvars.ContextVar[Blocks | None] = contextvars.ContextVar("ibp_rflvm_blocks", default=None)


def current() -> Blocks:
    """The :class:`Blocks` of the sweep running in this thread (one thread outside :func:`active`)."""
    blocks = _current.get()
    return _SERIAL if blocks is None else blocks


@contextmanager
def active(blocks: Blocks) -> Iterator[Blocks]:
    """Run the enclosed sweeps with `blocks`, and BLAS on one thread.

    One BLAS thread because a BLAS call inside a block must compute its outputs the same way
    whatever the pool size (OpenBLAS does not promise the same bits for every thread count), and
    because the pool, not BLAS, is what uses the cores. OpenBLAS's thread count is process-wide,
    so it is set here once, not in each block.
    """
    token = _current.set(blocks)
    try:
        with threadpool_limits(limits=1, user_api="blas"):
            yield blocks
    finally:
        _current.reset(token)


# --------------------------------------------------------------------------------------------
# Streams
# --------------------------------------------------------------------------------------------


def step_key(rng: np.random.Generator) -> int:
    """One 64-bit key for a step's block streams, drawn from the chain's Generator."""
    return int(rng.integers(0, 2**64, dtype=np.uint64))


def stream(key: int, block: int) -> np.random.Generator:
    """Block `block`'s Generator for the step keyed `key`: Philox with the 128-bit key
    ``(key, block)``, independent of every other block's and step's."""
    return np.random.Generator(np.random.Philox(key=np.array([key, block], dtype=np.uint64)))


# --------------------------------------------------------------------------------------------
# Products
# --------------------------------------------------------------------------------------------


def matmul_rows(A: np.ndarray, B: np.ndarray, blocks: Blocks | None = None) -> np.ndarray:
    """``A @ B`` computed by row blocks of `A`: each block one single-threaded BLAS call, so
    every row comes out the same whatever the thread count (a whole-matrix product threaded by
    OpenBLAS would not promise that)."""
    blocks = current() if blocks is None else blocks
    A = np.ascontiguousarray(A, dtype=np.float64)
    B = np.ascontiguousarray(B, dtype=np.float64)
    out = np.empty((A.shape[0], B.shape[1]))

    def part(_b: int, rows: slice) -> None:
        np.matmul(A[rows], B, out=out[rows])

    blocks.run(part, blocks.row_slices(A.shape[0]))
    return out


def copy_rows(dst: np.ndarray, dst_rows: np.ndarray, src: np.ndarray, src_rows: np.ndarray) -> None:
    """``dst[dst_rows] = src[src_rows]`` by blocks of the row lists (``N x J`` arrays: a whole
    ``psi`` may change rows at once, and a copy that size is worth the threads)."""
    blocks = current()

    def part(_b: int, ks: slice) -> None:
        dst[dst_rows[ks]] = src[src_rows[ks]]

    blocks.run(part, blocks.row_slices(len(dst_rows)))


def matmul_columns(A: np.ndarray, B: np.ndarray, blocks: Blocks | None = None) -> np.ndarray:
    """``A @ B`` computed by column blocks of `B` (for ``Phi^T kappa``, whose sums run over the
    rows: split over the output's columns, each sum stays one BLAS call's)."""
    blocks = current() if blocks is None else blocks
    A = np.asarray(A, dtype=np.float64)
    out = np.empty((A.shape[0], B.shape[1]))

    def part(_b: int, cols: slice) -> None:
        out[:, cols] = A @ np.ascontiguousarray(B[:, cols])

    blocks.run(part, blocks.column_slices(B.shape[1]))
    return out


# --------------------------------------------------------------------------------------------
# The pools
# --------------------------------------------------------------------------------------------

_pools: dict[int, ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()


def _pool(n_threads: int) -> ThreadPoolExecutor:
    """The process's pool of `n_threads` threads, made once and reused by every sweep."""
    with _pools_lock:
        pool = _pools.get(n_threads)
        if pool is None:
            pool = ThreadPoolExecutor(max_workers=n_threads, thread_name_prefix="ibp-rflvm-block")
            _pools[n_threads] = pool
        return pool


def _forget_pools() -> None:
    # A forked child has the parent's pool objects but none of their threads (and perhaps a
    # lock some other thread held at the fork).
    global _pools_lock
    _pools.clear()
    _pools_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pools)


def threads_per_chain(n_threads, n_chains: int, n_jobs: int | None) -> int:
    """A fit's `n_threads`, validated; None: the available CPUs shared among the chains that run
    at once (`n_chains`, at most `n_jobs` of them), at least 1 each."""
    if n_threads is not None:
        if isinstance(n_threads, bool) or not isinstance(n_threads, numbers.Integral) or n_threads < 1:
            raise ValueError(f"n_threads must be a positive integer or None (all CPUs); got {n_threads!r}")
        return int(n_threads)
    cpus = available_cpus()
    at_once = 1
    if n_chains > 1:
        at_once = min(n_chains, cpus if n_jobs is None or n_jobs < 1 else int(n_jobs))
    return max(1, cpus // at_once)


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask, which a batch scheduler may narrow)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
