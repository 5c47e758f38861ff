"""Tables (Markdown, CSV, LaTeX) and latent-space figures from the harness's cell files.

Each table is rows = methods, columns = data sets, entries ``mean (standard error)`` over the
finished trials, the best entry of every column in bold (highest LPD, lowest perplexity), and
beside each of our columns the paper's own figure for the same cell (Tables 1 and 2 of the
paper, typed in from its source). Written to ``OUT/tables/<table>.{md,csv,tex}``; the CSV is
long-format (one row per table block x data set x method, with a ``best`` flag since CSV has no
bold). Figures go to ``OUT/figures/<fig>_<dataset>_latent.png``.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .cells import dataset_arrays
from .experiments import FIGURES, METHODS, TABLES, RunConfig, init_dims_for
from .store import load_latent, worker_seconds

# The paper's Table 1: test-set log likelihood of the Gaussian models, mean (standard error)
# over five trials.
PAPER_TABLE1: dict[str, dict[str, tuple[float, float]]] = {
    "ibp-rflvm": {
        "cancer": (6.68e3, 114.16),
        "mice": (1.39e4, 148.76),
        "ovarian": (1.81e3, 94.02),
        "olivetti": (1.43e5, 726.41),
        "cambridge": (1.09e4, 1212.76),
    },
    "rflvm": {
        "cancer": (6.19e3, 119.32),
        "mice": (1.36e4, 163.09),
        "ovarian": (1.73e3, 93.84),
        "olivetti": (1.42e5, 957.49),
        "cambridge": (9.91e3, 896.54),
    },
    "gplvm": {
        "cancer": (-4.79e3, 26.31),
        "mice": (-1.22e4, 63.53),
        "ovarian": (-6.96e2, 92.65),
        "olivetti": (-1.16e5, 168.80),
        "cambridge": (-2.32e4, 134.68),
    },
    "ibp-lfm": {
        "cancer": (-2.46e4, 33.90),
        "mice": (-6.10e4, 96.61),
        "ovarian": (-3.99e3, 21.14),
        "olivetti": (-5.84e5, 694.63),
        "cambridge": (-2.20e5, 6020.21),
    },
}

# The paper's Table 2: test-set perplexity of the count models.
PAPER_TABLE2: dict[str, dict[str, tuple[float, float]]] = {
    "nb-ibp-rflvm": {
        "montreal": (16.25, 0.10),
        "congress": (719.05, 9.59),
        "newsgroups": (19.14, 0.27),
        "spam": (158.41, 2.20),
    },
    "nb-rflvm": {
        "montreal": (16.69, 0.10),
        "congress": (727.74, 6.86),
        "newsgroups": (21.18, 0.12),
        "spam": (193.26, 2.42),
    },
    "poisson-ibp-rflvm": {
        "montreal": (24.76, 0.89),
        "congress": (2029.75, 38.47),
        "newsgroups": (23.94, 0.74),
        "spam": (389.70, 13.02),
    },
    "poisson-rflvm": {
        "montreal": (39.34, 1.58),
        "congress": (2278.67, 13.82),
        "newsgroups": (26.66, 0.74),
        "spam": (410.75, 18.81),
    },
    "multinomial-ibp-rflvm": {
        "montreal": (21.58, 0.37),
        "congress": (1005.36, 12.71),
        "newsgroups": (20.78, 0.39),
        "spam": (418.42, 7.09),
    },
    "multinomial-rflvm": {
        "montreal": (22.49, 0.24),
        "congress": (940.92, 19.86),
        "newsgroups": (26.53, 1.04),
        "spam": (370.99, 13.41),
    },
    "pfa": {
        "montreal": (27.11, 2.03),
        "congress": (678.55, 1.94),
        "newsgroups": (27.43, 1.08),
        "spam": (186.97, 0.57),
    },
    "lda": {
        "montreal": (117.03, 1.86),
        "congress": (938.74, 3.44),
        "newsgroups": (19.16, 0.03),
        "spam": (218.32, 0.04),
    },
}

DATASET_TITLES = {
    "cancer": "Cancer",
    "mice": "Mice",
    "ovarian": "Ovarian",
    "olivetti": "Olivetti",
    "cambridge": "Cambridge",
    "montreal": "Montreal",
    "congress": "Congress",
    "newsgroups": "Newsgroups",
    "spam": "Spam",
}


@dataclass(frozen=True)
class Block:
    """One metric of a table."""

    metric: str
    title: str
    higher_is_better: bool
    style: str  # number format: "sci" (e-notation from 1e3 up), "fixed2", "fixed3"
    paper: dict[str, dict[str, tuple[float, float]]] | None = None


BLOCKS: dict[str, tuple[Block, ...]] = {
    "table1": (
        Block(
            "lpd_sum",
            "Held-out log predictive density, sum over held-out entries (the paper's scale)",
            True,
            "sci",
            PAPER_TABLE1,
        ),
        Block("lpd_per_entry", "Held-out log predictive density per held-out entry", True, "fixed3"),
    ),
    "table2": (
        Block("perplexity", "Held-out perplexity (lower is better)", False, "fixed2", PAPER_TABLE2),
        Block(
            "lpd_sum", "Held-out log predictive density under each model's own likelihood, sum", True, "sci"
        ),
        Block("lpd_per_entry", "Held-out log predictive density per held-out entry", True, "fixed3"),
    ),
}

TITLES = {
    "table1": "Table 1: held-out log predictive density of the Gaussian models on real-valued data",
    "table2": "Table 2: held-out perplexity (and log predictive density) of the count models",
}


def _num(x: float, style: str) -> str:
    if x is None or not math.isfinite(x):
        return "-"
    if style == "sci":
        return f"{x:.2e}" if abs(x) >= 1e3 else f"{x:.2f}"
    return f"{x:.3f}" if style == "fixed3" else f"{x:.2f}"


@dataclass
class Entry:
    mean: float
    se: float
    n: int
    best: bool = False

    def text(self, style: str) -> str:
        if self.n == 0:
            return "-"
        # Standard errors in the paper's own style: plain decimals even beside e-notation means.
        se_style = "fixed2" if style == "sci" else style
        return f"{_num(self.mean, style)} ({_num(self.se, se_style)})"


def _summarise(values: Sequence[float]) -> Entry:
    v = np.array([x for x in values if x is not None and math.isfinite(x)], dtype=np.float64)
    if v.size == 0:
        return Entry(math.nan, math.nan, 0)
    se = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else math.nan
    return Entry(float(v.mean()), se, int(v.size))


def _mark_best(column: dict[str, Entry], higher: bool) -> None:
    means = [e.mean for e in column.values() if e.n > 0]
    if not means:
        return
    best = max(means) if higher else min(means)
    for e in column.values():
        e.best = e.n > 0 and e.mean == best


def table_entries(
    records: Sequence[dict[str, Any]],
    block: Block,
    datasets: Sequence[str],
    methods: Sequence[str],
    trials: int,
) -> tuple[dict[str, dict[str, Entry]], dict[str, dict[str, Entry]] | None]:
    """``ours[dataset][method]`` and ``paper[dataset][method]`` entries, best marked per column."""
    ours: dict[str, dict[str, Entry]] = {}
    for d in datasets:
        ours[d] = {}
        for m in methods:
            vals = [
                r["metrics"].get(block.metric)
                for r in records
                if r["dataset"] == d and r["method"] == m and r["trial"] < trials
            ]
            ours[d][m] = _summarise(vals)
        _mark_best(ours[d], block.higher_is_better)
    if block.paper is None:
        return ours, None
    paper: dict[str, dict[str, Entry]] = {}
    for d in datasets:
        paper[d] = {}
        for m in methods:
            got = block.paper.get(m, {}).get(d)
            paper[d][m] = Entry(math.nan, math.nan, 0) if got is None else Entry(got[0], got[1], 5)
        _mark_best(paper[d], block.higher_is_better)
    return ours, paper


def _notes(table: str, trials: int, cfg: RunConfig, plan_notes: Sequence[str]) -> list[str]:
    notes = [
        f"Mean (standard error) over the finished trials of {trials} requested, each trial with its own "
        f"random 20% of the observed entries held out (the same entries for every method); "
        f"'-' marks a cell with no finished trial, a dagger one with fewer trials than requested, "
        f"and '(-)' a standard error from a single trial. Best per column in bold.",
        f"MCMC methods: {cfg.n_iter} sweeps, the first half burn-in, every later sample kept; RFLVMs "
        f"use M = {cfg.n_frequencies} random frequencies; infinite models start at K = {init_dims_for(cfg)} "
        f"({'the paper' if cfg.sampler == 'paper' else 'the library'}'s sweep and start).",
    ]
    if table == "table1":
        notes += [
            "Our LPD is an honest held-out density: the sum over held-out entries of log (1/S) sum_s "
            "p(y_ij | theta_s), every normalising constant included (docs/reproducing.md). The paper's "
            "positive figures for the RFLVMs (e.g. +6.68e+03 on breast cancer) are most likely the collapsed "
            "marginal likelihood without its -NJ/2 log(2 pi) constant, not held-out densities, so the "
            "paper columns are not comparable with ours in sign or scale; they are shown for reference.",
            "D of RFLVM and GPLVM: the final K+ of IBP-RFLVM in the same trial. GPLVM (Bayesian GPLVM, "
            "ARD RBF kernel, 50 inducing points; our vectorised bound, equal to GPy's to rounding) "
            f"is fitted by L-BFGS-B for {cfg.gplvm_iters} iterations (the sweep count does not "
            "apply); its density is the Gaussian predictive at the latent posterior mean.",
        ]
    else:
        notes += [
            "Perplexity is exp(-sum y_ij log p_ij / sum y_ij) over held-out entries, p_ij the posterior "
            "mean of mu_ij / sum_j' mu_ij' (docs/getting_started.md, Held-out scores); the LPD blocks "
            "score held-out counts under "
            "each model's own likelihood.",
            "The multinomial models (Multinomial RFLVMs, LDA) score a held-out entry as y_ij log p_ij, "
            "the log probability of its y_ij tokens within the row, with no count coefficient, while the "
            "Poisson, NB and PFA scores are count probabilities: compare LPD within a family, and "
            "perplexity across families.",
            "D of the finite models: the final K+ of the IBP counterpart in the same trial (NB RFLVM from "
            "NB IBP-RFLVM, Poisson RFLVM and PFA from Poisson IBP-RFLVM, Multinomial RFLVM and LDA from "
            "Multinomial IBP-RFLVM).",
            (
                "Counts: the paper's square-root transform, rounded to integers."
                if cfg.sqrt
                else "Counts are raw (the paper square-root transformed them, which changes perplexities; "
                "`--sqrt` applies the transform, rounded)."
            ),
        ]
    if cfg.max_rows is not None:
        notes.append(
            f"SUBSET: at most {cfg.max_rows} evenly spaced rows of each data set (a smoke test, "
            f"not the paper's experiment)."
        )
    return notes + list(plan_notes)


def _optimizer_note(records: Sequence[dict[str, Any]], datasets: Sequence[str], trials: int) -> str:
    """How many optimised fits (GPLVM) per data set met a convergence test rather than running
    out of iterations: a baseline stopped by its budget is reported as such."""
    parts = []
    for d in datasets:
        runs = [
            r["optimizer"]
            for r in records
            if r["dataset"] == d and r["trial"] < trials and r.get("optimizer") is not None
        ]
        if runs:
            done = sum(bool(o["converged"]) for o in runs)
            iters = sorted(int(o["iterations"]) for o in runs)
            parts.append(f"{DATASET_TITLES[d]} {done} of {len(runs)} (iterations {iters[0]}-{iters[-1]})")
    if not parts:
        return ""
    lead = "GPLVM fits that met L-BFGS-B's convergence test within the iteration budget: "
    return lead + "; ".join(parts) + "."


def _latex_escape(s: str) -> str:
    for a, b in (
        ("\\", r"\textbackslash{}"),
        ("&", r"\&"),
        ("%", r"\%"),
        ("_", r"\_"),
        ("#", r"\#"),
        ("$", r"\$"),
        ("~", r"\textasciitilde{}"),
        ("^", r"\^{}"),
    ):
        s = s.replace(a, b)
    return s


def cell_markup(text: str, best: bool, short: bool) -> tuple[str, str]:
    """One table cell in Markdown and LaTeX: bold when best, a dagger when trials are missing."""
    md = (f"**{text}**" if best else text) + ("†" if short else "")
    tex = (rf"\textbf{{{text}}}" if best else text) + (r"$^\dagger$" if short else "")
    return md, tex


def block_opening(
    title: str, header: list[str], caption: str, label: str, wide: bool
) -> tuple[list[str], list[str]]:
    """One block of a table up to its header row: the Markdown heading and header, and the LaTeX
    table environment (scaled to the text width when `wide`; :func:`block_closing` ends both)."""
    md = [f"## {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    tex = [r"\begin{table}", r"\centering", rf"\caption{{{_latex_escape(caption)}}}", rf"\label{{{label}}}"]
    if wide:
        tex.append(r"\resizebox{\textwidth}{!}{")
    tex += [
        rf"\begin{{tabular}}{{l|{'l' * (len(header) - 1)}}}",
        " & ".join(_latex_escape(h) if i else "" for i, h in enumerate(header)) + r" \\ \hline",
    ]
    return md, tex


def block_closing(wide: bool) -> list[str]:
    """The LaTeX lines that end a block opened by :func:`block_opening`."""
    return [r"\end{tabular}", *(["}"] if wide else []), r"\end{table}", ""]


def write_table_files(
    folder: Path,
    table: str,
    md: list[str],
    tex: list[str],
    rows_csv: list[dict[str, Any]],
    notes: Sequence[str],
) -> list[Path]:
    """Append the notes and write ``<table>.md``, ``.csv`` and ``.tex`` into `folder`."""
    md = md + ["Notes:", ""] + [f"* {n}" for n in notes] + [""]
    tex = tex + ["% Notes:"] + [f"% {n}" for n in notes] + [""]
    paths = [folder / f"{table}.md", folder / f"{table}.csv", folder / f"{table}.tex"]
    paths[0].write_text("\n".join(md), encoding="utf-8")
    with open(paths[1], "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows_csv[0]) if rows_csv else ["table"])
        w.writeheader()
        w.writerows(rows_csv)
    paths[2].write_text("\n".join(tex), encoding="utf-8")
    return paths


def write_table(
    out: str | Path,
    table: str,
    records: Sequence[dict[str, Any]],
    datasets: Sequence[str],
    methods: Sequence[str],
    trials: int,
    cfg: RunConfig,
    plan_notes: Sequence[str] = (),
) -> list[Path]:
    """Write ``OUT/tables/<table>.md``, ``.csv`` and ``.tex``; return their paths."""
    folder = Path(out) / "tables"
    folder.mkdir(parents=True, exist_ok=True)
    datasets = [d for d in TABLES[table].datasets if d in datasets]
    methods = [m for m in TABLES[table].methods if m in methods]
    notes = _notes(table, trials, cfg, plan_notes)
    budget = _optimizer_note(records, datasets, trials)
    if budget:
        notes.append(budget)
    md = [f"# {TITLES[table]}", ""]
    tex = [f"% {TITLES[table]}; generated by ibp-rflvm reproduce", ""]
    rows_csv: list[dict[str, Any]] = []
    for block in BLOCKS[table]:
        ours, paper = table_entries(records, block, datasets, methods, trials)
        header = ["method"]
        for d in datasets:
            header.append(DATASET_TITLES[d])
            if paper is not None:
                header.append(f"{DATASET_TITLES[d]} (paper)")
        caption = f"{block.title}. {notes[0]}"
        if table == "table1":
            caption += " " + notes[2]  # the honest-density caveat belongs where the numbers are
        label = f"table:{table}-{block.metric.replace('_', '-')}"
        md_open, tex_open = block_opening(block.title, header, caption, label, wide=True)
        md += md_open
        tex += tex_open
        for m in methods:
            cells_md, cells_tex = [METHODS[m].name], [_latex_escape(METHODS[m].name)]
            for d in datasets:
                pairs = [(ours[d][m], "ours")] + ([(paper[d][m], "paper")] if paper is not None else [])
                for e, source in pairs:
                    text = e.text(block.style)
                    short = source == "ours" and 0 < e.n < trials
                    md_cell, tex_cell = cell_markup(text, e.best, short)
                    cells_md.append(md_cell)
                    cells_tex.append(tex_cell)
                    rows_csv.append(
                        {
                            "table": table,
                            "metric": block.metric,
                            "dataset": d,
                            "method": m,
                            "method_name": METHODS[m].name,
                            "source": source,
                            "n_trials": e.n,
                            "mean": "" if e.n == 0 else repr(e.mean),
                            "se": "" if e.n < 2 else repr(e.se),
                            "best": e.best,
                        }
                    )
            md.append("| " + " | ".join(cells_md) + " |")
            tex.append(" & ".join(cells_tex) + r" \\")
        md.append("")
        tex += block_closing(wide=True)
    return write_table_files(folder, table, md, tex, rows_csv, notes)


def write_figure(
    out: str | Path,
    figure: str,
    records: Sequence[dict[str, Any]],
    cfg: RunConfig,
    methods: Sequence[str] | None = None,
    problems: list[str] | None = None,
) -> Path | None:
    """Heat maps of trial 0's latent matrices (rows sorted by label), like the paper's Figure
    1 (cancer) or 2 (congress), the final sample's exact zeros visible, and below them the
    RFLVMs' 2-D posterior embeddings kept in their records (cells computed before records kept
    it show none); panels whose cell or latent file is missing are left out (the
    latter named in `problems`: a folder may keep the cell records without their matrices).
    None if no panel is left."""
    from ..plots import latent_heatmaps

    fdef = FIGURES[figure]
    latents, titles, embeddings = [], [], []
    for m in fdef.methods:
        if methods is not None and m not in methods:
            continue
        match = (r for r in records if r["dataset"] == fdef.dataset and r["method"] == m and r["trial"] == 0)
        rec = next(match, None)
        if rec is None:
            continue
        try:
            latents.append(load_latent(out, rec))
        except OSError as exc:
            if problems is not None:
                problems.append(f"{figure}: panel {rec['cell']} left out, no latent matrix ({exc.strerror})")
            continue
        dims = f"K+={rec['k_plus_final']}" if rec["D"] is None else f"D={rec['D']}"
        titles.append(f"{METHODS[m].name} ({dims})")
        kept = rec.get("embedding_2d")
        embeddings.append(None if kept is None else np.asarray(kept, dtype=np.float64))
    if not latents:
        return None
    _, labels, label_names = dataset_arrays(fdef.dataset, cfg.sqrt, cfg.data_home, cfg.max_rows)
    number = figure[3:]
    return latent_heatmaps(
        latents,
        titles,
        labels,
        Path(out) / "figures" / f"{figure}_{fdef.dataset}_latent.png",
        label_names=label_names,
        suptitle=f"Figure {number}: latent space of {DATASET_TITLES[fdef.dataset]} "
        "(trial 0, rows sorted by label)"
        + ("\nbelow: 2-D posterior embeddings" if any(e is not None for e in embeddings) else ""),
        embeddings=embeddings,
    )


def write_timings(out: str | Path, records: Sequence[dict[str, Any]]) -> Path:
    """``OUT/tables/timings.md``: mean and total seconds per data set and method, each cell's
    whole chain counted (`worker_seconds`), with the cells whose time is an estimate named."""
    groups: dict[tuple[str, str], list[float]] = {}
    estimated: list[str] = []
    for r in records:
        seconds, measured = worker_seconds(r)
        groups.setdefault((r["dataset"], r["method"]), []).append(seconds)
        if not measured:
            estimated.append(f"{r['cell']} (resumed at sweep {r['resumed_from_sweep']})")
    lines = [
        "# Seconds per cell (fit and scoring, in one worker)",
        "",
        "| data set | method | cells | mean s | total s |",
        "|---|---|---|---|---|",
    ]
    order = {m: i for i, m in enumerate(METHODS)}
    for (d, m), secs in sorted(groups.items(), key=lambda kv: (kv[0][0], order.get(kv[0][1], 99))):
        lines.append(f"| {d} | {METHODS[m].name} | {len(secs)} | {np.mean(secs):.1f} | {np.sum(secs):.1f} |")
    total = sum(sum(v) for v in groups.values())
    n_cells = sum(len(v) for v in groups.values())
    lines += ["", f"Total: {total:.0f} s of worker time over {n_cells} cells.", ""]
    if estimated:
        lines += [
            "Cells resumed from a checkpoint that did not time the sweeps before it: their seconds "
            "after the resume are scaled to the whole chain (a chain resumed after its last sweep "
            "counts its scoring only): " + ", ".join(sorted(estimated)) + ".",
            "",
        ]
    path = Path(out) / "tables" / "timings.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
