"""The compiled frequency moves of the collapsed Gaussian (``targets/frequency_kernels.py``) against
the NumPy block they compile (``collapsed_frequencies._FrequencyBlock``):

* numba's draws from a ``numpy.random.Generator`` are NumPy's, so the kernels draw the
  reference's random numbers;
* a score agrees with the reference's to 1e-9 relative over many random proposals, with and
  without a bias column, for every frequency and after accepted moves;
* a pass of either move makes the reference's decisions from the same seed (``W`` equal to the
  last bits), writes back a cache equal to a rebuilt one, and the same seed gives the same
  ``W`` bit for bit run to run.
"""

import numpy as np
import pytest
from numba import njit

from ibp_rflvm.features import feature_map
from ibp_rflvm.likelihoods.gaussian import GaussianPrior
from ibp_rflvm.targets.collapsed_frequencies import (
    _compiled_blocks,
    _finish_compiled,
    _FrequencyBlock,
    _named_failure,
    ess_frequencies_collapsed,
    mh_frequencies,
)
from ibp_rflvm.targets.frequency_kernels import commit, evaluate, prepare, refactor
from ibp_rflvm.targets.row_cache import build_cache

PRIOR = GaussianPrior()


@njit(cache=True)
def _compiled_draws(rng, n):
    out = np.empty(3 * n)
    for i in range(n):
        out[3 * i] = rng.standard_normal()
        out[3 * i + 1] = rng.random()
        out[3 * i + 2] = rng.standard_normal()
    return out


def test_compiled_draws_are_numpys():
    a, b = np.random.default_rng(11), np.random.default_rng(11)
    compiled = _compiled_draws(a, 20_000)
    host = np.empty_like(compiled)
    for i in range(20_000):
        host[3 * i] = b.standard_normal()
        host[3 * i + 1] = b.random()
        host[3 * i + 2] = b.standard_normal()
    np.testing.assert_array_equal(compiled, host)
    assert a.bit_generator.state == b.bit_generator.state  # the generator advanced as NumPy's


def _problem(seed: int, bias: bool, N: int = 150, J: int = 5, M: int = 6, K: int = 3, noise: float = 0.3):
    """``H``, ``W``, mixture, ``Phi``, ``Y``: data that the frequencies explain, so that the
    likelihood is not flat in them."""
    rng = np.random.default_rng(seed)
    H = rng.standard_normal((N, K)) * (rng.random((N, K)) < 0.8)
    W = rng.standard_normal((M, K))
    Phi = feature_map(H, W, bias)
    Y = Phi @ rng.standard_normal((Phi.shape[1], J)) + noise * rng.standard_normal((N, J))
    zeta = rng.integers(0, 2, M)
    mu = 0.5 * rng.standard_normal((2, K))
    F = rng.standard_normal((2, K, K))
    Sigma = F @ F.transpose(0, 2, 1) / K + np.eye(K)
    return H, W, zeta, mu, Sigma, Phi, Y


def _compiled_score(blocks, m: int, M: int, w: np.ndarray) -> float:
    prepare(m, M, blocks)
    return evaluate(m, M, w, blocks)


@pytest.mark.parametrize("bias", [False, True])
def test_a_score_is_the_reference_blocks(bias):
    H, W, zeta, mu, Sigma, Phi, Y = _problem(0, bias)
    rng = np.random.default_rng(1)
    M, K = W.shape
    ref = _FrequencyBlock(H, W.copy(), Phi.copy(), Y, build_cache(Phi, Y, PRIOR), PRIOR)
    Phi_fast, W_fast = Phi.copy(), W.copy()
    cache = build_cache(Phi, Y, PRIOR)
    blocks = _compiled_blocks(H, Phi_fast, Y, cache, PRIOR)
    worst = 0.0
    for step in range(400):
        m = step % M
        w = mu[zeta[m]] + 1.5 * rng.standard_normal(K)
        ll_ref, pieces = ref.evaluate(m, w)
        ll = _compiled_score(blocks, m, M, w)
        worst = max(worst, abs(ll - ll_ref) / abs(ll_ref))
        if step % 7 == 0:  # accept now and then, so later scores start from moved states
            ref.commit(m, w, pieces)
            commit(m, w, W_fast, blocks)
            assert blocks.st[1] == pytest.approx(ref.ll, rel=1e-9)
            assert blocks.st[0] == pytest.approx(ref.logdet, rel=1e-9)
    assert worst < 1e-9, worst
    np.testing.assert_array_equal(W_fast, ref.W)
    np.testing.assert_allclose(Phi_fast, ref.Phi, rtol=0, atol=1e-15)
    np.testing.assert_allclose(blocks.PhiT, Phi_fast.T, rtol=0, atol=0)
    assert _finish_compiled(blocks, cache, PRIOR, True) == pytest.approx(ref.finish(), rel=1e-9)
    np.testing.assert_allclose(cache.A, ref.A, rtol=0, atol=1e-12)


