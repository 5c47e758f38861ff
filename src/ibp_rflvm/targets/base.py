"""What the sweep asks of a target, and the sweep's working copy of the chain state.

A *target* is the posterior the sweep samples, chosen once from the likelihood, the data and
the settings (:func:`ibp_rflvm.targets.make_target`): the prior alone, the collapsed Gaussian,
or a likelihood that factorises over rows given its weights. The sweep
(:func:`ibp_rflvm.model.build_sweep`) never asks which one it has; it calls

* ``target.start_positions(K)`` for the start's latent positions, then
  ``target.start(rng, X, Z, W)`` for its completed data, weights and log-likelihood;
* ``target.view(w, params)``: a :class:`View` of the likelihood at the working state ``w``,
  which carries what the updates of ``Z`` share (the features, a row cache, the linear
  predictors), and ``target.x_view(w, params, view)`` for the updates of ``X`` and ``W``;
* the view's ``row_target(w)``: what the moves of ``Z`` (:mod:`ibp_rflvm.samplers`: the prior's
  Gibbs pass, the flips, transfers, absorb/emit, singleton births and deaths) score their
  proposals against, a :class:`~ibp_rflvm.samplers.dimension_moves.RowTarget` that scores many
  rows in one array pass or, for a likelihood that couples the rows, also offers a compiled row
  scorer (:mod:`ibp_rflvm.samplers.row_scorer`) for the moves' row kernels;
* the view's ``update_x``, ``update_w`` and ``finish``, which draws the likelihood's own
  variables and returns the sweep's log-likelihood.

Each move updates the working arrays of ``w`` in place and draws from the chain's one
Generator in a fixed order, so a seed fixes the chain.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Protocol

import numpy as np

from ..likelihoods.base import LikelihoodParams
from ..samplers import dp_mixture
from ..samplers.dimension_moves import RowTarget
from ..state import ChainState, Data


class Work:
    """A sweep's mutable copy of a :class:`~ibp_rflvm.state.ChainState`: the state's fields as
    attributes, its arrays and the prior's variables copied, so that the moves update them in
    place and the state the sweep was given stays as it was. :meth:`to_state` is the state it
    has become."""

    def __init__(self, state: ChainState) -> None:
        for f in fields(state):
            value = getattr(state, f.name)
            setattr(self, f.name, value.copy() if isinstance(value, np.ndarray | dict) else value)

    def to_state(self, **changes) -> ChainState:
        """The state these fields make, with `changes` (the sweep's new values of the others)."""
        return ChainState(**{**{f.name: getattr(self, f.name) for f in fields(ChainState)}, **changes})

    @property
    def H(self) -> np.ndarray:
        return self.X * self.Z

    def resize(self, rng: np.random.Generator, keep: np.ndarray, n_new: int, lam0: float) -> None:
        """Keep the dimensions `keep`, in that order (dropping is exact marginalisation), then
        add `n_new` new ones, their coordinates from the prior."""
        self.X = self.X[:, keep]
        self.Z = self.Z[:, keep]
        self.W, self.mu, self.Sigma = dp_mixture.keep_dimensions(self.W, self.mu, self.Sigma, keep)
        for _ in range(n_new):
            self.X = np.hstack([self.X, rng.standard_normal((self.X.shape[0], 1))])
            self.Z = np.hstack([self.Z, np.zeros((self.Z.shape[0], 1), dtype=np.int8)])
            self.W, self.mu, self.Sigma = dp_mixture.add_dimension(
                rng, self.W, self.zeta, self.mu, self.Sigma, lam0
            )
        self.X = np.ascontiguousarray(self.X)
        self.Z = np.ascontiguousarray(self.Z)
        self.W = np.ascontiguousarray(self.W)


class View(Protocol):
    """The likelihood at one working state, for the moves of one sweep."""

    def row_target(self, w: Work) -> RowTarget:
        """What one pass of the moves of ``Z`` over the rows scores its proposals against, from
        ``w`` as it stands; the moves of one pass share it, and each call starts a pass (the
        collapsed Gaussian builds its row cache afresh)."""

    def compact(self) -> None:
        """After inactive dimensions were dropped (the features do not change)."""

    def update_x(self, rng: np.random.Generator, w: Work) -> int:
        """Elliptical slice sampling of ``X``; the number of likelihood evaluations."""

    def update_w(self, rng: np.random.Generator, w: Work) -> tuple[int, int]:
        """The frequencies' move (``ModelSpec.frequency_update``): ``(accepted, moved)``, the
        frequencies whose update took a point (every one for elliptical slice sampling) and
        those whose value changed."""

    def finish(
        self, rng: np.random.Generator, w: Work, params: LikelihoodParams
    ) -> tuple[np.ndarray | None, LikelihoodParams, float]:
        """Draw the likelihood's own variables: ``(completed Y, params, log-likelihood)``."""


class Target(Protocol):
    """The posterior a sweep samples (see the module docstring)."""

    def start_positions(self, k: int) -> np.ndarray:
        """The start's latent positions, ``N x k``: principal components of the data with
        unobserved entries at their column means (counts as square roots)."""

    def start(
        self, rng: np.random.Generator, X: np.ndarray, Z: np.ndarray, W: np.ndarray
    ) -> tuple[np.ndarray | None, LikelihoodParams, float]:
        """``(completed Y, params, log-likelihood)`` of the starting state."""

    def view(self, w: Work, params: LikelihoodParams) -> View: ...

    def x_view(self, w: Work, params: LikelihoodParams, view: View | None) -> View: ...


def mean_filled(data: Data) -> np.ndarray:
    """A new array of the data with each unobserved entry at its column's observed mean: the
    start's completion, the input of its PCA."""
    return np.where(data.observed, data.Y, np.nanmean(data.Y, axis=0))


def pca_start(Y: np.ndarray, k: int, overwrite: bool = False) -> np.ndarray:
    """The first `k` principal component scores of `Y`, each scaled to unit variance (zero
    columns past the rank). `overwrite`: centre `Y` in place (the caller's copy, not needed
    afterwards)."""
    Yc = np.subtract(Y, Y.mean(axis=0), out=Y if overwrite else None)
    U, s, _ = np.linalg.svd(Yc, full_matrices=False)
    X = U[:, :k] * s[:k]
    X = X / np.maximum(X.std(axis=0), 1e-12)
    if X.shape[1] < k:
        X = np.hstack([X, np.zeros((Y.shape[0], k - X.shape[1]))])
    return X
