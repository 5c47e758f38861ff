"""Estimator behaviour: reproducibility, metrics, hold-out masks, and clear errors for bad input."""

import warnings

import numpy as np
import pytest

from ibp_rflvm import IBPRFLVM, RFLVM, CapReachedWarning, holdout_mask
from ibp_rflvm.datasets import make_cambridge
from ibp_rflvm.summaries.embedding import posterior_embedding
from ibp_rflvm.summaries.scoring import gaussian_logpdf


@pytest.fixture(scope="module")
def small():
    d = make_cambridge(60, random_state=3)
    Y_train, Y_test = holdout_mask(d["Y"][:, :12], fraction=0.2, random_state=1)
    return Y_train, Y_test


@pytest.mark.parametrize("cls", [IBPRFLVM, RFLVM])
def test_same_seed_gives_bit_identical_chain(cls, small):
    Y_train, _ = small
    a = cls(n_iter=6, n_frequencies=10, random_state=11).fit(Y_train)
    b = cls(n_iter=6, n_frequencies=10, random_state=11).fit(Y_train)
    c = cls(n_iter=6, n_frequencies=10, random_state=12).fit(Y_train)
    np.testing.assert_array_equal(a.log_likelihood_, b.log_likelihood_)
    np.testing.assert_array_equal(a.n_active_, b.n_active_)
    np.testing.assert_array_equal(a.latent_, b.latent_)
    np.testing.assert_array_equal(a.state_.Y, b.state_.Y)
    assert not np.array_equal(a.log_likelihood_, c.log_likelihood_)


def test_fitted_attributes_and_metrics(small):
    Y_train, Y_test = small
    # 8 sweeps were enough for the paper's sweep to beat the baseline below, not for the default
    # sampler's (its dimension moves spend the first sweeps on K+); 20 are for both.
    m = IBPRFLVM(n_iter=20, n_frequencies=10, random_state=0).fit(Y_train)
    assert m.n_active_.shape == (20,) and m.log_likelihood_.shape == (20,)
    assert len(m.latent_samples_) == 10  # burn-in is the first half
    assert m.latent_.shape[0] == Y_train.shape[0]
    assert m.latent_.shape[1] == m.n_active_[-1]
    usage = np.count_nonzero(m.latent_, axis=0)
    assert np.all(np.diff(usage) <= 0), "dimensions ordered by how many rows use them"
    recon = m.predict()
    assert recon.shape == Y_train.shape and np.all(np.isfinite(recon))
    lpd = m.log_predictive_density(Y_test)
    n_test = np.count_nonzero(~np.isnan(Y_test))
    assert m.score(Y_test) == pytest.approx(lpd / n_test)
    # The LPD is a log-mean over samples of per-sample densities: by Jensen it is at least the
    # mean per-sample log density.
    logp = m.pointwise_log_predictive(Y_test)
    assert lpd >= logp.mean(axis=0).sum() - 1e-9
    # Far better than a per-column Gaussian fitted to the training entries.
    mu = np.nanmean(Y_train, axis=0)
    var = np.nanvar(Y_train, axis=0)
    rows, cols = np.nonzero(~np.isnan(Y_test))
    baseline = gaussian_logpdf(Y_test[rows, cols], mu[cols], var[cols]).sum()
    assert lpd > baseline


def test_dense_model_keeps_its_dimensions(small):
    Y_train, _ = small
    m = RFLVM(n_components=3, n_iter=4, n_frequencies=10, random_state=0).fit(Y_train)
    assert np.all(m.n_active_ == 3)
    assert np.all(m.state_.Z == 1)
    # Its embedding is never narrower than its latent (docs/embedding.md section 1).
    assert m.embedding_dims_ >= min(3, posterior_embedding(m.posterior_).n_available)


def test_holdout_mask_properties():
    rng = np.random.default_rng(0)
    Y = rng.standard_normal((50, 8))
    Y[rng.random(Y.shape) < 0.1] = np.nan
    Y_train, Y_test = holdout_mask(Y, fraction=0.2, random_state=5)
    missing = np.isnan(Y)
    assert np.all(np.isnan(Y_test[missing])), "entries missing in the data are never held out"
    held = ~np.isnan(Y_test)
    assert np.all(np.isnan(Y_train[held]))
    np.testing.assert_array_equal(Y_test[held], Y[held])
    assert abs(held.sum() - 0.2 * (~missing).sum()) <= 2
    again_train, again_test = holdout_mask(Y, fraction=0.2, random_state=5)
    np.testing.assert_array_equal(np.isnan(again_test), np.isnan(Y_test))
    other = holdout_mask(Y, fraction=0.2, random_state=6)[1]
    assert not np.array_equal(np.isnan(other), np.isnan(Y_test))
    assert np.all((~np.isnan(Y_train)).any(axis=1)) and np.all((~np.isnan(Y_train)).any(axis=0))


