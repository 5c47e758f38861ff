"""Chain state and the MCMC sweep that composes the samplers (SPEC section 2).

A sweep is a pure function ``sweep(rng, state, data, spec) -> (state, info)``: the input state
is never modified (its arrays are copied once, then updated in place by the compiled kernels),
so a caller can keep any state it has been given. One ``numpy.random.Generator`` drives every
draw of the sweep, compiled kernels included, so a seed fixes the whole chain.
"""

from __future__ import annotations

import math
import numbers
import time
from dataclasses import dataclass, field

import numpy as np

from . import blocks
from .features import feature_map
from .likelihoods import gaussian
from .likelihoods.base import Prepared
from .samplers import absorb, dimension_moves, dp_mixture, factorised, ibp, transfer, whole_dimension
from .samplers.ibp_beta import update_beta

#: Frequency updates of the collapsed Gaussian's sweep, by `ModelSpec.frequency_update`.
FREQUENCY_UPDATES = {"mh": gaussian.mh_frequencies, "ess": gaussian.ess_frequencies}


@dataclass(frozen=True)
class ModelSpec:
    """Everything about the model that is not data or state.

    `ibp` switches the Indian buffet process on (IBP-RFLVM) or off (dense RFLVM: ``Z = 1`` and
    a fixed number of dimensions `n_dims`). With the IBP on, `n_dims` is the initial number.
    `use_likelihood=False` samples from the prior (used by the sampler checks).

    `moves` adds the dimension moves of SPEC 2.2 to every IBP sweep (joint ``(z, x)`` flips and
    singleton birth/death, with new ``x`` proposed from ``N(0, flip_scale^2)``); `scaled_start`
    scales the PCA start so that ``H W^T`` has variance about 2 whatever the number of
    dimensions. Both are the library's default; the paper's sweep and start are
    ``moves=False, scaled_start=False``. `frequency_update` is ``"mh"`` (the paper's
    prior-proposal Metropolis-Hastings, used by both) or ``"ess"`` (elliptical slice sampling of
    each frequency under its mixture component, collapsed Gaussian only; measured, not adopted:
    docs/sampler.md section 4). `start_density` below 1 starts each entry of ``Z`` on with that
    probability instead of all on (the sparse start of docs/sampler.md section 3; measured, not
    adopted). `max_dims` caps ``K+``: the joint prior of ``(alpha, Z)`` conditioned on
    ``K+ <= max_dims`` (:mod:`.samplers.ibp`; None: the plain IBP). `transfer_min_cos` adds
    the row transfers of :mod:`.samplers.transfer` to the moves, between dimensions whose
    frequency columns have ``|cos|`` at least this (None: off), and `absorb_min_cos` the
    absorb/emit moves of :mod:`.samplers.absorb` (None: off). `pairs_per_dim` bounds each of
    the two by visiting at most ``ceil(pairs_per_dim * K)`` aligned pairs per sweep (a uniform
    random subset when there are more; None: every aligned pair).

    `ibp_beta` is the sharing parameter of the two-parameter IBP (:mod:`.samplers.ibp_beta`):
    1.0 (the default here) is the one-parameter IBP and keeps the paper's stick-breaking slice
    step; another number fixes it; None learns it under the ``Gamma(shape, rate)`` prior
    `ibp_beta_prior`. With ``beta`` other than a fixed 1 the slice step, which is for
    ``beta = 1`` only, is left out: ``Z`` is updated by its exchangeable conditionals alone
    (the dimension moves, which must then be on). `ibp_beta_warmup` holds a learned ``beta`` at
    1, with the slice step, for that many sweeps from the start (the burn-in must cover them).
    """

    n_frequencies: int = 50
    ibp: bool = True
    n_dims: int = 2
    bias: bool = False
    alpha_prior: tuple[float, float] = (1.0, 1.0)
    fixed_alpha: float | None = None
    eta_prior: tuple[float, float] = (1.0, 1.0)
    lam0: float = 1.0
    likelihood: object = field(default_factory=gaussian.GaussianLikelihood)
    use_likelihood: bool = True
    moves: bool = True
    flip_scale: float = 0.2
    transfer_min_cos: float | None = 0.3
    absorb_min_cos: float | None = 0.3
    pairs_per_dim: float | None = 1.0
    scaled_start: bool = True
    whole_move: str | None = None
    frequency_update: str = "mh"
    start_density: float = 1.0
    max_dims: int | None = None
    ibp_beta: float | None = 1.0
    ibp_beta_prior: tuple[float, float] = (1.0, 1.0)
    ibp_beta_warmup: int = 0

    def __post_init__(self) -> None:
        _check_ibp_beta(self)
        if self.max_dims is not None:
            cap = self.max_dims
            if isinstance(cap, bool) or not isinstance(cap, numbers.Integral) or cap < 1:
                raise ValueError(f"max_dims must be a positive integer or None; got {self.max_dims!r}")
            if self.ibp and self.n_dims > self.max_dims:
                raise ValueError(f"the start's {self.n_dims} dimensions exceed max_dims={self.max_dims}")
            if self.whole_move is not None:
                raise ValueError("whole_move does not support max_dims")
        if self.frequency_update not in FREQUENCY_UPDATES:
            raise ValueError(
                f"frequency_update must be one of {sorted(FREQUENCY_UPDATES)}; got {self.frequency_update!r}"
            )
        if self.pairs_per_dim is not None and not self.pairs_per_dim > 0.0:
            raise ValueError(f"pairs_per_dim must be positive or None; got {self.pairs_per_dim!r}")
        if not 0.0 < self.start_density <= 1.0:
            raise ValueError(f"start_density must be in (0, 1]; got {self.start_density!r}")
        if self.frequency_update == "ess" and not self.likelihood.collapsed:
            raise ValueError("frequency_update='ess' is implemented for the collapsed Gaussian only")

    @property
    def stick_breaking(self) -> bool:
        """Whether the sweep runs the slice step: the one-parameter IBP, ``beta`` fixed at 1."""
        return self.ibp_beta == 1.0

    def pair_budget(self, n_dims: int) -> int | None:
        """Aligned pairs each pair move may visit per sweep with `n_dims` active dimensions."""
        return None if self.pairs_per_dim is None else max(1, math.ceil(self.pairs_per_dim * n_dims))

    @property
    def gaussian_prior(self) -> gaussian.GaussianPrior:
        return self.likelihood.prior


