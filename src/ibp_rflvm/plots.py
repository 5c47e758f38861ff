"""Figures: latent-space heat maps (the paper's Figures 1-2), trace plots, and the pictures of
what each dimension does (effects, usage over the view, profiles along it)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402


def _save(fig, path: str | Path) -> Path:
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def latent_heatmaps(
    latents: Sequence[np.ndarray],
    titles: Sequence[str],
    labels: np.ndarray | None,
    path: str | Path,
    label_names: Sequence[str] | None = None,
    suptitle: str | None = None,
    embeddings: Sequence[np.ndarray | None] | None = None,
) -> Path:
    """:func:`latent_figure` saved to `path`."""
    return _save(latent_figure(latents, titles, labels, label_names, suptitle, embeddings), path)


#: At most about this many tick labels on a heat map's dimension axis.
MAX_TICKS = 10


def dimension_ticks(n_dims: int) -> list[int]:
    """0-based positions of the labelled dimensions (or rows): all of them up to :data:`MAX_TICKS`, else
    every second one from the first, or the first and every multiple of a round step (5, 10, 20,
    50, ...), so that the labels never run together."""
    if n_dims <= MAX_TICKS:
        return list(range(n_dims))
    if n_dims <= 2 * MAX_TICKS:
        return list(range(0, n_dims, 2))
    step = 5
    while n_dims / step > MAX_TICKS:
        step = step * 5 // 2 if str(step)[0] == "2" else step * 2  # 5, 10, 20, 50, 100, ...
    return sorted({0, *range(step - 1, n_dims, step)})


def latent_figure(
    latents: Sequence[np.ndarray],
    titles: Sequence[str],
    labels: np.ndarray | None,
    label_names: Sequence[str] | None = None,
    suptitle: str | None = None,
    embeddings: Sequence[np.ndarray | None] | None = None,
):
    """One heat map per latent matrix (rows = observations, columns = dimensions), a Figure.

    With `labels`, rows are sorted by label and a horizontal line marks each change of label,
    so class structure in the latent space is visible at a glance; without (None), rows stay in
    the data's order. Zeros (the IBP's inactive entries) show as the neutral colour. With
    `embeddings` (one ``N x 2`` array or None per panel), a second row shows each model's 2-D
    view (:meth:`~ibp_rflvm.IBPRFLVM.view`) as a scatter coloured by label (empty where None).
    """
    n_obs = np.asarray(latents[0]).shape[0] if latents else 0
    have_labels = labels is not None
    labels = np.asarray(labels) if have_labels else np.zeros(n_obs, dtype=int)
    order = np.argsort(labels, kind="stable")
    sorted_labels = labels[order]
    boundaries = np.flatnonzero(np.diff(sorted_labels)) + 0.5
    scatter = embeddings is not None and any(e is not None for e in embeddings)
    n_rows = 2 if scatter else 1
    widest = max((np.asarray(H).shape[1] for H in latents), default=1)
    panel = 2.2 + 0.04 * max(0, widest - 20)  # wide latents get a wider panel
    fig, axes = plt.subplots(
        n_rows, len(latents), figsize=(panel * len(latents) + 1.0, 5.0 * n_rows), squeeze=False
    )
    if scatter:
        _embedding_row(axes[1], embeddings, labels if have_labels else None, label_names)
    for ax, H, title in zip(axes[0], latents, titles, strict=True):
        H = np.asarray(H)[order]
        lim = float(np.nanmax(np.abs(H))) if H.size else 1.0
        if H.shape[1] == 0:
            H = np.zeros((H.shape[0], 1))
        im = ax.imshow(H, aspect="auto", cmap="RdBu_r", vmin=-lim, vmax=lim, interpolation="nearest")
        for b in boundaries:
            ax.axhline(b, color="k", lw=1.0)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("latent dimension")
        ticks = dimension_ticks(H.shape[1])
        ax.set_xticks(ticks)
        ax.set_xticklabels([str(k + 1) for k in ticks], fontsize=7)
        fig.colorbar(im, ax=ax, fraction=0.08, pad=0.02)
    if have_labels:
        axes[0, 0].set_ylabel("observation (sorted by label)")
    else:
        axes[0, 0].set_ylabel("observation (row of the data)")
        rows = dimension_ticks(n_obs)
        for ax in axes[0]:  # rows counted from 1, as the file's reader and messages count them
            ax.set_yticks(rows)
            ax.set_yticklabels([str(r + 1) for r in rows])
    if have_labels and label_names is not None and len(boundaries):
        edges = np.concatenate([[0], boundaries + 0.5, [len(labels)]])
        mids = 0.5 * (edges[:-1] + edges[1:])
        names = [
            label_names[int(v)] if int(v) < len(label_names) else str(v) for v in np.unique(sorted_labels)
        ]
        axes[0, 0].set_yticks(mids)
        axes[0, 0].set_yticklabels(names, fontsize=7, rotation=90, va="center")
    if suptitle:
        # A title wider than a one- or two-panel figure would be cut at both edges: wrap it.
        width = max(20, int(fig.get_figwidth() * 8))
        fig.suptitle("\n".join(textwrap.fill(line, width) for line in suptitle.splitlines()))
    return fig


def _embedding_row(axes, embeddings, labels: np.ndarray | None, label_names) -> None:
    """Each 2-D view as a scatter, coloured by label with a legend; one colour and no legend
    without labels (None)."""
    values = np.unique(labels) if labels is not None else np.zeros(1, dtype=int)
    colours = plt.get_cmap("tab10" if values.size <= 10 else "tab20")
    for ax, E in zip(axes, embeddings, strict=True):
        if E is None:
            ax.axis("off")
            continue
        E = np.asarray(E)
        for i, v in enumerate(values):
            pick = labels == v if labels is not None else slice(None)
            name = label_names[int(v)] if label_names is not None and int(v) < len(label_names) else str(v)
            ax.scatter(E[pick, 0], E[pick, 1], s=4, color=colours(i % colours.N), label=name)
        ax.set_title("view: t-SNE of the posterior embedding", fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    first = next((ax for ax, E in zip(axes, embeddings, strict=True) if E is not None), None)
    if first is not None and labels is not None:
        first.legend(fontsize=6, markerscale=2, loc="best")


def trace_plot(
    traces: dict[str, np.ndarray], path: str | Path, ylabel: str, burn_in: int | None = None
) -> Path:
    """Per-sweep traces (e.g. ``K+`` of several chains or models) on one axis."""
    fig, ax = plt.subplots(figsize=(6.0, 3.2))
    _draw_traces(ax, traces, ylabel, burn_in)
    return _save(fig, path)


def _draw_traces(ax, traces: dict[str, np.ndarray], ylabel: str, burn_in: int | None) -> None:
    for name, values in traces.items():
        ax.step(np.arange(1, len(values) + 1), values, where="mid", label=name)
    if burn_in:
        ax.axvline(burn_in + 0.5, color="grey", ls="--", lw=1.0, label="end of burn-in")
    ax.set_xlabel("sweep")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)


def k_plus_plot(
    traces: dict[str, np.ndarray],
    path: str | Path,
    burn_in: int,
    posterior: dict[int, float],
    posterior_label: str = "combined posterior",
) -> Path:
    """:func:`k_plus_figure` saved to `path`."""
    return _save(k_plus_figure(traces, burn_in, posterior, posterior_label), path)


def k_plus_figure(
    traces: dict[str, np.ndarray],
    burn_in: int,
    posterior: dict[int, float],
    posterior_label: str = "combined posterior",
):
    """``K+`` after each sweep of every chain (left) and one posterior of ``K+`` (right), a Figure.

    `posterior` (value -> probability) is the one the fit reports, e.g. the chains' kept sweeps
    combined by their stacking weights (``k_plus_posterior_``), so the bars are what the model
    says about the number of dimensions; the traces show whether the chains got there (a flat
    trace at the start's value means it did not move).
    """
    fig, (ax, hx) = plt.subplots(1, 2, figsize=(9.0, 3.2), gridspec_kw={"width_ratios": [2, 1]})
    _draw_traces(ax, traces, "active dimensions K+", burn_in)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    values = np.fromiter(posterior.keys(), dtype=np.int64)
    probs = np.fromiter(posterior.values(), dtype=np.float64)
    hx.bar(values, probs, width=0.8, color="C0", label=posterior_label)
    hx.xaxis.set_major_locator(MaxNLocator(nbins=6, integer=True))
    hx.set_title(posterior_label, fontsize=9)
    hx.set_xlabel("K+ (kept sweeps)")
    hx.set_ylabel("posterior probability")
    return fig


def effects_figure(
    effect: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    dimensions: Sequence[str],
    columns: Sequence[str],
    n_top: int = 5,
    title: str | None = None,
):
    """Heat map of dimensions x their top columns (the Figure of :func:`effects_plot`)."""
    effect, lower, upper = (np.atleast_2d(np.asarray(a, dtype=np.float64)) for a in (effect, lower, upper))
    top = np.argsort(-np.abs(effect), axis=1, kind="stable")[:, : max(1, int(n_top))]
    shown = list(dict.fromkeys(int(j) for j in top.ravel())) if effect.size else []
    E = effect[:, shown]
    # A rarely used dimension can have effects several times the others' (few rows, loosely
    # pinned); the colours stop at the 98th percentile so the rest stay readable, and the
    # colour bar's pointed ends say that larger values are clipped.
    limit = float(np.percentile(np.abs(E), 98)) if E.size else 1.0
    limit = limit if limit > 0 else 1.0
    width = min(2.5 + 0.32 * len(shown), 18.0)
    fig, ax = plt.subplots(figsize=(width, 1.6 + 0.35 * max(len(dimensions), 1)), layout="constrained")
    image = ax.imshow(E, cmap="RdBu_r", vmin=-limit, vmax=limit, aspect="auto", interpolation="nearest")
    holds_zero = (lower[:, shown] <= 0) & (upper[:, shown] >= 0)
    rows, cols = np.nonzero(holds_zero)
    ax.scatter(cols, rows, s=6, c="k", marker=".")
    ax.set_yticks(range(len(dimensions)), list(dimensions))
    ax.set_xticks(range(len(shown)), [str(columns[j]) for j in shown], rotation=90, fontsize=7)
    fig.colorbar(image, ax=ax, label="effect (on minus off, link scale)", shrink=0.8, extend="both")
    default = "each dimension's effect on its top columns (dot: the interval holds 0)"
    ax.set_title(title or default, fontsize=9)
    return fig


def effects_plot(
    path: str | Path,
    effect: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    dimensions: Sequence[str],
    columns: Sequence[str],
    n_top: int = 5,
    title: str | None = None,
) -> Path:
    """Heat map of the latent dimensions x their top columns, saved to `path`.

    Each cell is a dimension's posterior-mean effect on a column (red: the column is higher
    with the dimension on; blue: lower), with a dot where the credible interval holds 0.

    Parameters
    ----------
    path : str or pathlib.Path
        The image file to write (its folder is created).
    effect, lower, upper : ndarray of shape (n_dims, n_features)
        Posterior-mean effects and their credible bounds, as
        :func:`ibp_rflvm.summaries.dimension_summary` gives them.
    dimensions : sequence of str
        The dimensions' names (``dimensions_.index``).
    columns : sequence of str
        The columns' names.
    n_top : int, default=5
        Columns drawn per dimension: its largest absolute effects, each column once.
    title : str or None, default=None
        The title (None: a default).

    Returns
    -------
    pathlib.Path
        `path`.
    """
    return _save_constrained(effects_figure(effect, lower, upper, dimensions, columns, n_top, title), path)


def group_codes(labels) -> tuple[np.ndarray, list[str]]:
    """Each row's label as an index into the sorted distinct labels (read as text), and those."""
    names, codes = np.unique(np.asarray(labels, dtype=object).astype(str), return_inverse=True)
    return codes, [str(n) for n in names]


