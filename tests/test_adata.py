"""The AnnData tool function: documented keys, inputs left untouched, clear errors, and a
neighbour graph that scanpy's UMAP and Leiden run on directly."""

import numpy as np
import pytest
import scipy.sparse as sp

anndata = pytest.importorskip("anndata")

from ibp_rflvm import IBPRFLVM  # noqa: E402
from ibp_rflvm.adata import ibp_rflvm  # noqa: E402
from ibp_rflvm.plumbing.neighbors import N_NEIGHBORS, knn  # noqa: E402
from ibp_rflvm.summaries.embedding import posterior_embedding  # noqa: E402

FAST = {"n_iter": 4, "n_frequencies": 6, "random_state": 0}
#: Enough cells for a 15-neighbour graph that UMAP and Leiden can do something with.
N_CELLS = 48


@pytest.fixture
def adata():
    rng = np.random.default_rng(0)
    counts = rng.negative_binomial(2, 0.5, size=(N_CELLS, 10)).astype(np.float32)
    counts[rng.random(counts.shape) < 0.5] = 0
    X = sp.csr_matrix(counts)
    ad = anndata.AnnData(X=X, layers={"counts": X.copy()})
    ad.obs_names = [f"cell{i}" for i in range(ad.n_obs)]
    ad.var_names = [f"gene{j}" for j in range(ad.n_vars)]
    ad.var["highly_variable"] = np.arange(ad.n_vars) % 3 != 0
    return ad


def test_round_trip_writes_the_documented_keys_and_leaves_x_untouched(adata):
    X_before = adata.X.copy()
    X_object = adata.X
    subset = adata.var["highly_variable"].to_numpy()
    assert ibp_rflvm(adata, layer="counts", mask_var="highly_variable", **FAST) is None
    assert adata.X is X_object
    assert (adata.X != X_before).nnz == 0 and sp.issparse(adata.X)

    embedding = adata.obsm["X_ibp_rflvm"]
    sample = adata.obsm["X_ibp_rflvm_sample"]
    info = adata.uns["ibp_rflvm"]
    assert sample.shape[0] == adata.n_obs and sample.shape[1] == info["k_plus"][-1]
    assert embedding.shape == (adata.n_obs, info["embedding_dims"]) and info["embedding_dims"] >= 1
    assert info["k_plus"].shape == (FAST["n_iter"],) and info["log_likelihood"].shape == (FAST["n_iter"],)
    # The usage is that of the final sample's sparse columns (the embedding has no exact zeros).
    np.testing.assert_array_equal(info["dimension_usage"], np.count_nonzero(sample, axis=0) / adata.n_obs)
    assert info["params"]["layer"] == "counts" and info["params"]["mask_var"] == "highly_variable"
    assert info["params"]["n_vars_used"] == subset.sum()

    dispersion = adata.var["ibp_rflvm_dispersion"].to_numpy()
    assert np.all(np.isnan(dispersion[~subset])) and np.all(dispersion[subset] > 0)

    # The same fit as the estimator on the subset of the layer, bit for bit.
    direct = IBPRFLVM("negbinom", **FAST).fit(adata.layers["counts"][:, subset])
    np.testing.assert_array_equal(embedding, direct.embedding_)
    np.testing.assert_array_equal(sample, direct.latent_)
    assert info["embedding_dims"] == direct.embedding_dims_
    np.testing.assert_array_equal(info["chain_weights"], direct.chain_weights_)

    # Like scanpy's PCA: effects per gene in varm (NaN outside the subset), usage per cell in obsm.
    effects = adata.varm["ibp_rflvm_effects"]
    n_dims = len(direct.dimensions_)
    assert effects.shape == (adata.n_vars, n_dims) and np.all(np.isnan(effects[~subset]))
    np.testing.assert_array_equal(effects[subset], direct.dimension_effects_.to_numpy())
    np.testing.assert_array_equal(adata.obsm["X_ibp_rflvm_usage"], direct.dimension_usage_.to_numpy())
    np.testing.assert_array_equal(adata.obsm["X_ibp_rflvm_std"], direct.embedding_std_)
    np.testing.assert_array_equal(adata.obsm["X_ibp_rflvm_positions"], direct.dimension_positions_.to_numpy())
    np.testing.assert_array_equal(adata.obsm["X_ibp_rflvm_positions_std"], direct.dimension_positions_std_)
    assert list(info["dimensions"]["names"]) == list(direct.dimensions_.index)


