"""The MCMC sweep of SPEC section 2 as a kernel over a target: ``build_sweep(spec, target)``.

A kernel is a pair ``(init, step)`` (:class:`SweepKernel`): ``init(rng)`` gives the start,
``step(rng, state) -> (state, info)`` one sweep. The step is a pure function of its input: the
state's arrays are copied once (:class:`~ibp_rflvm.targets.base.Work`), then updated in place
by the moves, so a caller can keep any state it has been given. One
``numpy.random.Generator`` drives every draw of the sweep, compiled kernels included, so a seed
fixes the whole chain. The sweep composes the moves of :mod:`ibp_rflvm.samplers` and asks the
target (:mod:`ibp_rflvm.targets`) for everything that depends on the likelihood: the moves of
``Z`` get what its view scores (``view.row_target``), which runs them as array passes or as
compiled row kernels; it never asks which kind of target it has.

The sweep, in order: the prior on ``Z``'s own step (the IBP's: the paper's stick-breaking
representation, then a Gibbs pass of ``Z``); the dimension moves of SPEC 2.2 (joint flips,
transfers, absorb/emit, singleton births and deaths) with the prior's weights integrated out;
the weights given ``Z``, ``alpha`` and the prior's own variables (a learned IBP ``beta``);
``X`` by elliptical slice sampling; the frequencies by elliptical slice sampling or
Metropolis-Hastings; with ``hmc_leapfrog``, every used coordinate and frequency at once by
Hamiltonian Monte Carlo; with ``scale_move``, each dimension's scale along the direction the
likelihood cannot see; the Dirichlet-process mixture of the frequencies; the likelihood's own
variables.

``sweep(rng, state, data, spec)`` and ``init_state(rng, data, spec)`` build the kernel for one
call, for callers that hold a spec and data rather than a kernel.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from .plumbing import blocks
from .samplers import absorb, dimension_moves, dp_mixture, hmc, scale, transfer
from .state import ChainState, Data, ModelSpec, MoveCounts, MoveSeconds, SweepInfo
from .targets import Target, View, Work, make_target

__all__ = [
    "ChainState", "Data", "ModelSpec", "SweepInfo", "SweepKernel", "build_sweep", "init_state",
    "sweep",
]  # fmt: skip


class SweepKernel(NamedTuple):
    """A Markov kernel: ``init(rng) -> state`` and ``step(rng, state) -> (state, info)``.

    ``run(rng, state, n)``, where the kernel has one, is ``n`` steps in one call (a device's
    compiled loop), returning the last state and each step's ``(traces, info)``: the traces
    are what :class:`ibp_rflvm.mcmc.record.ChainRecord` reads of a sweep it does not keep.
    """

    init: Callable[[np.random.Generator], ChainState]
    step: Callable[[np.random.Generator, ChainState], tuple[ChainState, SweepInfo]]
    run: Callable | None = None


def build_sweep(spec: ModelSpec, target: Target) -> SweepKernel:
    """The sweep of `spec` over `target` as a Markov kernel.

    Parameters
    ----------
    spec : ModelSpec
        The model's settings.
    target : Target
        The posterior the sweep samples, from :func:`ibp_rflvm.targets.make_target`. A target
        that holds the whole sweep as one compiled device step (``backend="jax"``) gives its own
        ``step`` and ``run``.

    Returns
    -------
    SweepKernel
        ``init(rng) -> state``, ``step(rng, state) -> (state, info)`` and, on a device, ``run``.
    """

    def init(rng: np.random.Generator) -> ChainState:
        return _init(rng, spec, target)

    # A target that holds the whole sweep as one compiled device step (the JAX backend) runs it.
    own_step = getattr(target, "step", None)
    if own_step is not None:
        return SweepKernel(init, own_step, target.run)

    def step(rng: np.random.Generator, state: ChainState) -> tuple[ChainState, SweepInfo]:
        return _step(rng, state, spec, target)

    return SweepKernel(init, step)


def init_state(rng: np.random.Generator, data: Data, spec: ModelSpec) -> ChainState:
    """The start of a chain of `spec` on `data` (see :func:`build_sweep`)."""
    return build_sweep(spec, make_target(spec, data)).init(rng)


def sweep(
    rng: np.random.Generator,
    state: ChainState,
    data: Data,
    spec: ModelSpec,
    threads: blocks.Blocks | None = None,
) -> tuple[ChainState, SweepInfo]:
    """One MCMC sweep of `spec` on `data` from `state`.

    `threads` (:class:`ibp_rflvm.plumbing.blocks.Blocks`) runs the sweep's blocked work on that many
    threads; None: whatever :func:`ibp_rflvm.plumbing.blocks.active` set (one thread outside it). The
    result is the same bit for bit whatever the thread count.
    """
    kernel = build_sweep(spec, make_target(spec, data))
    if threads is None:
        return kernel.step(rng, state)
    with blocks.active(threads):
        return kernel.step(rng, state)


def _init(rng: np.random.Generator, spec: ModelSpec, target: Target) -> ChainState:
    """PCA latent positions, ``Z = 1``, frequencies from the standard normal (unit-lengthscale
    RBF), one mixture component, and the target's start of the likelihood's variables."""
    K = spec.n_dims
    X = target.start_positions(K)
    if spec.scaled_start and K:
        # Unit-variance coordinates in each of K dimensions give H W^T variance K under unit
        # frequencies: at K = 12 the starting features are close to random (SPEC 2.2).
        X *= math.sqrt(min(1.0, 2.0 / K))
    Z = np.ones((X.shape[0], K), dtype=np.int8)
    # The prior's variables start where its chain starts (a learned IBP beta at 1).
    z_state = spec.z_prior.start_state() if spec.ibp else {}
    if spec.ibp:
        _, pi = spec.z_prior.at(z_state).weights_given(rng, Z)
    else:
        pi = np.ones(K)
    alpha = spec.fixed_alpha if spec.fixed_alpha is not None else 1.0
    W = rng.standard_normal((spec.n_frequencies, K))
    zeta = np.zeros(spec.n_frequencies, dtype=np.int64)
    mu, Sigma = dp_mixture.sample_components(rng, W, zeta, spec.lam0)
    Y, params, ll = target.start(rng, X, Z, W)
    return ChainState(X, Z, pi, float(alpha), W, zeta, mu, Sigma, 1.0, Y, params, ll, 0, z_state)


def _dimension_moves(
    rng: np.random.Generator, w: Work, spec: ModelSpec, view: View, prior, moves: MoveCounts
) -> tuple[MoveCounts, MoveSeconds]:
    """The SPEC 2.2 moves on the active dimensions: ``(z, x)`` moves, row transfers, absorb/emit,
    then singleton birth/death; each asks `prior` (the prior on ``Z``) for its ratio. Returns
    `moves` with their counts, and their seconds."""
    t0 = time.perf_counter()
    counts = w.Z.sum(axis=0).astype(np.int64)
    q = spec.flip_scale
    # One pass over the rows: the moves share what the view scores (a collapsed row cache
    # goes on from one move to the next).
    rows = view.row_target(w)
    flips_proposed, flips = dimension_moves.flips(rng, w.X, w.Z, w.W, counts, q, rows, prior)
    t_flips = time.perf_counter()
    budget = spec.pair_budget(w.W.shape[1])
    transfers = absorbs = (0, 0)
    if spec.transfer_min_cos is not None:
        transfers = transfer.transfers(rng, w.X, w.Z, w.W, counts, spec.transfer_min_cos, rows, budget, prior)
    t_transfers = time.perf_counter()
    if spec.absorb_min_cos is not None:
        absorbs = absorb.absorbs(rng, w.X, w.Z, w.W, counts, spec.absorb_min_cos, rows, budget, prior)
    t1 = time.perf_counter()
    dims = dimension_moves.Dimensions(w.X, w.Z, w.W, w.zeta, w.mu, w.Sigma)
    dims, born = dimension_moves.singleton_birth_death(
        rng, dims, w.alpha, q, spec.lam0, rows, prior, spec.max_dims
    )
    t2 = time.perf_counter()
    w.X, w.Z, w.W, w.mu, w.Sigma = dims.X, dims.Z, dims.W, dims.mu, dims.Sigma
    seconds = MoveSeconds(t_flips - t0, t_transfers - t_flips, t1 - t_transfers, t2 - t1)
    moves = moves._replace(
        flips_proposed=int(flips_proposed), flips=int(flips), transfers_proposed=int(transfers[0]),
        transfers=int(transfers[1]), absorbs_proposed=int(absorbs[0]), absorbs=int(absorbs[1]), **born,
    )  # fmt: skip
    return moves, seconds


def _ibp_steps(
    rng: np.random.Generator, w: Work, state: ChainState, spec: ModelSpec, target: Target
) -> tuple[View, MoveCounts, float, MoveSeconds]:
    """The updates of ``Z`` and its prior's own variables: ``(view, moves, slice, seconds)``,
    the likelihood view they used, their counts, the prior's slice level (NaN: none) and the
    dimension moves' seconds."""
    N = w.X.shape[0]
    params = state.params
    prior = spec.z_prior.at(w.z_state)
    moves, seconds = MoveCounts.zeros(0), MoveSeconds()
    view, moves, level = prior.update_z(
        rng, w, state.sweep, lambda: target.view(w, params), spec.lam0, spec.max_dims, moves
    )
    if view is None:
        # A prior without a step of its own (the two-parameter IBP, the gamma-Poisson): Z is
        # updated by the exchangeable moves below alone (the flips for the dimensions other
        # rows use, the singleton births and deaths for the rest), which work with the
        # prior's weights integrated out.
        view = target.view(w, params)
    if spec.moves:
        # The moves work with the sticks integrated out: drop the inactive dimensions (exact
        # marginalisation), move, and let update_sticks draw pi | Z afterwards. So the order in
        # which they visit dimensions and pairs must not depend on the sticks either, and the
        # slice step's decreasing-stick order does (through pi | Z, on Z): the moves whose
        # proposals share dimensions (absorb/emit, transfers, and every move once the
        # likelihood couples a row's dimensions) then leave a mixture of kernels with
        # state-dependent weights, which biased K+ low in the prior check (docs/sampler.md,
        # section 2). A uniformly random order of the active dimensions does not.
        active = np.flatnonzero(w.Z.any(axis=0))
        w.resize(rng, rng.permutation(active), 0, spec.lam0)
        moves, seconds = _dimension_moves(rng, w, spec, view, prior, moves)
    keep, w.pi = prior.weights_given(rng, w.Z)
    w.resize(rng, keep, 0, spec.lam0)
    view.compact()
    if spec.fixed_alpha is None:
        a, b = spec.alpha_prior
        w.alpha = prior.update_alpha(rng, w.Z.shape[1], N, a, b)
    w.z_state = prior.update_state(rng, w, state.sweep)
    return view, moves, level, seconds


