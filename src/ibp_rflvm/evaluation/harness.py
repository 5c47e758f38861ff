"""The experiment harness behind ``ibp-rflvm reproduce``: the paper's Tables 1-2 and Figures 1-2,
and Table 3 (k-nearest-neighbour accuracy of the latent spaces, from the same cells).

This module plans, runs and reports a target (:func:`reproduce`) and re-exports the public
names of the modules that do the work, whose imports run one way (each imports only those
above it):

* :mod:`.experiments`: the methods, tables, figures, run settings, cells and their seeds;
* :mod:`.cells`: what one cell computes, in a worker (data, mask, fit, score, checkpoint);
* :mod:`.store`: the cell files in the output folder;
* :mod:`.planning`: which cells a target needs;
* :mod:`.scheduling`: running the cells on local processes or Dask, parents first;
* :mod:`.status`: ``--status``, the cells done and in flight and the time left;
* :mod:`.report`: the tables and figures from the cell files;
* :mod:`.latent_report`: Table 3, kNN accuracy of the stored latent matrices (and PCA).

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
dimensions in the last sample, at least 1) of its IBP counterpart in the same trial (the
paper's protocol, docs/reproducing.md):

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

from collections.abc import Callable, Sequence
from pathlib import Path

from . import latent_report, report
from .cells import (
    CHECKPOINT_EVERY,
    CellTask,
    build_estimator,
    compute_cell,
    dataset_arrays,
    mask_digest,
    split_for,
    subsample_rows,
)
from .experiments import (
    FIGURES,
    HOLDOUT_FRACTION,
    INIT_DIMS,
    LATENT_TABLES,
    METHODS,
    SCHEMA_VERSION,
    TABLES,
    TARGETS,
    Cell,
    FigureDef,
    Method,
    ReproduceError,
    RunConfig,
    TableDef,
    cell_settings,
    init_dims_for,
    mask_seed,
    method_key,
    model_seed,
)
from .planning import Plan, _parse_names, dataset_available, make_plan, method_available
from .scheduling import RunSummary, run_cells
from .status import status
from .store import cell_path, check_settings, load_cell, load_latent, load_records, save_cell, worker_seconds

__all__ = [
    "CHECKPOINT_EVERY",
    "FIGURES",
    "HOLDOUT_FRACTION",
    "INIT_DIMS",
    "LATENT_TABLES",
    "METHODS",
    "SCHEMA_VERSION",
    "TABLES",
    "TARGETS",
    "Cell",
    "CellTask",
    "FigureDef",
    "Method",
    "Plan",
    "ReproduceError",
    "RunConfig",
    "RunSummary",
    "TableDef",
    "build_estimator",
    "cell_path",
    "cell_settings",
    "compute_cell",
    "dataset_arrays",
    "dataset_available",
    "init_dims_for",
    "load_cell",
    "load_latent",
    "load_records",
    "make_plan",
    "mask_digest",
    "mask_seed",
    "method_available",
    "method_key",
    "model_seed",
    "reproduce",
    "run_cells",
    "save_cell",
    "split_for",
    "status",
    "subsample_rows",
    "worker_seconds",
]


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
    cfg = config or RunConfig()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    plan = make_plan(target, trials, cfg, datasets, methods)
    say = echo or print
    for note in plan.notes:
        say(f"note: {note}")
    if report_only:
        # The same refusal as a run: the notes describe the settings, so they must be the cells'.
        present = check_settings(out, plan.cells, cfg)
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
        write = latent_report.write_latent_table if t in LATENT_TABLES else report.write_table
        summary.outputs += write(out, t, records, plan.datasets[t], plan.methods[t], trials, cfg, plan.notes)
    for f in plan.figures:
        path = report.write_figure(out, f, records, cfg, _parse_names(methods, method_key), summary.notes)
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
