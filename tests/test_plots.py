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
