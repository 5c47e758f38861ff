"""The non-linear reading of a dimension (issue 63): positions, profiles, variation, groups and
the share of chains, each pure function checked against brute force on hand-made samples."""

import numpy as np
import pytest

from ibp_rflvm.features import feature_map
from ibp_rflvm.likelihoods import make_likelihood
from ibp_rflvm.likelihoods.base import LikelihoodParams
from ibp_rflvm.mcmc.record import Sample
from ibp_rflvm.summaries.effects import centred_weights, sample_effects
from ibp_rflvm.summaries.meaning import AlignedDraws, summarise_aligned
from ibp_rflvm.summaries.positions import (
    all_dimension_draws,
    dimension_draws,
    group_positions,
    orient,
    positions,
)
from ibp_rflvm.summaries.profiles import grid, mean_features, mean_link_profile, profile_draws
from ibp_rflvm.summaries.reproducibility import found_in_chain


class _Spec:
    """The two fields of a ModelSpec the profiles read."""

    def __init__(self, likelihood, bias):
        self.likelihood = likelihood
        self.bias = bias


def _sample(rng, H, M=6, J=5, bias=True):
    W = rng.standard_normal((M, H.shape[1]))
    beta = rng.standard_normal((2 * M + bias, J))
    return Sample(H, W, LikelihoodParams(beta=beta, r=np.full(J, 3.0)), np.full(H.shape[1], 0.5))


def _draws(rng, n_samples=8, N=40, K=3, bias=True):
    """Samples of one latent configuration, each with its dimensions permuted and sign-flipped
    (``H`` and ``W`` columns together) and jittered, and their alignment by hand."""
    Z = rng.random((N, K)) < 0.6
    X = rng.standard_normal((N, K)) * Z
    base = _sample(rng, X, bias=bias)
    samples, truth = [], []
    for _ in range(n_samples):
        order = rng.permutation(K)  # column k of the sample is true dimension order[k]
        sign = rng.choice([-1.0, 1.0], K)
        H = (X + 0.05 * rng.standard_normal(X.shape) * Z)[:, order] * sign
        samples.append(base._replace(H=H, W=base.W[:, order] * sign))
        truth.append((order, sign))
    effects = [sample_effects(s.H, s.W, s.params.beta, bias) for s in samples]
    # sample_effects lists active columns in order, so each sample's labels are order itself.
    labels = [order for order, _ in truth]
    weights = np.full(n_samples, 1.0 / n_samples)
    return AlignedDraws(samples, weights, effects, labels), X, truth


def test_orient_recovers_signs_up_to_one_global_flip():
    rng = np.random.default_rng(0)
    v = rng.standard_normal(50) + 0.3
    signs = rng.choice([-1.0, 1.0], 12)
    V = signs[:, None] * (v + 0.3 * rng.standard_normal((12, 50)))
    got = orient(V, np.full(12, 1 / 12))
    assert np.all(got * signs == got[0] * signs[0])
    assert (got[:, None] * V).sum() > 0  # the convention: rows sit on the positive side on average


def test_positions_follow_each_dimension_through_relabelling_and_flips():
    rng = np.random.default_rng(1)
    draws, X, _ = _draws(rng)
    for d in range(3):
        dd = dimension_draws(draws, d)
        assert dd.draw.size == 8
        mean, std = positions(draws, [dd])
        # Up to the global sign, the mean is the truth with the jitter averaged out.
        flip = np.sign(mean[:, 0] @ X[:, d])
        np.testing.assert_allclose(flip * mean[:, 0], X[:, d], atol=0.06)
        assert np.all(mean[X[:, d] == 0, 0] == 0.0) and np.all(std[X[:, d] == 0, 0] == 0.0)
        assert np.all(std[X[:, d] != 0, 0] < 0.15) and np.all(std[X[:, d] != 0, 0] > 0.0)


def test_mean_features_equal_the_rows_average_of_the_feature_map():
    rng = np.random.default_rng(2)
    H = rng.standard_normal((30, 3)) * (rng.random((30, 3)) < 0.7)
    W = rng.standard_normal((7, 3))
    points = np.linspace(-2, 2, 9)
    for bias in (False, True):
        got = mean_features(H, W, 1, points, bias)
        rows = H[:, 1] != 0
        for g, t in enumerate(points):
            moved = H[rows].copy()
            moved[:, 1] = t
            np.testing.assert_allclose(got[g], feature_map(moved, W, bias).mean(axis=0), atol=1e-12)


def test_gaussian_profile_is_the_partial_dependence_and_counts_read_the_rate():
    rng = np.random.default_rng(3)
    draws, _, truth = _draws(rng, n_samples=3)
    points = np.array([-1.0, 0.0, 1.5])
    dd = dimension_draws(draws, 2)
    cols = np.array([4, 0])
    gauss = profile_draws(draws, dd, points, cols, _Spec(make_likelihood("gaussian"), True))
    negbin = profile_draws(draws, dd, points, cols, _Spec(make_likelihood("negbinom"), True))
    for k, (i, c, s) in enumerate(zip(dd.draw, dd.column, dd.sign, strict=True)):
        smp = draws.samples[i]
        rows = smp.H[:, c] != 0
        for g, t in enumerate(points):
            moved = smp.H[rows].copy()
            moved[:, c] = s * t  # the grid is in oriented coordinates
            psi = feature_map(moved, smp.W, True) @ smp.params.beta
            np.testing.assert_allclose(gauss[k, g], psi.mean(axis=0)[cols], atol=1e-12)
            np.testing.assert_allclose(negbin[k, g], 3.0 * np.exp(psi.mean(axis=0)[cols]), rtol=1e-12)


