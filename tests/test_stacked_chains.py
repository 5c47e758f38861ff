"""Several chains combined: their starts, stacking weights, and every summary using the mixture."""

import warnings

import numpy as np
import pytest
from scipy.special import logsumexp

from ibp_rflvm import IBPRFLVM, RFLVM, holdout_mask
from ibp_rflvm.datasets import make_cambridge
from ibp_rflvm.summaries.embedding import latent_width, posterior_embedding
from ibp_rflvm.summaries.stacking import (
    pointwise_loglik,
    psis_loo,
    sample_weights,
    scored_entries,
    stacking_weights,
)

FAST = {"n_iter": 30, "n_frequencies": 12, "random_state": 0}


@pytest.fixture(scope="module")
def data():
    Y = make_cambridge(120, random_state=0)["Y"]
    return holdout_mask(Y, 0.2, random_state=0)


def _fit(Y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ChainsDisagreeWarning is expected on 30 sweeps
        return IBPRFLVM(**{**FAST, **kw}).fit(Y)


@pytest.fixture(scope="module")
def stacked(data):
    return _fit(data[0], n_chains=3)


def test_one_chain_has_weight_one_and_scores_nothing(data):
    m = _fit(data[0], n_iter=10)
    np.testing.assert_array_equal(m.chain_weights_, [1.0])
    assert m.stacking_.n_entries == 0 and m.best_chain_ == 0
    np.testing.assert_array_equal(m.chain_starts_, [12])


def test_chains_start_spread_between_2_and_init_dims(stacked, data):
    np.testing.assert_array_equal(stacked.chain_starts_, [2, 7, 12])
    # The dense model keeps its D in every chain.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dense = RFLVM(n_components=3, n_chains=2, **{**FAST, "n_iter": 6}).fit(data[0])
    np.testing.assert_array_equal(dense.chain_starts_, [3, 3])


def test_weights_are_the_stacking_optimum_of_each_chains_psis_loo(stacked):
    w = stacked.chain_weights_
    assert np.all(w >= 0) and w.sum() == pytest.approx(1.0, abs=1e-12)
    post = stacked.posterior_
    rows, cols = scored_entries(post.data.observed)
    elpd = np.column_stack([
        psis_loo(pointwise_loglik(r.record.samples, post.data, stacked.spec_, rows, cols))[0]
        for r in post.chains
    ])  # fmt: skip
    np.testing.assert_allclose(w, stacking_weights(elpd), atol=1e-12)
    np.testing.assert_allclose(stacked.stacking_.elpd, elpd.mean(axis=0), rtol=1e-12)
    assert stacked.best_chain_ == int(np.argmax(w))
    assert stacked.state_ is post.chains[stacked.best_chain_].state


def test_single_chain_outputs_are_those_of_the_chain_of_largest_weight(stacked):
    m = stacked
    best = int(np.argmax(m.chain_weights_))
    assert m.best_chain_ == best == m.posterior_.best_chain
    assert best != 0, "this fit's best chain is not chain 0, so the test can tell them apart"
    for attr, trace in [
        ("n_active_", "n_active"), ("log_likelihood_", "loglik"), ("alpha_", "alpha"), ("eta_", "eta"),
        ("ibp_beta_", "ibp_beta"), ("n_mixture_components_", "n_components"),
    ]:  # fmt: skip
        np.testing.assert_array_equal(getattr(m, attr), m.traces_[trace][best], err_msg=attr)
    kept = m.posterior_.chain_samples(best)
    assert len(m.latent_samples_) == len(kept)
    for latent, smp in zip(m.latent_samples_, kept, strict=True):
        assert latent.shape == (smp.H.shape[0], np.count_nonzero(np.count_nonzero(smp.H, axis=0)))
    np.testing.assert_array_equal(m.latent_samples_[-1], m.latent_)


def test_scores_use_the_weighted_mixture(stacked, data):
    Y_test = data[1]
    logp = stacked.pointwise_log_predictive(Y_test)
    sw = stacked.posterior_.sample_weights
    sizes = [len(r.record.samples) for r in stacked.posterior_.chains]
    np.testing.assert_allclose(sw, sample_weights(sizes, stacked.chain_weights_))
    by_hand = logsumexp(logp, axis=0, b=sw[:, None])
    assert stacked.log_predictive_density(Y_test) == pytest.approx(by_hand.sum(), rel=1e-12)
    assert stacked.score(Y_test) == pytest.approx(by_hand.mean(), rel=1e-12)


def test_reconstruction_is_the_weighted_mean_of_the_chains(stacked):
    prep = stacked.posterior_.data.prep
    chains = stacked.posterior_.chains
    per_chain = [r.record.reconstruction_sum(stacked.spec_, prep) / len(r.record.samples) for r in chains]
    expected = sum(w * rec for w, rec in zip(stacked.chain_weights_, per_chain, strict=True))
    np.testing.assert_allclose(stacked.predict(), expected, rtol=1e-12, atol=1e-12)


def test_pooling_gives_each_sample_the_same_weight(data, stacked):
    pooled = _fit(data[0], n_chains=3, combine="pool")
    np.testing.assert_allclose(pooled.chain_weights_, np.full(3, 1 / 3))
    # The same chains as the stacked fit: only the combination differs.
    np.testing.assert_array_equal(pooled.traces_["loglik"], stacked.traces_["loglik"])
    logp = pooled.pointwise_log_predictive(data[1])
    plain = logsumexp(logp, axis=0) - np.log(logp.shape[0])
    assert pooled.log_predictive_density(data[1]) == pytest.approx(plain.sum(), rel=1e-12)
    # K+'s posterior is then the plain frequency over every chain's kept sweeps.
    kept = pooled.traces_["n_active"][:, FAST["n_iter"] // 2 :]
    values, counts = np.unique(kept, return_counts=True)
    expected = {int(v): c / kept.size for v, c in zip(values, counts, strict=True)}
    assert pooled.k_plus_posterior_ == pytest.approx(expected)


def test_posteriors_of_k_plus_and_effective_dims_carry_the_chain_weights(stacked):
    kept = stacked.traces_["n_active"][:, FAST["n_iter"] // 2 :]
    post = stacked.k_plus_posterior_
    assert sum(post.values()) == pytest.approx(1.0)
    for value, p in post.items():
        by_chain = (kept == value).mean(axis=1)
        assert p == pytest.approx(float(stacked.chain_weights_ @ by_chain), abs=1e-12)
    eff = stacked.effective_dims_posterior_
    assert sum(eff.values()) == pytest.approx(1.0)
    share = (stacked.effective_dims_ == max(eff, key=eff.get)).mean(axis=1) @ stacked.chain_weights_
    assert eff[max(eff, key=eff.get)] == pytest.approx(float(share))


def test_summary_has_a_row_per_chain(stacked):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = stacked.summary()
    rows = table.loc[[f"chain {c}" for c in range(3)]]
    np.testing.assert_allclose(rows["weight"], stacked.chain_weights_)
    np.testing.assert_array_equal(rows["start"], [2, 7, 12])
    np.testing.assert_allclose(rows["elpd_loo"], stacked.stacking_.elpd)
    assert rows["pareto_k_bad"].between(0, 1).all()


def test_embedding_is_reproducible_and_sized_by_its_rule(stacked, data):
    emb = stacked.embedding_
    assert emb.shape == (data[0].shape[0], stacked.embedding_dims_)
    emb_fit = posterior_embedding(stacked.posterior_)
    share = emb_fit.explained_share()
    d = stacked.embedding_dims_
    assert share[d - 1] >= 0.9 - 1e-12
    # Fewer components would lose 90% of the trace or be narrower than the posterior median K+.
    median_k = latent_width(stacked.posterior_)
    assert d == 1 or share[d - 2] < 0.9 or d == min(median_k, emb_fit.n_available)
    assert d >= min(median_k, emb_fit.n_available)
    post = stacked.k_plus_posterior_
    assert sum(p for k, p in post.items() if k <= median_k) >= 0.5
    assert sum(p for k, p in post.items() if k < median_k) < 0.5
    np.testing.assert_array_equal(stacked.embedding(2), emb[:, :2])
    again = _fit(data[0], n_chains=3)
    np.testing.assert_array_equal(again.embedding_, emb)


def test_new_rows_land_near_their_own_training_coordinates(stacked, data):
    Y = np.where(np.isnan(data[0]), 0.0, data[0])[:20]
    placed = stacked.embed(Y, n_components=3, n_draws=5, random_state=1)
    ref = stacked.embedding(3)
    # Each new row is nearer its own training coordinates than most other training rows are.
    d = ((placed[:, None, :] - ref[None, :, :]) ** 2).sum(-1)
    rank = (d < d[np.arange(20), np.arange(20)][:, None]).sum(axis=1)
    assert np.median(rank) < 0.1 * ref.shape[0]


@pytest.mark.parametrize("bad", [0, -2, 1.5, 10_000])
def test_bad_numbers_of_components_get_a_clear_error(stacked, bad):
    with pytest.raises(ValueError, match="n_components"):
        stacked.embedding(bad)


def test_unknown_combine_is_refused(data):
    with pytest.raises(ValueError, match="combine must be one of"):
        IBPRFLVM(combine="average", **FAST).fit(data[0])


def test_large_data_scores_whole_rows_about_max_entries():
    rng = np.random.default_rng(0)
    observed = rng.random((500, 40)) < 0.8
    rows, cols = scored_entries(observed, max_entries=2_000)
    assert np.all(observed[rows, cols])
    chosen = np.unique(rows)
    # Whole rows: every observed entry of a chosen row is scored, and no other entry.
    assert rows.size == observed[chosen].sum()
    assert 2_000 - 40 < rows.size <= 2_000 + 40
    again = scored_entries(observed, max_entries=2_000)
    np.testing.assert_array_equal(again[0], rows)  # a fixed subset
    all_rows, _ = scored_entries(observed, max_entries=10**6)
    assert all_rows.size == observed.sum()
