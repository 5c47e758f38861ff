"""The AnnData tool function: documented keys, inputs left untouched, clear errors."""

import numpy as np
import pytest
import scipy.sparse as sp

anndata = pytest.importorskip("anndata")

from ibp_rflvm import IBPRFLVM  # noqa: E402
from ibp_rflvm.adata import ibp_rflvm  # noqa: E402

FAST = {"n_iter": 4, "n_frequencies": 6, "random_state": 0}


@pytest.fixture
def adata():
    rng = np.random.default_rng(0)
    counts = rng.negative_binomial(2, 0.5, size=(30, 10)).astype(np.float32)
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

    latent = adata.obsm["X_ibp_rflvm"]
    info = adata.uns["ibp_rflvm"]
    assert latent.shape[0] == adata.n_obs and latent.shape[1] == info["k_plus"][-1]
    assert info["k_plus"].shape == (FAST["n_iter"],) and info["log_likelihood"].shape == (FAST["n_iter"],)
    np.testing.assert_array_equal(info["dimension_usage"], np.count_nonzero(latent, axis=0) / adata.n_obs)
    assert info["params"]["layer"] == "counts" and info["params"]["mask_var"] == "highly_variable"
    assert info["params"]["n_vars_used"] == subset.sum()

    dispersion = adata.var["ibp_rflvm_dispersion"].to_numpy()
    assert np.all(np.isnan(dispersion[~subset])) and np.all(dispersion[subset] > 0)

    # The same fit as the estimator on the subset of the layer, bit for bit.
    direct = IBPRFLVM("negbinom", **FAST).fit(adata.layers["counts"][:, subset])
    np.testing.assert_array_equal(latent, direct.latent_)


def test_copy_and_key_added(adata):
    out = ibp_rflvm(adata, key_added="ibp", copy=True, **FAST)
    assert out is not adata
    assert "ibp" in out.obsm and "ibp" in out.uns and "ibp_dispersion" in out.var
    assert "ibp" not in adata.obsm and "ibp" not in adata.uns and "ibp_dispersion" not in adata.var


def test_a_view_is_read_as_its_sparse_counts(adata):
    # A view's X is a subclass of the scipy matrix defined in anndata, not in scipy.sparse.
    view = adata[:25]
    assert view.is_view
    out = ibp_rflvm(view, copy=True, **FAST)
    direct = IBPRFLVM("negbinom", **FAST).fit(adata.X[:25])
    np.testing.assert_array_equal(out.obsm["X_ibp_rflvm"], direct.latent_)


def test_a_given_model_is_fitted_in_place(adata):
    model = IBPRFLVM("negbinom", **FAST)
    ibp_rflvm(adata, model=model)
    np.testing.assert_array_equal(adata.obsm["X_ibp_rflvm"], model.latent_)
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
    np.testing.assert_array_equal(back.obsm["X_ibp_rflvm"], adata.obsm["X_ibp_rflvm"])
    np.testing.assert_array_equal(back.uns["ibp_rflvm"]["k_plus"], adata.uns["ibp_rflvm"]["k_plus"])


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
    if adata.obsm["X_ibp_rflvm"].shape[1] < 2:
        pytest.skip("one active dimension: nothing to plot in 2-D")
    sc.pl.embedding(adata, basis="ibp_rflvm", show=False)
