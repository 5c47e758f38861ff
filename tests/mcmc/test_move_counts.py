"""What a chain keeps of each sweep besides its state: the move counts of its ``SweepInfo``
(``ChainRecord.moves``, ``Posterior.moves``) and their rates in ``summary()``; and the typed
likelihood variables, stored in checkpoints by name as they always were."""

import dataclasses
import warnings

import numpy as np
import pytest

from ibp_rflvm import IBPRFLVM, RFLVM
from ibp_rflvm.datasets import make_cambridge
from ibp_rflvm.likelihoods.base import LikelihoodParams
from ibp_rflvm.mcmc.record import NOT_RECORDED, ChainRecord, ChainResult, MoveCounts, Sample
from ibp_rflvm.model import build_sweep
from ibp_rflvm.plumbing.checkpoint import read_tree
from ibp_rflvm.state import ChainState
from ibp_rflvm.summaries.diagnostics import move_table
from ibp_rflvm.targets import make_target

N_ITER, BURN_IN, N_FREQ, SEED = 10, 2, 6, 5


@pytest.fixture(scope="module")
def fit():
    Y = make_cambridge(40, random_state=1)["Y"][:, :8]
    return IBPRFLVM(n_iter=N_ITER, burn_in=BURN_IN, n_frequencies=N_FREQ, random_state=SEED).fit(Y)


def _replayed_infos(post):
    """The fit's chain run again sweep by sweep (one chain draws from ``default_rng(seed)``
    itself), keeping each sweep's own ``SweepInfo``."""
    rng = np.random.default_rng(SEED)
    kernel = build_sweep(post.spec, make_target(post.spec, post.data))
    state = kernel.init(rng)
    infos = []
    for _ in range(N_ITER):
        state, info = kernel.step(rng, state)
        infos.append(info)
    np.testing.assert_array_equal(state.X, post.state.X)  # the same chain
    return infos


