"""Replica exchange over the noise prior of the collapsed Gaussian (docs/sampler.md, section 4).

Level ``l`` of the ladder is the same IBP-RFLVM with the noise prior ``sigma_j^2 ~ InvGamma(a0,
b_l)``; level 0 has the model's own ``b0``, the others larger scales, under which the data are
explained as noisier and the likelihood is flatter, so ``Z``, ``X`` and ``W`` move more freely
there. Each level runs the ordinary sweep of :func:`ibp_rflvm.model.build_sweep` over its own
target (exact for it), and before every sweep adjacent levels propose to exchange their states.
The whole ladder is one kernel (:func:`build_tempered`) whose state holds every level and the
swap counts, so the chain driver (:func:`ibp_rflvm.mcmc.driver.drive`) runs, checkpoints and
resumes it like any other chain; its record keeps the cold level.

Level ``l``'s target over a state ``theta`` (latent variables, frequencies and the imputed
entries ``Y_mis``) is ``p(theta) p(Y_obs, Y_mis | Phi(theta); b_l)``, with the weights and noise
integrated out (docs/likelihoods.md). The prior ``p(theta)`` is the same at every level, so the swap's log
ratio (:func:`swap_log_ratio`) needs only the collapsed log-likelihood of
each state's completed data under each level's ``b``:

``log r = L(theta_{l+1}; b_l) + L(theta_l; b_{l+1}) - L(theta_l; b_l) - L(theta_{l+1}; b_{l+1})``.

Swaps come before each level's sweep, which ends by redrawing the weights and noise of its
own level, so the samples the cold level keeps carry weights drawn under ``b0``.

A swap of the states held at adjacent levels ``l`` and ``l + 1`` (Geyer 1991) is a Metropolis
move on the product target ``prod_l pi_l(theta_l)``, accepted with probability ``min(1, r)``
(:func:`swap_log_ratio`). A pass proposes the pairs ``(0, 1), (2, 3), ...`` or
``(1, 2), (3, 4), ...`` by parity; the pairs are disjoint, so one pass is a product of
independent exact moves (:func:`swap_pass`).

Powers of the likelihood are not used as the ladder: with unobserved entries imputed, a power of
the collapsed marginal is not a density of ``Y_mis`` the imputation step can draw from.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from ..model import ChainState, Data, ModelSpec, SweepInfo, SweepKernel, build_sweep
from ..targets import CollapsedGaussianTarget, make_target
from .driver import _plain, drive, settings_description
from .record import ChainResult


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


def _check_tempers(spec: ModelSpec) -> None:
    # Asked of the likelihood, not its class: any model with a ladder (``tempers``,
    # ``tempering_scale``, ``tempered``) whose target scores a state under every level's prior.
    if not getattr(spec.likelihood, "tempers", False):
        raise ValueError(
            "replica exchange over the noise prior (n_replicas > 1) needs likelihood='gaussian'; "
            f"got {spec.likelihood.name!r}"
        )


def ladder_for(spec: ModelSpec, n_levels: int, top: float) -> Ladder:
    """The geometric ladder of `n_levels` noise-prior scales from `spec`'s ``b0`` to ``top * b0``."""
    _check_tempers(spec)
    return Ladder.geometric(spec.likelihood.tempering_scale, top, n_levels)


def level_specs(spec: ModelSpec, ladder: Ladder) -> list[ModelSpec]:
    """The model at each level: `spec` with the noise prior's scale replaced."""
    _check_tempers(spec)
    return [replace(spec, likelihood=spec.likelihood.tempered(b)) for b in ladder.b0]


class TemperedState(NamedTuple):
    """Every level's state, coldest first, and the swaps of each adjacent pair so far."""

    levels: tuple[ChainState, ...]
    swaps_proposed: np.ndarray
    swaps_accepted: np.ndarray

    @property
    def recorded(self) -> ChainState:
        """The cold level: the model's own posterior."""
        return self.levels[0]

    @property
    def swap_rates(self) -> np.ndarray:
        return self.swaps_accepted / np.maximum(self.swaps_proposed, 1)

    def to_tree(self, data: Data) -> dict:
        return {
            "levels": [s.to_tree(data) for s in self.levels],
            "swaps_proposed": self.swaps_proposed, "swaps_accepted": self.swaps_accepted,
        }  # fmt: skip

    @classmethod
    def from_tree(cls, tree: dict, data: Data) -> TemperedState:
        levels = tuple(ChainState.from_tree(t, data) for t in tree["levels"])
        return cls(levels, np.asarray(tree["swaps_proposed"]), np.asarray(tree["swaps_accepted"]))


class TemperedInfo(NamedTuple):
    """The cold level's sweep info, which pairs were proposed (`parity`), which swaps were
    accepted, and every level's ``K+``."""

    cold: SweepInfo
    parity: int
    accepted: np.ndarray
    k_plus_levels: list[int]

    @property
    def recorded(self) -> SweepInfo:
        """The cold level's sweep info, which the record keeps with the cold level's state."""
        return self.cold

    @property
    def k_plus(self) -> int:
        return self.cold.k_plus

    @property
    def n_components(self) -> int:
        return self.cold.n_components


