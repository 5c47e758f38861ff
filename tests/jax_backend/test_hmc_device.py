"""The device's HMC move (``jax_backend/hmc_device.py``, issue 65) against the host's
(:mod:`ibp_rflvm.samplers.hmc`): the same trajectory, ratio and decision when the host replays
the device's draws on a padded state (dead slots and junk in them); the invariance check of
tests/samplers/test_hmc.py (one move from an exact draw of a Gaussian toy's posterior is an
exact draw) run on the device function, with its power check; padding and non-finite
trajectories left alone; the warm-up's step equal to the host's."""

from functools import partial

import numpy as np
import pytest

pytest.importorskip("jax")

from ibp_rflvm.jax_backend import hmc_device, jax  # noqa: E402
from ibp_rflvm.samplers import hmc  # noqa: E402

from ..samplers.test_hmc import TAU_W, TAU_X, _posterior_draw, _toy, _z  # noqa: E402

jnp = jax.numpy
N, K, M = 6, 2, 4
#: The live slots of the padded state, a dead slot between them and one after.
SLOTS = np.array([0, 2])
WIDTH = 4
ZETA = np.array([0, 0, 1, 1])
MU = np.array([[0.5, -0.5], [-1.0, 0.2]])
SIGMA = np.array([[[1.0, 0.3], [0.3, 0.5]], [[0.4, -0.1], [-0.1, 0.8]]])


def _pad(X, Z, W, c_x, c_w, seed=0):
    """The device layout: live slots at SLOTS, junk in the dead slots' positions, frequencies,
    means and covariances (the move must neither read nor change it), labels 0 and 1 moved to
    label slots 3 and 1."""
    rng = np.random.default_rng(seed)
    Xp, Wp = rng.standard_normal((N, WIDTH)), rng.standard_normal((M, WIDTH))
    Zp = np.zeros((N, WIDTH), dtype=bool)
    Xp[:, SLOTS], Zp[:, SLOTS], Wp[:, SLOTS] = X, Z != 0, W
    cxp, cwp = np.zeros((N, WIDTH)), rng.standard_normal((M, WIDTH))
    cxp[:, SLOTS], cwp[:, SLOTS] = c_x, c_w
    relabel = np.array([3, 1])
    mu = rng.standard_normal((M, WIDTH))
    Sigma = np.broadcast_to(np.eye(WIDTH) * 7.0, (M, WIDTH, WIDTH)).copy()
    Sigma[:, 0, 1] = Sigma[:, 1, 0] = 0.5  # a live-dead covariance the move must not read
    for k, slot in enumerate(relabel):
        mu[slot, SLOTS] = MU[k]
        Sigma[slot][np.ix_(SLOTS, SLOTS)] = SIGMA[k]
    active = np.zeros(WIDTH, dtype=bool)
    active[SLOTS] = True
    return Xp, Zp, Wp, relabel[ZETA].astype(np.int32), mu, Sigma, active, cxp, cwp


def _device_toy(c_x, c_w):
    """The host's toy likelihood (tests/samplers/test_hmc.py ``_toy``) and its gradient as a
    JAX function."""

    def value_and_grad(H, W):
        dx, dw = H - c_x, W - c_w
        return -0.5 * TAU_X * jnp.sum(dx * dx) - 0.5 * TAU_W * jnp.sum(dw * dw), -TAU_X * dx, -TAU_W * dw

    return value_and_grad


def _move(key, X, Z, W, zeta, mu, Sigma, active, c_x, c_w, steps, n_leapfrog):
    return hmc_device.hmc_block(
        key, X, Z, W, zeta, mu, Sigma, active, _device_toy(c_x, c_w), *steps, n_leapfrog
    )


class _Replay:
    """A stand-in for the host's Generator handing out the device's draws of the moving
    coordinates in the order :func:`ibp_rflvm.samplers.hmc.hmc_block` asks for them."""

    def __init__(self, key, Z):
        k_x, k_w, k_u, k_v = jax.random.split(key, 4)
        rx = np.asarray(jax.random.normal(k_x, (N, WIDTH), dtype=jnp.float64))[:, SLOTS]
        self.queue = [
            rx[Z != 0], np.asarray(jax.random.normal(k_w, (M, WIDTH), dtype=jnp.float64))[:, SLOTS],
        ]
        self.u = float(jax.random.uniform(k_u, (), dtype=jnp.float64, minval=0.8, maxval=1.2))
        self.v = float(jax.random.uniform(k_v, (), dtype=jnp.float64))

    def standard_normal(self, shape):
        out = self.queue.pop(0)
        assert out.size == np.prod(shape)
        return out.reshape(shape)

    def uniform(self, low, high):
        return self.u

    def random(self):
        return self.v


