"""Cambridge bars (the paper's synthetic data, make_cambridge): what the IBP-RFLVM learns about the dimension.

The exact sampler moves between modes of the dimension slowly (see README, "Known
limitation"), so the concentration check starts the chain in the true configuration and asks
whether the posterior keeps its mass on four dimensions there, rather than asking a short chain
to find that configuration from a poor start.
"""

from dataclasses import replace

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from ibp_rflvm import IBPRFLVM, RFLVM, holdout_mask, model
from ibp_rflvm.datasets import make_cambridge
from ibp_rflvm.samplers import dp_mixture, ibp
from ibp_rflvm.summaries.diagnostics import batch_mean_se
from ibp_rflvm.summaries.scoring import log_mean_exp


@pytest.fixture(scope="module")
def cambridge():
    d = make_cambridge(500, random_state=0)
    Y_train, Y_test = holdout_mask(d["Y"], fraction=0.2, random_state=0)
    return d, Y_train, Y_test


@pytest.mark.slow
def test_posterior_of_k_plus_concentrates_on_four(cambridge):
    d, Y_train, _ = cambridge
    data = model.Data.from_array(Y_train)
    spec = model.ModelSpec(n_frequencies=36, n_dims=4)
    rng = np.random.default_rng(0)
    with threadpool_limits(limits=1, user_api="blas"):
        state = model.init_state(rng, data, spec)
        Z = d["Z"].astype(np.int8)
        _, pi = ibp.update_sticks(rng, Z)
        zeta = np.zeros(36, dtype=np.int64)
        mu, Sigma = dp_mixture.sample_components(rng, d["W"], zeta, spec.lam0)
        state = replace(state, X=d["X"].copy(), Z=Z, pi=pi, W=d["W"].copy(), zeta=zeta, mu=mu, Sigma=Sigma)
        k_plus = []
        for _ in range(240):
            state, _ = model.sweep(rng, state, data, spec)
            k_plus.append(state.k_plus)
    k_plus = np.array(k_plus[40:])
    # With the absorb/emit moves the chain visits a fifth dimension on a few rows often: six
    # chains over 1,000 sweeps put 0.46 on K+ = 4 and 0.35 on 5 (docs/sampler.md section 4).
    # So the claim is that the mass stays on the four true dimensions plus at most one such
    # dimension, that four is the mode, and that no true dimension is ever dropped.
    p_le5, se = batch_mean_se((k_plus <= 5).astype(float), n_batches=20)
    assert p_le5 - 4 * se > 0.5, (p_le5, se, np.bincount(k_plus))
    counts = np.bincount(k_plus)
    assert counts.argmax() == 4, counts
    assert k_plus.min() >= 4, "a true dimension was dropped"


@pytest.mark.slow
def test_ibp_rflvm_beats_dense_rflvm_with_misspecified_dimension(cambridge):
    """Paired over held-out entries: the IBP model against dense models with too few (2) and too
    many (8) dimensions; the margin must exceed four standard errors of the paired difference."""
    _, Y_train, Y_test = cambridge
    kw = {"n_iter": 100, "random_state": 1}
    ibp_model = IBPRFLVM(init_dims=6, **kw).fit(Y_train)
    lpd_ibp = log_mean_exp(ibp_model.pointwise_log_predictive(Y_test), axis=0)
    for d in (2, 8):
        dense = RFLVM(n_components=d, **kw).fit(Y_train)
        diff = lpd_ibp - log_mean_exp(dense.pointwise_log_predictive(Y_test), axis=0)
        se = diff.std(ddof=1) / np.sqrt(diff.size)
        assert diff.mean() > 4 * se, (d, diff.mean(), se)
