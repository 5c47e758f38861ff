"""Figures: latent-space heat maps (the paper's Figures 1-2) and trace plots."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


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
    labels: np.ndarray,
    path: str | Path,
    label_names: Sequence[str] | None = None,
    suptitle: str | None = None,
    embeddings: Sequence[np.ndarray | None] | None = None,
) -> Path:
    """One heat map per latent matrix (rows = observations sorted by label, columns = dimensions).

    A horizontal line marks each change of label, so class structure in the latent space is
    visible at a glance. Zeros (the IBP's inactive entries) show as the neutral colour. With
    `embeddings` (one ``N x 2`` array or None per panel), a second row shows each model's 2-D
    posterior embedding as a scatter coloured by label (empty where None).
    """
    labels = np.asarray(labels)
    order = np.argsort(labels, kind="stable")
    sorted_labels = labels[order]
    boundaries = np.flatnonzero(np.diff(sorted_labels)) + 0.5
    scatter = embeddings is not None and any(e is not None for e in embeddings)
    n_rows = 2 if scatter else 1
    fig, axes = plt.subplots(
        n_rows, len(latents), figsize=(2.2 * len(latents) + 1.0, 5.0 * n_rows), squeeze=False
    )
    if scatter:
        _embedding_row(axes[1], embeddings, labels, label_names)
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
        ax.set_xticks(range(H.shape[1]))
        ax.set_xticklabels([str(k + 1) for k in range(H.shape[1])], fontsize=7)
        fig.colorbar(im, ax=ax, fraction=0.08, pad=0.02)
    axes[0, 0].set_ylabel("observation (sorted by label)")
    if label_names is not None and len(boundaries):
        edges = np.concatenate([[0], boundaries + 0.5, [len(labels)]])
        mids = 0.5 * (edges[:-1] + edges[1:])
        names = [
            label_names[int(v)] if int(v) < len(label_names) else str(v) for v in np.unique(sorted_labels)
        ]
        axes[0, 0].set_yticks(mids)
        axes[0, 0].set_yticklabels(names, fontsize=7, rotation=90, va="center")
    if suptitle:
        fig.suptitle(suptitle)
    return _save(fig, path)


def _embedding_row(axes, embeddings, labels: np.ndarray, label_names) -> None:
    values = np.unique(labels)
    colours = plt.get_cmap("tab10" if values.size <= 10 else "tab20")
    for ax, E in zip(axes, embeddings, strict=True):
        if E is None:
            ax.axis("off")
            continue
        E = np.asarray(E)
        for i, v in enumerate(values):
            pick = labels == v
            name = label_names[int(v)] if label_names is not None and int(v) < len(label_names) else str(v)
            ax.scatter(E[pick, 0], E[pick, 1], s=4, color=colours(i % colours.N), label=name)
        ax.set_title("posterior embedding (2-D)", fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    first = next((ax for ax, E in zip(axes, embeddings, strict=True) if E is not None), None)
    if first is not None:
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


def k_plus_plot(traces: dict[str, np.ndarray], path: str | Path, burn_in: int) -> Path:
    """``K+`` after each sweep (left) and its posterior over the kept sweeps (right), per chain.

    The histogram is what the sampler says about the number of dimensions; the trace shows
    whether it got there (a flat trace at the start's value means it did not move).
    """
    fig, (ax, hx) = plt.subplots(1, 2, figsize=(9.0, 3.2), gridspec_kw={"width_ratios": [2, 1]})
    kept = [np.asarray(v)[burn_in:] for v in traces.values()]
    lo = min((int(k.min()) for k in kept if k.size), default=0)
    hi = max((int(k.max()) for k in kept if k.size), default=1)
    bins = np.arange(lo - 0.5, hi + 1.5)
    _draw_traces(ax, traces, "active dimensions K+", burn_in)
    for name, k in zip(traces, kept, strict=True):
        if k.size:
            hx.hist(k, bins=bins, density=True, histtype="step", lw=1.5, label=name)
    hx.set_xlabel("K+ (kept sweeps)")
    hx.set_ylabel("posterior probability")
    return _save(fig, path)
