"""Row transfers (samplers/transfer.py): the involution, its ratio, and the caches it carries
(with those of absorb/emit, samplers/absorb.py, whose other tests are in tests/samplers/test_absorb.py).

Exactness of the move inside the whole sweep is checked by the IBP prior check
(tests/samplers/test_ibp.py) and the joint-distribution tests (tests/test_joint_distribution.py,
tests/likelihoods/test_likelihood_joint.py), which require accepted transfers.
"""

import math

import numpy as np
import pytest
from scipy import stats

from ibp_rflvm import model
from ibp_rflvm.features import feature_map
from ibp_rflvm.likelihoods import make_likelihood
from ibp_rflvm.priors import IndianBuffet
from ibp_rflvm.samplers import absorb as ab
from ibp_rflvm.samplers import transfer as tr
from ibp_rflvm.targets import factorised_state as factorised
from ibp_rflvm.targets.factorised import FactorisedRows
from ibp_rflvm.targets.prior import NoLikelihood
from ibp_rflvm.targets.row_cache import build_cache, row_cache

IBP = IndianBuffet()


def test_aligned_pairs_keep_a_rows_phase_when_the_columns_are_parallel():
    rng = np.random.default_rng(0)
    w = rng.standard_normal(7)
    W = np.column_stack([w, rng.standard_normal(7), -2.5 * w])
    a, b, c = tr.aligned_pairs(W, 0.99)
    assert a.tolist() == [0] and b.tolist() == [2]
    # Carrying x from column 0 to column 2 (x -> c x) leaves the phase x w unchanged,
    # and carrying it back (x -> x / c) undoes it.
    x = 0.8
    assert np.allclose((c[0] * x) * W[:, 2], x * W[:, 0])
    assert np.allclose((x / c[0]) * W[:, 0], x * W[:, 2])
    # The threshold is on |cos|: an orthogonal pair never qualifies.
    W_orth = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert tr.aligned_pairs(W_orth, 0.01)[0].size == 0
    assert tr.aligned_pairs(W_orth, 0.0)[0].size == 1


def test_a_pair_budget_visits_a_uniform_subset_and_draws_nothing_when_it_does_not_bind():
    rng = np.random.default_rng(3)
    w = rng.standard_normal(6)
    # Six nearly parallel columns: all 15 pairs are aligned.
    W = np.column_stack([w + 0.01 * rng.standard_normal(6) for _ in range(6)])
    full = list(zip(*[v.tolist() for v in tr.aligned_pairs(W, 0.9)[:2]], strict=True))
    assert len(full) == 15
    gen = np.random.default_rng(0)
    before = gen.bit_generator.state
    a, b, c = tr.aligned_pairs(W, 0.9, gen, 15)
    assert gen.bit_generator.state == before and a.size == 15  # a budget that does not bind
    seen = np.zeros(15)
    for _ in range(3000):
        a, b, c = tr.aligned_pairs(W, 0.9, gen, 4)
        picked = list(zip(a.tolist(), b.tolist(), strict=True))
        assert len(picked) == 4 and len(set(picked)) == 4 and picked == sorted(picked)
        seen[[full.index(p) for p in picked]] += 1
        # The carrying factors stay those of the pairs picked.
        norms = np.linalg.norm(W, axis=0)
        assert np.allclose(np.abs(c), norms[a] / norms[b])
    # Uniform: each pair is visited with probability 4/15 (binomial sd of the count: 24).
    assert np.all(np.abs(seen - 3000 * 4 / 15) < 4 * math.sqrt(3000 * 4 / 15 * 11 / 15))
    keep, toggle, _ = ab.ordered_pairs(W, 0.9, gen, 4)
    # Both orders of the same four pairs.
    first = sorted(zip(keep[:4].tolist(), toggle[:4].tolist(), strict=True))
    assert keep.size == 8 and first == sorted(zip(toggle[4:].tolist(), keep[4:].tolist(), strict=True))


def test_transfer_log_ratio_is_ibp_odds_times_the_coordinates_prior():
    n, m_dst, m_src = 20, 6, 4
    x_dst, x_src, c = 0.3, -1.1, 1.7
    new_dst, new_src = c * x_src, x_dst / c
    got = tr.transfer_log_ratio(x_dst, x_src, new_dst, new_src, m_dst, m_src, 1, n, IBP.hyper)
    ibp_odds = math.log(m_dst / (n - m_dst)) + math.log((n - m_src) / m_src)
    coords = stats.norm.logpdf([new_dst, new_src]).sum() - stats.norm.logpdf([x_dst, x_src]).sum()
    assert got == pytest.approx(ibp_odds + coords)
    # The reverse transfer (the row now in the old destination, counts shifted by one) has the
    # reciprocal ratio: detailed balance for the involution, whose Jacobian is 1.
    back = tr.transfer_log_ratio(new_src, new_dst, x_src, x_dst, m_src, m_dst, 1, n, IBP.hyper)
    assert back == pytest.approx(-got)


def _collapsed_args(X, Z, W, Phi, Y, cache, prior):
    return X, Z, W, False, row_cache(Phi, Y, cache, prior)


#: Each aligned-pair move: its pairs of W, compiled kernel (row cache) and array version.
PAIR_MOVES = {
    "transfer": (tr.aligned_pairs, tr.transfer_rows, tr.transfer_pairs),
    "absorb": (ab.ordered_pairs, ab.absorb_rows, ab.absorb_pairs),
}


