"""The types every layer shares: the model's settings (:class:`ModelSpec`), the training data
(:class:`Data`), one state of a chain (:class:`ChainState`) and what a sweep did
(:class:`SweepInfo`, its moves' counts one :class:`MoveCounts`)."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field, fields
from typing import NamedTuple

import numpy as np

from .features import feature_map
from .likelihoods.base import LikelihoodParams, Prepared
from .likelihoods.gaussian import GaussianLikelihood, GaussianPrior
from .priors import FeaturePrior, default_prior, legacy_state, make_prior

#: The frequencies' moves (:attr:`ModelSpec.frequency_update`).
FREQUENCY_UPDATES = ("ess", "mh")


def has_gradient(likelihood) -> bool:
    """Whether `likelihood` gives the gradient the HMC move follows: the collapsed Gaussian's
    marginal, or a factorising likelihood's derivatives in its linear predictor."""
    gaussian = isinstance(likelihood, GaussianLikelihood)
    return gaussian or bool(getattr(likelihood, "has_psi_derivatives", False))


@dataclass(frozen=True)
class ModelSpec:
    """Everything about the model that is not data or state.

    With a prior on ``Z`` (`z_prior`), `n_dims` is the initial number of dimensions.
    `use_likelihood=False` samples from the prior (used by the sampler checks).

    `moves` adds the dimension moves (docs/sampler.md, section 2) to every IBP sweep (joint
    ``(z, x)`` flips and singleton birth/death, with new ``x`` proposed from
    ``N(0, flip_scale^2)``); `scaled_start` scales the PCA start so that ``H W^T`` has variance
    about 2 whatever the number of dimensions. Both are the library's default; the paper's sweep and start are
    ``moves=False, scaled_start=False``. `max_dims` caps ``K+``: the joint prior of
    ``(alpha, Z)`` conditioned on ``K+ <= max_dims`` (:mod:`.samplers.ibp`; None: the plain
    IBP). `transfer_min_cos` adds the row transfers of :mod:`.samplers.transfer` to the moves,
    between dimensions whose frequency columns have ``|cos|`` at least this (None: off), and
    `absorb_min_cos` the absorb/emit moves of :mod:`.samplers.absorb` (None: off).
    `pairs_per_dim` bounds each of the two by visiting at most ``ceil(pairs_per_dim * K)``
    aligned pairs per sweep (a uniform random subset when there are more; None: every aligned
    pair).

    `z_prior` is the prior on ``Z`` (a :class:`~ibp_rflvm.priors.FeaturePrior`, or its name in
    :data:`ibp_rflvm.priors.Z_PRIORS` with default hyperparameters), which holds its own
    hyperparameters and steps: the Indian buffet process (the default, the paper's; one- or
    two-parameter) or the gamma-Poisson feature model (Titsias 2007: counts in ``Z``). None is
    the dense RFLVM (``Z = 1`` and a fixed number of dimensions `n_dims`; :attr:`ibp` is then
    False). A prior that has no step of ``Z`` of its own (the gamma-Poisson, the two-parameter
    IBP) is sampled by the dimension moves, which must then be on.

    `backend` is where the factorising likelihoods' sweep does its ``N x J`` work: ``"numba"``
    (compiled CPU kernels) or ``"jax"`` (:mod:`ibp_rflvm.jax_backend`, a GPU where JAX sees
    one); the same moves and posterior either way.

    `frequency_update` is the frequencies' move: ``"ess"``, elliptical slice sampling of each
    ``w_m`` under its mixture component's Gaussian (:mod:`.targets.frequency_moves`), or
    ``"mh"``, the paper's Metropolis-Hastings step with the component as an independence
    proposal, which almost never moves beyond toy sizes (docs/sampler.md section 12). Both run
    on either backend.

    `scale_move` adds, before the mixture's step, a move of each dimension's scale along the
    direction the likelihood cannot see (``x_d -> c x_d``, ``w_d -> w_d / c``;
    :mod:`.samplers.scale`, on the device :mod:`.jax_backend.scale_device`): None (the default)
    runs it, on either backend, as part of the default sweep.
    """

    n_frequencies: int = 50
    n_dims: int = 2
    bias: bool = False
    alpha_prior: tuple[float, float] = (1.0, 1.0)
    fixed_alpha: float | None = None
    eta_prior: tuple[float, float] = (1.0, 1.0)
    lam0: float = 1.0
    likelihood: object = field(default_factory=GaussianLikelihood)
    use_likelihood: bool = True
    moves: bool = True
    flip_scale: float = 0.2
    transfer_min_cos: float | None = 0.3
    absorb_min_cos: float | None = 0.3
    pairs_per_dim: float | None = 1.0
    scaled_start: bool = True
    max_dims: int | None = None
    backend: str = "numba"
    z_prior: FeaturePrior | str | None = field(default_factory=default_prior)
    frequency_update: str = "ess"
    scale_move: bool | None = None
    hmc_leapfrog: int = 0
    hmc_steps: tuple[float, float] = (0.03, 0.01)
    hmc_adapt_sweeps: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.z_prior, str):
            object.__setattr__(self, "z_prior", make_prior(self.z_prior))
        if self.ibp and not self.moves and (why := self.z_prior.needs_moves()) is not None:
            raise ValueError(f"{why}, which moves=False switches off")
        if self.backend not in ("numba", "jax"):
            raise ValueError(f"backend must be 'numba' or 'jax'; got {self.backend!r}")
        if self.scale_move is None:
            object.__setattr__(self, "scale_move", True)
        if self.hmc_leapfrog and not self.has_gradient:
            raise ValueError(
                "hmc_leapfrog needs a likelihood with a gradient in its linear predictor; "
                f"{type(self.likelihood).__name__} has none"
            )
        if self.frequency_update not in FREQUENCY_UPDATES:
            raise ValueError(
                f"frequency_update must be one of {FREQUENCY_UPDATES}; got {self.frequency_update!r}"
            )
        if self.max_dims is not None:
            cap = self.max_dims
            if isinstance(cap, bool) or not isinstance(cap, numbers.Integral) or cap < 1:
                raise ValueError(f"max_dims must be a positive integer or None; got {self.max_dims!r}")
            if self.ibp and self.n_dims > self.max_dims:
                raise ValueError(f"the start's {self.n_dims} dimensions exceed max_dims={self.max_dims}")
        if self.pairs_per_dim is not None and not self.pairs_per_dim > 0.0:
            raise ValueError(f"pairs_per_dim must be positive or None; got {self.pairs_per_dim!r}")

    @property
    def ibp(self) -> bool:
        """Whether ``Z`` has a prior (IBP-RFLVM and its variants), rather than the dense ``Z = 1``."""
        return self.z_prior is not None

    def pair_budget(self, n_dims: int) -> int | None:
        """Aligned pairs each pair move may visit per sweep with `n_dims` active dimensions."""
        return None if self.pairs_per_dim is None else max(1, math.ceil(self.pairs_per_dim * n_dims))

    @property
    def has_gradient(self) -> bool:
        """Whether the likelihood gives the gradient the HMC move follows (:func:`has_gradient`)."""
        return has_gradient(self.likelihood)

    @property
    def gaussian_prior(self) -> GaussianPrior:
        return self.likelihood.prior


