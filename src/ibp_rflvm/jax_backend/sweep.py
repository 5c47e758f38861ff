"""One MCMC sweep as one pure JAX function: ``sweep_step(key, state, data, config)``.

Every update of SPEC section 2 runs inside it, on device arrays: ``Z``'s moves, births and
deaths, the sticks and ``alpha`` (:mod:`.ibp_device`), ``X`` by elliptical slice sampling, the
frequencies by elliptical slice sampling (:mod:`.frequencies`) or Metropolis-Hastings, every
used coordinate and frequency at once by HMC (:mod:`.hmc_device`), each dimension's scale
(:mod:`.scale_device`), the frequencies' Dirichlet-process mixture
(:mod:`.dp_device`) and the likelihood's weights and own variables (:mod:`.likelihoods`).
``jax.jit`` compiles it once per fit (the shapes are fixed: the latent dimensions live in
``width`` slots, a mask of which are in use); ``jax.lax.scan`` runs many sweeps in one call.
No update calls back to the host.

The state (:class:`DeviceState`) is kept canonical at the end of every sweep: the dimensions in
use fill the first slots, in order, the slots after them hold zeros, and the mixture's labels are
numbered by first appearance. So a state read back to the host (:mod:`.kernel`) and sent again is
the same state, bit for bit, and a chain run sweep by sweep from the host is the chain run by
``scan`` on the device.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from functools import partial
from typing import Any, NamedTuple

from ..state import ChainState, MoveCounts
from . import ibp_device as zmoves
from . import jax, linalg
from .dp_device import dp_step
from .ess import elliptical_slice_rows
from .frequencies import ess_frequencies
from .hmc_device import STEP_FACTOR, adapt_factor, feature_gradient, hmc_block
from .programs import features_of
from .rowsum import row_matmul, row_sum, rows_dot
from .scale_device import scale_moves

jnp = jax.numpy
lax = jax.lax


@dataclass(frozen=True)
class SweepConfig:
    """What the compiled sweep fixes: the model's settings (hashable: a static argument).

    `width` is the number of latent slots (the cap on ``K+`` for the IBP, the dimensions of the
    dense model); `harmonic` is ``sum_{i=1..N} beta / (beta + i - 1)`` (``E[K+] / alpha``), and
    `new_rate_per_alpha` the singletons' rate ``beta / (beta + N - 1)`` over ``alpha``.
    """

    dlik: Any
    bias: bool
    M: int
    width: int
    ibp: bool
    moves: bool
    flip_scale: float
    transfer_min_cos: float | None
    absorb_min_cos: float | None
    pairs_per_dim: float | None
    lam0: float
    alpha_prior: tuple[float, float]
    fixed_alpha: float | None
    eta_prior: tuple[float, float]
    #: The prior's (:meth:`ibp_rflvm.priors.FeaturePrior.on_device`): the second parameter of
    #: the sticks' ``Beta(m, N - m + sticks)``, ``E[K+] / alpha`` and the singleton rate per
    #: unit ``alpha``.
    sticks: float
    harmonic: float
    new_rate_per_alpha: float
    #: ``"ess"`` or ``"mh"`` (:attr:`ibp_rflvm.state.ModelSpec.frequency_update`).
    frequency_update: str = "mh"
    #: The scale move before the mixture's step (:attr:`ibp_rflvm.state.ModelSpec.scale_move`).
    scale_move: bool = False
    #: The HMC move's leapfrog steps (0: no move) and base steps
    #: (:attr:`ibp_rflvm.state.ModelSpec.hmc_leapfrog`, ``hmc_steps``). Its warm-up's length is
    #: an argument of the sweep, not a setting here: a fit's burn-in must not compile a program.
    hmc_leapfrog: int = 0
    hmc_steps: tuple[float, float] = (0.03, 0.01)
    #: Rounds of each column's Gibbs pass, alternating with its stick
    #: (:func:`.ibp_device.gibbs_columns`; 1: the column given the sweep's sticks alone).
    stick_rounds: int = 1


#: One state of the chain on the device: the host's :class:`~ibp_rflvm.state.ChainState`, its
#: fields device arrays padded to the config's width (the mixture to ``M`` labels), ``Y`` None
#: (the device's likelihoods leave unobserved entries out) and ``z_state`` constant.
DeviceState = ChainState
jax.tree_util.register_dataclass(ChainState, data_fields=[f.name for f in fields(ChainState)], meta_fields=[])


class DeviceInfo(NamedTuple):
    """What one sweep did: ``K+``, the mixture's components, the move counts (the host's
    :class:`ibp_rflvm.state.MoveCounts`, one definition for both backends' records, here as
    device scalars) and the first row whose log-likelihood is not finite at the end of the sweep
    (-1: none), which the driver reports as an error naming the row."""

    k_plus: jax.Array
    n_components: jax.Array
    moves: MoveCounts
    nonfinite_row: jax.Array


def rows_times(A, B, cfg: SweepConfig):
    """``A @ B`` for an array of rows ``A`` (:func:`.rowsum.row_matmul`: the same bits on every
    number of devices)."""
    return row_matmul(A, B, cfg.dlik.row_groups, cfg.dlik.replicated)


def rows_total(v, cfg: SweepConfig):
    """``sum_i v[i]`` over the rows (:func:`.rowsum.row_sum`: the same bits on every number of
    devices)."""
    return row_sum(v, cfg.dlik.row_groups, cfg.dlik.replicated)


def make_scorers(beta, const, dparams, data, cfg: SweepConfig):
    """``score(P)``: every row's log-likelihood at projections ``P``; ``score_row(p, i)``: row
    ``i``'s at projections ``p`` (float64 sums)."""
    dlik = cfg.dlik
    every = slice(None)

    def score(P):
        psi = rows_times(features_of(P, cfg.bias, cfg.M), beta, cfg)
        return dlik.row_loglik(psi, every, const, dparams, data)

    def score_row(p, i):
        psi = features_of(p[None, :], cfg.bias, cfg.M) @ beta
        return dlik.row_loglik(psi, jnp.reshape(i, (1,)), const, dparams, data)[0]

    return score, score_row


