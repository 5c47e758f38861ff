"""`n_threads`: one chain's sweep on several threads gives the same chain bit for bit (issue 30).

The data are small, so the blocks are made small too (`Blocks(rows=..., columns=...)`): every
blocked step then spans several blocks, which the threads share out in whatever order they run.
"""

import threading

import numpy as np
import pytest

from ibp_rflvm import IBPRFLVM, RFLVM, model
from ibp_rflvm.likelihoods import make_likelihood
from ibp_rflvm.likelihoods.polya_gamma import crt_column_totals, draw_pg
from ibp_rflvm.mcmc.driver import load_checkpoint, run_chain
from ibp_rflvm.plumbing import blocks

N, J = 40, 10
ROWS, COLUMNS = 8, 3  # 5 row blocks, 4 column blocks


def _counts(likelihood: str):
    rng = np.random.default_rng(5)
    params = {}
    if likelihood == "bernoulli":
        Y = (rng.random((N, J)) < 0.4).astype(float)
    elif likelihood == "binomial":
        Y = rng.binomial(6, 0.3, (N, J)).astype(float)
        params = {"n_trials": 6}
    else:
        Y = rng.negative_binomial(2.0, 0.4, (N, J)).astype(float)
        if likelihood == "negbinom-offsets":
            likelihood, params = "negbinom", {"size_factors": "total"}
    Y[rng.random((N, J)) < 0.1] = np.nan
    lik = make_likelihood(likelihood, **params)
    spec = model.ModelSpec(n_frequencies=6, n_dims=3, likelihood=lik, bias=True)
    return model.Data.from_array(Y, lik), spec


def _chain(data, spec, n_threads: int, n_iter: int = 4, **kw):
    threads = blocks.Blocks(n_threads, rows=ROWS, columns=COLUMNS)
    return run_chain(np.random.default_rng(3), data, spec, n_iter, 1, threads=threads, **kw)


def _assert_same(a, b):
    for name in ("X", "Z", "pi", "W", "zeta", "mu", "Sigma"):
        np.testing.assert_array_equal(getattr(a.state, name), getattr(b.state, name), err_msg=name)
    for name in ("alpha", "eta", "loglik", "sweep"):
        assert getattr(a.state, name) == getattr(b.state, name), name
    assert a.state.params.arrays().keys() == b.state.params.arrays().keys()
    for key, value in a.state.params.arrays().items():
        np.testing.assert_array_equal(value, b.state.params.arrays()[key], err_msg=key)
    for name in ("loglik", "n_active", "alpha", "eta", "n_components"):
        assert getattr(a.record, name) == getattr(b.record, name), name
    for sa, sb in zip(a.record.samples, b.record.samples, strict=True):
        np.testing.assert_array_equal(sa.H, sb.H)
        np.testing.assert_array_equal(sa.params.beta, sb.params.beta)


@pytest.mark.parametrize(
    "likelihood", ["negbinom", "negbinom-offsets", "binomial", "bernoulli", "poisson", "multinomial"]
)
def test_chain_is_the_same_with_1_2_and_3_threads(likelihood):
    data, spec = _counts(likelihood)
    one = _chain(data, spec, 1)
    assert np.isfinite(one.record.loglik).all()
    for n in (2, 3) if likelihood == "negbinom" else (2,):
        _assert_same(one, _chain(data, spec, n))


def test_block_sizes_do_change_the_chain():
    # The numbers depend on the blocks (a code constant), not on the threads: shown here so the
    # identity above is not vacuous (blocked draws that ignored the blocks would pass it too).
    data, spec = _counts("negbinom")
    a = _chain(data, spec, 1)
    b = run_chain(np.random.default_rng(3), data, spec, 4, 1, threads=blocks.Blocks(1, rows=16, columns=3))
    assert a.record.loglik != b.record.loglik


def test_checkpoint_written_with_2_threads_resumes_with_1(tmp_path):
    data, spec = _counts("negbinom")
    reference = _chain(data, spec, 1, n_iter=6)
    path = tmp_path / "c.ckpt"
    _chain(data, spec, 2, n_iter=3, checkpoint_path=path)
    assert load_checkpoint(path)["sweep"] == 3
    resumed = _chain(data, spec, 1, n_iter=6, checkpoint_path=path, resume=True)
    _assert_same(reference, resumed)


def test_blocked_draws_do_not_depend_on_the_threads():
    rng = np.random.default_rng(0)
    b = rng.integers(0, 12, (50, 7)) + rng.random((50, 7))
    b[rng.random(b.shape) < 0.2] = 0.0
    c = rng.standard_normal((50, 7))
    Y0 = rng.poisson(3.0, (50, 7)).astype(float)
    observed = rng.random((50, 7)) < 0.9
    r = rng.gamma(2.0, 1.0, 7)
    out = []
    for n in (1, 2, 4):
        small = blocks.Blocks(n, rows=6, columns=2)
        with blocks.active(small):
            gen = np.random.default_rng(9)
            out.append((draw_pg(gen, b, c), crt_column_totals(gen, Y0, observed, r), gen.random()))
    for got in out[1:]:
        np.testing.assert_array_equal(got[0], out[0][0])
        np.testing.assert_array_equal(got[1], out[0][1])
        assert got[2] == out[0][2]  # each step took one key from the chain's Generator, whatever n
    assert np.all(out[0][0][b == 0.0] == 0.0) and np.all(out[0][0][b > 0.0] > 0.0)


