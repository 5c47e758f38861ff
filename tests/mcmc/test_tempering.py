"""Replica exchange over the Gaussian noise prior (ibp_rflvm.mcmc.tempering).

The swap move is checked three ways: on a toy ladder with known targets; by its ingredients (the
level log targets equal the collapsed marginal under each level's prior); and on the real model,
where the cold level of a tempered run must sample the same posterior as the plain sweep.
"""

import math

import numpy as np
import pytest

from ibp_rflvm import IBPRFLVM, model
from ibp_rflvm.features import feature_map
from ibp_rflvm.likelihoods import make_likelihood
from ibp_rflvm.likelihoods.gaussian import GaussianLikelihood, GaussianPrior
from ibp_rflvm.mcmc.tempering import (
    Ladder,
    TemperedState,
    build_tempered,
    ladder_for,
    level_logliks,
    level_specs,
    swap_log_ratio,
    swap_pass,
)
from ibp_rflvm.summaries.diagnostics import batch_mean_se
from ibp_rflvm.targets import make_target
from ibp_rflvm.targets.collapsed import loglik_direct


def test_swaps_keep_each_level_on_its_target():
    # Level l targets N(0, s_l^2); within a level, a random-walk Metropolis step that mixes
    # slowly at the cold level, so the swaps do real work. The cold level's variance and
    # fourth moment must be those of N(0, 1).
    rng = np.random.default_rng(3)
    scales = np.array([1.0, 2.0, 4.0, 8.0])
    x = rng.standard_normal(scales.size) * scales
    cold = []
    accepted = 0
    for t in range(40_000):
        E = -0.5 * (x[:, None] / scales[None, :]) ** 2
        order, acc = swap_pass(rng, E, t % 2)
        x = x[order]
        accepted += int(acc.sum())
        prop = x + 0.3 * rng.standard_normal(x.size)
        logr = -0.5 * ((prop / scales) ** 2 - (x / scales) ** 2)
        x = np.where(np.log(rng.random(x.size)) < logr, prop, x)
        cold.append(x[0])
    cold = np.asarray(cold[1000:])
    assert accepted > 5000
    for f, target in ((cold**2, 1.0), (cold**4, 3.0), (np.abs(cold) < 1.0, math.erf(1 / math.sqrt(2)))):
        mean, se = batch_mean_se(f.astype(float))
        assert abs(mean - target) < 4.0 * se, (mean, target, se)


def test_swap_log_ratio_is_the_product_target_ratio():
    E = np.array([[-1.0, -3.0], [-7.0, -2.0]])
    # state 0 moves to level 1 and state 1 to level 0: (-3) + (-7) - (-1) - (-2)
    assert swap_log_ratio(E, 0) == pytest.approx(-7.0)
    order, acc = swap_pass(np.random.default_rng(0), np.zeros((3, 3)), 1)
    assert acc.tolist() == [True] and order.tolist() == [0, 2, 1]


def test_the_ladder_is_asked_of_the_likelihood_not_its_class():
    gaussian = GaussianLikelihood(a0=2.0, b0=0.5)
    spec = model.ModelSpec(n_frequencies=4, likelihood=gaussian)
    ladder = ladder_for(spec, 3, 4.0)
    assert ladder.b0 == pytest.approx((0.5, 1.0, 2.0))
    priors = [s.likelihood.prior for s in level_specs(spec, ladder)]
    assert priors == [GaussianPrior(2.0, b) for b in ladder.b0]
    assert not make_likelihood("poisson").tempers

    class Untempered(GaussianLikelihood):
        tempers = False

    with pytest.raises(ValueError, match="needs likelihood='gaussian'"):
        ladder_for(model.ModelSpec(n_frequencies=4, likelihood=Untempered()), 3, 4.0)


def test_level_logliks_are_the_collapsed_marginals_under_each_prior():
    rng = np.random.default_rng(1)
    Y = rng.standard_normal((12, 3))
    data = model.Data.from_array(Y)
    spec = model.ModelSpec(n_frequencies=4, n_dims=2)
    ladder = Ladder.geometric(1.0, 5.0, 3)
    specs = level_specs(spec, ladder)
    states = tuple(model.init_state(rng, data, s) for s in specs)
    E = level_logliks(states, [make_target(s, data) for s in specs], spec.bias)
    for i, st in enumerate(states):
        Phi = feature_map(st.H, st.W, False)
        for level, b in enumerate(ladder.b0):
            assert E[i, level] == pytest.approx(loglik_direct(Phi, st.Y, GaussianPrior(1.0, b)), rel=1e-9)
    assert ladder.b0[0] == 1.0 and ladder.b0[-1] == pytest.approx(5.0)


