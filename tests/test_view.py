"""The view (issue 42): a t-SNE picture of the posterior embedding that keeps its neighbours,
deterministic for a seed, blind to how the posterior's samples label their dimensions."""

import numpy as np
import pytest
from sklearn.neighbors import NearestNeighbors

from ibp_rflvm.estimator import IBPRFLVM
from ibp_rflvm.evaluation.latent_report import pca_scores
from ibp_rflvm.summaries.embedding import fit_embedding, sample_block
from ibp_rflvm.summaries.view import MAX_COMPONENTS, place_rows, tsne_view, view, view_new_rows

from .test_embedding import _relabelled, _sample

CLUSTERS, PER, COLUMNS = 8, 20, 12


class _Posterior:
    """A stand-in for a fitted estimator: the public attributes the view reads."""

    def __init__(self, coords, new=None):
        self.embedding_ = coords
        self._new = new

    def embed(self, Y_new, n_components=None, **kw):
        return self._new


def _clusters(seed=0):
    # Eight clusters on the axes of 12 dimensions: no 2-D linear projection separates them all.
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(CLUSTERS), PER)
    Y = 4.0 * np.eye(CLUSTERS, COLUMNS)[labels] + 0.5 * rng.standard_normal((labels.size, COLUMNS))
    return Y, labels


@pytest.fixture(scope="module")
def fitted():
    Y, labels = _clusters()
    model = IBPRFLVM(n_iter=30, random_state=0).fit(Y)
    return model, Y, labels, view(model)


def _neighbours(X, k=5):
    return NearestNeighbors(n_neighbors=k + 1).fit(X).kneighbors(X)[1][:, 1:]


def _shared_neighbours(A, B, k=5):
    """Mean share of each row's k nearest neighbours in A that are also among its k in B."""
    a, b = _neighbours(A, k), _neighbours(B, k)
    return np.mean([len(set(x) & set(y)) / k for x, y in zip(a, b, strict=True)])


def test_view_keeps_the_posterior_neighbours_that_pca_loses(fitted):
    model, Y, _, V = fitted
    assert V.shape == (Y.shape[0], 2)
    kept = _shared_neighbours(V, model.embedding_)
    # PCA(2) of the data and the kernel's own first two components are linear projections that
    # fold some of the eight clusters onto each other.
    assert kept > _shared_neighbours(pca_scores(Y, 2, False), model.embedding_) + 0.25
    assert kept > _shared_neighbours(model.embedding(2), model.embedding_) + 0.1


def test_view_is_deterministic_given_the_fit(fitted):
    # The start is the distances' principal axes, not a random draw, and Barnes-Hut t-SNE draws
    # nothing else: the seed is accepted but the picture is a function of the fit alone.
    model, _, _, a = fitted
    np.testing.assert_array_equal(a, view(model, random_state=0))
    np.testing.assert_array_equal(a, view(model, random_state=4))


def test_three_components(fitted):
    model, Y, _, _ = fitted
    assert view(model, 3).shape == (Y.shape[0], 3)


def test_view_does_not_change_when_the_embedding_is_rotated(fitted):
    E, a = fitted[0].embedding_, fitted[3]
    Q, _ = np.linalg.qr(np.random.default_rng(1).standard_normal((E.shape[1], E.shape[1])))
    b = tsne_view(E @ Q + 5.0)
    np.testing.assert_allclose(a, b, atol=1e-6 * np.abs(a).max())


@pytest.mark.parametrize("how", ["permute-and-flip", "rotate", "split"])
def test_view_does_not_depend_on_how_samples_label_their_dimensions(how):
    rng = np.random.default_rng(3)
    samples = [_sample(rng, N=60) for _ in range(5)]
    other = [_relabelled(s, rng, how) for s in samples]

    def posterior(smps):
        blocks = [np.sqrt(0.2) * sample_block(s, True, "signal") for s in smps]
        return _Posterior(fit_embedding(blocks).scores[:, :8])

    a, b = view(posterior(samples)), view(posterior(other))
    np.testing.assert_allclose(a, b, atol=1e-5 * np.abs(a).max())


def test_new_rows_land_among_their_cluster(fitted):
    model, _, labels, V = fitted
    E = model.embedding_
    rng = np.random.default_rng(2)
    picks = rng.choice(labels.size, 40, replace=False)
    spread = E.std(axis=0).mean()
    new = E[picks] + 0.05 * spread * rng.standard_normal((picks.size, E.shape[1]))
    placed = view_new_rows(_Posterior(E, new), None, training_view=V)
    centroids = np.stack([V[labels == c].mean(axis=0) for c in range(CLUSTERS)])
    nearest = np.argmin(((placed[:, None, :] - centroids[None]) ** 2).sum(-1), axis=1)
    assert np.mean(nearest == labels[picks]) >= 0.95


def test_place_rows_puts_a_lone_neighbour_on_its_position():
    train = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    pic = np.array([[1.0, 1.0], [5.0, 5.0], [-3.0, 2.0]])
    np.testing.assert_allclose(place_rows(train, pic, np.array([[10.0, 0.1]]), k=1), [[5.0, 5.0]])
    with pytest.raises(ValueError, match="columns"):
        place_rows(train, pic, np.zeros((1, 3)))


@pytest.mark.parametrize("bad", [0, 1, MAX_COMPONENTS + 1, 2.0, True, "2"])
def test_bad_numbers_of_components_are_refused_by_name(bad):
    model = _Posterior(np.random.default_rng(0).standard_normal((30, 4)))
    with pytest.raises(ValueError, match="n_components"):
        view(model, bad)


def test_bad_coordinates_and_seeds_are_refused():
    X = np.random.default_rng(0).standard_normal((30, 4))
    with pytest.raises(ValueError, match="NaN"):
        tsne_view(np.where(X > 2, np.nan, X))
    with pytest.raises(ValueError, match="at least 5 rows"):
        tsne_view(X[:3])
    with pytest.raises(ValueError, match="random_state"):
        tsne_view(X, random_state=None)
    with pytest.raises(ValueError, match="training_view"):
        view_new_rows(_Posterior(X, X[:2]), None, training_view=np.zeros((29, 2)))


def test_the_estimators_view_is_the_view_of_its_fit():
    # The method the README shows for a plot delegates to the module, and is kept per fit.
    Y = np.random.default_rng(3).standard_normal((40, 4))
    model = IBPRFLVM(n_iter=6, n_frequencies=5, random_state=0).fit(Y)
    np.testing.assert_array_equal(model.view(), view(model))
    first = model.view()
    first[0, 0] = 1e9  # a caller's copy: the kept view is untouched
    assert model.view()[0, 0] != 1e9
    placed = model.view_new_rows(Y[:3], n_sweeps=6, burn_in=2)
    assert placed.shape == (3, 2) and np.all(np.isfinite(placed))
    with pytest.raises(ValueError, match="n_components"):
        model.view(4)