def mh_frequencies(key, W, zeta, mu, Sigma, active, H, P, beta, score_psi, cfg: SweepConfig):
    """Metropolis-Hastings of each frequency in turn with its mixture component's Gaussian as an
    independence proposal: the prior and proposal densities cancel, so ``log u < sum_i ll_i(w*) -
    sum_i ll_i(w)`` (a float64 sum) decides. A proposal changes two columns of ``Phi``, so
    ``psi`` moves by a rank-2 product. Coordinates of unused slots stay 0."""
    M = cfg.M
    k_e, k_u = jax.random.split(key)
    row_total = partial(rows_total, cfg=cfg)
    chol = linalg.cholesky(Sigma)
    e = jax.random.normal(k_e, W.shape, dtype=jnp.float64)
    W_prop = (mu[zeta] + jnp.einsum("mab,mb->ma", chol[zeta], e)) * active[None, :]
    log_u = jnp.log(jax.random.uniform(k_u, (M,), dtype=jnp.float64))
    scale = 1.0 / math.sqrt(M)
    Phi = features_of(P, cfg.bias, M)
    psi = rows_times(Phi, beta, cfg)
    ll = score_psi(psi)

    def body(m, s):
        W, P, Phi, psi, ll, total, acc = s
        proj = rows_times(H, W_prop[m], cfg)
        new = jnp.stack([jnp.cos(proj), jnp.sin(proj)], axis=1) * scale
        old = jnp.stack([Phi[:, m], Phi[:, m + M]], axis=1)
        B = jnp.stack([beta[m], beta[m + M]], axis=0)
        psi_p = psi + rows_times(new - old, B, cfg)
        ll_p = score_psi(psi_p)
        total_p = row_total(ll_p)

        def accept(_):
            Phi_n = Phi.at[:, m].set(new[:, 0]).at[:, m + M].set(new[:, 1])
            return W.at[m].set(W_prop[m]), P.at[:, m].set(proj), Phi_n, psi_p, ll_p, total_p, acc + 1

        return lax.cond(log_u[m] < total_p - total, accept, lambda _: s, None)

    s = (W, P, Phi, psi, ll, row_total(ll), jnp.zeros((), jnp.int64))
    W, P, _, _, _, _, acc = lax.fori_loop(0, M, body, s)
    return W, P, acc


def first_members(zeta, M: int):
    """Each label's first member (``M`` for a label without one), by comparison rather than a
    scatter whose indices repeat."""
    m = jnp.arange(M)
    return jnp.min(jnp.where(zeta[None, :] == m[:, None], m[None, :], M), axis=1)


