"""Several chains, ArviZ export and label-invariant convergence summaries."""

import warnings

import numpy as np
import pytest

from ibp_rflvm import IBPRFLVM, RFLVM, holdout_mask
from ibp_rflvm.datasets import make_cambridge
from ibp_rflvm.summaries.diagnostics import batch_mean_se, distance_rows


@pytest.fixture(scope="module")
def fitted():
    Y_train, Y_test = holdout_mask(make_cambridge(70, random_state=1)["Y"][:, :14], 0.2, random_state=0)
    m = IBPRFLVM(n_iter=16, n_frequencies=10, random_state=0, n_chains=3, n_jobs=2).fit(Y_train)
    return m, Y_train, Y_test


def test_chains_are_independent_and_reproducible(fitted):
    m, Y_train, _ = fitted
    loglik = m.traces_["loglik"]
    assert loglik.shape == (3, 16)
    assert not np.array_equal(loglik[0], loglik[1]), "chains must differ"
    again = IBPRFLVM(n_iter=16, n_frequencies=10, random_state=0, n_chains=3, n_jobs=1).fit(Y_train)
    np.testing.assert_array_equal(again.traces_["loglik"], loglik)  # processes or not, same chains
    assert len(m.posterior_.samples) == 3 * 8  # predictions pool the kept samples of every chain


def test_inference_data_layout(fitted):
    m, _, Y_test = fitted
    idata = m.to_inference_data(Y_test)
    post = idata.posterior
    assert post.sizes["chain"] == 3 and post.sizes["draw"] == 8
    assert idata.warmup_posterior.sizes["draw"] == 8
    np.testing.assert_array_equal(post["k_plus"].values, m.traces_["n_active"][:, 8:])
    # The latents, which have no identity across draws, are a group of their own.
    assert "latent" not in post and "latent_mask" not in post
    latents = idata["latent"]
    assert latents.sizes["chain"] == 3 and latents.sizes["draw"] == 8
    # Padding: each draw's mask counts exactly its active dimensions; padded columns are zero.
    mask = latents["latent_mask"].values
    np.testing.assert_array_equal(mask.sum(-1), m.traces_["n_active"][:, 8:])
    latent = latents["latent"].values
    assert np.all(latent[~np.broadcast_to(mask[:, :, None, :], latent.shape)] == 0.0)
    n_rows = len(distance_rows(Y_test.shape[0]))
    assert post["latent_distance"].shape[-1] == n_rows * (n_rows - 1) // 2
    n_test = np.count_nonzero(~np.isnan(Y_test))
    assert idata.log_likelihood["y_heldout"].shape == (3, 8, n_test)


def test_arviz_defaults_take_the_export(fitted):
    """``az.summary`` and ``az.plot_trace`` with their defaults: one row per label-invariant
    quantity (no per-entry latent R-hats), no warning from ArviZ's statistics, a plot drawn."""
    import arviz as az
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    m, _, Y_test = fitted
    idata = m.to_inference_data(Y_test)
    assert all(v.dtype.kind in "if" for v in idata.posterior.data_vars.values())  # no boolean
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        table = az.summary(idata)
    n_rows = len(distance_rows(Y_test.shape[0]))
    scalars = {"k_plus", "alpha", "eta", "loglik", "n_components"}
    assert len(table) == len(scalars) + n_rows * (n_rows - 1) // 2
    assert scalars <= set(table.index)
    axes = az.plot_trace(idata)
    assert axes.shape == (len(scalars) + 1, 2)  # one row per variable, latent_distance included
    plt.close("all")


def test_summary_reports_rhat_and_ess_on_invariant_quantities(fitted):
    m, _, _ = fitted
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = m.summary()
    for col in ("r_hat", "ess_bulk", "ess_tail"):
        assert col in table.columns
    assert {"loglik", "k_plus", "alpha", "eta"} <= set(table.index)
    assert any(name.startswith("latent_distance") for name in table.index)
    assert np.isfinite(table.loc["loglik", "r_hat"])