def test_the_graph_is_the_posterior_embeddings_knn_in_scanpys_layout(adata):
    model = IBPRFLVM("negbinom", **FAST)
    ibp_rflvm(adata, model=model, n_neighbors=8)
    uns = adata.uns["ibp_rflvm_neighbors"]
    assert uns["connectivities_key"] == "ibp_rflvm_neighbors_connectivities"
    assert uns["distances_key"] == "ibp_rflvm_neighbors_distances"
    assert uns["params"]["n_neighbors"] == 8 and uns["params"]["method"] == "umap"
    assert uns["params"]["use_rep"] == "X_ibp_rflvm"
    D = adata.obsp["ibp_rflvm_neighbors_distances"]
    C = adata.obsp["ibp_rflvm_neighbors_connectivities"]
    assert D.shape == C.shape == (adata.n_obs, adata.n_obs)
    np.testing.assert_array_equal(D.getnnz(axis=1), 7)  # self left out, as scanpy stores it
    assert abs(C - C.T).max() == 0 and np.all(C.data > 0) and np.all(C.data <= 1)
    # Neighbours by the distance in all of the embedding's components, not only embedding_'s.
    idx, dist = knn(posterior_embedding(model.posterior_).scores, 8)
    rows = np.repeat(np.arange(adata.n_obs), 7)
    np.testing.assert_array_equal(np.asarray(D[rows, idx[:, 1:].ravel()]).ravel(), dist[:, 1:].ravel())


def test_the_default_graph_has_scanpys_default_size(adata):
    ibp_rflvm(adata, **FAST)
    assert adata.uns["ibp_rflvm_neighbors"]["params"]["n_neighbors"] == N_NEIGHBORS == 15
    np.testing.assert_array_equal(adata.obsp["ibp_rflvm_neighbors_distances"].getnnz(axis=1), 14)


def test_copy_and_key_added(adata):
    out = ibp_rflvm(adata, key_added="ibp", copy=True, **FAST)
    assert out is not adata
    assert "ibp" in out.obsm and "ibp_sample" in out.obsm
    assert "ibp" in out.uns and "ibp_neighbors" in out.uns and "ibp_dispersion" in out.var
    assert {"ibp_neighbors_distances", "ibp_neighbors_connectivities"} <= set(out.obsp.keys())
    assert out.uns["ibp_neighbors"]["connectivities_key"] == "ibp_neighbors_connectivities"
    assert out.uns["ibp_neighbors"]["params"]["use_rep"] == "ibp"
    assert "X_ibp_rflvm" not in out.obsm and "ibp_rflvm_neighbors" not in out.uns
    assert not set(adata.obsm.keys()) and not set(adata.obsp.keys()) and not set(adata.uns.keys())
    assert "ibp_dispersion" not in adata.var


def test_a_view_is_read_as_its_sparse_counts(adata):
    # A view's X is a subclass of the scipy matrix defined in anndata, not in scipy.sparse.
    view = adata[:25]
    assert view.is_view
    out = ibp_rflvm(view, copy=True, **FAST)
    direct = IBPRFLVM("negbinom", **FAST).fit(adata.X[:25])
    np.testing.assert_array_equal(out.obsm["X_ibp_rflvm"], direct.embedding_)
    np.testing.assert_array_equal(out.obsm["X_ibp_rflvm_sample"], direct.latent_)


def test_a_given_model_is_fitted_in_place(adata):
    model = IBPRFLVM("negbinom", **FAST)
    ibp_rflvm(adata, model=model)
    assert set(model.top_columns(2)["column"]) <= set(adata.var_names)  # genes by name
    np.testing.assert_array_equal(adata.obsm["X_ibp_rflvm"], model.embedding_)
    np.testing.assert_array_equal(adata.obsm["X_ibp_rflvm_sample"], model.latent_)
    np.testing.assert_array_equal(adata.obsm["X_ibp_rflvm_view"], model.view())  # the picture
    assert model.transform(adata.X[:3]).shape[0] == 3


def test_results_can_be_saved_as_h5ad(adata, tmp_path):
    ibp_rflvm(adata, mask_var=adata.var["highly_variable"].to_numpy(), **FAST)
    path = tmp_path / "fit.h5ad"
    settings = getattr(anndata.settings, "override", None)
    if settings is not None and hasattr(anndata.settings, "allow_write_nullable_strings"):
        # pandas 3 stores names as its string dtype; older anndata readers want the opt-in.
        with anndata.settings.override(allow_write_nullable_strings=True):
            adata.write_h5ad(path)
    else:
        adata.write_h5ad(path)
    back = anndata.read_h5ad(path)
    for key in ("X_ibp_rflvm", "X_ibp_rflvm_sample", "X_ibp_rflvm_usage", "X_ibp_rflvm_std"):
        np.testing.assert_array_equal(back.obsm[key], adata.obsm[key])
    np.testing.assert_array_equal(back.varm["ibp_rflvm_effects"], adata.varm["ibp_rflvm_effects"])
    for key in ("ibp_rflvm_neighbors_distances", "ibp_rflvm_neighbors_connectivities"):
        assert (back.obsp[key] != adata.obsp[key]).nnz == 0
    assert back.uns["ibp_rflvm_neighbors"]["params"]["n_neighbors"] == N_NEIGHBORS
    np.testing.assert_array_equal(back.uns["ibp_rflvm"]["k_plus"], adata.uns["ibp_rflvm"]["k_plus"])
    np.testing.assert_array_equal(
        back.uns["ibp_rflvm"]["chain_weights"], adata.uns["ibp_rflvm"]["chain_weights"]
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"layer": "raw_counts"}, "layer 'raw_counts' is not in adata.layers"),
        ({"mask_var": "nope"}, "not a column of adata.var"),
        ({"mask_var": np.ones(3, dtype=bool)}, "has shape"),
        ({"mask_var": np.zeros(10, dtype=bool)}, "selects no gene"),
        ({"model": IBPRFLVM(), "n_iter": 3}, "not both"),
    ],
)
def test_bad_arguments_get_a_clear_error(adata, kwargs, message):
    with pytest.raises(ValueError, match=message):
        ibp_rflvm(adata, **kwargs)


