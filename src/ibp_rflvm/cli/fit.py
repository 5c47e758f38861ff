"""The parts of ``ibp-rflvm fit`` between the command line and the estimator: likelihood
parameters and size factors from options, the output folder, the compile notice, the warnings'
display and the output files."""

from __future__ import annotations

import contextlib
import inspect
import json
import logging
import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..plumbing.io import Table, read_table, write_table
from ..plumbing.validation import _indices, labelled

if TYPE_CHECKING:  # pragma: no cover
    from ..estimator import IBPRFLVM, RFLVM

#: The checkpoint's file name: a zip of .npy arrays and JSON (ibp_rflvm.plumbing.checkpoint), no pickle.
CHECKPOINT_NAME = "checkpoint.zip"
#: What the command line wrote before it said what the file is.
OLD_CHECKPOINT_NAME = "checkpoint.pkl"


class UsageError(ValueError):
    """An option or input the command refuses; the message says which and why."""


def likelihood_class(name: str) -> type:
    from ..likelihoods import REGISTRY

    try:
        return REGISTRY[name]
    except KeyError:
        raise UsageError(f"--likelihood must be one of {', '.join(sorted(REGISTRY))}; got {name!r}") from None


def _accepted(cls: type) -> list[str]:
    return [p for p in inspect.signature(cls.__init__).parameters if p != "self"]


def likelihood_params(items: Sequence[str], likelihood: str) -> dict:
    """``--likelihood-param KEY=VALUE`` options as keyword arguments of the likelihood.

    VALUE is JSON (``5``, ``0.5``, ``[1, 2]``, ``"total"``), a bare word (a string), or
    ``@FILE``: a matrix (or one column) read like the data file, e.g. per-entry ``n_trials``.
    """
    cls = likelihood_class(likelihood)
    accepted = _accepted(cls)
    out: dict = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"--likelihood-param expects KEY=VALUE (e.g. n_trials=5); got {item!r}")
        if key not in accepted:
            names = ", ".join(accepted) or "none"
            raise UsageError(f"--likelihood-param {key}: the {likelihood} likelihood takes {names}")
        if key in out:
            raise UsageError(f"--likelihood-param {key} is given twice")
        out[key] = _param_value(key, text.strip())
    if likelihood == "binomial" and "n_trials" not in out:
        raise UsageError(
            "the binomial likelihood needs the number of trials: --likelihood-param n_trials=N, or "
            "n_trials=@FILE for one number per entry (a matrix shaped like the data)"
        )
    return out


def _param_value(key: str, text: str):
    if text.startswith("@"):
        try:
            values = read_table(text[1:]).values
        except (OSError, ValueError) as exc:
            raise UsageError(f"--likelihood-param {key}: {exc}") from None
        return values[:, 0] if values.ndim == 2 and values.shape[1] == 1 else values
    if not text:
        raise UsageError(f"--likelihood-param {key} has no value")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def size_factors(
    table: Table, likelihood: str, source: str | None, column: str | None, params: dict
) -> tuple[Table, np.ndarray | str | None]:
    """The size factors `--size-factors` (``total`` or a file) or `--size-factor-column` ask
    for, and the data without that column; None when neither is given."""
    if source is None and column is None:
        return table, None
    option = "--size-factors" if source is not None else "--size-factor-column"
    if source is not None and column is not None:
        raise UsageError("give --size-factors or --size-factor-column, not both")
    if "size_factors" not in _accepted(likelihood_class(likelihood)):
        raise UsageError(
            f"{option}: the {likelihood} likelihood takes no size factors (poisson and negbinom do)"
        )
    if "size_factors" in params:
        raise UsageError(f"{option} and --likelihood-param size_factors=... say the same thing: give one")
    if source == "total":
        totals = np.nansum(np.where(np.isnan(table.values), 0.0, table.values), axis=1)
        with labelled(table.rows, table.columns):
            if (totals <= 0).any():
                raise UsageError(
                    "--size-factors total divides by each row's mean count, but rows "
                    f"{_indices(totals <= 0)} have no positive count: remove them or give the factors"
                )
        return table, "total"
    if column is not None:
        j = _column_index(table, column)
        values = table.values[:, j]
        keep = [c for c in range(table.values.shape[1]) if c != j]
        names = None if table.columns is None else [table.columns[c] for c in keep]
        label = repr(table.columns[j]) if table.columns is not None else f"{j + 1}"
        notes = [*table.notes, f"column {label} taken out of the data as the size factors"]
        table = replace(table, values=table.values[:, keep], columns=names, notes=notes)
        what = f"--size-factor-column {column}"
    else:
        values = _size_factor_file(source, table)
        what = f"--size-factors {source}"
    with labelled(table.rows, table.columns):
        bad = ~(np.isfinite(values) & (values > 0))
        if bad.any():
            raise UsageError(
                f"{what}: size factors must be positive numbers; {int(bad.sum())} are not, at rows "
                f"{_indices(bad)}"
            )
    return table, values