@pytest.mark.parametrize("move", sorted(PAIR_MOVES))
def test_collapsed_pair_moves_keep_the_row_cache_exact(move):
    pairs, kernel, _ = PAIR_MOVES[move]
    rng = np.random.default_rng(0)
    n, j, k, m = 40, 4, 3, 5
    Y = rng.standard_normal((n, j))
    data = model.Data.from_array(Y)
    spec = model.ModelSpec(n_frequencies=m, n_dims=k)
    state = model.init_state(rng, data, spec)
    X, W, Y = state.X.copy(), state.W.copy(), state.Y
    W[:, 2] = -0.7 * W[:, 0] + 0.05 * rng.standard_normal(m)  # one aligned pair
    Z = (rng.random((n, k)) < 0.5).astype(np.int8)
    prior = spec.likelihood.prior
    Phi = feature_map(X * Z, W, False)
    cache = build_cache(Phi, Y, prior)
    tried = acc = 0
    for _ in range(20):
        counts = Z.sum(axis=0).astype(np.int64)
        args = _collapsed_args(X, Z, W, Phi, Y, cache, prior)
        t, a = kernel(rng, *args, counts, pairs(W, 0.3), IBP.hyper)
        tried, acc = tried + t, acc + a
        assert np.array_equal(counts, Z.sum(axis=0))
    assert acc > 20 and tried > acc, (tried, acc)
    assert np.all(Z.sum(axis=0) > 0)
    assert np.allclose(Phi, feature_map(X * Z, W, False), atol=1e-12)
    fresh = build_cache(Phi, Y, prior)
    assert cache.loglik == pytest.approx(fresh.loglik, abs=1e-7)
    assert np.allclose(cache.A, fresh.A, atol=1e-8)


@pytest.mark.parametrize("move", sorted(PAIR_MOVES))
def test_factorised_pair_moves_keep_phi_psi_and_row_logliks(move):
    array_move = PAIR_MOVES[move][2]
    rng = np.random.default_rng(3)
    lik = make_likelihood("poisson")
    n, j, k, m = 30, 6, 3, 4
    Y = rng.poisson(2.0, size=(n, j)).astype(float)
    data = model.Data.from_array(Y, lik)
    spec = model.ModelSpec(n_frequencies=m, n_dims=k, likelihood=lik, bias=True)
    state = model.init_state(rng, data, spec)
    X, W = state.X.copy(), state.W.copy()
    W[:, 1] = 1.3 * W[:, 0] + 0.05 * rng.standard_normal(m)
    Z = (rng.random((n, k)) < 0.5).astype(np.int8)
    fs = factorised.FactorisedState(X, Z, W, True, state.params.beta, lik, state.params, data.prep)
    target = FactorisedRows(fs)
    tried = acc = 0
    for _ in range(20):
        counts = Z.sum(axis=0).astype(np.int64)
        t, a = array_move(rng, X, Z, W, counts, 0.3, target, None, IBP)
        tried, acc = tried + t, acc + a
        assert np.array_equal(counts, Z.sum(axis=0))
    assert acc > 20 and tried > acc, (tried, acc)
    Phi = feature_map(X * Z, W, True)
    assert np.allclose(fs.Phi, Phi, atol=1e-12)
    assert np.allclose(fs.psi, Phi @ fs.beta, atol=1e-10)
    assert np.allclose(fs.ll, lik.loglik_rows(Phi @ fs.beta, np.arange(n), state.params, data.prep))


def test_both_paths_propose_the_same_coordinates():
    """The array path (factorised, prior) and the compiled path (collapsed) implement one move:
    with the likelihood constant they accept the same transfers from the same uniforms."""
    rng = np.random.default_rng(5)
    n, k, m = 25, 3, 4
    X = rng.standard_normal((n, k))
    W = rng.standard_normal((m, k))
    W[:, 1] = -0.9 * W[:, 0]
    Z = (rng.random((n, k)) < 0.5).astype(np.int8)
    Z[:, 2] = 1
    a, b, c = tr.aligned_pairs(W, 0.95)
    assert a.tolist() == [0] and b.tolist() == [1]
    # Prior-only array path on one copy...
    X1, Z1 = X.copy(), Z.copy()
    t1, a1 = tr.transfer_pairs(
        np.random.default_rng(9), X1, Z1, W, Z1.sum(0).astype(np.int64), 0.95, NoLikelihood(), None, IBP
    )
    # ...and the closed form applied by hand to the rows it accepted.
    moved = np.flatnonzero(Z1[:, 0] != Z[:, 0])
    assert a1 == moved.size > 0
    assert np.allclose(X1[moved, 0], X[moved, 1] / c[0])
    assert np.allclose(X1[moved, 1], X[moved, 0] * c[0])
    assert np.array_equal(Z1[moved, 0], 1 - Z[moved, 0]) and np.array_equal(Z1[moved, 1], 1 - Z[moved, 1])
    untouched = np.setdiff1d(np.arange(n), moved)
    assert np.array_equal(X1[untouched], X[untouched]) and np.array_equal(Z1[untouched], Z[untouched])


@pytest.mark.parametrize("move", sorted(PAIR_MOVES))
def test_sweep_reports_each_pair_move_and_its_option_switches_it_off(move):
    rng = np.random.default_rng(0)
    data = model.Data.from_array(rng.standard_normal((40, 5)))
    for min_cos, ran in ((0.0, True), (None, False)):
        spec = model.ModelSpec(n_frequencies=5, n_dims=4, **{f"{move}_min_cos": min_cos})
        state = model.init_state(np.random.default_rng(1), data, spec)
        _, info = model.sweep(np.random.default_rng(2), state, data, spec)
        assert (getattr(info, f"{move}s_proposed") > 0) == ran