@pytest.mark.parametrize("n_neighbors", [1, 0, 2.5, True, "15"])
def test_a_bad_n_neighbors_is_refused_before_fitting(adata, n_neighbors):
    model = IBPRFLVM("negbinom", **FAST)
    with pytest.raises(ValueError, match="n_neighbors"):
        ibp_rflvm(adata, model=model, n_neighbors=n_neighbors)
    assert not hasattr(model, "latent_") and not set(adata.obsm.keys())


def test_negative_counts_in_a_layer_are_refused(adata):
    adata.layers["bad"] = adata.X.copy()
    adata.layers["bad"].data[0] = -1
    with pytest.raises(ValueError, match="negative value"):
        ibp_rflvm(adata, layer="bad", **FAST)


def test_scanpy_plots_the_embedding(adata, tmp_path):
    sc = pytest.importorskip("scanpy")
    import matplotlib

    matplotlib.use("Agg")
    ibp_rflvm(adata, **FAST)
    sc.pl.embedding(adata, basis="ibp_rflvm_sample", show=False)
    if adata.obsm["X_ibp_rflvm"].shape[1] < 2:
        pytest.skip("a one-component embedding: nothing more to plot in 2-D")
    sc.pl.embedding(adata, basis="ibp_rflvm", show=False)


def test_scanpys_umap_and_leiden_run_on_the_written_graph(adata):
    sc = pytest.importorskip("scanpy")
    pytest.importorskip("umap")
    pytest.importorskip("igraph")
    ibp_rflvm(adata, **FAST)
    assert "neighbors" not in adata.uns  # nothing for scanpy to fall back on
    sc.tl.umap(adata, neighbors_key="ibp_rflvm_neighbors", random_state=0)
    assert adata.obsm["X_umap"].shape == (adata.n_obs, 2)
    assert np.all(np.isfinite(adata.obsm["X_umap"]))
    # The igraph flavour with its recommended settings (leidenalg's default warns in scanpy 1.11).
    sc.tl.leiden(
        adata, neighbors_key="ibp_rflvm_neighbors", flavor="igraph", n_iterations=2, directed=False,
        random_state=0,
    )  # fmt: skip
    labels = adata.obs["leiden"]
    assert labels.notna().all() and len(labels) == adata.n_obs
    assert 1 <= labels.nunique() < adata.n_obs
    assert adata.uns["leiden"]["params"]["n_iterations"] == 2


def test_several_chains_write_the_best_chain_and_the_weighted_posterior(adata, monkeypatch):
    from ibp_rflvm.summaries.posterior import Posterior

    # Whichever chain stacking prefers, the tool must write the one best_chain names: the test
    # makes that chain 1, so that writing chain 0 would be the wrong answer.
    monkeypatch.setattr(Posterior, "best_chain", property(lambda self: 1))
    model = IBPRFLVM("negbinom", n_chains=2, n_jobs=1, **{**FAST, "n_iter": 8, "random_state": 3})
    ibp_rflvm(adata, model=model)
    info, post = adata.uns["ibp_rflvm"], model.posterior_
    best = model.best_chain_
    assert best == 1 and post.weights[0] != post.weights[1]
    assert not np.array_equal(post.traces["loglik"][0], post.traces["loglik"][1])
    np.testing.assert_array_equal(info["k_plus"], post.traces["n_active"][best])
    np.testing.assert_array_equal(info["log_likelihood"], model.log_likelihood_)
    np.testing.assert_array_equal(adata.obsm["X_ibp_rflvm_sample"], model.latent_)
    # The dispersion is the mixture's mean: each chain's samples share that chain's weight.
    r = np.array([smp.params.r for smp in post.samples])
    np.testing.assert_allclose(adata.var["ibp_rflvm_dispersion"], post.sample_weights @ r, rtol=1e-12)