@pytest.mark.parametrize(("seed", "steps"), [(0, (0.3, 0.3)), (1, (0.8, 0.6)), (2, (1.5, 1.5))])
def test_the_host_move_replayed_on_the_device_draws(seed, steps):
    """Same state, same momenta, jitter and uniform: the same end point, ratio and decision
    (large steps reject, small ones accept, so both branches are compared)."""
    rng = np.random.default_rng(seed)
    Z = (rng.random((N, K)) < 0.6).astype(np.int8)
    c_x, c_w = rng.standard_normal((N, K)), rng.standard_normal((M, K))
    X, W = _posterior_draw(rng, Z, c_x, c_w, ZETA, MU, SIGMA)
    padded = _pad(X, Z, W, c_x, c_w, seed)
    decisions = []
    for r in range(4):
        key = jax.random.key(100 * seed + r)
        Xh, Wh = X.copy(), W.copy()
        host = (_Replay(key, Z), Xh, Z, Wh, ZETA, MU, SIGMA, _toy(c_x, c_w))
        accepted, log_r = hmc.hmc_block(*host, *steps, 5)
        Xd, Wd, acc_d, log_r_d = jax.jit(_move, static_argnums=(11,))(key, *padded, steps, 5)
        assert bool(acc_d) == accepted
        assert float(log_r_d) == pytest.approx(log_r, rel=1e-9, abs=1e-9)
        np.testing.assert_allclose(np.asarray(Xd)[:, SLOTS], Xh, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(np.asarray(Wd)[:, SLOTS], Wh, rtol=1e-10, atol=1e-12)
        dead = np.setdiff1d(np.arange(WIDTH), SLOTS)
        np.testing.assert_array_equal(np.asarray(Xd)[:, dead], padded[0][:, dead])
        np.testing.assert_array_equal(np.asarray(Wd)[:, dead], padded[2][:, dead])
        decisions.append(accepted)
    if steps[0] < 0.5:
        assert any(decisions)


REPLICATES = 3000


def _replicates(seed, steps=(0.35, 0.35), n_leapfrog=4):
    """Before and after one device move from exact posterior draws of the toy (the statistics
    of tests/samplers/test_hmc.py: the used coordinates, ``W`` and ``W^2``)."""
    rng = np.random.default_rng(seed)
    Z = (rng.random((N, K)) < 0.6).astype(np.int8)
    c_x, c_w = rng.standard_normal((N, K)), rng.standard_normal((M, K))
    starts = [_posterior_draw(rng, Z, c_x, c_w, ZETA, MU, SIGMA) for _ in range(REPLICATES)]
    padded = [_pad(X, Z, W, c_x, c_w) for X, W in starts]
    Xs = np.stack([p[0] for p in padded])
    Ws = np.stack([p[2] for p in padded])
    _, Zp, _, zeta, mu, Sigma, active, cxp, cwp = padded[0]
    keys = jax.random.split(jax.random.key(seed), REPLICATES)
    one = partial(_move, steps=steps, n_leapfrog=n_leapfrog)
    run = jax.jit(jax.vmap(lambda k, X, W: one(k, X, Zp, W, zeta, mu, Sigma, active, cxp, cwp)))
    Xa, Wa, accepted, _ = (np.asarray(v) for v in run(keys, Xs, Ws))

    def stats(Xr, Wr):
        Wl = Wr[:, :, SLOTS].reshape(REPLICATES, -1)
        return np.concatenate([Xr[:, :, SLOTS][:, Z != 0], Wl, Wl**2], axis=1)

    return stats(Xs, Ws), stats(Xa, Wa), accepted.mean()


def test_one_device_move_from_an_exact_draw_is_an_exact_draw():
    before, after, rate = _replicates(0)
    z = _z(before, after)
    # About 20 statistics; each |z| above 4.3 has probability 2e-5 under invariance.
    assert np.all(np.abs(z) < 4.3), z
    assert 0.3 < rate < 0.98, rate
    assert np.mean(np.abs(after - before).max(axis=1) > 0) > 0.3


def test_the_device_check_sees_a_ratio_without_the_frequencies_prior(monkeypatch):
    """The same check with the frequencies' prior left out of the target (its gradient and its
    ratio): the power the host's check has, z beyond 6."""
    real = hmc_device.block_log_density

    def forgetful(value_and_grad, X, W, Zf, on, live, zeta, mu, precision, total):
        return real(value_and_grad, X, W, Zf, on, live, zeta, mu, jnp.zeros_like(precision), total)

    monkeypatch.setattr(hmc_device, "block_log_density", forgetful)
    before, after, _ = _replicates(1, steps=(0.6, 0.6), n_leapfrog=6)
    assert np.max(np.abs(_z(before, after))) > 6.0


def test_a_non_finite_trajectory_is_rejected_and_changes_nothing():
    rng = np.random.default_rng(3)
    Z = (rng.random((N, K)) < 0.5).astype(np.int8)
    X, W = rng.standard_normal((N, K)), rng.standard_normal((M, K))
    Xp, Zp, Wp, zeta, mu, Sigma, active, _, _ = _pad(X, Z, W, X, W)

    def nan_away(H, W_):
        return jnp.where(jnp.all(W_ == Wp), 0.0, jnp.nan), jnp.zeros_like(H), jnp.zeros_like(W_)

    out = jax.jit(hmc_device.hmc_block, static_argnums=(8, 11))(
        jax.random.key(0), Xp, Zp, Wp, zeta, mu, Sigma, active, nan_away, 0.1, 0.1, 3
    )
    assert not bool(out[2]) and float(out[3]) == -np.inf
    np.testing.assert_array_equal(np.asarray(out[0]), Xp)
    np.testing.assert_array_equal(np.asarray(out[1]), Wp)


@pytest.mark.parametrize(
    ("log_r", "sweep"), [(0.0, 0), (-0.4, 3), (-50.0, 10), (float("nan"), 2), (1.3, 999)]
)
def test_the_warm_up_step_is_the_hosts(log_r, sweep):
    device = hmc_device.adapt_factor(jnp.asarray(1.7), jnp.asarray(log_r), jnp.asarray(sweep))
    assert float(device) == pytest.approx(hmc.adapt_factor(1.7, log_r, sweep), rel=1e-14)