def _check_ibp_beta(spec: ModelSpec) -> None:
    beta = spec.ibp_beta
    if beta is not None and (
        isinstance(beta, bool) or not isinstance(beta, numbers.Real) or not 0.0 < beta < math.inf
    ):
        raise ValueError(f"ibp_beta must be a positive number or None (learned); got {beta!r}")
    warm = spec.ibp_beta_warmup
    if isinstance(warm, bool) or not isinstance(warm, numbers.Integral) or warm < 0:
        raise ValueError(f"ibp_beta_warmup must be a non-negative integer; got {warm!r}")
    prior = spec.ibp_beta_prior
    if len(prior) != 2 or not all(isinstance(v, numbers.Real) and 0.0 < v < math.inf for v in prior):
        raise ValueError(f"ibp_beta_prior must be (shape, rate), both positive; got {prior!r}")
    if spec.ibp and not spec.stick_breaking and not spec.moves:
        raise ValueError(
            "the two-parameter IBP (ibp_beta other than 1) updates Z by the dimension moves, which "
            "moves=False switches off (the paper's slice sampler is for beta = 1 only)"
        )


@dataclass(frozen=True)
class Data:
    """Training data: `Y` with NaN for unobserved entries, and where those are."""

    Y: np.ndarray
    observed: np.ndarray
    missing: tuple[np.ndarray, np.ndarray]
    prep: Prepared | None = None

    @classmethod
    def from_array(cls, Y: np.ndarray, likelihood=None) -> Data:
        """`likelihood` precomputes its constants once (not needed for the collapsed Gaussian)."""
        prep = None
        if likelihood is not None and not likelihood.collapsed:
            prep = likelihood.prepare(Y)
        # The likelihood's mask is this one: held once (190 MB at 100,000 x 2,000).
        observed = ~np.isnan(Y) if prep is None else prep.observed
        return cls(Y=Y, observed=observed, missing=np.nonzero(~observed), prep=prep)