@dataclass(frozen=True)
class Data:
    """Training data: `Y` with NaN for unobserved entries, and where those are.

    `prep` is what the likelihood precomputed from `Y` (:meth:`Likelihood.prepare`); the
    collapsed Gaussian needs none, since it completes `Y` by imputation inside the chain.
    """

    Y: np.ndarray
    observed: np.ndarray
    missing: tuple[np.ndarray, np.ndarray]
    prep: Prepared | None = None

    @classmethod
    def from_array(cls, Y: np.ndarray, likelihood=None) -> Data:
        """`likelihood` precomputes its constants once (those that need any)."""
        prep = None
        if likelihood is not None and likelihood.prepares_data:
            prep = likelihood.prepare(Y)
        # The likelihood's mask is this one: held once (190 MB at 100,000 x 2,000).
        observed = ~np.isnan(Y) if prep is None else prep.observed
        return cls(Y=Y, observed=observed, missing=np.nonzero(~observed), prep=prep)


@dataclass(frozen=True)
class ChainState:
    """One state of the chain.

    ``params`` holds the likelihood's variables (:class:`~.likelihoods.base.LikelihoodParams`:
    ``beta`` always, the weights; ``sigma2`` for the Gaussian, ``r`` for the negative
    binomial). ``z_state`` holds the prior on ``Z``'s own chain variables by name
    (:meth:`ibp_rflvm.priors.FeaturePrior.start_state`; the IBP's ``ibp_beta``), empty for a
    prior without any and for the dense model. ``tuning`` holds what the sampler's warm-up
    learned (the HMC move's step factor), fixed once it ends.
    ``Y`` is the completed data (observed entries plus imputations) for the collapsed
    Gaussian, and ``None`` for the other likelihoods, whose unobserved entries are simply left
    out of every sum.
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
    params: LikelihoodParams
    loglik: float
    sweep: int = 0
    z_state: dict = field(default_factory=dict)
    tuning: dict = field(default_factory=dict)

    @property
    def H(self) -> np.ndarray:
        return self.X * self.Z

    @property
    def k_plus(self) -> int:
        return int(np.count_nonzero(self.Z.sum(axis=0)))

    def phi(self, bias: bool) -> np.ndarray:
        return feature_map(self.H, self.W, bias)

    @property
    def recorded(self) -> ChainState:
        """The state a chain's record keeps: this one (a tempered state keeps its cold level)."""
        return self

    def to_tree(self, data: Data) -> dict:
        """The state for a checkpoint: the completed data's imputed entries only (the observed
        ones are the data's own)."""
        tree = {f.name: getattr(self, f.name) for f in fields(self)}
        tree["Y"] = None if self.Y is None else np.ascontiguousarray(self.Y[data.missing])
        # The likelihood's variables by name, as checkpoints have always stored them.
        tree["params"] = self.params.arrays()
        return tree

    @classmethod
    def from_tree(cls, tree: dict, data: Data) -> ChainState:
        values = legacy_state(tree)
        if values["Y"] is not None:
            Y = np.where(data.observed, data.Y, 0.0)
            Y[data.missing] = values["Y"]
            values["Y"] = Y
        values["params"] = LikelihoodParams.from_arrays(values["params"])
        return cls(**values)


