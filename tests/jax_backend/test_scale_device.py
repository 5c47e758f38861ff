"""The device's scale move (``jax_backend/scale_device.py``, issue 65) against the host's
(:mod:`ibp_rflvm.samplers.scale`): the same log acceptance ratio for the same proposal on the
same state, padded with dead slots and relabelled; the same chain when the host replays the
device's draws; the evidence inverses it tracks by rank-one updates equal to those recomputed;
products kept, only used coordinates and live slots moved; and the host's invariance check
(one move from an exact prior draw is an exact prior draw) run on the device function, with its
power check."""

import numpy as np
import pytest

pytest.importorskip("jax")

from ibp_rflvm.jax_backend import jax, scale_device  # noqa: E402
from ibp_rflvm.samplers import scale  # noqa: E402

from ..samplers.test_scale import LAM0, REPLICATES, K, _prior_state, _statistics, _z_scores  # noqa: E402

jnp = jax.numpy
#: The live slots of a padded state: dead slots between and after them, as mid-sweep.
SLOTS = np.array([1, 3, 4])
WIDTH = 6


def _host_state(seed, n=9, m=7):
    """A host state of three dimensions with ``Z`` counts, three components labelled 0, 2, 5."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, SLOTS.size))
    Z = (rng.random(X.shape) < 0.6) * rng.integers(1, 3, X.shape)
    W = rng.standard_normal((m, SLOTS.size)) * np.array([0.5, 1.0, 2.0])
    zeta = np.array([0, 2, 5])[rng.integers(0, 3, m)]
    return X, Z, W, zeta


def _padded(X, Z, W, zeta, slots=SLOTS, width=WIDTH, seed=0):
    """The device layout with junk in the dead slots (which the move must leave alone) and the
    labels moved to other slots of ``[0, M)``."""
    rng = np.random.default_rng(seed)
    Xp = rng.standard_normal((X.shape[0], width))
    Wp = rng.standard_normal((W.shape[0], width))
    Zp = np.zeros((X.shape[0], width), dtype=bool)
    Xp[:, slots], Zp[:, slots], Wp[:, slots] = X, Z != 0, W
    active = np.zeros(width, dtype=bool)
    active[slots] = True
    relabel = np.roll(np.arange(W.shape[0]), 2)
    return Xp, Zp, Wp, relabel[zeta].astype(np.int32), active


def _host_log_ratio(u, d, X, Z, W, zeta):
    """The host move's ``log r`` at its state, from its own pieces."""
    G, n_k = scale._component_stats(W, zeta, LAM0)
    nu = W.shape[1] + 2.0 + n_k
    trial = np.ones(W.shape[1])
    trial[d] = np.exp(-u)
    on = Z[:, d] != 0
    evidence = scale._log_evidence_terms(G, nu, trial) - scale._log_evidence_terms(G, nu, np.ones(W.shape[1]))
    return (on.sum() - W.shape[0]) * u - 0.5 * np.expm1(2.0 * u) * np.sum(X[on, d] ** 2) + evidence


@pytest.mark.parametrize("seed", [0, 1])
def test_the_same_ratio_as_the_host_for_the_same_proposal(seed):
    X, Z, W, zeta = _host_state(seed)
    Xp, Zp, Wp, zp, active = _padded(X, Z, W, zeta)
    ratio = jax.jit(scale_device.scale_log_ratio, static_argnums=(1,))
    for d, slot in enumerate(SLOTS):
        for u in (-0.8, -0.05, 1e-6, 0.3, 1.2):
            host = _host_log_ratio(u, d, X, Z, W, zeta)
            device = float(ratio(u, int(slot), Xp, Zp, Wp, zp, active, LAM0))
            assert device == pytest.approx(host, rel=1e-10, abs=1e-10), (d, u)