def test_blocks_run_on_the_pool_threads_in_order_of_parts():
    seen = []
    lock = threading.Lock()

    def part(b, sl):
        with lock:
            seen.append(threading.current_thread().name)
        return b, sl.start

    parts = blocks.slices(10, 3)
    assert [(p.start, p.stop) for p in parts] == [(0, 3), (3, 6), (6, 9), (9, 10)]
    got = blocks.Blocks(2).run(part, parts)
    assert got == [(0, 0), (1, 3), (2, 6), (3, 9)]
    assert all(name.startswith("ibp-rflvm-block") for name in seen)
    assert blocks.Blocks(2).run(part, parts) == got  # the pool is reused
    assert blocks._pools[2] is blocks._pool(2)


def test_two_threads_run_two_blocks_at_once():
    # Each part waits for the other: this returns only if the pool runs them concurrently.
    barrier = threading.Barrier(2, timeout=30)
    assert blocks.Blocks(2).run(lambda b, sl: barrier.wait() >= 0, blocks.slices(2, 1)) == [True, True]


def test_a_failing_block_raises_and_drops_the_blocks_not_started():
    started = []
    gate = threading.Event()

    def part(b, sl):
        started.append(b)
        if b == 0:
            raise RuntimeError("block 0 failed")
        gate.wait(timeout=30)  # block 1 holds the second thread until block 0 has failed

    with pytest.raises(RuntimeError, match="block 0 failed"):
        blocks.Blocks(2).run(part, blocks.slices(40, 1))
    gate.set()
    blocks._pool(2).submit(lambda: None).result()  # the pool has drained what was left
    assert len(started) < 40


def test_kernels_run_from_the_pool_release_the_gil():
    # A compiled kernel holding the GIL would make the threads take turns.
    from ibp_rflvm.likelihoods import multinomial, pg_draws, poisson
    from ibp_rflvm.likelihoods import polya_gamma as pg
    from ibp_rflvm.targets import factorised_state as factorised

    kernels = [
        pg_draws._draw_pg_kernel, pg._draw_columns, pg._row_outer_products, pg._crt_columns,
        pg._logistic_rows, pg._softplus_columns, factorised._low_rank_update, poisson._poisson_rows,
        multinomial._multinomial_rows,
    ]  # fmt: skip
    for kernel in kernels:
        assert kernel.targetoptions.get("nogil"), kernel.py_func.__name__


@pytest.mark.parametrize("cls", [IBPRFLVM, RFLVM])
def test_estimators_n_threads_gives_the_same_fit(cls):
    data, _ = _counts("negbinom")
    kw = {"likelihood": "negbinom", "n_iter": 3, "n_frequencies": 5, "random_state": 2}
    a = cls(n_threads=1, **kw).fit(data.Y)
    b = cls(n_threads=2, **kw).fit(data.Y)
    np.testing.assert_array_equal(a.log_likelihood_, b.log_likelihood_)
    np.testing.assert_array_equal(a.state_.params.beta, b.state_.params.beta)
    assert a.get_params()["n_threads"] == 1


def test_fit_spanning_two_row_blocks_of_the_code_is_the_same_on_1_and_2_threads():
    # The code's own block size, not a test's: 300 rows are two blocks of ROW_BLOCK rows.
    assert blocks.ROW_BLOCK < 300 <= 2 * blocks.ROW_BLOCK
    Y = np.random.default_rng(1).negative_binomial(2.0, 0.5, (300, 4)).astype(float)
    kw = {"likelihood": "negbinom", "n_iter": 2, "n_frequencies": 4, "init_dims": 3, "random_state": 0}
    a = IBPRFLVM(n_threads=1, **kw).fit(Y)
    b = IBPRFLVM(n_threads=2, **kw).fit(Y)
    np.testing.assert_array_equal(a.log_likelihood_, b.log_likelihood_)
    np.testing.assert_array_equal(a.state_.X, b.state_.X)
    np.testing.assert_array_equal(a.state_.params.r, b.state_.params.r)


@pytest.mark.parametrize("bad", [0, -1, 2.5, "2", True])
def test_bad_n_threads_is_refused_by_name(bad):
    with pytest.raises(ValueError, match="n_threads"):
        IBPRFLVM(n_threads=bad, n_iter=2).fit(np.ones((5, 3)))


def test_default_n_threads_shares_the_cpus_among_the_chains_at_once(monkeypatch):
    monkeypatch.setattr(blocks, "available_cpus", lambda: 8)
    assert IBPRFLVM()._n_threads(1) == 8
    assert IBPRFLVM(n_chains=2)._n_threads(2) == 4
    assert IBPRFLVM(n_chains=3)._n_threads(3) == 2
    assert IBPRFLVM(n_chains=4, n_jobs=2)._n_threads(4) == 4
    assert IBPRFLVM(n_chains=16)._n_threads(16) == 1
    assert IBPRFLVM(n_chains=2, n_threads=3)._n_threads(2) == 3


def test_blocks_refuse_bad_sizes():
    for bad in ({"n_threads": 0}, {"rows": 0}, {"columns": 1.5}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            blocks.Blocks(**bad)