def swap_log_ratio(E: np.ndarray, lo: int) -> float:
    """``log r`` for swapping the states at levels `lo` and ``lo + 1`` (see the module docstring)."""
    hi = lo + 1
    return float(E[hi, lo] + E[lo, hi] - E[lo, lo] - E[hi, hi])


def swap_pass(rng: np.random.Generator, E: np.ndarray, parity: int) -> tuple[np.ndarray, np.ndarray]:
    """One pass of adjacent swaps.

    Returns ``order`` (level ``l`` now holds the state that slot ``order[l]`` held) and a
    boolean per proposed pair saying whether it was accepted. One uniform is drawn per
    proposed pair, in ladder order, so a seed fixes the pass.
    """
    n = E.shape[0]
    order = np.arange(n)
    pairs = range(parity % 2, n - 1, 2)
    accepted = np.zeros(len(pairs), dtype=bool)
    for p, lo in enumerate(pairs):  # at most n / 2 pairs: the ladder is short
        if np.log(rng.random()) < swap_log_ratio(E, lo):
            order[lo], order[lo + 1] = order[lo + 1], order[lo]
            accepted[p] = True
    return order, accepted


def level_logliks(
    states: tuple[ChainState, ...], targets: list[CollapsedGaussianTarget], bias: bool
) -> np.ndarray:
    """``E[i, l]``: collapsed log-likelihood of state ``i``'s completed data under level ``l``'s prior."""
    priors = [t.prior for t in targets]
    return np.array([t.loglik_under(s.Y, s.phi(bias), priors) for s, t in zip(states, targets, strict=True)])


def build_tempered(spec: ModelSpec, ladder: Ladder, data: Data) -> SweepKernel:
    """The replica-exchange kernel over `ladder`: a swap pass, then every level's sweep.

    Levels start from independent draws of the usual start, in ladder order (one generator
    drives them all, so the seed fixes the run)."""
    specs = level_specs(spec, ladder)
    targets = [make_target(s, data) for s in specs]
    kernels = [build_sweep(s, t) for s, t in zip(specs, targets, strict=True)]
    n_pairs = max(len(specs) - 1, 0)

    def init(rng: np.random.Generator) -> TemperedState:
        levels = tuple(k.init(rng) for k in kernels)
        return TemperedState(levels, np.zeros(n_pairs, dtype=np.int64), np.zeros(n_pairs, dtype=np.int64))

    def step(rng: np.random.Generator, state: TemperedState) -> tuple[TemperedState, TemperedInfo]:
        levels = state.levels
        parity = levels[0].sweep % 2
        accepted = np.zeros(0, dtype=bool)
        if len(levels) > 1 and spec.use_likelihood:
            order, accepted = swap_pass(rng, level_logliks(levels, targets, spec.bias), parity)
            levels = tuple(levels[i] for i in order)
        stepped = [k.step(rng, s) for k, s in zip(kernels, levels, strict=True)]
        proposed, took = state.swaps_proposed.copy(), state.swaps_accepted.copy()
        pairs = np.arange(parity, parity + 2 * accepted.size, 2)
        proposed[pairs] += 1
        took[pairs] += accepted
        new = TemperedState(tuple(s for s, _ in stepped), proposed, took)
        info = TemperedInfo(stepped[0][1], parity, accepted, [i.k_plus for _, i in stepped])
        return new, info

    return SweepKernel(init, step)


def run_tempered(
    rng: np.random.Generator,
    data: Data,
    spec: ModelSpec,
    n_iter: int,
    burn_in: int,
    ladder: Ladder,
    progress=None,
    checkpoint_path=None,
    checkpoint_every: int = 10,
    resume: bool = False,
    threads=None,
) -> tuple[ChainResult, np.ndarray]:
    """Run the ladder for `n_iter` sweeps with the chain driver; the cold level's chain is the
    result, with each adjacent pair's swap acceptance rate. Checkpoints and resuming as for
    :func:`ibp_rflvm.mcmc.driver.run_chain`; the ladder is part of what a checkpoint belongs to."""
    settings = {**settings_description(spec), "ladder": _plain(list(ladder.b0))}
    state, record = drive(
        rng, build_tempered(spec, ladder, data), TemperedState, data, spec, settings, n_iter, burn_in,
        checkpoint_path, checkpoint_every, resume, progress, threads,
    )  # fmt: skip
    return ChainResult(state=state.recorded, record=record), state.swap_rates


__all__ = [
    "Ladder", "TemperedInfo", "TemperedState", "build_tempered", "ladder_for", "level_logliks", "level_specs",
    "run_tempered", "swap_log_ratio", "swap_pass",
]  # fmt: skip