def test_one_chain_gets_the_split_rhat_of_its_halves(caplog):
    """One chain: R-hat compares its halves (as the guide says) instead of ArviZ's NaN and its
    logged shape warning; the halves are the first and last n // 2 kept draws."""
    import arviz as az

    from ibp_rflvm.summaries.diagnostics import halves_as_chains

    Y = make_cambridge(50, random_state=1)["Y"][:, :10]
    m = IBPRFLVM(n_iter=19, n_frequencies=6, random_state=0).fit(Y)  # 10 kept: halves of 5
    with caplog.at_level("WARNING"):
        table = m.summary()
    assert not [r for r in caplog.records if "Shape validation" in r.getMessage()]
    kept = m.traces_["loglik"][:, 9:]
    halves = halves_as_chains(kept)
    np.testing.assert_array_equal(halves, [kept[0, :5], kept[0, 5:]])
    assert np.isfinite(table.loc["loglik", "r_hat"])
    assert table.loc["loglik", "r_hat"] == pytest.approx(float(az.rhat(halves)), abs=0.006)
    assert np.isfinite(table.loc["effective_dims", "r_hat"])
    np.testing.assert_array_equal(halves_as_chains(np.arange(7)[None]), [[0, 1, 2], [4, 5, 6]])
    with pytest.raises(ValueError, match="one chain"):
        halves_as_chains(np.zeros((2, 6)))


def test_latent_distances_are_rotation_invariant():
    from ibp_rflvm.summaries.diagnostics import _pairwise

    rng = np.random.default_rng(0)
    H = rng.standard_normal((20, 3))
    Q, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    rows = distance_rows(20)
    np.testing.assert_allclose(_pairwise(H, rows), _pairwise(H @ Q, rows), atol=1e-12)


def test_dense_model_has_no_alpha():
    Y = make_cambridge(40, random_state=0)["Y"][:, :8]
    m = RFLVM(n_iter=6, n_frequencies=6, random_state=0).fit(Y)
    assert "alpha" not in m.to_inference_data().posterior


def test_chains_run_on_a_dask_cluster_when_configured():
    distributed = pytest.importorskip("distributed")
    import joblib

    Y = make_cambridge(40, random_state=0)["Y"][:, :8]
    kw = {"n_iter": 6, "n_frequencies": 6, "random_state": 4, "n_chains": 2}
    local = IBPRFLVM(**kw).fit(Y)
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    with cluster, distributed.Client(cluster) as client:
        with distributed.get_task_stream(client) as stream, joblib.parallel_backend("dask"):
            remote = IBPRFLVM(**kw).fit(Y)
        assert len(stream.data) >= 2, "the chains ran on the cluster's workers"
    np.testing.assert_array_equal(remote.traces_["loglik"], local.traces_["loglik"])


def test_disagreement_names_the_traces_whose_chains_differ():
    from ibp_rflvm.summaries.diagnostics import disagreement

    rng = np.random.default_rng(0)
    same = rng.standard_normal((4, 200))
    apart = same + np.array([0.0, 0.0, 3.0, 3.0])[:, None]  # two chains in another mode
    message = disagreement({"log-likelihood": apart, "K+": same})
    assert message is not None and "log-likelihood" in message and "K+" not in message
    assert disagreement({"K+": same}) is None
    assert disagreement({"K+": np.full((4, 50), 7.0)}) is None  # constant traces agree
    assert disagreement({"K+": apart[:, :3]}) is None  # too few draws to say


def test_fit_warns_when_its_chains_disagree():
    from ibp_rflvm import ChainsDisagreeWarning

    rng = np.random.default_rng(1)
    est = IBPRFLVM(n_chains=2, n_iter=40)
    est.spec_ = type("Spec", (), {"ibp": True})()
    loglik = rng.standard_normal((2, 40)) + np.array([[0.0], [10.0]])
    est.traces_ = {"loglik": loglik, "n_active": np.full((2, 40), 5)}
    est.chain_weights_, est.chain_starts_ = np.array([0.25, 0.75]), np.array([2, 12])
    est.stacking_ = type("Stack", (), {"combine": "stack"})()
    with pytest.warns(ChainsDisagreeWarning, match="log-likelihood") as caught:
        est._warn_if_chains_disagree(20)
    # It says what stacking did about it: the starts and the weights.
    assert "started from 2, 12 dimensions" in str(caught[0].message)
    assert "weights 0.25, 0.75" in str(caught[0].message)
    est.traces_["loglik"] = rng.standard_normal((2, 40))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est._warn_if_chains_disagree(20)


def test_batch_mean_se_allows_for_autocorrelation():
    # 200 AR(1) traces with rho = 0.8: the standard error of a trace's mean is 3 times the
    # iid formula's (sqrt((1 + rho) / (1 - rho))). The batch-means standard error must match
    # the spread of the 200 means; the spread's own relative error is 1/sqrt(2 * 199) = 5%, so
    # 20% is 4 of those (batches of 100 draws against an autocorrelation time of 9 add ~2%).
    from scipy.signal import lfilter

    rng = np.random.default_rng(7)
    rho, n, reps = 0.8, 4000, 200
    traces = lfilter([1.0], [1.0, -rho], rng.standard_normal((reps, n)), axis=1)
    results = np.array([batch_mean_se(t) for t in traces])
    spread = results[:, 0].std(ddof=1)
    assert results[:, 1].mean() == pytest.approx(spread, rel=0.2)
    iid = traces.std(axis=1).mean() / np.sqrt(n)
    assert results[:, 1].mean() > 2.0 * iid


