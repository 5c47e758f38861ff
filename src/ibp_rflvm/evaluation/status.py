"""``ibp-rflvm reproduce --status``: the cells done and in flight, and the time left.

Time left. Every record holds its cell's wall seconds in one worker (``seconds``: loading, fit
and scoring). A cell not done yet is expected to take, in order of preference:

1. the mean seconds of the done cells of the same data set and method;
2. else the mean seconds per data entry of the done cells of the same method on other data
   sets, times this data set's entries;
3. else the mean seconds per data entry and per unit of the method family's relative cost (the
   one the scheduler orders cells by) over every done cell, times this cell's entries and cost.

A resumed cell counts its whole chain (``store.worker_seconds``: the sweeps before the resume as
its checkpoint timed them, or the seconds after it scaled to the whole chain); a cell in flight
counts only for the sweeps its checkpoint has not reached. A cell in flight whose checkpoint
timed its sweeps (checkpoints record the wall seconds of the sweeps they cover) also counts as
an observation, at those seconds per sweep times the chain's sweeps, and that is its own
expected time: so the first estimate comes once a checkpoint is written, not once a whole cell
is done (it leaves out the scoring, tens of seconds at most, so it is low by that much). The sum
over the cells left, divided by the number of workers (``--n-jobs``, default one per core), is
the time shown. It assumes the workers stay busy, which a finite model's cell waiting for its
IBP counterpart's can break near the end, so it is a lower bound then. With no cell done or
timed in flight there is nothing to time the others by, and none is shown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .cells import dataset_arrays
from .experiments import METHODS, Cell, RunConfig
from .planning import make_plan
from .scheduling import _RELATIVE_COST, n_workers
from .store import check_settings, worker_seconds


def _entries(record: Mapping[str, Any]) -> int:
    return int(np.prod(record["shape"]))


def cell_seconds(
    pending: Sequence[Cell],
    done: Mapping[str, Mapping[str, Any]],
    entries: Callable[[str], int],
    timed: Mapping[Cell, float] | None = None,
) -> dict[Cell, float] | None:
    """Expected worker seconds of each cell of `pending` from the `done` records and the cells
    in flight `timed` (their whole chain's expected seconds from their checkpoints; see the module
    docstring); `entries(dataset)` gives a data set's number of entries. None if there is neither."""
    timed = timed or {}
    seen = [(r["dataset"], r["method"], worker_seconds(r)[0], _entries(r)) for r in done.values()]
    seen += [(c.dataset, c.method, s, entries(c.dataset)) for c, s in timed.items()]
    if not seen:
        return None
    by_pair: dict[tuple[str, str], list[float]] = {}
    by_method: dict[str, list[float]] = {}
    per_cost: list[float] = []
    for dataset, method, s, n in seen:
        by_pair.setdefault((dataset, method), []).append(s)
        by_method.setdefault(method, []).append(s / n)
        per_cost.append(s / (n * _RELATIVE_COST[METHODS[method].family]))
    out: dict[Cell, float] = {}
    for c in pending:
        if c in timed:
            out[c] = float(timed[c])
        elif (c.dataset, c.method) in by_pair:
            out[c] = float(np.mean(by_pair[c.dataset, c.method]))
        elif c.method in by_method:
            out[c] = float(np.mean(by_method[c.method])) * entries(c.dataset)
        else:
            cost = _RELATIVE_COST[METHODS[c.method].family]
            out[c] = float(np.mean(per_cost)) * entries(c.dataset) * cost
    return out


def format_duration(seconds: float) -> str:
    """``"3 h 05 min"``-style text, to the minute (a time estimate is no finer than that)."""
    minutes = int(round(seconds / 60))
    if minutes < 1:
        return "under a minute"
    days, rest = divmod(minutes, 24 * 60)
    hours, minutes = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes:02d} min"
    return f"{minutes} min"


def time_left_line(
    pending: Mapping[Cell, float],
    done: Mapping[str, Mapping[str, Any]],
    entries: Callable[[str], int],
    workers: int,
    timed: Mapping[Cell, float] | None = None,
) -> str:
    """The status line of the estimated time left; `pending` maps each cell not done to the
    fraction of its work left (1 when not started), `timed` as for :func:`cell_seconds`."""
    seconds = cell_seconds(list(pending), done, entries, timed)
    if seconds is None:
        return "Estimated time left: unknown (no cell is done or has timed sweeps yet to go by)"
    work = sum(seconds[c] * frac for c, frac in pending.items())
    return (
        f"Estimated time left: {format_duration(work / workers)} "
        f"({work:.0f} worker-seconds over {workers} worker{'s' if workers > 1 else ''})"
    )


def status(
    target: str,
    out: str | Path = "results",
    trials: int = 5,
    config: RunConfig | None = None,
    datasets: str | Sequence[str] | None = None,
    methods: str | Sequence[str] | None = None,
    n_jobs: int | None = None,
) -> str:
    """Where a reproduction stands, as Markdown: per data set and method, the trials done and
    the cells in flight with the sweep their checkpoint reached, then the estimated time left
    with `n_jobs` workers (as ``reproduce``'s). Computes and writes nothing."""
    from ..mcmc.driver import load_checkpoint

    cfg = config or RunConfig()
    out = Path(out)
    plan = make_plan(target, trials, cfg, datasets, methods)
    done = check_settings(out, plan.cells, cfg)
    grid: dict[str, dict[str, list[Cell]]] = {}
    for c in plan.cells:
        grid.setdefault(c.dataset, {}).setdefault(c.method, []).append(c)
    cols = list(dict.fromkeys(c.method for c in plan.cells))
    lines = [
        "| data set | " + " | ".join(METHODS[m].name for m in cols) + " |",
        "|---|" + "---|" * len(cols),
    ]
    n_flight = 0
    left: dict[Cell, float] = {}  # fraction of each unfinished cell's work still to do
    timed: dict[Cell, float] = {}  # whole-chain seconds expected of a cell in flight
    for d, by_method in grid.items():
        row = []
        for m in cols:
            cells = by_method.get(m)
            if not cells:
                row.append("")
                continue
            text = f"{sum(c.id in done for c in cells)}/{len(cells)}"
            for c in cells:
                if c.id in done:
                    continue
                left[c] = 1.0
                ckpt = out / "partial" / f"{c.id}.ckpt"
                if not ckpt.exists():
                    continue
                try:
                    saved = load_checkpoint(ckpt)
                    reached = int(saved["sweep"])
                    sweep = f"sweep {reached}"
                    left[c] = max(0.0, 1.0 - reached / cfg.n_iter)
                    if saved["timed_sweeps"] > 0:
                        timed[c] = saved["seconds"] / saved["timed_sweeps"] * cfg.n_iter
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
    if left:
        shapes = {r["dataset"]: _entries(r) for r in done.values()}

        def entries(name: str) -> int:
            if name not in shapes:
                shapes[name] = int(dataset_arrays(name, cfg.sqrt, cfg.data_home, cfg.max_rows)[0].size)
            return shapes[name]

        lines.append(time_left_line(left, done, entries, n_workers(n_jobs), timed))
    return "\n".join(lines + plan.notes)