def test_link_profile_is_centred_for_the_multinomial_and_weighted_over_samples():
    rng = np.random.default_rng(4)
    draws, _, _ = _draws(rng, n_samples=4, bias=False)
    points = np.linspace(-1, 1, 5)
    dd = dimension_draws(draws, 0)
    spec = _Spec(make_likelihood("multinomial"), False)
    got = mean_link_profile(draws, dd, points, spec)
    want = sum(
        w * mean_features(draws.samples[i].H, draws.samples[i].W, c, s * points, False)
        @ centred_weights(draws.samples[i].params.beta, True)
        for i, c, s, w in zip(dd.draw, dd.column, dd.sign, dd.weight, strict=True)
    )
    np.testing.assert_allclose(got, want, atol=1e-12)
    np.testing.assert_allclose(got.sum(axis=1), 0.0, atol=1e-12)


def test_grid_spans_the_rows_that_use_the_dimension():
    pos = np.array([0.0, -1.0, 2.0, 5.0, 0.3])
    usage = np.array([0.0, 0.9, 0.6, 0.2, 0.5])
    np.testing.assert_allclose(grid(pos, usage, 4), np.linspace(-1.0, 2.0, 4))
    np.testing.assert_allclose(grid(np.zeros(3), np.zeros(3), 3), [-1.0, 0.0, 1.0])


def test_group_positions_equal_brute_force():
    rng = np.random.default_rng(5)
    draws, _, _ = _draws(rng, n_samples=5, N=40)
    summary = summarise_aligned(draws.effects, draws.labels, draws.weights, (40, 5), 0.5, 0.9)
    dims = all_dimension_draws(draws, summary)
    groups = np.array(["a", "b", "c", "d"] * 10, dtype=object)
    table = group_positions(draws, dims, summary, groups, 0.9)
    assert list(table.columns) == ["dimension", "group", "rows", "usage", "position", "lower", "upper"]
    for t, dd in enumerate(dims):
        V = dd.values(draws)
        for g in "abcd":
            rows = groups == g
            per_sample = np.array([v[rows][v[rows] != 0].mean() for v in V])
            row = table[(table["dimension"] == summary.labels[t]) & (table["group"] == g)].iloc[0]
            assert row["rows"] == 10
            np.testing.assert_allclose(row["position"], dd.weight @ per_sample / dd.weight.sum())
            tol = 1e-12
            assert per_sample.min() - tol <= row["lower"] <= row["position"] + tol
            assert row["position"] - tol <= row["upper"] <= per_sample.max() + tol
            np.testing.assert_allclose(row["usage"], summary.usage[rows, t].mean())


def test_a_chain_has_a_dimension_when_one_of_its_own_points_the_same_way():
    rng = np.random.default_rng(6)
    effect = rng.standard_normal((3, 20))
    chain = np.vstack([effect[2] + 0.1 * rng.standard_normal(20), rng.standard_normal(20), effect[0]])
    found = found_in_chain(effect, chain)
    assert list(found) == [True, False, True]
    assert not found_in_chain(effect, np.zeros((0, 20))).any()
    # One chain dimension cannot stand for two reported ones.
    twin = np.vstack([effect[0], effect[0] + 1e-3])
    assert found_in_chain(twin, effect[:1]).sum() == 1


def test_describe_and_profile_name_their_errors():
    from ibp_rflvm.summaries.mixin import check_points, column_indices

    names = np.array(["a", "b", "c"], dtype=object)
    np.testing.assert_array_equal(column_indices(["c", 0], names), [2, 0])
    with pytest.raises(ValueError, match="no column 'z'"):
        column_indices(["z"], names)
    with pytest.raises(ValueError, match="n_points"):
        check_points(1)


def test_unit_mean_reads_one_trial_and_no_offset():
    """A profile's data scale: the probability for the binomial whatever its trials, the rate
    without size factors for the counts, the proportions for the multinomial."""
    from scipy.special import expit, softmax

    psi = np.array([[-1.0, 0.0, 2.0]])
    params = LikelihoodParams(beta=np.zeros((1, 3)), r=np.full(3, 2.0))
    np.testing.assert_allclose(make_likelihood("binomial", n_trials=7).unit_mean(psi, params), expit(psi))
    np.testing.assert_allclose(make_likelihood("bernoulli").unit_mean(psi, params), expit(psi))
    counts = make_likelihood("poisson", size_factors="total")
    np.testing.assert_allclose(counts.unit_mean(psi, params), np.exp(psi))
    np.testing.assert_allclose(make_likelihood("negbinom").unit_mean(psi, params), 2.0 * np.exp(psi))
    np.testing.assert_allclose(make_likelihood("multinomial").unit_mean(psi, params), softmax(psi, axis=1))
    np.testing.assert_allclose(make_likelihood("gaussian").unit_mean(psi, params), psi)