@dataclass(frozen=True)
class ChainState:
    """One state of the chain.

    ``params`` holds the likelihood's variables (``beta`` always, the weights; ``sigma2`` for the
    Gaussian, dispersions and the like for count models). ``ibp_beta`` is the IBP's sharing
    parameter (1 for the one-parameter IBP). ``Y`` is the completed data (observed entries
    plus imputations) for the collapsed Gaussian, and ``None`` for the other likelihoods, whose
    unobserved entries are simply left out of every sum.
    """

    X: np.ndarray
    Z: np.ndarray
    pi: np.ndarray
    alpha: float
    W: np.ndarray
    zeta: np.ndarray
    mu: np.ndarray
    Sigma: np.ndarray
    eta: float
    Y: np.ndarray | None
    params: dict
    loglik: float
    sweep: int = 0
    ibp_beta: float = 1.0

    @property
    def H(self) -> np.ndarray:
        return self.X * self.Z

    @property
    def k_plus(self) -> int:
        return int(np.count_nonzero(self.Z.sum(axis=0)))

    def phi(self, bias: bool) -> np.ndarray:
        return feature_map(self.H, self.W, bias)


@dataclass
class _Work:
    """Mutable copies of the state's arrays, owned by one sweep."""

    X: np.ndarray
    Z: np.ndarray
    pi: np.ndarray
    alpha: float
    W: np.ndarray
    zeta: np.ndarray
    mu: np.ndarray
    Sigma: np.ndarray
    eta: float
    Y: np.ndarray | None
    ibp_beta: float = 1.0


def _pca_init(Y: np.ndarray, k: int, overwrite: bool = False) -> np.ndarray:
    """`overwrite`: centre `Y` in place (the caller's copy, not needed afterwards)."""
    Yc = np.subtract(Y, Y.mean(axis=0), out=Y if overwrite else None)
    U, s, _ = np.linalg.svd(Yc, full_matrices=False)
    X = U[:, :k] * s[:k]
    X = X / np.maximum(X.std(axis=0), 1e-12)
    if X.shape[1] < k:
        X = np.hstack([X, np.zeros((Y.shape[0], k - X.shape[1]))])
    return X


def init_state(rng: np.random.Generator, data: Data, spec: ModelSpec) -> ChainState:
    """Starting point: PCA latent positions, ``Z = 1``, frequencies from the standard normal
    (unit-lengthscale RBF), one mixture component, unobserved entries imputed from the model."""
    N, J = data.Y.shape
    K = spec.n_dims
    col_mean = np.nanmean(data.Y, axis=0)
    Y0 = np.where(data.observed, data.Y, col_mean)
    # PCA of the mean-filled data is only a starting point; counts enter it as square roots.
    if spec.likelihood.collapsed:
        X = _pca_init(Y0, K)
    else:
        # In place, the same numbers: at 100,000 x 2,000 each N x J copy is 1.5 GiB.
        np.sqrt(np.maximum(Y0, 0.0, out=Y0), out=Y0)
        X = _pca_init(Y0, K, overwrite=True)
        Y0 = None
    if spec.scaled_start and K:
        # Unit-variance coordinates in each of K dimensions give H W^T variance K under unit
        # frequencies: at K = 12 the starting features are close to random (SPEC 2.2).
        X *= math.sqrt(min(1.0, 2.0 / K))
    Z = np.ones((N, K), dtype=np.int8)
    if spec.ibp:
        if spec.start_density < 1.0:
            # Half-used columns sit where the IBP prior is least stable, so each one quickly
            # grows or dies; measured against the all-on start in docs/sampler.md section 3.
            Z = (rng.random((N, K)) < spec.start_density).astype(np.int8)
        _, pi = ibp.update_sticks(rng, Z)
    else:
        pi = np.ones(K)
    alpha = spec.fixed_alpha if spec.fixed_alpha is not None else 1.0
    W = rng.standard_normal((spec.n_frequencies, K))
    zeta = np.zeros(spec.n_frequencies, dtype=np.int64)
    mu, Sigma = dp_mixture.sample_components(rng, W, zeta, spec.lam0)
    Phi = feature_map(X * Z, W, spec.bias)
    lik = spec.likelihood
    if lik.collapsed:
        cache = gaussian.build_cache(Phi, Y0, lik.prior)
        Y1, beta, sigma2, mean = gaussian.impute(rng, Phi, Y0, data.missing, cache, lik.prior)
        ll = gaussian.observed_loglik(Y1, data.observed, mean, sigma2)
        params = {"beta": beta, "sigma2": sigma2}
    else:
        Y1 = None
        params = lik.init_params(rng, Phi, data.prep)
        ll = _factorised_loglik(lik, Phi, params, data.prep)
    # A learned beta starts at 1, the one-parameter IBP.
    beta0 = 1.0 if spec.ibp_beta is None else float(spec.ibp_beta)
    return ChainState(X, Z, pi, float(alpha), W, zeta, mu, Sigma, 1.0, Y1, params, ll, 0, beta0)