def _pass(update, seed: int, bias: bool, compiled: bool, sweeps: int = 4, **kw):
    """`sweeps` passes of `update` over a problem, the cache rebuilt before each as the sweep
    does; returns ``W``, the passes' results, and the written-back and rebuilt caches."""
    H, W, zeta, mu, Sigma, Phi, Y = _problem(seed, bias, **kw)
    rng = np.random.default_rng(seed + 100)
    results = []
    for _ in range(sweeps):
        cache = build_cache(Phi, Y, PRIOR)
        results.append(update(rng, H, W, zeta, mu, Sigma, Phi, Y, cache, PRIOR, compiled=compiled))
    np.testing.assert_allclose(Phi, feature_map(H, W, bias), rtol=0, atol=1e-12)
    return W, results, cache, build_cache(Phi, Y, PRIOR)


# The Metropolis-Hastings step needs a likelihood flat enough for its independence proposals to
# be accepted: few rows and much noise.
CASES = {
    "ess": (ess_frequencies_collapsed, {}),
    "mh": (mh_frequencies, {"N": 12, "noise": 2.0}),
}


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("move", sorted(CASES))
def test_a_pass_makes_the_reference_decisions(move, bias):
    update, kw = CASES[move]
    W, results, cache, fresh = _pass(update, 3, bias, compiled=True, **kw)
    W_ref, results_ref, _, _ = _pass(update, 3, bias, compiled=False, **kw)
    for got, want in zip(results, results_ref, strict=True):
        assert got[:-1] == want[:-1]  # evaluations / acceptances, moved
        assert got[-1] == pytest.approx(want[-1], rel=1e-10)
    assert sum(r[0] for r in results) > 0  # the MH case accepts some proposals
    np.testing.assert_allclose(W, W_ref, rtol=0, atol=1e-13)
    np.testing.assert_allclose(cache.A, fresh.A, rtol=0, atol=1e-12)
    np.testing.assert_allclose(cache.P, fresh.P, rtol=1e-9, atol=1e-9)
    assert cache.loglik == pytest.approx(fresh.loglik, rel=1e-10)
    assert results[-1][-1] == pytest.approx(fresh.loglik, rel=1e-9)


@pytest.mark.parametrize("move", sorted(CASES))
def test_the_same_seed_gives_the_same_chain(move):
    update, kw = CASES[move]
    W_a, results_a, _, _ = _pass(update, 5, True, compiled=True, **kw)
    W_b, results_b, _, _ = _pass(update, 5, True, compiled=True, **kw)
    np.testing.assert_array_equal(W_a, W_b)
    assert results_a == results_b


@pytest.mark.parametrize("bad", [np.nan, -5.0])
def test_a_factorisation_that_fails_is_named(bad):
    """A NaN in ``S`` or a pivot that is not positive stops the pass with `factor`'s error."""
    H, W, zeta, mu, Sigma, Phi, Y = _problem(0, False, N=30)
    blocks = _compiled_blocks(H, Phi, Y, build_cache(Phi, Y, PRIOR), PRIOR)
    blocks.G[1, 1] = bad
    with pytest.raises(FloatingPointError, match="not finite or not positive definite"), _named_failure():
        refactor(blocks)
