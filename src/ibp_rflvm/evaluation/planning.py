"""Which cells a target needs: the tables' and figures' cells after the data set and method
filters, without the data sets and methods that cannot run here (each noted), and with the IBP
cells that give the finite models their D."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .cells import dataset_arrays
from .experiments import (
    FIGURES,
    LATENT_TABLES,
    METHODS,
    TABLES,
    TARGETS,
    Cell,
    ReproduceError,
    RunConfig,
    method_key,
    table_layout,
)


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
    """The cells of `target` (``table1``-``table3``, ``fig1``, ``fig2`` or ``all``), after the
    data set / method filters, with unavailable data sets and methods dropped and noted."""
    if target not in TARGETS:
        raise ReproduceError(f"unknown target {target!r}; choose from {', '.join(TARGETS)}")
    if not isinstance(trials, (int, np.integer)) or trials < 1:
        raise ReproduceError(f"trials must be a positive integer; got {trials!r}")
    ds_filter = _parse_names(datasets, _dataset_name)
    m_filter = _parse_names(methods, method_key)
    tables = [t for t in (*TABLES, *LATENT_TABLES) if target in (t, "all")]
    figures = [f for f in ("fig1", "fig2") if target in (f, "all")]
    layouts = {t: table_layout(t) for t in tables}
    involved_ds = {d for t in tables for d, _ in layouts[t]} | {FIGURES[f].dataset for f in figures}
    involved_m = {m for t in tables for _, ms in layouts[t] for m in ms}
    involved_m |= {m for f in figures for m in FIGURES[f].methods}
    for name in ds_filter or ():
        if name not in involved_ds:
            raise ReproduceError(f"dataset {name!r} is not part of {target}")
    for name in m_filter or ():
        if name not in involved_m:
            raise ReproduceError(f"method {name!r} is not part of {target}")

    if ds_filter is not None:
        # A figure draws one data set; `--datasets` without it asks for none of its cells.
        figures = [f for f in figures if FIGURES[f].dataset in ds_filter]

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
        plan_ds[t], plan_m[t] = [], []
        for d, ms in layouts[t]:
            if ds_filter is not None and d not in ds_filter:
                continue
            plan_ds[t].append(d)
            msel = [m for m in ms if m_filter is None or m in m_filter]
            plan_m[t] += [m for m in msel if m not in plan_m[t]]
            for m in msel:
                if ds_usable(d) and m_usable(m):
                    wanted.update(Cell(d, m, k) for k in range(trials))
    for f in figures:
        fdef = FIGURES[f]
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