class MoveCounts(NamedTuple):
    """What a sweep's moves did, the one definition of the per-sweep counts: both backends'
    sweeps report them in :attr:`SweepInfo.moves` (the device's first in ``DeviceInfo.moves``,
    as device scalars), and the record keeps them (0 for a move the sweep does not run). One
    sweep's are ints; :attr:`ibp_rflvm.summaries.posterior.Posterior.moves` holds each as a
    ``chains x sweeps`` array.

    ``z_flips``: entries of ``Z`` the slice step's Gibbs pass changed, ``new_dims``: the
    dimensions it added; ``flips``: accepted joint ``(z, x)`` flips; ``transfers`` and
    ``absorbs``: accepted pair moves, of ``transfers_proposed`` and ``absorbs_proposed``;
    ``births`` and ``deaths``: singleton dimensions born and removed; ``x_evals``: likelihood
    evaluations of the rows' elliptical slice sampling; ``w_accepted``: accepted frequencies;
    ``flips_proposed``: proposed joint flips; ``singletons``: accepted singleton birth/death
    proposals (one a row), of ``singletons_proposed``; ``w_moved``: frequencies whose value
    changed.
    """

    z_flips: int
    new_dims: int
    flips: int
    transfers_proposed: int
    transfers: int
    absorbs_proposed: int
    absorbs: int
    births: int
    deaths: int
    x_evals: int
    w_accepted: int
    flips_proposed: int
    singletons_proposed: int
    singletons: int
    w_moved: int

    @classmethod
    def zeros(cls, zero) -> MoveCounts:
        """Every count `zero` (a device scalar, for a sweep that fills in what it runs)."""
        return cls(*([zero] * len(cls._fields)))


@dataclass(frozen=True)
class MoveSeconds:
    """Wall seconds of each dimension move in one sweep (for the benchmarks' per-move shares)."""

    flips: float = 0.0
    transfers: float = 0.0
    absorbs: float = 0.0
    singletons: float = 0.0


@dataclass(frozen=True)
class SweepInfo:
    """What one sweep did, on either backend: ``K+`` and the mixture's components after it, its
    moves' :class:`MoveCounts` (each also read as the info's own attribute: ``info.births``),
    the slice step's level (NaN: no slice step) and the dimension moves' wall seconds."""

    k_plus: int
    n_components: int
    moves: MoveCounts
    slice: float = math.nan
    seconds_moves: MoveSeconds = field(default_factory=MoveSeconds)

    def __getattr__(self, name: str):
        # Only reached for names the dataclass lacks: the counts, which live in `moves` alone.
        if name in MoveCounts._fields:
            return getattr(self.moves, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def recorded(self) -> SweepInfo:
        """The info the chain's record keeps: this one (a tempered sweep's is its cold level's),
        as ``ChainState.recorded`` is the state it keeps."""
        return self