def test_the_record_keeps_every_sweeps_counts_and_summary_reports_their_rates(fit):
    post = fit.posterior_
    infos = _replayed_infos(post)
    assert post.chains[0].record.moves == [i.moves for i in infos]
    for name in MoveCounts._fields:
        np.testing.assert_array_equal(getattr(post.moves, name), [[getattr(i, name) for i in infos]])
    kept = infos[BURN_IN:]
    proposed = {
        "transfer": sum(i.transfers_proposed for i in kept), "absorb": sum(i.absorbs_proposed for i in kept),
        "flip": sum(i.flips_proposed for i in kept), "singleton": sum(i.singletons_proposed for i in kept),
    }  # fmt: skip
    assert min(proposed.values()) > 0, "the check needs pair moves proposed"
    n_rows, n_kept = post.shape[0], len(kept)
    expected = {
        "z_flips_per_sweep": sum(i.z_flips for i in kept) / n_kept,
        "flips_per_sweep": sum(i.flips for i in kept) / n_kept,
        "flip_rate": sum(i.flips for i in kept) / proposed["flip"],
        "singleton_rate": sum(i.singletons for i in kept) / proposed["singleton"],
        "transfer_rate": sum(i.transfers for i in kept) / proposed["transfer"],
        "absorb_rate": sum(i.absorbs for i in kept) / proposed["absorb"],
        "births_per_sweep": sum(i.births for i in kept) / n_kept,
        "deaths_per_sweep": sum(i.deaths for i in kept) / n_kept,
        "w_accept_rate": sum(i.w_accepted for i in kept) / (N_FREQ * n_kept),
        "w_move_rate": sum(i.w_moved for i in kept) / (N_FREQ * n_kept),
        "x_evals_per_row": sum(i.x_evals for i in kept) / (n_rows * n_kept),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ArviZ on few draws
        table = fit.summary()
    row = table.loc["chain 0"]
    for column, value in expected.items():
        assert row[column] == pytest.approx(value, rel=1e-12), column
    assert row["x_evals_per_row"] >= 1.0  # every row scores at least one proposal
    # The summary's ArviZ rows have no move rates.
    assert np.isnan(table.loc["loglik", "transfer_rate"])


def test_moves_a_sweep_does_not_run_count_zero_and_have_no_rate():
    Y = make_cambridge(30, random_state=2)["Y"][:, :6]
    m = RFLVM(n_components=2, n_iter=4, n_frequencies=4, random_state=0).fit(Y)
    row = move_table(m.posterior_).loc["chain 0"]
    assert row["flips_per_sweep"] == row["births_per_sweep"] == row["z_flips_per_sweep"] == 0.0
    assert np.isnan(row["transfer_rate"]) and np.isnan(row["absorb_rate"]) and np.isnan(row["flip_rate"])
    assert 0.0 <= row["w_accept_rate"] <= 1.0


def test_a_checkpoint_from_before_the_counts_reads_back_without_them(fit):
    post = fit.posterior_
    record = post.chains[0].record
    tree = record.to_tree()
    assert set(tree["moves"]) == set(MoveCounts._fields)
    assert ChainRecord.from_tree(tree).moves == record.moves
    del tree["moves"]
    old = ChainRecord.from_tree(tree)
    assert old.moves == [MoveCounts(*[NOT_RECORDED] * len(MoveCounts._fields))] * N_ITER
    assert old.n_active == record.n_active
    resumed = dataclasses.replace(post, chains=(ChainResult(post.state, old),))
    assert move_table(resumed).isna().all(axis=None)
    # A chain resumed from such a checkpoint: the rates are those of the sweeps it counted.
    old.moves[N_ITER - 3 :] = record.moves[N_ITER - 3 :]
    later = move_table(dataclasses.replace(post, chains=(ChainResult(post.state, old),))).loc["chain 0"]
    counted = record.moves[N_ITER - 3 :]
    assert later["flips_per_sweep"] == pytest.approx(np.mean([c.flips for c in counted]), rel=1e-12)


def test_checkpoints_store_the_likelihood_variables_by_name(tmp_path):
    rng = np.random.default_rng(0)
    Y = rng.poisson(2.0, (30, 6)).astype(float)
    path = tmp_path / "chain.ckpt"
    kw = {"likelihood": "negbinom", "n_iter": 3, "burn_in": 1, "n_frequencies": 4, "random_state": 1}
    m = IBPRFLVM(checkpoint_path=str(path), checkpoint_every=1, **kw).fit(Y)
    tree = read_tree(path)
    # The layout of the checkpoints written when the variables were a dict.
    assert sorted(tree["state"]["params"]) == ["beta", "r"]
    assert all(sorted(s["params"]) == ["beta", "r"] for s in tree["record"]["samples"])
    data = m.posterior_.data
    state = ChainState.from_tree(tree["state"], data)
    assert isinstance(state.params, LikelihoodParams) and state.params.sigma2 is None
    np.testing.assert_array_equal(state.params.r, m.state_.params.r)
    np.testing.assert_array_equal(state.params.beta, m.state_.params.beta)
    sample = Sample.from_tree(tree["record"]["samples"][-1])
    np.testing.assert_array_equal(sample.params.beta, m.posterior_.samples[-1].params.beta)
    # A Gaussian state as older versions wrote it: a plain dict of its variables.
    beta, sigma2 = rng.standard_normal((4, 6)), rng.gamma(2.0, 1.0, 6)
    old = {**tree["state"], "params": {"beta": beta, "sigma2": sigma2}}
    params = ChainState.from_tree(old, data).params
    assert params.r is None and params.beta is beta and params.sigma2 is sigma2
    assert params.arrays().keys() == {"beta", "sigma2"}
    with pytest.raises(TypeError):
        LikelihoodParams.from_arrays({"beta": beta, "omega": sigma2})


def test_the_move_table_shows_how_often_the_frequencies_moved(fit):
    """``w_move_rate``: the share of frequencies whose value changed per sweep. Elliptical slice
    sampling moves every one; a record from before the count (``w_moved`` alone missing) has
    no rate for it while the other rates stay."""
    Y = make_cambridge(40, random_state=1)["Y"][:, :8]
    m = IBPRFLVM(n_iter=4, n_frequencies=N_FREQ, random_state=0, frequency_update="ess").fit(Y)
    row = move_table(m.posterior_).loc["chain 0"]
    assert row["w_move_rate"] == row["w_accept_rate"] == 1.0
    post = fit.posterior_
    row = move_table(post).loc["chain 0"]
    assert row["w_move_rate"] == pytest.approx(row["w_accept_rate"])  # MH: accepted = moved
    tree = post.chains[0].record.to_tree()
    del tree["moves"]["w_moved"]
    old = dataclasses.replace(post, chains=(ChainResult(post.state, ChainRecord.from_tree(tree)),))
    row = move_table(old).loc["chain 0"]
    assert np.isnan(row["w_move_rate"]) and row["w_accept_rate"] == pytest.approx(
        move_table(post).loc["chain 0", "w_accept_rate"]
    )
