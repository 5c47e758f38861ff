"""A k-nearest-neighbour graph in scanpy's format, from coordinates such as the posterior embedding.

scanpy's ``sc.pp.neighbors`` stores two sparse ``n_obs x n_obs`` matrices in ``adata.obsp``: the
distances to each cell's ``k - 1`` nearest other cells, and their UMAP connectivities (McInnes,
Healy and Melville 2018, section 3.1: a fuzzy set membership ``exp(-(d_ij - rho_i) / sigma_i)``
per directed edge, ``rho_i`` the distance to the nearest neighbour and ``sigma_i`` chosen so that
the memberships of a cell sum to ``log2 k``; the two directions combined by the fuzzy union
``a + b - a b``). ``sc.tl.umap`` and ``sc.tl.leiden`` read only those and an ``uns`` entry that
names them, so writing them here from the posterior embedding lets both run without
``sc.pp.neighbors`` (which would recompute the graph from a representation of its own choice).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

#: Neighbours per cell, self included (scanpy's default).
N_NEIGHBORS = 15
#: Bisection steps for each cell's bandwidth, and the tolerance on its memberships' sum.
BANDWIDTH_STEPS = 64
BANDWIDTH_TOL = 1e-5


def check_n_neighbors(n_neighbors) -> int:
    """`n_neighbors` as an int of at least 2 (self included), or a ValueError naming it."""
    if isinstance(n_neighbors, bool) or not isinstance(n_neighbors, int | np.integer) or n_neighbors < 2:
        raise ValueError(f"n_neighbors must be an integer of at least 2 (self included); got {n_neighbors!r}")
    return int(n_neighbors)


def knn(coords: np.ndarray, n_neighbors: int = N_NEIGHBORS) -> tuple[np.ndarray, np.ndarray]:
    """Indices and Euclidean distances of each row's `n_neighbors` nearest rows, itself first."""
    from sklearn.neighbors import NearestNeighbors

    coords = np.asarray(coords, dtype=np.float64)
    if coords.ndim != 2 or coords.shape[0] < 2:
        raise ValueError(f"coords must be a 2-D array with at least 2 rows; got shape {coords.shape}")
    k = min(check_n_neighbors(n_neighbors), coords.shape[0])
    # Querying the fitted rows themselves (no argument) leaves each row out of its own list by
    # index; querying with `coords` would not, and a row with k or more duplicates could then
    # miss its own list altogether. Each row is put back first, at distance zero.
    dist, idx = NearestNeighbors(n_neighbors=k - 1).fit(coords).kneighbors()
    own = np.arange(coords.shape[0])[:, None]
    return np.hstack([own, idx]), np.hstack([np.zeros_like(own, dtype=np.float64), dist])


def memberships(dist: np.ndarray) -> np.ndarray:
    """Directed fuzzy memberships ``exp(-max(0, d_ij - rho_i) / sigma_i)`` of each row's
    neighbours (columns 1.., column 0 being the row itself), ``sigma_i`` found by bisection so
    that a row's memberships sum to ``log2 k`` (to ``BANDWIDTH_TOL``, as UMAP stops)."""
    n, k = dist.shape
    d = dist[:, 1:]
    target = np.log2(k)
    # rho: distance to the nearest other row that is not at distance zero (duplicates get 1).
    rho = np.min(np.where(d > 0, d, np.inf), axis=1)
    rho = np.where(np.isfinite(rho), rho, 0.0)
    excess = np.maximum(d - rho[:, None], 0.0)
    lo, hi, sigma = np.zeros(n), np.full(n, np.inf), np.ones(n)
    done = np.zeros(n, dtype=bool)
    for _ in range(BANDWIDTH_STEPS):
        total = np.exp(-excess / sigma[:, None]).sum(axis=1)
        done |= np.abs(total - target) < BANDWIDTH_TOL
        too_big = (total > target) & ~done  # memberships too large: the bandwidth must shrink
        grow = (total <= target) & ~done
        hi = np.where(too_big, sigma, hi)
        lo = np.where(grow, sigma, lo)
        step = np.where(np.isfinite(hi), (lo + hi) / 2, sigma * 2)
        sigma = np.where(done, sigma, step)
    # A floor keeps a row whose neighbours all sit at one distance from a zero bandwidth; it is
    # relative to the row's mean neighbour distance (self included), or the data's for a row
    # of duplicates, as in UMAP.
    floor = np.where(rho > 0, dist.mean(axis=1), dist.mean()) * 1e-3
    sigma = np.maximum(sigma, floor)
    return np.exp(-excess / np.where(sigma > 0, sigma, 1.0)[:, None])


def fuzzy_connectivities(idx: np.ndarray, dist: np.ndarray) -> sp.csr_matrix:
    """UMAP's symmetric fuzzy graph of a kNN list: :func:`memberships` combined by the fuzzy
    union ``a + b - a b`` of the two directions of each edge."""
    n, k = idx.shape
    rows = np.repeat(np.arange(n), k - 1)
    A = sp.csr_matrix((memberships(dist).ravel(), (rows, idx[:, 1:].ravel())), shape=(n, n))
    AT = A.T.tocsr()
    graph = (A + AT - A.multiply(AT)).tocsr()
    graph.eliminate_zeros()
    return graph


def distance_matrix(idx: np.ndarray, dist: np.ndarray) -> sp.csr_matrix:
    """The ``n x n`` sparse distances to each row's neighbours (self left out), as scanpy stores."""
    n, k = idx.shape
    rows = np.repeat(np.arange(n), k - 1)
    out = sp.csr_matrix((dist[:, 1:].ravel(), (rows, idx[:, 1:].ravel())), shape=(n, n))
    out.sort_indices()
    return out


def write_neighbors(
    adata, coords: np.ndarray, key: str, use_rep: str, n_neighbors: int = N_NEIGHBORS
) -> None:
    """Write the kNN graph of `coords` into ``adata.obsp`` and ``adata.uns[key]`` as
    ``sc.pp.neighbors(adata, use_rep=use_rep, key_added=key)`` would lay it out (with
    ``key == "neighbors"``, its default names), for ``neighbors_key=key`` in scanpy's tools."""
    idx, dist = knn(coords, n_neighbors)
    default = key == "neighbors"
    dkey = "distances" if default else f"{key}_distances"
    ckey = "connectivities" if default else f"{key}_connectivities"
    adata.obsp[dkey] = distance_matrix(idx, dist)
    adata.obsp[ckey] = fuzzy_connectivities(idx, dist)
    adata.uns[key] = {
        "connectivities_key": ckey,
        "distances_key": dkey,
        "params": {
            "n_neighbors": int(idx.shape[1]),
            "method": "umap",
            "metric": "euclidean",
            "use_rep": use_rep,
        },
    }