class _Replay:
    """A stand-in for the host's Generator that hands out the device's draws of the live slots
    in the order the host's loop asks for them."""

    def __init__(self, e, v):
        self.normals = iter(e[SLOTS].ravel())
        self.uniforms = iter(v[SLOTS].ravel())

    def standard_normal(self):
        return float(next(self.normals))

    def random(self):
        return float(next(self.uniforms))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_host_replaying_the_device_draws_makes_the_same_move(seed):
    X, Z, W, zeta = _host_state(seed)
    Xp, Zp, Wp, zp, active = _padded(X, Z, W, zeta)
    key = jax.random.key(seed)
    steps = 6
    X1, W1, proposed, accepted = jax.jit(scale_device.scale_moves, static_argnums=(7,))(
        key, Xp, Zp, Wp, zp, active, LAM0, steps
    )
    X1, W1 = np.asarray(X1), np.asarray(W1)
    e, v = (np.asarray(a) for a in scale_device.proposal_draws(key, WIDTH, steps))
    Xh, Wh = X.copy(), W.copy()
    host = scale.scale_moves(_Replay(e, v), Xh, Z, Wh, zeta, LAM0, steps)
    assert (int(proposed), int(accepted)) == host
    assert 0 < host[1] < host[0]  # some proposals taken and some refused: the ratio decided
    np.testing.assert_allclose(X1[:, SLOTS], Xh, rtol=1e-12)
    np.testing.assert_allclose(W1[:, SLOTS], Wh, rtol=1e-12)
    dead = ~active
    np.testing.assert_array_equal(X1[:, dead], Xp[:, dead])
    np.testing.assert_array_equal(W1[:, dead], Wp[:, dead])
    np.testing.assert_array_equal(X1[~Zp], Xp[~Zp])  # unused coordinates stay
    H0, H1 = np.where(Zp, Xp, 0.0)[:, SLOTS], np.where(Zp, X1, 0.0)[:, SLOTS]
    np.testing.assert_allclose(H1 @ W1[:, SLOTS].T, H0 @ Wp[:, SLOTS].T, rtol=1e-12, atol=1e-12)


def test_the_tracked_inverses_are_those_of_the_moved_frequencies():
    """The rank-one updates of every component's ``Psi_k^{-1}`` over a whole move equal the
    inverses computed afresh at the moved frequencies."""
    X, Z, W, zeta = _host_state(4, m=12)
    Xp, Zp, Wp, zp, active = _padded(X, Z, W, zeta)
    U, Q, accepted = jax.jit(scale_device.log_scales, static_argnums=(7,))(
        jax.random.key(0), Xp, Zp, Wp, zp, active, LAM0, 8
    )
    assert int(accepted) > 4
    fresh, _ = scale_device.evidence_inverses(Wp * np.exp(-np.asarray(U)), zp, active, LAM0)
    np.testing.assert_allclose(np.asarray(Q), np.asarray(fresh), rtol=1e-10, atol=1e-12)


def _device_before_and_after(seed):
    """The host test's replicates (:func:`tests.samplers.test_scale._prior_state`) padded with a
    dead slot between the two live ones, one device move each."""
    rng = np.random.default_rng(seed)
    slots = np.array([0, 2])
    states = [_padded(*_prior_state(rng), slots=slots, width=K + 1, seed=r) for r in range(REPLICATES)]
    Xp, Zp, Wp, zp, active = (np.stack(a) for a in zip(*states, strict=True))
    keys = jax.random.split(jax.random.key(seed), REPLICATES)
    # A fresh function each call: the power check traces the move again with its wrong ratio.
    move = jax.jit(jax.vmap(lambda k, x, z, w, c, a: scale_device.scale_moves(k, x, z, w, c, a, LAM0)))
    X1, W1, proposed, accepted = (np.asarray(a) for a in move(keys, Xp, Zp, Wp, zp, active))
    np.testing.assert_array_equal(X1[:, :, 1], Xp[:, :, 1])  # the dead slot
    np.testing.assert_array_equal(W1[:, :, 1], Wp[:, :, 1])

    def stats(Xs, Ws):
        return np.array([_statistics(x[:, slots], z[:, slots], w[:, slots])
                         for x, z, w in zip(Xs, Zp, Ws, strict=True)])  # fmt: skip

    before, after = stats(Xp, Wp), stats(X1, W1)
    assert np.all(proposed == K * scale.SCALE_STEPS)
    return before, after, accepted.sum() / proposed.sum()


def test_one_device_move_from_a_prior_draw_is_a_prior_draw():
    before, after, rate = _device_before_and_after(0)
    z = _z_scores(before, after)
    # Four statistics; each |z| above 4 has probability 6e-5 under invariance.
    assert np.all(np.abs(z) < 4.0), z
    assert 0.2 < rate < 0.95, rate  # the move moves, so the check tests it
    assert (np.abs(after - before).max(axis=1) > 0).mean() > 0.5


def test_the_device_check_sees_a_ratio_without_the_frequencies_prior(monkeypatch):
    def without_evidence(u, n_d, A_d, M, q, half_nu):
        return (n_d - M) * u - 0.5 * jnp.expm1(2.0 * u) * A_d

    monkeypatch.setattr(scale_device, "log_ratio", without_evidence)
    before, after, _ = _device_before_and_after(1)
    z = _z_scores(before, after)
    assert np.max(np.abs(z)) > 6.0, z