def _column_index(table: Table, column: str) -> int:
    width = table.values.shape[1]
    if table.columns is not None and column in table.columns:
        return table.columns.index(column)
    if column.isdigit() and 1 <= int(column) <= width:
        return int(column) - 1
    names = f" or one of the names {table.columns[:8]}" if table.columns is not None else ""
    raise UsageError(f"--size-factor-column {column!r}: give a column number from 1 to {width}{names}")


def _size_factor_file(source: str, table: Table) -> np.ndarray:
    try:
        sf = read_table(source)
    except (OSError, ValueError) as exc:
        raise UsageError(f"--size-factors: {exc}") from None
    values = sf.values.reshape(-1) if 1 in sf.values.shape[:2] else sf.values
    if values.ndim != 1:
        raise UsageError(f"--size-factors {source}: one number per row expected; it holds {sf.values.shape}")
    n = table.values.shape[0]
    if sf.rows is not None and table.rows is not None:
        where = {name: i for i, name in enumerate(sf.rows)}
        missing = [r for r in table.rows if r not in where]
        if missing:
            raise UsageError(
                f"--size-factors {source} has no row named {missing[0]!r} ({len(missing)} data rows missing)"
            )
        return values[[where[r] for r in table.rows]]
    if values.size != n:
        raise UsageError(f"--size-factors {source} holds {values.size} numbers; the data have {n} rows")
    return values


