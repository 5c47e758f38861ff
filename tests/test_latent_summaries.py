"""What each latent dimension means and how sure the posterior is about each row (issue 54).

The pure functions are checked against brute force; the fitted summaries on simulated data whose
generating dimensions each drive a known block of columns non-linearly, with thresholds that
chance (or no effect) would fail: see each test.
"""

import warnings

import numpy as np
import pandas as pd
import pytest

from ibp_rflvm import IBPRFLVM
from ibp_rflvm.features import feature_map
from ibp_rflvm.summaries.align import align
from ibp_rflvm.summaries.effects import SampleEffects, sample_effects
from ibp_rflvm.summaries.meaning import weighted_quantiles
from ibp_rflvm.summaries.reading import column_variation, dimension_reading

N_BLOCKS, PER_BLOCK, N_ROWS, N_MASKED = 3, 5, 240, 60


def block_data(seed: int = 0):
    """Rows use each of 3 dimensions with probability 1/2; dimension b moves only columns
    ``5b .. 5b+4``, each through its own sine. The first `N_MASKED` rows keep 2 of 15 entries."""
    return block_truth(seed)[0]


def block_truth(seed: int = 0):
    """:func:`block_data` with the generating positions ``X`` (0 where a row is off)."""
    rng = np.random.default_rng(seed)
    Z = rng.random((N_ROWS, N_BLOCKS)) < 0.5
    X = rng.standard_normal((N_ROWS, N_BLOCKS)) * Z
    J = N_BLOCKS * PER_BLOCK
    phase = rng.uniform(0, 2 * np.pi, J)
    Y = 1.5 * np.sin(1.5 * X[:, np.arange(J) // PER_BLOCK] + phase)
    Y += 0.2 * rng.standard_normal(Y.shape)
    Y = (Y - Y.mean(axis=0)) / Y.std(axis=0)
    masked = np.zeros(Y.shape, dtype=bool)
    keep = np.argsort(rng.random((N_MASKED, J)), axis=1)[:, :2]
    masked[:N_MASKED] = True
    masked[np.arange(N_MASKED)[:, None], keep] = False
    Y[masked] = np.nan
    names = [f"block{j // PER_BLOCK}_{j % PER_BLOCK}" for j in range(J)]
    return pd.DataFrame(Y, columns=names), X


@pytest.fixture(scope="module")
def fitted():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return IBPRFLVM(n_iter=60, n_frequencies=20, init_dims=6, random_state=1).fit(block_data())


# Pure functions -----------------------------------------------------------------------------


def test_sample_effects_equal_brute_force():
    rng = np.random.default_rng(3)
    N, K, M, J = 30, 4, 7, 5
    H = rng.standard_normal((N, K)) * (rng.random((N, K)) < 0.6)
    H[:, 2] = 0.0  # an inactive dimension is left out
    W = rng.standard_normal((M, K))
    for bias, shift in [(True, False), (False, True)]:
        beta = rng.standard_normal((2 * M + bias, J))
        eff = sample_effects(H, W, beta, bias, shift)
        assert list(eff.columns) == [0, 1, 3]
        psi = feature_map(H, W, bias) @ beta
        for k, d in enumerate(eff.columns):
            off = H.copy()
            off[:, d] = 0.0
            change = psi - feature_map(off, W, bias) @ beta
            if shift:
                change -= change.mean(axis=1, keepdims=True)
            rows = H[:, d] != 0
            np.testing.assert_array_equal(eff.used[:, k], rows)
            np.testing.assert_allclose(eff.effect[k], change[rows].mean(axis=0), atol=1e-12)
            np.testing.assert_allclose(eff.weight[k], np.sum(change[rows] ** 2), rtol=1e-10)


def test_weighted_quantiles_match_numpy_with_equal_weights():
    values = np.random.default_rng(0).standard_normal((41, 6))
    got = weighted_quantiles(values, np.full(41, 2.5), [0.05, 0.5, 0.95])
    want = np.quantile(values, [0.05, 0.5, 0.95], axis=0, method="inverted_cdf")
    np.testing.assert_allclose(got, want)


def test_align_follows_dimensions_through_relabelling():
    rng = np.random.default_rng(1)
    N, J = 100, 8
    used = rng.random((N, 3)) < 0.5
    effect = rng.standard_normal((3, J))
    samples, truth = [], []
    for _ in range(6):
        order = rng.permutation(3)
        flip = rng.random(used.shape) < 0.03  # a few rows switch, as between kept samples
        u = (used ^ flip)[:, order]
        e = effect[order] + 0.05 * rng.standard_normal((3, J))
        samples.append(SampleEffects(order, u, e, np.ones(3)))
        truth.append(order)
    # An unrelated dimension in the last sample only gets a label of its own.
    last = samples[-1]
    odd = rng.random((N, 1)) < 0.5
    extra = np.vstack([last.effect, rng.standard_normal(J)])
    samples[-1] = SampleEffects(np.append(last.columns, 9), np.hstack([last.used, odd]), extra, np.ones(4))
    labels = align(samples, np.full(6, 1 / 6))
    first = dict(zip(truth[0], labels[0], strict=True))
    for lab, order in zip(labels, truth, strict=True):
        assert [first[o] for o in order] == list(lab[:3])
    assert labels[-1][3] not in labels[-1][:3] and labels[-1][3] >= 3


# A fit with known blocks --------------------------------------------------------------------


def test_names_agree_and_columns_are_named(fitted):
    dims = fitted.dimensions_
    assert list(dims.columns) == ["usage", "rows", "probability", "share", "chains", "top_columns"]
    assert (dims["probability"] >= 0.5).all() and dims["share"].is_monotonic_decreasing
    assert list(fitted.dimension_usage_.columns) == list(dims.index)
    assert fitted.dimension_usage_.shape == (N_ROWS, len(dims))
    assert list(fitted.dimension_effects_.columns) == list(dims.index)
    top = fitted.top_columns(3)
    assert set(top["dimension"]) == set(dims.index)
    assert top["column"].str.startswith("block").all()
    assert (top["lower"] <= top["effect"]).all() and (top["effect"] <= top["upper"]).all()
    np.testing.assert_allclose(dims["usage"], fitted.dimension_usage_.mean(axis=0))
    with pytest.raises(ValueError, match="positive integer"):
        fitted.top_columns(0)


def test_top_columns_recover_the_blocks(fitted):
    """For every generating block, a reported dimension's five top columns hold at least four of
    the block's five. Chosen at random (15 columns, 5 in the block) four or more land in it with
    probability 51/3003 = 0.017 per block, so three blocks recovered by chance: about 5e-6."""
    top = fitted.top_columns(PER_BLOCK)
    block_of = top["column"].str.slice(5, 6).astype(int)
    hits = pd.crosstab(top["dimension"], block_of)
    assert (hits.max(axis=0) >= 4).all() and hits.shape[1] == N_BLOCKS, hits


def test_masked_rows_are_less_certain(fitted):
    """The heavily masked rows' embedding sd (the norm over coordinates) exceeds the fully observed
    rows' by more than three standard errors of the difference of the two means over rows."""
    sd = np.linalg.norm(fitted.embedding_std_, axis=1)
    masked, full = sd[:N_MASKED], sd[N_MASKED:]
    se = np.sqrt(masked.var(ddof=1) / masked.size + full.var(ddof=1) / full.size)
    assert masked.mean() - full.mean() > 3 * se, (masked.mean(), full.mean(), se)
    assert fitted.embedding_std_.shape == fitted.embedding_.shape


def test_embed_returns_the_same_coordinates_with_their_sd(fitted):
    Y = block_data().to_numpy()[[0, 1, N_MASKED, N_MASKED + 1]]
    coords, sd = fitted.embed(Y, n_components=3, n_draws=3, n_sweeps=12, burn_in=4, return_std=True)
    plain = fitted.embed(Y, n_components=3, n_draws=3, n_sweeps=12, burn_in=4)
    np.testing.assert_allclose(coords, plain, atol=1e-10)
    assert sd.shape == (4, 3) and np.all(sd > 0)


def test_summary_states_the_three_counts_side_by_side(fitted):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = fitted.summary()
    counts = table.loc[["k_plus", "effective_dims", "embedding_dims"], "counts"]
    assert counts.str.len().gt(20).all() and table["counts"].notna().sum() == 3
    assert table.loc["embedding_dims", "mean"] == fitted.embedding_dims_


def test_a_k_plus_that_never_left_its_start_is_reported():
    from ibp_rflvm.summaries.counts import KPlusStuckWarning, dimension_counts, k_plus_stuck

    Y = np.random.default_rng(0).standard_normal((40, 5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = IBPRFLVM(sampler="paper", init_dims=3, n_iter=6, n_frequencies=5, random_state=0).fit(Y)
    trace = model.traces_["n_active"]
    assert np.all(np.abs(trace - 3) <= 1) and k_plus_stuck(model.posterior_)
    with pytest.warns(KPlusStuckWarning, match="stayed within one of its start"):
        table = dimension_counts(model.posterior_)
    assert list(table.index) == ["k_plus", "effective_dims", "embedding_dims"]
    assert (table["low"] <= table["median"]).all() and (table["median"] <= table["high"]).all()


def test_pictures_of_the_dimensions(fitted, tmp_path):
    from ibp_rflvm.plots import effects_figure, plt, usage_view_plot
    from ibp_rflvm.summaries import dimension_summary

    summary = dimension_summary(fitted.posterior_)
    names = fitted.dimension_effects_.index.to_numpy()
    fig = effects_figure(summary.effect, summary.lower, summary.upper, summary.labels, names, n_top=3)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == list(summary.labels)
    shown = [t.get_text() for t in ax.get_xticklabels()]
    assert len(shown) == len(set(shown)) and set(fitted.top_columns(3, by="effect")["column"]) == set(shown)
    plt.close(fig)
    view, sd = fitted.view(return_std=True)
    np.testing.assert_allclose(sd, np.linalg.norm(fitted.embedding_std_, axis=1))
    path = usage_view_plot(tmp_path / "usage.png", view, summary.usage, summary.labels, sd, max_panels=2)
    assert path.stat().st_size > 0


def test_summaries_do_not_see_labels_or_signs(fitted):
    """Relabelling and sign-flipping every sample's dimensions (``H`` and ``W`` columns together)
    changes no feature, and must change no summary."""
    from dataclasses import replace

    from ibp_rflvm.mcmc.record import ChainResult
    from ibp_rflvm.summaries import dimension_summary
    from ibp_rflvm.summaries.posterior import Posterior

    post = fitted.posterior_
    rng = np.random.default_rng(7)
    chains = []
    for res in post.chains:
        samples = []
        for smp in res.record.samples:
            order = rng.permutation(smp.H.shape[1])
            sign = rng.choice([-1.0, 1.0], smp.H.shape[1])
            samples.append(smp._replace(H=smp.H[:, order] * sign, W=smp.W[:, order] * sign, pi=smp.pi[order]))
        chains.append(ChainResult(res.state, replace(res.record, samples=samples)))
    moved = Posterior(tuple(chains), post.data, post.spec, post.chain_starts, post.stacking, post.burn_in)
    a, b = dimension_summary(post), dimension_summary(moved)
    assert a.labels == b.labels
    for name in ("probability", "share", "usage", "effect", "lower", "upper"):
        np.testing.assert_allclose(getattr(b, name), getattr(a, name), atol=1e-10, err_msg=name)
    # The positions are oriented before they are averaged, so flips cannot change them either.
    ra, rb = dimension_reading(post), dimension_reading(moved)
    np.testing.assert_allclose(rb.mean, ra.mean, atol=1e-10)
    np.testing.assert_allclose(rb.std, ra.std, atol=1e-10)
    np.testing.assert_allclose(column_variation(moved), column_variation(post), atol=1e-10)


def test_block_effects_are_credibly_nonzero(fitted):
    """The dimension that best recovers a block moves at least 4 of its 5 columns with a 90%
    interval that excludes 0 (each generating effect is a sine of amplitude 1.5 sd)."""
    top = fitted.top_columns(PER_BLOCK)
    top["block"] = top["column"].str.slice(5, 6).astype(int)
    for block in range(N_BLOCKS):
        best = top[top["block"] == block].groupby("dimension").size().idxmax()
        rows = top[(top["dimension"] == best) & (top["block"] == block)]
        away = (rows["lower"] > 0) | (rows["upper"] < 0)
        assert away.sum() >= 4, rows


def _matched(fitted, X):
    """For each generating dimension, the reported one whose usage (>= 0.5) overlaps its rows
    most (Jaccard), read from usage alone so that the positions' checks are not chosen by them."""
    used = fitted.dimension_usage_.to_numpy() >= 0.5
    out = []
    for b in range(X.shape[1]):
        on = X[:, b] != 0
        jac = (used & on[:, None]).sum(axis=0) / np.maximum((used | on[:, None]).sum(axis=0), 1)
        out.append(fitted.dimensions_.index[int(np.argmax(jac))])
    return out


def test_positions_are_named_and_zero_where_no_sample_uses_the_row(fitted):
    """Positions are indexed like the data and the dimensions; a row that no sample puts on a
    dimension sits at exactly 0 with sd 0, and a row's sd is 0 only then or when every sample
    agrees. (Recovery of the generating order is checked on simulated bumps, where each
    generating coordinate is one dimension: tests/test_nonlinear_recovery.py.)"""
    Y, X = block_truth()
    pos, std = fitted.dimension_positions_, fitted.dimension_positions_std_
    usage = fitted.dimension_usage_
    assert list(pos.columns) == list(fitted.dimensions_.index) and pos.index.equals(Y.index)
    assert std.shape == pos.shape and std.index.equals(pos.index) and (std.to_numpy() >= 0).all()
    never = usage.to_numpy() == 0
    assert never.any() and (pos.to_numpy()[never] == 0).all() and (std.to_numpy()[never] == 0).all()
    sometimes = (usage.to_numpy() > 0) & (usage.to_numpy() < 1)
    assert (std.to_numpy()[sometimes] > 0).all()


def test_profiles_follow_the_generating_blocks(fitted):
    """Each profile table holds its grid in order with the mean inside its band; and for each
    generating block, the dimension along which the block's columns vary most moves them more
    than any other block's column (the block's median variation above the others' largest).
    Were the variations unrelated to the blocks, a block's 3 largest of 15 would all be its own
    5 with probability 10/455 per dimension: under 0.13 over 6 dimensions, for each block."""
    Y, X = block_truth()
    for d in fitted.dimensions_.index[:3]:
        table = fitted.profile(d, n_points=30)
        assert list(table.columns) == ["dimension", "position", "column", "mean", "lower", "upper"]
        assert len(table) == 30 * Y.shape[1]
        assert ((table["lower"] <= table["mean"] + 1e-12) & (table["mean"] <= table["upper"] + 1e-12)).all()
        for _, one in table.groupby("column"):
            assert one["position"].is_monotonic_increasing
    top = fitted.top_columns(Y.shape[1])
    variation = top.pivot(index="column", columns="dimension", values="variation")
    for b in range(N_BLOCKS):
        mine = variation.loc[[c for c in variation.index if c.startswith(f"block{b}")]]
        others = variation.drop(mine.index)
        ratio = mine.median() / others.max()
        assert ratio.max() > 1.0, (b, ratio)


def test_top_columns_rank_by_variation_or_effect(fitted):
    by_var = fitted.top_columns(4)
    by_eff = fitted.top_columns(4, by="effect")
    assert list(by_var.columns) == ["dimension", "rank", "column", "variation", "effect", "lower", "upper"]
    for table, key in ((by_var, "variation"), (by_eff, "effect")):
        for _, rows in table.groupby("dimension"):
            assert rows[key].abs().is_monotonic_decreasing
    first = by_var[by_var["rank"] == 1].set_index("dimension")["column"]
    named = [s.split(", ")[0] for s in fitted.dimensions_["top_columns"]]
    assert named == list(first[fitted.dimensions_.index])
    with pytest.raises(ValueError, match="by must be one of"):
        fitted.top_columns(3, by="size")


def test_describe_places_the_groups_along_each_dimension(fitted):
    """Rows split by the sign of their generating coordinate sit on opposite sides of the
    matched dimension, with intervals that do not overlap."""
    Y, X = block_truth()
    for b, d in enumerate(_matched(fitted, X)):
        labels = np.where(X[:, b] > 0, "up", np.where(X[:, b] < 0, "down", "off"))
        table = fitted.describe(labels)
        table = table[table["dimension"] == d].set_index("group")
        assert set(table.index) == {"up", "down", "off"} and table["rows"].sum() == len(Y)
        up, down = table.loc["up"], table.loc["down"]
        assert up["upper"] < down["lower"] or down["upper"] < up["lower"], table
        assert table.loc["off", "usage"] < min(up["usage"], down["usage"])
    with pytest.raises(ValueError, match="one label per training row"):
        fitted.describe(["a", "b"])