def canonical(st: DeviceState, active) -> DeviceState:
    """The used slots first (in order), zeros after; the mixture's labels by first appearance,
    unused labels' components neutral (mean 0, identity covariance)."""
    Kw = st.X.shape[1]
    M = st.W.shape[0]
    order = jnp.argsort(~active, stable=True)
    act = active[order]
    X = jnp.where(act[None, :], st.X[:, order], 0.0)
    Z = st.Z[:, order] & act[None, :]
    W = jnp.where(act[None, :], st.W[:, order], 0.0)
    pi = jnp.where(act, st.pi[order], 0.5)
    first = first_members(st.zeta, M)
    perm = jnp.argsort(first, stable=True)
    used = first[perm] < M
    zeta = jnp.argsort(perm, stable=True)[st.zeta].astype(st.zeta.dtype)
    both = used[:, None] & act[None, :]
    mu = jnp.where(both, st.mu[perm][:, order], 0.0)
    Sig = st.Sigma[perm][:, order][:, :, order]
    eye = jnp.eye(Kw, dtype=bool)
    keep = both[:, :, None] & both[:, None, :]
    Sigma = jnp.where(keep, Sig, jnp.where(eye[None], 1.0, 0.0))
    return replace(st, X=X, Z=Z, W=W, pi=pi, zeta=zeta, mu=mu, Sigma=Sigma)