def _factorised_loglik(lik, Phi: np.ndarray, params: dict, prep: Prepared) -> float:
    ll = lik.loglik_rows(blocks.matmul_rows(Phi, params["beta"]), np.arange(Phi.shape[0]), params, prep)
    return float(np.sum(ll, dtype=np.float64))


def _resize(rng: np.random.Generator, w: _Work, keep: np.ndarray, n_new: int, lam0: float) -> None:
    """Keep the dimensions `keep`, in that order (dropping is exact marginalisation), then add
    `n_new` new ones."""
    w.X = w.X[:, keep]
    w.Z = w.Z[:, keep]
    w.W, w.mu, w.Sigma = dp_mixture.keep_dimensions(w.W, w.mu, w.Sigma, keep)
    for _ in range(n_new):
        w.X = np.hstack([w.X, rng.standard_normal((w.X.shape[0], 1))])
        w.Z = np.hstack([w.Z, np.zeros((w.Z.shape[0], 1), dtype=np.int8)])
        w.W, w.mu, w.Sigma = dp_mixture.add_dimension(rng, w.W, w.zeta, w.mu, w.Sigma, lam0)
    w.X = np.ascontiguousarray(w.X)
    w.Z = np.ascontiguousarray(w.Z)
    w.W = np.ascontiguousarray(w.W)


def _kernel_args(w: _Work, spec: ModelSpec, Phi: np.ndarray, cache: gaussian.Cache):
    N = Phi.shape[0]
    gp = spec.likelihood.prior
    return (
        w.X, w.Z, w.W, spec.bias, Phi, w.Y, cache.A, cache.P, cache.Q, cache.yy, cache.state,
        gp.a0 + 0.5 * N, gp.b0, gp.constant(N, w.Y.shape[1]),
    )  # fmt: skip


#: The aligned-pair moves: (pairs of W, compiled kernel on the row cache, array version).
_TRANSFER = (transfer.aligned_pairs, transfer.transfer_rows_collapsed, transfer.transfer_pairs)
_ABSORB = (absorb.ordered_pairs, absorb.absorb_rows_collapsed, absorb.absorb_pairs)


def _pair_move(rng, w: _Work, spec: ModelSpec, Phi, target, counts, min_cos, move) -> tuple[int, int]:
    """Run one aligned-pair move (off when `min_cos` is None); ``(proposed, accepted)``."""
    if min_cos is None:
        return 0, 0
    pairs, kernel, array_move = move
    budget = spec.pair_budget(w.W.shape[1])
    if spec.use_likelihood and spec.likelihood.collapsed:
        chosen = pairs(w.W, min_cos, rng, budget)
        return kernel(rng, *_kernel_args(w, spec, Phi, target.cache), counts, *chosen, w.ibp_beta)
    return array_move(rng, w.X, w.Z, w.W, counts, min_cos, target, budget, w.ibp_beta)


