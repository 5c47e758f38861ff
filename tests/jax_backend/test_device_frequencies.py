"""The device's elliptical slice move of the frequencies (``jax_backend/frequencies.py``, issue 56):
the move's joint-distribution test, as on the host (tests/targets/test_frequency_moves.py), with
a Poisson likelihood on the CPU: alternate ``Y ~ p(Y | W, rest)`` and one device update of every
``w_m``; ``W`` must stay ``N(mu_k, Sigma_k)`` and the update's log-likelihood gain have mean 0.
The move is compiled alone (a few seconds), not inside the whole sweep."""

import functools
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("jax")

from ibp_rflvm.jax_backend import jax  # noqa: E402
from ibp_rflvm.jax_backend.frequencies import ess_frequencies  # noqa: E402
from ibp_rflvm.summaries.diagnostics import batch_mean_se  # noqa: E402

from ..targets.test_frequency_moves import CHOL, MU, SIGMA, ZETA, _z_scores  # noqa: E402

jnp = jax.numpy
N, J, M, K = 12, 3, 3, 2
CFG = SimpleNamespace(M=M, bias=True, dlik=SimpleNamespace(row_groups=1, replicated=None))


def _features(H, W):
    proj = H @ W.T
    return np.hstack([np.cos(proj), np.sin(proj)]) / np.sqrt(M), proj


def _poisson_rows(psi, Y):
    return jnp.sum(Y * psi - jnp.exp(psi), axis=1)


@functools.partial(jax.jit, static_argnums=(5,))
def _update(key, W, H, beta, Y, power=1.0):
    """One device update; `power` other than 1 is a wrong move (the slice of ``L^power``)."""
    P = H @ W.T
    active = jnp.ones(K, dtype=jnp.float64)
    return ess_frequencies(
        key, W, jnp.asarray(ZETA), jnp.asarray(MU), jnp.asarray(SIGMA), active, H, P, beta,
        lambda psi: power * _poisson_rows(psi, Y), CFG,
    )  # fmt: skip


def _loglik(H, W, beta, Y) -> float:
    Phi, _ = _features(H, W)
    psi = np.hstack([Phi, np.ones((N, 1))]) @ beta
    return float(np.sum(Y * psi - np.exp(psi)))


def _device_chain(n_updates: int, power: float = 1.0) -> dict[str, float]:
    rng = np.random.default_rng(0)
    H = rng.standard_normal((N, K)) * (rng.random((N, K)) < 0.8)
    beta = rng.standard_normal((2 * M + 1, J))
    W = MU[ZETA] + np.einsum("mab,mb->ma", CHOL[ZETA], rng.standard_normal((M, K)))
    key = jax.random.PRNGKey(0)
    draws, gains, moved = [], [], 0
    for t in range(n_updates):
        Phi, _ = _features(H, W)
        Y = rng.poisson(np.exp(np.hstack([Phi, np.ones((N, 1))]) @ beta)).astype(float)
        before = _loglik(H, W, beta, Y)
        key_t = jax.random.fold_in(key, t)
        W_new, _, searched, n_moved = _update(key_t, jnp.asarray(W), H, beta, Y, power)
        W = np.asarray(W_new)
        assert int(searched) == M
        moved += int(n_moved)
        draws.append(W.copy())
        gains.append(_loglik(H, W, beta, Y) - before)
    assert moved > 0.99 * n_updates * M  # every frequency moves every update
    z = _z_scores(np.array(draws[100:]))
    mean, se = batch_mean_se(np.array(gains[100:]))
    z["gain"] = mean / se
    print(power, {k: round(float(v), 1) for k, v in z.items()})
    return z


@pytest.mark.slow
def test_the_device_move_gets_it_right():
    z = _device_chain(2000)
    assert max(abs(v) for v in z.values()) < 4.0, z


@pytest.mark.slow
def test_the_device_move_test_has_power():
    """The slice of ``L^(1/2)`` (a square-rooted likelihood ratio) must show beyond 6 MCSE."""
    z = _device_chain(1000, power=0.5)
    assert max(abs(v) for v in z.values()) > 6.0, z
