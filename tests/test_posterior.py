"""The fitted posterior: one frozen object of what a fit leaves, and the functions of it that the
estimator's methods name."""

import dataclasses
import pickle
import warnings

import numpy as np
import pytest

from ibp_rflvm import IBPRFLVM, holdout_mask
from ibp_rflvm.datasets import make_cambridge
from ibp_rflvm.summaries.diagnostics import chain_table
from ibp_rflvm.summaries.dimensions import effective_dimensions, k_plus_posterior
from ibp_rflvm.summaries.posterior import Posterior, thin
from ibp_rflvm.summaries.predictive import log_predictive_density, pointwise_log_predictive
from ibp_rflvm.summaries.stacking import ChainWeights

N_ITER = 12


@pytest.fixture(scope="module")
def fit():
    Y_train, Y_test = holdout_mask(make_cambridge(50, random_state=2)["Y"][:, :10], 0.2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the chains disagree on so few sweeps
        m = IBPRFLVM(n_iter=N_ITER, n_frequencies=8, random_state=3, n_chains=2, n_jobs=1).fit(Y_train)
    return m, Y_train, Y_test


def test_the_posterior_holds_what_the_fit_left(fit):
    m, Y_train, _ = fit
    post = m.posterior_
    assert isinstance(post, Posterior)
    assert post.n_chains == 2 and post.n_iter == N_ITER and post.n_kept == N_ITER - post.burn_in
    assert post.shape == Y_train.shape and post.spec is m.spec_
    np.testing.assert_array_equal(post.chain_starts, m.chain_starts_)
    np.testing.assert_array_equal(post.weights, m.chain_weights_)
    assert post.best_chain == int(np.argmax(post.weights)) == m.best_chain_
    assert post.state is post.chains[post.best_chain].state is m.state_
    for name, trace in post.traces.items():
        assert trace.shape == (2, N_ITER)
        np.testing.assert_array_equal(trace, m.traces_[name])
    np.testing.assert_array_equal(post.kept("n_active"), m.traces_["n_active"][:, post.burn_in :])


def test_samples_and_their_weights_line_up(fit):
    post = fit[0].posterior_
    assert post.samples == (*post.chain_samples(0), *post.chain_samples(1))
    sw = post.sample_weights
    assert sw.shape == (len(post.samples),) and sw.sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(sw[: post.n_kept], post.weights[0] / post.n_kept)
    np.testing.assert_allclose(sw[post.n_kept :], post.weights[1] / post.n_kept)


def test_it_is_frozen_and_computes_derived_values_once(fit):
    post = fit[0].posterior_
    with pytest.raises(dataclasses.FrozenInstanceError):
        post.burn_in = 0
    calls = []
    first = post.memo("probe", lambda: calls.append(1) or np.arange(3))
    assert post.memo("probe", lambda: calls.append(1) or None) is first and calls == [1]
    assert post.reconstruction() is post.reconstruction()


def test_consumers_take_the_posterior_without_the_estimator(fit):
    m, _, Y_test = fit
    post = pickle.loads(pickle.dumps(m.posterior_))  # a stored posterior works alone
    assert log_predictive_density(post, Y_test) == pytest.approx(m.log_predictive_density(Y_test), rel=1e-12)
    np.testing.assert_array_equal(pointwise_log_predictive(post, Y_test), m.pointwise_log_predictive(Y_test))
    np.testing.assert_array_equal(effective_dimensions(post), m.effective_dims_)
    assert k_plus_posterior(post) == m.k_plus_posterior_
    np.testing.assert_allclose(chain_table(post)["weight"], m.chain_weights_)
    with pytest.raises(ValueError, match="expecting 10 features"):
        pointwise_log_predictive(post, Y_test[:, :4])


def test_inconsistent_parts_are_refused(fit):
    post = fit[0].posterior_
    one = ChainWeights(np.ones(1), *([np.full(1, np.nan)] * 4), 0, 1, "stack")
    with pytest.raises(ValueError, match="2 chains but 1 weights"):
        Posterior(post.chains, post.data, post.spec, post.chain_starts, one, post.burn_in)
    with pytest.raises(ValueError, match="at least one chain"):
        Posterior((), post.data, post.spec, post.chain_starts[:0], one, post.burn_in)


def test_thinning_is_even_and_keeps_the_last_sample():
    np.testing.assert_array_equal(thin(5, 10), np.arange(5))
    idx = thin(101, 11)
    assert idx.size == 11 and idx[0] == 0 and idx[-1] == 100 and np.ptp(np.diff(idx)) == 0
    np.testing.assert_array_equal(thin(9, 1), [8])
