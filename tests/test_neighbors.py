"""The kNN graph in scanpy's layout: neighbour lists, UMAP memberships, and agreement with
umap-learn and with ``sc.pp.neighbors`` on the same coordinates."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from ibp_rflvm.plumbing.neighbors import (
    distance_matrix,
    fuzzy_connectivities,
    knn,
    memberships,
    write_neighbors,
)

K = 10


def _coords(seed: int = 0, n: int = 60, d: int = 4) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, d))


def _with_duplicates() -> np.ndarray:
    """Random rows plus a block of 20 identical rows (more than K: some rows' neighbours are
    all copies of themselves) and one duplicated pair."""
    X = _coords(1, 40, 3)
    X[5:25] = X[5]
    X[30] = X[31]
    return X


def _umap_graph(X: np.ndarray, idx: np.ndarray, dist: np.ndarray) -> sp.csr_matrix:
    umap_ = pytest.importorskip("umap.umap_")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # umap-learn's own deprecation and numba notices
        return umap_.fuzzy_simplicial_set(X, idx.shape[1], 0, "euclidean", knn_indices=idx, knn_dists=dist)[
            0
        ].tocsr()


@pytest.mark.parametrize("X", [_coords(), _with_duplicates()], ids=["distinct", "duplicates"])
@pytest.mark.parametrize("k", [2, 5, K])
def test_each_row_comes_first_in_its_own_list_and_distances_ascend(X, k):
    idx, dist = knn(X, k)
    n = X.shape[0]
    assert idx.shape == dist.shape == (n, k)
    np.testing.assert_array_equal(idx[:, 0], np.arange(n))
    np.testing.assert_array_equal(dist[:, 0], 0.0)
    assert np.all(np.diff(dist, axis=1) >= 0)
    # No row is listed twice, and the distances are the rows' Euclidean distances.
    assert all(len(set(row)) == k for row in idx)
    np.testing.assert_allclose(dist, np.linalg.norm(X[idx] - X[:, None, :], axis=2), atol=1e-12)
    # Exact neighbours: the listed distances are each row's k smallest.
    full = np.linalg.norm(X[:, None, :] - X[None, :, :], axis=2)
    np.testing.assert_allclose(dist, np.sort(full, axis=1)[:, :k], atol=1e-12)


def test_more_neighbours_than_rows_gives_every_row():
    idx, dist = knn(_coords(n=6), 15)
    assert idx.shape == (6, 6)
    assert all(sorted(row) == list(range(6)) for row in idx)


@pytest.mark.parametrize("X", [_coords(), _with_duplicates()], ids=["distinct", "duplicates"])
def test_memberships_sum_to_log2_k_and_lie_in_unit_interval(X):
    idx, dist = knn(X, K)
    m = memberships(dist)
    assert m.shape == (X.shape[0], K - 1)
    assert np.all(m > 0) and np.all(m <= 1)
    # A row whose neighbours are all its duplicates has no scale: every membership is 1.
    all_copies = np.all(dist[:, 1:] == 0, axis=1)
    np.testing.assert_array_equal(m[all_copies], 1.0)
    # Duplicates and the nearest other row have membership 1 whatever the bandwidth, so a row
    # with more than log2(k) of them cannot reach the sum (UMAP's limit too; such rows also
    # include all-duplicate rows, and a block's rows that see one outside row).
    rho = np.min(np.where(dist[:, 1:] > 0, dist[:, 1:], np.inf), axis=1)
    saturated = np.sum(dist[:, 1:] <= rho[:, None], axis=1) > np.log2(K)
    assert np.all(saturated[all_copies])
    assert np.all(m[saturated].sum(axis=1) > np.log2(K))
    np.testing.assert_allclose(m[~saturated].sum(axis=1), np.log2(K), atol=1e-4)
    # The nearest other row at a positive distance has membership 1.
    nearest = np.argmax(dist[:, 1:] > 0, axis=1)
    some = ~all_copies
    np.testing.assert_allclose(m[some, nearest[some]], 1.0)
    # Only the block of 20 copies is saturated (so both cases are exercised there).
    assert saturated.any() == (X.shape[0] == 40) and (~saturated).any()


@pytest.mark.parametrize("X", [_coords(), _with_duplicates()], ids=["distinct", "duplicates"])
def test_connectivities_are_symmetric_in_unit_interval(X):
    idx, dist = knn(X, K)
    G = fuzzy_connectivities(idx, dist)
    assert G.shape == (X.shape[0],) * 2
    assert abs(G - G.T).max() == 0
    assert np.all(G.data > 0) and np.all(G.data <= 1)
    assert G.diagonal().max() == 0
    # Every listed neighbour is connected, in both directions.
    rows = np.repeat(np.arange(X.shape[0]), K - 1)
    assert np.all(G[rows, idx[:, 1:].ravel()] > 0)


@pytest.mark.parametrize("X", [_coords(), _with_duplicates()], ids=["distinct", "duplicates"])
def test_connectivities_equal_umap_learns(X):
    idx, dist = knn(X, K)
    expected = _umap_graph(X, idx, dist)
    G = fuzzy_connectivities(idx, dist)
    # umap-learn finds its bandwidths in float32 and stops at the same tolerance, 1e-5.
    assert abs(G - expected).max() < 1e-5
    assert (G != 0).nnz == (expected != 0).nnz


def test_distance_matrix_leaves_self_out_and_keeps_duplicates():
    X = _with_duplicates()
    idx, dist = knn(X, K)
    D = distance_matrix(idx, dist)
    # Exactly K - 1 stored entries per row (zeros for duplicates included), as scanpy expects.
    np.testing.assert_array_equal(D.getnnz(axis=1), K - 1)
    assert D.diagonal().max() == 0
    assert D.has_sorted_indices
    np.testing.assert_array_equal(D[np.arange(X.shape[0])[:, None], idx[:, 1:]].toarray(), dist[:, 1:])


def test_the_graph_equals_scanpys_for_the_same_coordinates():
    sc = pytest.importorskip("scanpy")
    anndata = pytest.importorskip("anndata")
    # scanpy 1.11 computes exact (brute-force) neighbours for Euclidean data below 8,192 cells
    # (4,096 for other metrics) and pynndescent's approximate ones above; 60 cells is exact.
    X = _coords()
    ad = anndata.AnnData(X=np.zeros((X.shape[0], 1)), obsm={"X_rep": X})
    sc.pp.neighbors(ad, n_neighbors=K, use_rep="X_rep", method="umap")
    write_neighbors(ad, X, "mine", "X_rep", K)

    ours_d, theirs_d = ad.obsp["mine_distances"], ad.obsp["distances"]
    assert (ours_d != 0).nnz == (theirs_d != 0).nnz
    assert ((ours_d != 0) != (theirs_d != 0)).nnz == 0  # the same neighbours
    # scanpy's brute force expands |x - y|^2, a rounding away from the direct differences.
    np.testing.assert_allclose(ours_d.toarray(), theirs_d.toarray(), rtol=1e-12, atol=1e-12)
    assert abs(ad.obsp["mine_connectivities"] - ad.obsp["connectivities"]).max() < 1e-5

    mine, theirs = ad.uns["mine"], ad.uns["neighbors"]
    assert mine["connectivities_key"] == "mine_connectivities" and mine["distances_key"] == "mine_distances"
    for name in ("n_neighbors", "method", "metric", "use_rep"):
        assert mine["params"][name] == theirs["params"][name]


def test_the_default_key_uses_scanpys_default_names():
    ad = pytest.importorskip("anndata").AnnData(X=np.zeros((20, 1)))
    write_neighbors(ad, _coords(n=20), "neighbors", "X_rep", 5)
    assert set(ad.obsp.keys()) == {"distances", "connectivities"}
    assert ad.uns["neighbors"]["connectivities_key"] == "connectivities"


@pytest.mark.parametrize(
    ("coords", "n_neighbors", "message"),
    [
        (np.zeros(10), 5, "2-D array"),
        (np.zeros((1, 3)), 5, "at least 2 rows"),
        (np.zeros((3, 2, 2)), 5, "2-D array"),
        (_coords(), 1, "n_neighbors must be an integer of at least 2"),
        (_coords(), 0, "n_neighbors"),
        (_coords(), 2.5, "n_neighbors"),
        (_coords(), True, "n_neighbors"),
    ],
)
def test_bad_inputs_get_a_clear_error(coords, n_neighbors, message):
    with pytest.raises(ValueError, match=message):
        knn(coords, n_neighbors)