def _dimension_moves(
    rng: np.random.Generator, w: _Work, spec: ModelSpec, Phi: np.ndarray | None, fs
) -> dict:
    """The SPEC 2.2 moves on the active dimensions: ``(z, x)`` flips, row transfers, absorb/emit,
    then singleton birth/death (and whole-dimension birth/death when `spec.whole_move` names a
    proposal). Wall seconds of each go into the info, for the benchmarks' per-move shares."""
    t0 = time.perf_counter()
    counts = w.Z.sum(axis=0).astype(np.int64)
    q = spec.flip_scale
    if not spec.use_likelihood:
        target = dimension_moves.NoLikelihood()
        flips = dimension_moves.flip_columns(rng, w.X, w.Z, w.W, counts, q, target, w.ibp_beta)
    elif spec.likelihood.collapsed:
        cache = gaussian.build_cache(Phi, w.Y, spec.likelihood.prior)
        flips = dimension_moves.flip_rows_collapsed(
            rng, *_kernel_args(w, spec, Phi, cache), counts, q, w.ibp_beta
        )
        target = dimension_moves.CollapsedRows(Phi, w.Y, cache, spec.likelihood.prior, spec.bias)
    else:
        target = dimension_moves.FactorisedRows(fs)
        flips = dimension_moves.flip_columns(rng, w.X, w.Z, w.W, counts, q, target, w.ibp_beta)
    t_flips = time.perf_counter()
    transfers = _pair_move(rng, w, spec, Phi, target, counts, spec.transfer_min_cos, _TRANSFER)
    t_transfers = time.perf_counter()
    absorbs = _pair_move(rng, w, spec, Phi, target, counts, spec.absorb_min_cos, _ABSORB)
    t1 = time.perf_counter()
    dims = dimension_moves.Dimensions(w.X, w.Z, w.W, w.zeta, w.mu, w.Sigma)
    dims, info = dimension_moves.singleton_birth_death(
        rng, dims, w.alpha, q, spec.lam0, target, spec.max_dims, w.ibp_beta
    )
    t2 = time.perf_counter()
    if spec.whole_move is not None:
        if not spec.use_likelihood:
            whole = whole_dimension.PriorTarget()
        elif spec.likelihood.collapsed:
            whole = whole_dimension.CollapsedTarget(Phi, w.Y, target.cache, spec.likelihood.prior, spec.bias)
        else:
            whole = whole_dimension.FactorisedTarget(fs)
        proposal = whole_dimension.PROPOSALS[spec.whole_move]()
        dims, more = whole_dimension.birth_death_step(
            rng, dims, w.alpha, spec.lam0, whole, proposal, w.ibp_beta
        )
        info.update(more)
    w.X, w.Z, w.W, w.mu, w.Sigma = dims.X, dims.Z, dims.W, dims.mu, dims.Sigma
    info["flips"] = int(flips)
    info["transfers_proposed"], info["transfers"] = int(transfers[0]), int(transfers[1])
    info["absorbs_proposed"], info["absorbs"] = int(absorbs[0]), int(absorbs[1])
    info["seconds_moves"] = {
        "flips": t_flips - t0, "transfers": t_transfers - t_flips, "absorbs": t1 - t_transfers,
        "singletons": t2 - t1, "whole": time.perf_counter() - t2,
    }  # fmt: skip
    return info


def _likelihood_view(w: _Work, spec: ModelSpec, data: Data, params: dict):
    """``(Phi, fs)`` for the moves of ``Z``: the collapsed Gaussian's features, or the factorised
    likelihood's state (None for the other, and both None without a likelihood)."""
    if not spec.use_likelihood:
        return None, None
    lik = spec.likelihood
    if lik.collapsed:
        return feature_map(w.X * w.Z, w.W, spec.bias), None
    return None, factorised.FactorisedState(w.X, w.Z, w.W, spec.bias, params["beta"], lik, params, data.prep)