def test_unobserved_entries_are_not_zeros():
    # Column 0 is a copy of column 1 shifted far from zero; its hidden entries must be imputed
    # near the truth, which zero-filling inside the likelihood would never do.
    d = make_cambridge(120, random_state=0)
    Y = d["Y"][:, :10].copy()
    Y[:, 0] = Y[:, 1] + 3.0
    Y_train = Y.copy()
    hidden = np.arange(0, 120, 3)
    Y_train[hidden, 0] = np.nan
    m = RFLVM(n_components=2, n_iter=30, n_frequencies=20, random_state=0).fit(Y_train)
    imputed = m.predict()[hidden, 0]
    assert np.mean(np.abs(imputed - Y[hidden, 0])) < 0.5 * np.mean(np.abs(Y[hidden, 0]))
    assert np.all(m.state_.Y[hidden, 0] != 0.0)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (np.zeros(10), "2-D"),
        (np.zeros((4, 3, 2)), "2-D"),
        (np.array([[1.0, np.inf], [0.0, 1.0], [2.0, 1.0]]), "infinite"),
        (np.array([[np.nan, np.nan], [0.0, 1.0], [2.0, 1.0]]), "row"),
        (np.array([[np.nan, 1.0], [np.nan, 1.0], [np.nan, 1.0]]), "column"),
        (np.array([["a", "b"], ["c", "d"]]), "numeric"),
        ([[1.0, 2.0], [3.0]], "array"),
    ],
)
def test_bad_input_gets_a_clear_error(bad, message):
    with pytest.raises(ValueError, match=message):
        IBPRFLVM(n_iter=2).fit(bad)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"likelihood": "laplace"}, "likelihood"),
        ({"n_iter": 0}, "n_iter"),
        ({"n_frequencies": -3}, "n_frequencies"),
        ({"burn_in": 10, "n_iter": 5}, "burn_in"),
        ({"max_dims": 0}, "max_dims"),
        ({"max_dims": 2.5}, "max_dims"),
        ({"max_dims": 4, "init_dims": 6}, "exceed max_dims=4"),
    ],
)
def test_bad_parameters_get_a_clear_error(params, message, small):
    with pytest.raises(ValueError, match=message):
        IBPRFLVM(**params).fit(small[0])


def test_heldout_shape_is_checked(small):
    Y_train, Y_test = small
    m = RFLVM(n_iter=2, n_frequencies=5, random_state=0).fit(Y_train)
    with pytest.raises(ValueError, match="expecting 12 features"):
        m.log_predictive_density(Y_test[:, :3])
    with pytest.raises(ValueError, match="training shape"):
        m.log_predictive_density(Y_test[:10])


def test_max_dims_holds_k_plus_on_a_fit(small):
    """The cap reaches the sampler: every kept and traced K+ of a capped fit stays under it,
    while the same seed without the cap goes past it (so the check could fail)."""
    Y_train, _ = small
    kwargs = {"n_iter": 30, "n_frequencies": 10, "random_state": 3, "init_dims": 3}
    free = IBPRFLVM(max_dims=None, **kwargs).fit(Y_train)
    capped = IBPRFLVM(max_dims=3, **kwargs).fit(Y_train)
    assert free.n_active_.max() > 3
    assert capped.n_active_.max() <= 3
    # A cap the chain sits at for most kept sweeps is named (one dimension, which every row of
    # this data uses: the chain sits at the cap whatever its path).
    with pytest.warns(CapReachedWarning, match="max_dims=1"):
        IBPRFLVM(max_dims=1, **(kwargs | {"init_dims": 1})).fit(Y_train)
    # A cap the chain never reaches says nothing.
    with warnings.catch_warnings():
        warnings.simplefilter("error", CapReachedWarning)
        IBPRFLVM(max_dims=40, **kwargs).fit(Y_train)
    assert IBPRFLVM().get_params()["max_dims"] == 50


def test_sampler_option_selects_the_paper_sweep_or_the_default(small):
    Y_train, _ = small
    with pytest.raises(ValueError, match="sampler must be one of"):
        IBPRFLVM(sampler="fast", n_iter=2).fit(Y_train)
    paper = IBPRFLVM(sampler="paper", n_iter=2, n_frequencies=10, random_state=0)
    default = IBPRFLVM(n_iter=2, n_frequencies=10, random_state=0)
    assert not paper._spec().moves and not paper._spec().scaled_start
    assert default._spec().moves and default._spec().scaled_start
    # The dense model has no dimension moves whatever the sampler; only its start differs.
    assert not RFLVM()._spec().moves and RFLVM()._spec().scaled_start
    assert IBPRFLVM().init_dims == 12


def test_an_unknown_likelihood_is_refused_at_fit_with_the_valid_names():
    from ibp_rflvm.likelihoods import REGISTRY

    model = IBPRFLVM(likelihood="nb")  # scikit-learn: __init__ only stores
    Y = make_cambridge(20, random_state=0)["Y"][:, :5]
    with pytest.raises(ValueError, match="likelihood must be one of") as caught:
        model.fit(Y)
    message = str(caught.value)
    assert "'nb'" in message and all(repr(name) in message for name in REGISTRY)
