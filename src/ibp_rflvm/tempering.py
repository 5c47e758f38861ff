"""Replica exchange over the noise prior of the collapsed Gaussian (SPEC 2.2, moves that cross modes).

Level ``l`` of the ladder is the same IBP-RFLVM with the noise prior ``sigma_j^2 ~ InvGamma(a0,
b_l)``; level 0 has the model's own ``b0``, the others larger scales, under which the data are
explained as noisier and the likelihood is flatter, so ``Z``, ``X`` and ``W`` move more freely
there. Each level runs the ordinary sweep of :func:`ibp_rflvm.model.sweep` (exact for its own
target), and before every sweep adjacent levels propose to exchange their states.

Level ``l``'s target over a state ``theta`` (latent variables, frequencies and the imputed
entries ``Y_mis``) is ``p(theta) p(Y_obs, Y_mis | Phi(theta); b_l)``, with the weights and noise
integrated out (SPEC 2.1). The prior ``p(theta)`` is the same at every level, so the swap's log
ratio (:mod:`ibp_rflvm.samplers.replica_exchange`) needs only the collapsed log-likelihood of
each state's completed data under each level's ``b``:

``log r = L(theta_{l+1}; b_l) + L(theta_l; b_{l+1}) - L(theta_l; b_l) - L(theta_{l+1}; b_{l+1})``.

Swaps come before each level's sweep, which ends by redrawing the weights and noise of its
own level, so the samples the cold level keeps carry weights drawn under ``b0``.

Powers of the likelihood are not used as the ladder: with unobserved entries imputed, a power of
the collapsed marginal is not a density of ``Y_mis`` the imputation step can draw from.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .chain import ChainRecord, ChainResult
from .likelihoods.gaussian import GaussianLikelihood
from .model import ChainState, Data, ModelSpec, init_state, sweep
from .row_cache import GaussianPrior, build_cache, collapsed_loglik
from .samplers.replica_exchange import swap_pass


@dataclass(frozen=True)
class Ladder:
    """Noise-prior scales ``b_l``, coldest (the model's own ``b0``) first."""

    b0: tuple[float, ...]

    @classmethod
    def geometric(cls, b0: float, top: float, n_levels: int) -> Ladder:
        """`n_levels` scales from `b0` to ``top * b0``, evenly spaced on the log scale."""
        if n_levels < 1 or top < 1.0:
            raise ValueError("a ladder needs at least one level and top >= 1")
        ratios = [top ** (i / max(n_levels - 1, 1)) for i in range(n_levels)]
        return cls(tuple(float(b0) * r for r in ratios))


def level_specs(spec: ModelSpec, ladder: Ladder) -> list[ModelSpec]:
    """The model at each level: `spec` with the noise prior's scale replaced."""
    lik = spec.likelihood
    if not getattr(lik, "collapsed", False):
        raise ValueError("replica exchange over the noise prior needs the collapsed Gaussian likelihood")
    a0 = lik.prior.a0
    return [replace(spec, likelihood=GaussianLikelihood(a0=a0, b0=b)) for b in ladder.b0]


def level_logliks(states: tuple[ChainState, ...], specs: list[ModelSpec]) -> np.ndarray:
    """``E[i, l]``: collapsed log-likelihood of state ``i``'s completed data under level ``l``'s prior.

    One cache per state serves every level: only ``b`` changes between levels.
    """
    E = np.empty((len(states), len(specs)))
    for i, (state, spec) in enumerate(zip(states, specs, strict=True)):
        Phi = state.phi(spec.bias)
        cache = build_cache(Phi, state.Y, spec.likelihood.prior)
        N = Phi.shape[0]
        for level, other in enumerate(specs):
            prior: GaussianPrior = other.likelihood.prior
            E[i, level] = collapsed_loglik(cache.Q, cache.yy, cache.logdet, N, prior)
    return E


def init_levels(rng: np.random.Generator, data: Data, specs: list[ModelSpec]) -> tuple[ChainState, ...]:
    return tuple(init_state(rng, data, spec) for spec in specs)


def tempered_sweep(
    rng: np.random.Generator, states: tuple[ChainState, ...], data: Data, specs: list[ModelSpec]
) -> tuple[tuple[ChainState, ...], dict]:
    """Swap pass, then one ordinary sweep at every level. Info: the cold level's sweep info,
    plus which pairs were proposed (`parity`) and which swaps were accepted."""
    parity = states[0].sweep % 2
    accepted = np.zeros(0, dtype=bool)
    if len(states) > 1 and specs[0].use_likelihood:
        order, accepted = swap_pass(rng, level_logliks(states, specs), parity)
        states = tuple(states[i] for i in order)
    new = []
    infos = []
    for state, spec in zip(states, specs, strict=True):
        state, info = sweep(rng, state, data, spec)
        new.append(state)
        infos.append(info)
    info = dict(infos[0])
    info["swap_parity"] = parity
    info["swaps_accepted"] = accepted
    info["k_plus_levels"] = [i["k_plus"] for i in infos]
    return tuple(new), info


@dataclass
class SwapRates:
    """Proposed and accepted swaps of each adjacent pair ``(l, l + 1)``."""

    proposed: np.ndarray
    accepted: np.ndarray

    @classmethod
    def empty(cls, n_levels: int) -> SwapRates:
        n = max(n_levels - 1, 0)
        return cls(np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64))

    def add(self, parity: int, accepted: np.ndarray) -> None:
        pairs = np.arange(parity, parity + 2 * accepted.size, 2)
        self.proposed[pairs] += 1
        self.accepted[pairs] += accepted

    @property
    def rates(self) -> np.ndarray:
        return self.accepted / np.maximum(self.proposed, 1)


def run_tempered(
    rng: np.random.Generator,
    data: Data,
    spec: ModelSpec,
    n_iter: int,
    burn_in: int,
    ladder: Ladder,
    progress=None,
) -> tuple[ChainResult, SwapRates]:
    """Run the ladder for `n_iter` sweeps; the cold level's chain is the result.

    Levels start from independent draws of the usual start (one generator drives them all, so
    the seed fixes the run). Only the cold level's traces and samples are kept.
    """
    specs = level_specs(spec, ladder)
    states = init_levels(rng, data, specs)
    record = ChainRecord()
    rates = SwapRates.empty(len(specs))
    for t in range(n_iter):
        states, info = tempered_sweep(rng, states, data, specs)
        rates.add(info["swap_parity"], info["swaps_accepted"])
        record.add(states[0], info, keep=t >= burn_in, spec=specs[0])
        if progress is not None:
            progress.set_postfix(k_plus=info["k_plus"], refresh=False)
            progress.update(1)
    return ChainResult(state=states[0], record=record), rates


__all__ = [
    "Ladder", "SwapRates", "init_levels", "level_logliks", "level_specs", "run_tempered",
    "tempered_sweep",
]  # fmt: skip