def _slice_step(rng: np.random.Generator, w: _Work, spec: ModelSpec, data: Data, params: dict, info: dict):
    """The paper's stick-breaking slice step (one-parameter IBP): represent the sticks above the
    slice, then the Gibbs pass of ``Z`` in decreasing-stick order. Returns the
    :func:`_likelihood_view` it used, ``(Phi, fs)``."""
    lik = spec.likelihood
    N = w.X.shape[0]
    keep, new_pi, s = ibp.extend(rng, w.Z, w.pi, w.alpha)
    _resize(rng, w, keep, new_pi.size, spec.lam0)
    w.pi = np.concatenate([w.pi[keep], new_pi])
    order = ibp.scan_order(w.pi)
    _resize(rng, w, order, 0, spec.lam0)
    w.pi = w.pi[order]
    counts = w.Z.sum(axis=0).astype(np.int64)
    room = ibp.room(int(np.count_nonzero(counts)), spec.max_dims)
    Phi, fs = _likelihood_view(w, spec, data, params)
    if not spec.use_likelihood:
        zero = np.zeros(N)
        for d in range(w.Z.shape[1]):
            ibp.gibbs_column(rng, w.Z, d, zero, w.pi, counts, room)
    elif lik.collapsed:
        cache = gaussian.build_cache(Phi, w.Y, lik.prior)
        args = _kernel_args(w, spec, Phi, cache)
        info["z_flips"] = gaussian.gibbs_z_rows(rng, *args, w.pi, counts, room)
    else:
        info["z_flips"] = factorised.update_z(rng, w.X, w.Z, w.W, w.pi, counts, fs, room)
    info["slice"] = s
    info["new_dims"] = int(new_pi.size)
    return Phi, fs


def sweep(
    rng: np.random.Generator,
    state: ChainState,
    data: Data,
    spec: ModelSpec,
    threads: blocks.Blocks | None = None,
) -> tuple[ChainState, dict]:
    """One MCMC sweep: IBP, X, W, DP mixture, then the likelihood's own variables.

    `threads` (:class:`ibp_rflvm.blocks.Blocks`) runs the sweep's blocked work on that many
    threads; None: whatever :func:`ibp_rflvm.blocks.active` set (one thread outside it). The
    result is the same bit for bit whatever the thread count.
    """
    if threads is None:
        return _sweep(rng, state, data, spec)
    with blocks.active(threads):
        return _sweep(rng, state, data, spec)