def _step(
    rng: np.random.Generator, state: ChainState, spec: ModelSpec, target: Target
) -> tuple[ChainState, SweepInfo]:
    w = Work(state)
    view, moves, level, seconds = None, MoveCounts.zeros(0), math.nan, MoveSeconds()
    if spec.ibp:
        view, moves, level, seconds = _ibp_steps(rng, w, state, spec, target)
    view = target.x_view(w, state.params, view)
    x_evals = int(view.update_x(rng, w))
    w_accepted, w_moved = (int(v) for v in view.update_w(rng, w))
    moves = moves._replace(x_evals=x_evals, w_accepted=w_accepted, w_moved=w_moved)
    if spec.hmc_leapfrog:
        factor = w.tuning.get("hmc_step_factor", 1.0)
        steps = [factor * s for s in spec.hmc_steps]
        grad = view.value_and_grad(w)
        block = (w.X, w.Z, w.W, w.zeta, w.mu, w.Sigma)
        accepted, log_r = hmc.hmc_block(rng, *block, grad, *steps, spec.hmc_leapfrog)
        if accepted:
            view.moved(w)
        if state.sweep < spec.hmc_adapt_sweeps:
            # Warm-up only: the kept sweeps run one fixed kernel.
            w.tuning = {**w.tuning, "hmc_step_factor": hmc.adapt_factor(factor, log_r, state.sweep)}
    if spec.scale_move:
        # With the components integrated out: the mixture's step below draws them afresh.
        scale.scale_moves(rng, w.X, w.Z, w.W, w.zeta, spec.lam0)
    w.zeta, w.mu, w.Sigma, w.eta = dp_mixture.dp_step(rng, w.W, w.zeta, w.eta, spec.lam0, *spec.eta_prior)
    Y, params, ll = view.finish(rng, w, state.params)
    # The dense model has no prior on Z and so no variables of one (a state resumed from an
    # older checkpoint holds the IBP's, which every chain then stored).
    new = w.to_state(
        alpha=float(w.alpha), eta=float(w.eta), Y=Y, params=params, loglik=float(ll), sweep=state.sweep + 1,
        z_state=w.z_state if spec.ibp else {},
    )  # fmt: skip
    info = SweepInfo(new.k_plus, int(w.zeta.max()) + 1, moves, level, seconds)
    return new, info