def _posterior_draws(n_levels: int, n_sweeps: int, seed: int):
    """Cold-level statistics of the IBP-RFLVM posterior for one small, informative data set.

    The data are smooth functions of one latent coordinate with noise 0.1 and the noise prior
    is tight (``b0 = 0.05``), so the levels (``b`` up to 30 times larger) have clearly different
    posteriors: swaps accepted without the ratio shift the cold level's noise by about 16
    Monte Carlo errors.
    """
    data_rng = np.random.default_rng(11)
    t = data_rng.uniform(-2, 2, 8)
    Y = np.column_stack([np.sin(t), np.cos(t), np.sin(2 * t), t / 2]) + 0.1 * data_rng.standard_normal((8, 4))
    Y[0, 1] = np.nan
    data = model.Data.from_array(Y)
    spec = model.ModelSpec(
        n_frequencies=3, n_dims=2, alpha_prior=(2.0, 2.0), likelihood=GaussianLikelihood(a0=2.0, b0=0.05)
    )
    kernel = build_tempered(spec, Ladder.geometric(0.05, 30.0, n_levels), data)
    rng = np.random.default_rng(seed)
    state = kernel.init(rng)
    out = {"k_plus": [], "alpha": [], "logsig": [], "x2": [], "y_mis": [], "loglik": []}
    for _ in range(n_sweeps):
        state, info = kernel.step(rng, state)
        s = state.recorded
        out["k_plus"].append(s.k_plus)
        out["alpha"].append(s.alpha)
        out["logsig"].append(np.mean(np.log(s.params.sigma2)))
        out["x2"].append(np.sum(s.H**2))
        out["y_mis"].append(s.Y[0, 1])
        out["loglik"].append(s.loglik)
    return {k: np.asarray(v[300:], dtype=float) for k, v in out.items()}, state


@pytest.mark.slow
def test_cold_level_samples_the_untempered_posterior():
    # The plain sweep is exact (joint-distribution tests); the tempered run's cold level must
    # estimate the same posterior expectations, within the two runs' Monte Carlo errors.
    plain, _ = _posterior_draws(1, 2000, seed=5)
    tempered, last = _posterior_draws(3, 2000, seed=6)
    assert last.swaps_accepted.sum() > 300 and last.swap_rates.min() > 0.05
    failures = []
    for name in plain:
        m1, se1 = batch_mean_se(plain[name])
        m2, se2 = batch_mean_se(tempered[name])
        if abs(m1 - m2) > 4.0 * math.hypot(se1, se2):
            failures.append(f"{name}: plain {m1:.4f}+-{se1:.4f} tempered {m2:.4f}+-{se2:.4f}")
    assert not failures, failures


def test_estimator_replicas_reproducible_and_checked():
    Y = np.random.default_rng(0).standard_normal((20, 3))
    kw = {"n_iter": 4, "n_frequencies": 5, "init_dims": 3, "n_replicas": 3, "random_state": 2}
    a = IBPRFLVM(**kw).fit(Y)
    b = IBPRFLVM(**kw).fit(Y)
    np.testing.assert_array_equal(a.log_likelihood_, b.log_likelihood_)
    np.testing.assert_array_equal(a.latent_, b.latent_)
    assert a.swap_rates_.shape == (1, 2)
    assert np.all((a.swap_rates_ >= 0) & (a.swap_rates_ <= 1))
    with pytest.raises(ValueError, match="gaussian"):
        IBPRFLVM(likelihood="poisson", n_replicas=2, n_iter=2).fit(np.ones((5, 2)))
    with pytest.raises(ValueError, match="replica_top"):
        IBPRFLVM(n_replicas=2, replica_top=0.5, n_iter=2).fit(Y)


def test_tempered_chain_checkpoints_and_resumes_bit_for_bit(tmp_path):
    """The ladder is one kernel state: stopped after 3 sweeps and resumed to 6, the run equals
    the uninterrupted one (every level, the swap counts, the cold record)."""
    Y = np.random.default_rng(0).standard_normal((20, 3))
    Y[1, 2] = np.nan
    kw = {"n_frequencies": 5, "init_dims": 3, "n_replicas": 3, "random_state": 2, "burn_in": 2}
    whole = IBPRFLVM(n_iter=6, **kw).fit(Y)
    path = str(tmp_path / "tempered.ckpt")
    IBPRFLVM(n_iter=3, checkpoint_path=path, checkpoint_every=1, **kw).fit(Y)
    resumed = IBPRFLVM(n_iter=6, checkpoint_path=path, checkpoint_every=1, **kw).fit(Y, resume=True)
    np.testing.assert_array_equal(whole.log_likelihood_, resumed.log_likelihood_)
    np.testing.assert_array_equal(whole.swap_rates_, resumed.swap_rates_)
    np.testing.assert_array_equal(whole.state_.Y, resumed.state_.Y)
    np.testing.assert_array_equal(whole.predict(), resumed.predict())
    # Another ladder is another chain: its checkpoint is refused by name.
    with pytest.raises(ValueError, match="ladder"):
        IBPRFLVM(n_iter=6, checkpoint_path=path, **{**kw, "replica_top": 3.0}).fit(Y, resume=True)


def test_tempered_state_round_trips_through_a_tree():
    rng = np.random.default_rng(4)
    Y = rng.standard_normal((10, 3))
    Y[0, 0] = np.nan
    data = model.Data.from_array(Y)
    kernel = build_tempered(model.ModelSpec(n_frequencies=3), Ladder.geometric(1.0, 4.0, 2), data)
    state, _ = kernel.step(rng, kernel.init(rng))
    back = TemperedState.from_tree(state.to_tree(data), data)
    for a, b in zip(state.levels, back.levels, strict=True):
        np.testing.assert_array_equal(a.X, b.X)
        np.testing.assert_array_equal(a.Y, b.Y)
    np.testing.assert_array_equal(state.swaps_proposed, back.swaps_proposed)