def sweep_step(
    key, st: DeviceState, data, cfg: SweepConfig, adapt_sweeps=0
) -> tuple[DeviceState, DeviceInfo]:
    """One sweep from `st` (module docstring): pure, and jit-compilable with `cfg` static. The
    HMC move's step factor adapts in the sweeps numbered below `adapt_sweeps` (a traced integer:
    the warm-up's length, :attr:`ibp_rflvm.state.ModelSpec.hmc_adapt_sweeps`)."""
    dlik = cfg.dlik
    # Seven keys without the later moves, as before they existed: those chains keep their bits.
    extra = int(cfg.scale_move) + int(cfg.hmc_leapfrog > 0)
    k_z, k_x, k_w, k_dp, k_lik, k_alpha, k_pi, *k_more = jax.random.split(key, 7 + extra)
    k_hmc = k_more.pop() if cfg.hmc_leapfrog > 0 else None
    tuning = st.tuning
    dparams = st.params
    beta = dparams.beta
    const = dlik.row_constants(dparams, data)
    score, score_row = make_scorers(beta, const, dparams, data, cfg)
    total = partial(rows_total, cfg=cfg)  # every sum over rows the moves take
    X, Z, W, mu, Sigma, pi, alpha = st.X, st.Z, st.W, st.mu, st.Sigma, st.pi, st.alpha
    P = rows_times(X * Z, W.T, cfg)
    ll = score(P)
    bad_start = ~jnp.isfinite(ll)
    zero = jnp.zeros((), jnp.int64)
    counts = {}
    if cfg.ibp:
        active = jnp.any(Z, axis=0)
        zs = zmoves.ZState(X, Z, P, ll, W, mu, Sigma)
        k_g, k_f, k_p, k_t, k_a, k_s = jax.random.split(k_z, 6)
        # The sticks the column passes end on: the later moves read them (each is a state's).
        zs, counts["z_flips"], pi = zmoves.gibbs_columns(
            k_g, zs, pi, active, score, cfg.stick_rounds, cfg.sticks
        )
        if cfg.moves:
            zs, counts["flips_proposed"], counts["flips"] = zmoves.flip_columns(
                k_f, zs, pi, active, cfg.flip_scale, score
            )
            if cfg.transfer_min_cos is not None:
                pairs = zmoves.aligned_pairs(k_p, zs.W, active, cfg.transfer_min_cos, cfg.pairs_per_dim)
                zs, counts["transfers_proposed"], counts["transfers"] = zmoves.transfers(
                    k_t, zs, pi, pairs, score
                )
            if cfg.absorb_min_cos is not None:
                if cfg.absorb_min_cos != cfg.transfer_min_cos:
                    pairs = zmoves.aligned_pairs(k_p, zs.W, active, cfg.absorb_min_cos, cfg.pairs_per_dim)
                zs, counts["absorbs_proposed"], counts["absorbs"] = zmoves.absorbs(k_a, zs, pi, pairs, score)
            rate = alpha * cfg.new_rate_per_alpha
            zs, counts["births"], counts["deaths"], counts["singletons_proposed"], counts["singletons"] = (
                zmoves.singletons(k_s, zs, st.zeta, rate, cfg.flip_scale, cfg.lam0, cfg.width, score_row)
            )
        X, Z, P, ll, W, mu, Sigma = zs
        active = jnp.any(Z, axis=0)
        pi = zmoves.draw_sticks(k_pi, Z, cfg.sticks)
        if cfg.fixed_alpha is None:
            a, b = cfg.alpha_prior
            k_plus = jnp.sum(active)
            alpha = jax.random.gamma(k_alpha, a + k_plus, dtype=jnp.float64) / (b + cfg.harmonic)
    else:
        active = jnp.ones(Z.shape[1], dtype=bool)
    Zf = Z.astype(jnp.float64)

    def x_loglik(prop, rows):
        if isinstance(rows, slice):  # every row, in order: by row groups, as the other products
            P_prop = rows_times(prop * Zf, W.T, cfg)
            return score(P_prop), (P_prop,)
        # A buffer of the rows still searching: copied whole to every device, where the same
        # product of the same shape runs whatever the number of devices (it holds N/8 rows or
        # fewer, so the copies cost little).
        if dlik.replicated is not None:
            prop, rows = lax.with_sharding_constraint((prop, rows), dlik.replicated)
        P_prop = (prop * Zf[rows]) @ W.T
        psi = features_of(P_prop, cfg.bias, cfg.M) @ beta
        return dlik.row_loglik(psi, rows, const, dparams, data), (P_prop,)

    X, ll, (P,), x_evals = elliptical_slice_rows(k_x, X, x_loglik, ll, (P,))

    def score_psi(psi):
        return dlik.row_loglik(psi, slice(None), const, dparams, data)

    w_args = (k_w, W, st.zeta, mu, Sigma, active, X * Zf, P, beta, score_psi, cfg)
    if cfg.frequency_update == "ess":
        W, P, w_acc, w_moved = ess_frequencies(*w_args)
    else:
        W, P, w_acc = mh_frequencies(*w_args)
        w_moved = w_acc  # the paper's step: an accepted proposal is a new value
    if cfg.hmc_leapfrog > 0:
        factor = tuning[STEP_FACTOR]

        def psi_grad(psi):
            # Each entry's derivative: the pullback of the rows' log-likelihoods through ones.
            ll_rows, pullback = jax.vjp(score_psi, psi)
            return total(ll_rows), pullback(jnp.ones_like(ll_rows))[0]

        def block_value_and_grad(H, W):
            return feature_gradient(
                psi_grad, H, W, beta, cfg.bias, cfg.M, lambda A, B: rows_times(A, B, cfg),
                lambda A, B: rows_dot(A, B, dlik.row_groups, dlik.replicated),
            )  # fmt: skip

        X, W, hmc_acc, log_r = hmc_block(
            k_hmc, X, Z, W, st.zeta, mu, Sigma, active, block_value_and_grad, factor * cfg.hmc_steps[0],
            factor * cfg.hmc_steps[1], cfg.hmc_leapfrog, total,
        )  # fmt: skip
        P = lax.cond(hmc_acc, lambda: rows_times(X * Zf, W.T, cfg), lambda: P)
        # Warm-up only: the kept sweeps run one fixed kernel.
        factor = jnp.where(st.sweep < adapt_sweeps, adapt_factor(factor, log_r, st.sweep), factor)
        tuning = {**tuning, STEP_FACTOR: factor}
    if cfg.scale_move:
        # With the components integrated out: the mixture's step below draws them afresh. The
        # products H W^T are unchanged, so P (and the features the weights' update reads) stand.
        X, W, _, _ = scale_moves(k_more[0], X, Z, W, st.zeta, active, cfg.lam0, column_sums=total)
    zeta, mu, Sigma, eta = dp_step(k_dp, W, active, st.zeta, st.eta, cfg.lam0, *cfg.eta_prior)
    Phi = features_of(P, cfg.bias, cfg.M)
    dparams = dlik.update(k_lik, Phi, dparams, data)
    const = dlik.row_constants(dparams, data)
    ll = dlik.row_loglik(rows_times(Phi, dparams.beta, cfg), slice(None), const, dparams, data)
    loglik = total(ll)
    new = replace(
        st, X=X, Z=Z, pi=pi, alpha=alpha, W=W, zeta=zeta, mu=mu, Sigma=Sigma, eta=eta, params=dparams,
        loglik=loglik, sweep=st.sweep + 1, tuning=tuning,
    )  # fmt: skip
    new = canonical(new, active)
    # The first row whose log-likelihood is not finite: at the sweep's start if any (the
    # origin: a bad row's NaN spreads through the weights to every row), else at its end.
    bad = jnp.where(jnp.any(bad_start), bad_start, ~jnp.isfinite(ll))
    info = DeviceInfo(
        # canonical() numbered the labels in use 0..C-1.
        k_plus=jnp.sum(active), n_components=jnp.max(new.zeta) + 1,
        moves=MoveCounts.zeros(zero)._replace(x_evals=x_evals, w_accepted=w_acc, w_moved=w_moved, **counts),
        nonfinite_row=jnp.where(jnp.any(bad), jnp.argmax(bad), -1).astype(jnp.int64),
    )  # fmt: skip
    return new, info


__all__ = ["DeviceInfo", "DeviceState", "SweepConfig", "make_scorers", "sweep_step"]