def test_batch_mean_se_rejects_too_few_draws():
    with pytest.raises(ValueError, match="2 batches"):
        batch_mean_se(np.arange(10.0), n_batches=40)


def test_undefined_rhat_is_nan_with_the_reason_not_an_absurd_number():
    """Issue 63, item 7: chains each constant at a different value made ArviZ's R-hat 9.2e7 (and
    a constant trace a RuntimeWarning); both are NaN now, with the reason in ``note``."""
    from ibp_rflvm.summaries.diagnostics import _arviz_summary, diagnostic_notes, disagreement

    cases = {
        "apart": np.array([[4.0] * 10, [3.0] * 10]),  # ArviZ: R-hat 92155435.8, ESS 5
        "constant": np.full((2, 10), 2.0),
        "one_chain_step": np.array([[2.0] * 5 + [3.0] * 5]),  # its halves as two chains
        "one_chain_short": np.array([[1.0, 2.0, 3.0, 2.0, 1.0]]),  # halves of 2: too short
        "one_draw": np.array([[1.0]]),  # halves of none (fit(n_iter=2))
        "two_chains_one_draw": np.array([[1.0], [2.0]]),
        "moving": np.array([[2.0, 3, 2, 2, 3, 2, 2, 3, 3, 2], [3.0, 2, 3, 3, 2, 2, 3, 2, 2, 3]]),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tables = {name: _arviz_summary({"x": v}, {}, {}) for name, v in cases.items()}
    notes = {name: t.loc["x", "note"] for name, t in tables.items()}
    for name in ("apart", "constant", "one_chain_step", "one_chain_short", "one_draw", "two_chains_one_draw"):
        assert np.isnan(tables[name].loc["x", ["r_hat", "ess_bulk", "ess_tail"]].astype(float)).all()
    assert "different values" in notes["apart"] and "chains disagree" in notes["apart"]
    assert notes["constant"].startswith("constant trace")
    assert "halves disagree" in notes["one_chain_step"]
    assert "5 kept draws, 8 needed" in notes["one_chain_short"]
    assert "1 kept draws, 8 needed" in notes["one_draw"]
    assert "1 kept draws per chain, 4 needed" in notes["two_chains_one_draw"]
    assert notes["moving"] is None and 0.9 < tables["moving"].loc["x", "r_hat"] < 10
    both = diagnostic_notes(np.stack([cases["apart"], cases["moving"]], axis=-1))
    assert list(both) == [notes["apart"], ""]
    # The chains-disagree warning of fit says it in words, not with 9.2e7.
    message = disagreement({"K+": cases["apart"], "flat": cases["constant"]})
    assert "K+ (constant over each half of each chain, at different values)" in message
    assert "flat" not in message and "R-hat" not in message


@pytest.mark.parametrize("n_chains", [1, 2])
def test_summary_of_a_short_fit_warns_nothing_and_says_why_rhat_is_missing(n_chains):
    """Issue 63, item 7: ``summary()`` after a few sweeps. The dense model's ``k_plus`` is
    constant (ArviZ divided zero by zero: RuntimeWarning); one chain of 10 sweeps keeps 5 draws,
    too few for its halves (ArviZ warned "More chains than draws" and logged shape warnings)."""
    Y = make_cambridge(30, random_state=1)["Y"][:, :8]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the chains may disagree after 10 sweeps
        m = RFLVM(n_iter=10, n_frequencies=5, random_state=3, n_chains=n_chains).fit(Y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        warnings.filterwarnings("error", message="More chains", category=UserWarning)
        table = m.summary()
    assert table.columns[-1] == "note"
    assert np.isnan(table.loc["k_plus", "r_hat"]) and table.loc["k_plus", "note"]
    r_hat, note = table.loc["effective_dims", ["r_hat", "note"]]
    assert (np.isnan(r_hat) and note) or (np.isfinite(r_hat) and r_hat < 10 and note is None)
    if n_chains == 1:
        assert "too short" in note and table.loc[["loglik", "eta"], "r_hat"].isna().all()
