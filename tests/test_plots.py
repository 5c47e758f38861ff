"""Figures of the command line: labels that say what is shown, ticks that stay legible."""

import numpy as np
import pytest

from ibp_rflvm.plots import dimension_ticks, k_plus_figure, latent_figure, plt


@pytest.fixture
def close():
    figs = []
    yield figs.append
    for fig in figs:
        plt.close(fig)


def test_latent_heat_map_without_labels_keeps_the_rows_and_says_so(close):
    H = np.random.default_rng(0).standard_normal((40, 3))
    fig = latent_figure([H], ["model"], None)
    close(fig)
    ax = fig.axes[0]
    assert ax.get_ylabel() == "observation (row of the data)"
    np.testing.assert_array_equal(ax.images[0].get_array(), H)  # not reordered
    assert [t.get_text() for t in ax.get_yticklabels()][0] == "1"  # counted from 1
    labelled = latent_figure([H], ["model"], np.arange(40) % 2)
    close(labelled)
    assert labelled.axes[0].get_ylabel() == "observation (sorted by label)"


def test_view_scatter_has_a_legend_only_with_labels(close):
    rng = np.random.default_rng(0)
    H, E = rng.standard_normal((40, 3)), rng.standard_normal((40, 2))
    plain = latent_figure([H], ["model"], None, embeddings=[E])
    close(plain)
    (scatter,) = [ax for ax in plain.axes if ax.get_title().startswith("view")]
    assert len(scatter.collections) == 1 and scatter.get_legend() is None  # no legend "0"
    labelled = latent_figure([H], ["model"], np.arange(40) % 2, ["a", "b"], embeddings=[E])
    close(labelled)
    (scatter,) = [ax for ax in labelled.axes if ax.get_title().startswith("view")]
    legend = scatter.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["a", "b"]


@pytest.mark.parametrize("n_dims", [3, 10, 16, 25, 60, 230])
def test_dimension_labels_stay_legible(n_dims, close):
    fig = latent_figure([np.ones((5, n_dims))], ["model"], None)
    close(fig)
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert 1 <= len(labels) <= 11
    assert labels[0] == "1"
    if n_dims <= 10:
        assert labels == [str(k + 1) for k in range(n_dims)]
    assert dimension_ticks(n_dims) == sorted(set(dimension_ticks(n_dims)))
    assert max(dimension_ticks(n_dims)) < n_dims


def test_k_plus_figure_draws_the_given_posterior_once(close):
    traces = {"chain 0": np.array([2, 3, 3, 4]), "chain 1": np.array([12, 10, 9, 9])}
    posterior = {3: 0.1, 4: 0.1, 9: 0.8}
    fig = k_plus_figure(traces, 2, posterior, "combined")
    close(fig)
    hist = fig.axes[1]
    assert len(hist.containers) == 1
    heights = {round(b.get_x() + b.get_width() / 2): b.get_height() for b in hist.containers[0]}
    assert heights == posterior
    assert hist.get_title() == "combined"


def _inside(fig, artist) -> bool:
    """Whether `artist`, drawn, lies within the figure."""
    fig.canvas.draw()
    box = artist.get_window_extent()
    whole = fig.bbox
    return (box.x0 >= whole.x0 - 1 and box.y0 >= whole.y0 - 1
            and box.x1 <= whole.x1 + 1 and box.y1 <= whole.y1 + 1)  # fmt: skip


def test_profile_panels_say_how_many_dimensions_they_show_and_keep_their_text_inside(close):
    from ibp_rflvm.plots import ProfilePanel, profiles_figure

    rng = np.random.default_rng(0)
    grid = np.linspace(-1, 2, 20)
    centres = np.array([1.5, -0.5, 0.5])
    mean = np.exp(-((grid[None, :] - centres[:, None]) ** 2))  # three bumps
    panel = ProfilePanel("d1", grid, ["late", "early", "middle"], mean, rng.uniform(-1, 2, 30),
                         np.array(["x", "y"] * 15))  # fmt: skip
    fig = profiles_figure([panel, panel._replace(dimension="d2", groups=None)], n_dims=5)
    close(fig)
    assert "showing the first 2 of 5 dimensions" in " ".join(fig._suptitle.get_text().split())
    heat = fig.axes[0]
    # Columns ordered by where they peak: the bumps read as a diagonal.
    assert [t.get_text() for t in heat.get_yticklabels()] == ["early", "middle", "late"]
    assert _inside(fig, fig._suptitle) and all(_inside(fig, ax) for ax in fig.axes)
    assert len(fig.legends) == 1 and _inside(fig, fig.legends[0])
    whole = profiles_figure([panel], n_dims=1)
    close(whole)
    assert "showing" not in whole._suptitle.get_text()


def test_usage_view_with_labels_adds_a_group_panel_and_counts_its_panels(close):
    from ibp_rflvm.plots import usage_view_figure

    rng = np.random.default_rng(1)
    view, usage = rng.standard_normal((30, 2)), rng.random((30, 4))
    fig = usage_view_figure(view, usage, ["d1", "d2", "d3", "d4"], max_panels=2, labels=["a", "b", "c"] * 10)
    close(fig)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles[:3] == ["groups", "d1", "d2"]
    assert "showing the first 2 of 4" in " ".join(fig._suptitle.get_text().split())
    assert _inside(fig, fig._suptitle) and all(_inside(fig, ax) for ax in fig.axes)