class OutputFolder:
    """The output folder, created when the command needs it; a failed run removes the folders
    that did not exist before it as long as they hold no file (so a checkpoint written before
    a failure stays)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.missing = [p for p in (self.path, *self.path.parents) if not p.exists()]  # deepest first

    def check(self) -> None:
        """Refuse a path that cannot become the folder, before any work is done."""
        if self.path.exists() and not self.path.is_dir():
            raise UsageError(f"--out {self.path} is a file, not a folder")

    def make(self) -> Path:
        self.path.mkdir(parents=True, exist_ok=True)
        return self.path

    def discard_if_empty(self) -> None:
        if not self.missing:
            return
        if self.path.is_dir():  # subfolders this run made inside it, deepest first
            inside = [p for p in self.path.rglob("*") if p.is_dir()]
            for folder in sorted(inside, key=lambda p: -len(p.parts)):
                with contextlib.suppress(OSError):
                    folder.rmdir()
        for folder in self.missing:
            with contextlib.suppress(OSError):  # not empty, or gone: leave it
                folder.rmdir()


def numba_note(likelihood: str) -> str | None:
    """One line saying that this fit compiles the sampler's numba kernels first, and where the
    compiled code is cached, when most kernels this likelihood uses have no cache entry yet
    (numba writes an index file beside a kernel's compiled code the first time)."""
    try:
        from numba.core.registry import CPUDispatcher

        from ..likelihoods import gaussian, polya_gamma
        from ..samplers import ibp

        modules = (ibp, gaussian if likelihood == "gaussian" else polya_gamma)
        caches = [
            obj._cache for mod in modules for obj in vars(mod).values()
            if isinstance(obj, CPUDispatcher) and obj.py_func.__module__ == mod.__name__
            and hasattr(getattr(obj, "_cache", None), "_cache_file")
        ]  # fmt: skip
        cold = [c for c in caches if not os.path.exists(c._cache_file._index_path)]
        if 2 * len(cold) <= len(caches):
            return None
        where = Path(cold[0]._cache_path)
    except Exception:  # numba's cache internals differ by version: say nothing rather than fail
        return None
    if where.name == "__pycache__":  # beside the sources: an install the user can write to
        place = f"the __pycache__ folders of {Path(__file__).parent}"
    else:  # NUMBA_CACHE_DIR, or ~/.cache/numba when the installed package is read-only
        place = str(where.parent)
    return (
        f"compiling the sampler's numba kernels first (once per install and likelihood, 10-30 s); "
        f"numba caches them in {place} (NUMBA_CACHE_DIR sets where)"
    )


@contextlib.contextmanager
def readable_warnings(prog: str) -> Iterator[None]:
    """Warnings printed as ``prog: warning (Category): message`` on stderr, without the source
    line a script's user cannot act on, and ArviZ's logged notes on short runs kept quiet."""

    def show(message, category, filename, lineno, file=None, line=None):
        print(f"{prog}: warning ({category.__name__}): {message}", file=sys.stderr)

    try:
        import arviz

        # ArviZ logs through its own Logger object, which logging.getLogger does not return.
        arviz_log = getattr(arviz, "_log", None) or logging.getLogger("arviz")
    except ImportError:
        arviz_log = logging.getLogger("arviz")
    level = arviz_log.level
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = show
        arviz_log.setLevel(logging.ERROR)
        try:
            yield
        finally:
            arviz_log.setLevel(level)


def write_results(model: IBPRFLVM | RFLVM, table: Table, out: Path, title: str, source: str):
    """Every output file of a fit (`title` names the model, `source` the data); the lines to
    print about which chain each comes from, the summary table and the names of the files
    written, in order."""
    from ..plots import group_codes, k_plus_plot, latent_heatmaps
    from ..summaries.counts import KPlusStuckWarning, k_plus_stuck
    from ..summaries.diagnostics import summary as diagnostics_summary
    from ..summaries.diagnostics import to_inference_data
    from ..summaries.dimensions import k_plus_posterior
    from ..summaries.view import MIN_ROWS as VIEW_MIN_ROWS

    # The chains, their weights and traces are the fit's Posterior; the estimator gives only
    # what it derives from it (latent_, the embedding and its view).
    post = model.posterior_
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ArviZ warns about few draws on short runs
        to_inference_data(post, owner=type(model).__name__).to_netcdf(str(out / "samples.nc"))
        summary = diagnostics_summary(post)
    summary.to_csv(out / "summary.csv")
    best = post.best_chain
    weights = np.asarray(post.weights, dtype=float)
    n_chains = weights.size
    k_final = post.traces["n_active"][:, -1].astype(int)
    latent = model.latent_
    index_label = table.index_label or "row"
    write_table(out / "latent.csv", latent, [f"dim{k + 1}" for k in range(latent.shape[1])], table.rows,
                index_label)  # fmt: skip
    embedding = model.embedding_
    write_table(out / "embedding.csv", embedding, [f"component{k + 1}" for k in range(embedding.shape[1])],
                table.rows, index_label)  # fmt: skip
    picture = None
    if latent.shape[0] >= VIEW_MIN_ROWS:
        picture = model.view()
        write_table(out / "view.csv", picture, ["view1", "view2"], table.rows, index_label)
    dims = "K+" if post.spec.ibp else "D"  # the dense RFLVM has a fixed number
    which = f"chain {best}"
    if n_chains > 1:
        which += f" of {n_chains}, stacking weight {weights[best]:.2f}, the largest"
    codes, names = (None, None) if table.labels is None else group_codes(table.labels)
    latent_heatmaps([latent], [f"{title}\n{which}:\nfinal sample, {dims} = {k_final[best]}"], codes,
                    out / "latent_space.png", label_names=names, suptitle=source,
                    embeddings=[picture])  # fmt: skip
    starts = np.asarray(post.chain_starts, dtype=int)
    traces = {
        f"chain {c} (from {starts[c]}, weight {weights[c]:.2f})": post.traces["n_active"][c]
        for c in range(n_chains)
    }
    combined = "all chains, stacking-weighted" if n_chains > 1 else "chain 0"
    k_plus = k_plus_posterior(post)
    k_plus_plot(traces, out / "k_plus_trace.png", post.burn_in, k_plus,
                posterior_label=f"posterior of K+\n({combined})")  # fmt: skip
    lines = []
    if n_chains > 1:
        for c in range(n_chains):
            mark = "  <- best" if c == best else ""
            lines.append(f"  chain {c}: started from {starts[c]} dims, final K+ {k_final[c]}, "
                         f"stacking weight {weights[c]:.2f}{mark}")  # fmt: skip
    k_plus_text = ", ".join(f"{k}: {p:.2f}" for k, p in k_plus.items())
    lines.append(f"posterior of K+ over the kept sweeps ({combined}): {k_plus_text}")
    lines.append(
        f"final {dims} = {k_final[best]} ({which}); latent.csv and latent_space.png hold its final sample"
    )
    lines.append(f"embedding.csv: {embedding.shape[1]} posterior-embedding components ({combined})")
    lines.append("three numbers called dimensions (summary.csv, column counts):")
    for name, row in summary.loc[["k_plus", "effective_dims", "embedding_dims"]].iterrows():
        lines.append(f"  {name}: {row['mean']:.1f} - {row['counts']}")
    if k_plus_stuck(post):
        # summary() warned too, but inside the block that keeps ArviZ's short-run notes quiet.
        warnings.warn(
            f"K+ stayed within one of its start ({', '.join(str(s) for s in starts)}) in every sweep: the "
            "start, not the data, may have set it; compare other --dims or run longer",
            KPlusStuckWarning,
            stacklevel=2,
        )
    written = ["samples.nc", "summary.csv", "latent.csv", "embedding.csv"]
    if picture is not None:
        lines.append("view.csv: the 2-D view (t-SNE of the embedding; keeps neighbours, not distances)")
        written.append("view.csv")
    written += ["latent_space.png", "k_plus_trace.png"]
    more_lines, more_files = write_dimensions(model, table, out, picture)
    return lines + more_lines, summary, written + more_files


def write_dimensions(
    model: IBPRFLVM | RFLVM, table: Table, out: Path, picture: np.ndarray | None
) -> tuple[list[str], list[str]]:
    """What each dimension means, where the rows sit on it and how sure each row is:
    dimensions.csv, top_columns.csv, the positions, embedding_std.csv, groups.csv (with labels)
    and their pictures; the lines to print about them and the files written."""
    from ..plots import effects_plot, profile_panels, profiles_plot, usage_view_plot
    from ..summaries.meaning import dimension_summary

    index_label = table.index_label or "row"
    if table.columns is not None and len(table.columns) == model.n_features_in_:
        # The file's header names the columns, as a DataFrame's would.
        model.feature_names_in_ = np.asarray(table.columns, dtype=object)
    labels = table.labels
    dims = model.dimensions_
    dims.to_csv(out / "dimensions.csv")
    model.top_columns().to_csv(out / "top_columns.csv", index=False)
    written = ["dimensions.csv", "top_columns.csv"]
    for name, frame in (("dimension_positions", model.dimension_positions_),
                        ("dimension_positions_std", model.dimension_positions_std_)):  # fmt: skip
        write_table(out / f"{name}.csv", frame.to_numpy(), list(frame.columns), table.rows, index_label)
        written.append(f"{name}.csv")
    std = model.embedding_std_
    write_table(out / "embedding_std.csv", std, [f"component{k + 1}" for k in range(std.shape[1])],
                table.rows, index_label)  # fmt: skip
    written.append("embedding_std.csv")
    summary = dimension_summary(model.posterior_)
    names = model.dimension_effects_.index.to_numpy()
    level = f"{summary.level:.0%}"
    title = f"each dimension's effect on its top columns (dot: {level} interval holds 0)"
    effects_plot(out / "dimension_effects.png", summary.effect, summary.lower, summary.upper, summary.labels,
                 names, title=title)  # fmt: skip
    written.append("dimension_effects.png")
    lines = [f"dimensions.csv, top_columns.csv, dimension_effects.png: {len(dims)} dimensions "
             f"(posterior probability >= 0.5), their top columns with {level} intervals"]  # fmt: skip
    if len(dims):
        profiles_plot(out / "dimension_profiles.png", profile_panels(model, labels=labels), n_dims=len(dims))
        written.append("dimension_profiles.png")
        lines.append("dimension_positions.csv, dimension_profiles.png: where each row sits on each "
                     "dimension, and how its top columns change along it")  # fmt: skip
    if picture is not None and len(dims):
        usage_view_plot(out / "view_by_dimension.png", picture, summary.usage, summary.labels,
                        np.linalg.norm(std, axis=1), labels=labels)  # fmt: skip
        written.append("view_by_dimension.png")
        lines.append("view_by_dimension.png: the view coloured by each dimension's usage (size: row's sd)")
    if labels is not None:
        model.describe(labels).to_csv(out / "groups.csv", index=False)
        written.append("groups.csv")
        lines.append("groups.csv: each group's usage and mean position on each dimension, with intervals")
    lines.append("embedding_std.csv: each row's posterior sd in embedding.csv's coordinates")
    return lines, written