def _group_colours(labels) -> tuple[np.ndarray, list, object]:
    """Each row's group index, the groups' names and a categorical colour map."""
    codes, names = group_codes(labels)
    return codes, names, plt.get_cmap("tab10" if len(names) <= 10 else "tab20")


def panels_note(shown: int, total: int) -> str:
    """``" (showing the first 6 of 9 dimensions)"`` when a figure draws fewer panels than there
    are dimensions, else nothing."""
    return f" (showing the first {shown} of {total} dimensions)" if shown < total else ""


def usage_view_figure(
    view: np.ndarray,
    usage: np.ndarray,
    dimensions: Sequence[str],
    uncertainty: np.ndarray | None = None,
    max_panels: int = 6,
    title: str | None = None,
    labels: Sequence | None = None,
):
    """The view once per dimension, coloured by usage (the Figure of :func:`usage_view_plot`)."""
    view, usage = np.asarray(view, dtype=np.float64), np.atleast_2d(np.asarray(usage, dtype=np.float64))
    n = max(1, min(int(max_panels), usage.shape[1]))
    extra = labels is not None
    size = 6.0
    if uncertainty is not None:
        u = np.asarray(uncertainty, dtype=np.float64)
        size = 3.0 + 30.0 * u / max(float(np.max(u)), 1e-300)
    width = 2.6 * (n + extra) + 1.2 + (1.2 if extra else 0.0)
    fig, axes = plt.subplots(1, n + extra, figsize=(width, 3.0), squeeze=False, layout="constrained")
    panels = axes[0][1:] if extra else axes[0]
    if extra:
        codes, names, colours = _group_colours(labels)
        ax = axes[0][0]
        for g, name in enumerate(names):
            pick = codes == g
            ax.scatter(view[pick, 0], view[pick, 1], s=size if np.ndim(size) == 0 else size[pick],
                       color=colours(g % colours.N), label=name, linewidths=0)  # fmt: skip
        ax.set_title("groups", fontsize=9)
        ax.legend(fontsize=6, markerscale=1.5, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
        ax.set_xticks([])
        ax.set_yticks([])
    for k, ax in enumerate(panels):
        if k < usage.shape[1]:
            points = ax.scatter(view[:, 0], view[:, 1], c=usage[:, k], s=size, cmap="viridis",
                                vmin=0.0, vmax=1.0, linewidths=0)  # fmt: skip
            ax.set_title(f"{dimensions[k]}", fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    if usage.shape[1]:
        fig.colorbar(points, ax=list(panels), label="P(row uses the dimension)", shrink=0.8)
    note = panels_note(min(n, usage.shape[1]), usage.shape[1])
    fig.suptitle(_fit_width(fig, (title or "view coloured by each dimension's usage") + note), fontsize=9)
    return fig


def usage_view_plot(
    path: str | Path,
    view: np.ndarray,
    usage: np.ndarray,
    dimensions: Sequence[str],
    uncertainty: np.ndarray | None = None,
    max_panels: int = 6,
    title: str | None = None,
    labels: Sequence | None = None,
) -> Path:
    """The 2-D view once per latent dimension, each row coloured by the probability that it
    uses the dimension, saved to `path`; with `labels`, a first panel coloured by group.

    Parameters
    ----------
    path : str or pathlib.Path
        The image file to write (its folder is created).
    view : ndarray of shape (n_samples, 2)
        The rows' places in the picture (the estimator's ``view()``).
    usage : ndarray of shape (n_samples, n_dims)
        The posterior probability that each row uses each dimension (``dimension_usage_``).
    dimensions : sequence of str
        The dimensions' names (``dimensions_.index``).
    uncertainty : ndarray of shape (n_samples,) or None, default=None
        A per-row spread (``view(return_std=True)``'s second value): a point's size grows
        with it, so the rows the posterior is least sure of stand out.
    max_panels : int, default=6
        At most this many dimensions, the first ones, are drawn (the title says so when there
        are more).
    title : str or None, default=None
        The title (None: a default).
    labels : sequence of shape (n_samples,) or None, default=None
        A group for each row: a first panel shows the view coloured by group, with a legend.

    Returns
    -------
    pathlib.Path
        `path`.
    """
    fig = usage_view_figure(view, usage, dimensions, uncertainty, max_panels, title, labels)
    return _save_constrained(fig, path)


def _save_constrained(fig, path: str | Path) -> Path:
    """Save a figure laid out when drawn (constrained layout, which tight_layout would undo),
    cropped to everything drawn so that titles, legends and colour bars stay in the image."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight", pad_inches=0.05)
    plt.close(fig)
    return path


class ProfilePanel(NamedTuple):
    """One dimension's panel of :func:`profiles_plot`.

    Parameters
    ----------
    dimension : str
        The dimension's name.
    grid : ndarray of shape (n_points,)
        The positions the profiles are given at, ascending.
    columns : sequence of str
        The columns' names.
    mean : ndarray of shape (n_columns, n_points)
        Their posterior-mean profiles.
    rows : ndarray of shape (n_rows,)
        The positions of the rows drawn in the rug.
    groups : sequence of shape (n_rows,) or None, default=None
        Those rows' groups, which colour the rug (None: one colour).
    """

    dimension: str
    grid: np.ndarray
    columns: Sequence[str]
    mean: np.ndarray
    rows: np.ndarray
    groups: Sequence | None = None


def profiles_figure(panels: Sequence[ProfilePanel], n_dims: int | None = None, title: str | None = None):
    """Per dimension, a heat map of its top columns' profiles along it over a rug of the rows'
    positions (the Figure of :func:`profiles_plot`)."""
    n = max(len(panels), 1)
    tallest = max((len(p.columns) for p in panels), default=1)
    fig, axes = plt.subplots(
        2, n, figsize=(3.4 * n + 1.0, 1.6 + 0.22 * tallest + 0.9), squeeze=False, layout="constrained",
        gridspec_kw={"height_ratios": [max(tallest, 2), 2]}, sharex="col",
    )  # fmt: skip
    image = None
    legend_done = False
    for k in range(n):
        heat, rug = axes[0][k], axes[1][k]
        if k >= len(panels):
            heat.axis("off")
            rug.axis("off")
            continue
        p = panels[k]
        M = np.atleast_2d(np.asarray(p.mean, dtype=np.float64))
        lo, hi = M.min(axis=1, keepdims=True), M.max(axis=1, keepdims=True)
        scaled = (M - lo) / np.where(hi > lo, hi - lo, 1.0)
        # Columns ordered by where their profile peaks, so that bumps read as a diagonal.
        order = np.argsort(np.argmax(M, axis=1), kind="stable")
        g = np.asarray(p.grid, dtype=np.float64)
        extent = (g[0], g[-1], M.shape[0] - 0.5, -0.5)
        image = heat.imshow(scaled[order], aspect="auto", cmap="viridis", vmin=0.0, vmax=1.0, extent=extent,
                            interpolation="nearest")  # fmt: skip
        heat.set_yticks(range(M.shape[0]), [str(p.columns[j]) for j in order], fontsize=7)
        heat.set_title(p.dimension, fontsize=9)
        rows = np.asarray(p.rows, dtype=np.float64)
        jitter = np.random.default_rng(0).uniform(-0.4, 0.4, rows.size)  # fixed: the same picture each time
        if p.groups is None:
            rug.scatter(rows, jitter, s=4, color="k", marker="|", linewidths=0.6)
        else:
            codes, names, colours = _group_colours(p.groups)
            for gi, name in enumerate(names):
                pick = codes == gi
                rug.scatter(rows[pick], jitter[pick], s=6, color=colours(gi % colours.N), marker="|",
                            linewidths=0.8, label=name)  # fmt: skip
            if not legend_done:
                # Below every panel, inside the figure (constrained layout makes room for it).
                fig.legend(*rug.get_legend_handles_labels(), loc="outside lower center", fontsize=7,
                           markerscale=3, ncol=min(len(names), 6), frameon=False)  # fmt: skip
                legend_done = True
        rug.set_yticks([])
        rug.set_ylim(-0.6, 0.6)
        rug.set_xlabel(f"position on {p.dimension}", fontsize=8)
    if image is not None:
        fig.colorbar(image, ax=axes[0].tolist(), label="profile, each column from its low to its high",
                     shrink=0.9)  # fmt: skip
    note = panels_note(len(panels), n_dims if n_dims is not None else len(panels))
    default = "each dimension's top columns along it (partial dependence); rug: the rows that use it"
    fig.suptitle(_fit_width(fig, (title or default) + note), fontsize=9)
    return fig


def _fit_width(fig, text: str) -> str:
    """`text` wrapped to the figure's width (at a 9-point font), so a title stays in the image."""
    return textwrap.fill(text, max(30, int(fig.get_figwidth() * 13)))


def profiles_plot(
    path: str | Path, panels: Sequence[ProfilePanel], n_dims: int | None = None, title: str | None = None
) -> Path:
    """Per dimension, a heat map of how its top columns change along it, over a rug of where
    the rows that use it sit (coloured by group when the panels have groups), saved to `path`.

    Parameters
    ----------
    path : str or pathlib.Path
        The image file to write (its folder is created).
    panels : sequence of ProfilePanel
        One per dimension drawn (:func:`profile_panels` builds them from a fitted estimator).
    n_dims : int or None, default=None
        How many dimensions there are: the title says when fewer are drawn.
    title : str or None, default=None
        The title (None: a default).

    Returns
    -------
    pathlib.Path
        `path`.
    """
    return _save_constrained(profiles_figure(panels, n_dims, title), path)


def profile_panels(
    model, n_top: int = 8, labels: Sequence | None = None, max_panels: int = 4
) -> list[ProfilePanel]:
    """The panels of :func:`profiles_plot` for a fitted estimator.

    Parameters
    ----------
    model : IBPRFLVM or RFLVM
        A fitted estimator.
    n_top : int, default=8
        Columns per dimension: the ones ``top_columns`` ranks first.
    labels : sequence of shape (n_samples,) or None, default=None
        Each training row's group, to colour the rug.
    max_panels : int, default=4
        At most this many dimensions, largest share first.

    Returns
    -------
    list of ProfilePanel
        One per dimension drawn; the rug holds the rows that use it with probability at least
        0.5.
    """
    dims = list(model.dimensions_.index)[: max(int(max_panels), 0)]
    top = model.top_columns(n_top)
    positions, usage = model.dimension_positions_, model.dimension_usage_
    groups = None if labels is None else np.asarray(labels, dtype=object)
    panels = []
    for d in dims:
        cols = list(top.loc[top["dimension"] == d, "column"])
        table = model.profile(d, columns=cols)
        mean = table.pivot(index="column", columns="position", values="mean").loc[[str(c) for c in cols]]
        on = usage[d].to_numpy() >= 0.5
        rows = positions[d].to_numpy()[on]
        panels.append(ProfilePanel(d, mean.columns.to_numpy(), list(mean.index), mean.to_numpy(), rows,
                                   None if groups is None else groups[on]))  # fmt: skip
    return panels