def _sweep(
    rng: np.random.Generator, state: ChainState, data: Data, spec: ModelSpec
) -> tuple[ChainState, dict]:
    w = _Work(
        state.X.copy(), state.Z.copy(), state.pi.copy(), state.alpha, state.W.copy(),
        state.zeta.copy(), state.mu.copy(), state.Sigma.copy(), state.eta,
        None if state.Y is None else state.Y.copy(), state.ibp_beta,
    )  # fmt: skip
    lik = spec.likelihood
    collapsed = lik.collapsed
    params = state.params
    info: dict = {}
    N = w.X.shape[0]
    fs = None

    if spec.ibp:
        # A learned beta is held at 1 (the one-parameter sweep) for the first
        # `ibp_beta_warmup` sweeps: the all-on start is no evidence about beta (docs/sampler.md
        # section 10). Kept samples must come after the warm-up.
        warming = spec.ibp_beta is None and state.sweep < spec.ibp_beta_warmup
        if spec.stick_breaking or warming:
            Phi, fs = _slice_step(rng, w, spec, data, params, info)
        else:
            # The two-parameter IBP has no stick-breaking slice step: Z is updated by the
            # exchangeable moves below alone (the flips for the dimensions other rows use, the
            # singleton births and deaths for the rest), which work with the sticks integrated out.
            Phi, fs = _likelihood_view(w, spec, data, params)
        if spec.moves:
            # The moves work with the sticks integrated out: drop the inactive dimensions (exact
            # marginalisation), move, and let update_sticks draw pi | Z afterwards. So the order
            # in which they visit dimensions and pairs must not depend on the sticks either, and
            # the slice step's decreasing-stick order does (through pi | Z, on Z): the moves whose
            # proposals share dimensions (absorb/emit, transfers, and every move once the
            # likelihood couples a row's dimensions) then leave a mixture of kernels with
            # state-dependent weights, which biased K+ low in the prior check (docs/sampler.md,
            # section 2). A uniformly random order of the active dimensions does not.
            active = np.flatnonzero(w.Z.any(axis=0))
            _resize(rng, w, rng.permutation(active), 0, spec.lam0)
            info.update(_dimension_moves(rng, w, spec, Phi, fs))
        keep, w.pi = ibp.update_sticks(rng, w.Z, w.ibp_beta)
        _resize(rng, w, keep, 0, spec.lam0)
        if fs is not None:
            fs.Phi = np.ascontiguousarray(fs.Phi)  # dropped dimensions were inactive: Phi unchanged
        if spec.fixed_alpha is None:
            a, b = spec.alpha_prior
            w.alpha = ibp.update_alpha(rng, w.Z.shape[1], N, a, b, w.ibp_beta)
        if spec.ibp_beta is None and not warming:
            counts = w.Z.sum(axis=0)
            w.ibp_beta = update_beta(rng, counts, N, w.alpha, w.ibp_beta, spec.ibp_beta_prior)

    if not spec.use_likelihood:
        # No likelihood: ESS accepts its first proposal and MH always accepts the prior draw.
        theta = rng.random(N) * 2.0 * math.pi
        nu = rng.standard_normal(w.X.shape)
        w.X = w.X * np.cos(theta)[:, None] + nu * np.sin(theta)[:, None]
        if w.W.shape[1]:
            e = rng.standard_normal(w.W.shape)
            chol = np.array([np.linalg.cholesky(S) for S in w.Sigma])
            w.W = w.mu[w.zeta] + np.einsum("mab,mb->ma", chol[w.zeta], e)
    elif collapsed:
        Phi = feature_map(w.X * w.Z, w.W, spec.bias)
        cache = gaussian.build_cache(Phi, w.Y, lik.prior)
        info["x_evals"] = gaussian.ess_rows(rng, *_kernel_args(w, spec, Phi, cache))
        cache = gaussian.build_cache(Phi, w.Y, lik.prior)
        update = FREQUENCY_UPDATES[spec.frequency_update]
        info["w_accepted"], _ = update(rng, w.X * w.Z, w.W, w.zeta, w.mu, w.Sigma, Phi, w.Y, cache, lik.prior)
    else:
        if fs is None:
            fs = factorised.FactorisedState(w.X, w.Z, w.W, spec.bias, params["beta"], lik, params, data.prep)
        w.X, info["x_evals"] = factorised.update_x(rng, w.X, w.Z, w.W, fs)
        info["w_accepted"] = factorised.update_w(rng, w.X * w.Z, w.W, w.zeta, w.mu, w.Sigma, fs)

    w.zeta, w.mu, w.Sigma, w.eta = dp_mixture.dp_step(
        rng, w.W, w.zeta, w.eta, spec.lam0, *spec.eta_prior
    )

    Ynew = w.Y
    if not spec.use_likelihood:
        ll = 0.0
    elif collapsed:
        Phi = feature_map(w.X * w.Z, w.W, spec.bias)
        cache = gaussian.build_cache(Phi, w.Y, lik.prior)
        Ynew, beta, sigma2, mean = gaussian.impute(rng, Phi, w.Y, data.missing, cache, lik.prior)
        ll = gaussian.observed_loglik(Ynew, data.observed, mean, sigma2)
        params = {"beta": beta, "sigma2": sigma2}
    else:
        fs.psi = None  # stale once beta changes; freed so the weight update has its N x J room
        params = lik.update_params(rng, fs.Phi, params, data.prep)
        ll = _factorised_loglik(lik, fs.Phi, params, data.prep)
    new = ChainState(
        w.X, w.Z, w.pi, float(w.alpha), w.W, w.zeta, w.mu, w.Sigma, float(w.eta), Ynew, params,
        float(ll), state.sweep + 1, float(w.ibp_beta),
    )  # fmt: skip
    info["k_plus"] = new.k_plus
    info["n_components"] = int(w.zeta.max()) + 1
    return new, info

