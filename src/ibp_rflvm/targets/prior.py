"""The prior-only target: no likelihood, for the sampler checks (SPEC section 7).

Every proposal leaves the likelihood at 0, so elliptical slice sampling accepts its first
proposal (``X`` is redrawn around its ellipse, and so is each frequency under
``frequency_update="ess"``) and the frequencies' Metropolis-Hastings step, whose proposal is the
prior, always accepts. The start is the likelihood's own
(:meth:`PriorTarget.start` delegates), so a prior chain starts where a posterior chain would.
"""

from __future__ import annotations

import math

import numpy as np

from ..likelihoods.base import LikelihoodParams
from .base import Work
from .frequency_moves import ess_frequencies_prior


class NoLikelihood:
    """The prior alone (for the sampler checks): every proposal leaves the likelihood at 0."""

    rows = None
    bias = False

    def delta(self, i: int, h: np.ndarray, W: np.ndarray) -> float:
        return 0.0

    def accept(self, i: int) -> None:
        pass

    def deltas(self, H_alt: np.ndarray, W: np.ndarray) -> np.ndarray:
        return np.zeros(H_alt.shape[0])

    def accept_rows(self, rows: np.ndarray) -> None:
        pass

    def deltas_at(self, rows: np.ndarray, H_rows: np.ndarray, W: np.ndarray) -> np.ndarray:
        return np.zeros(rows.size)

    def accept_at(self, idx: np.ndarray) -> None:
        pass


class PriorTarget:
    """The IBP-RFLVM's prior; `start_from` is the likelihood's target, whose start it keeps."""

    def __init__(self, start_from) -> None:
        self.start_from = start_from

    def start_positions(self, k: int) -> np.ndarray:
        return self.start_from.start_positions(k)

    def start(self, rng: np.random.Generator, X, Z, W):
        return self.start_from.start(rng, X, Z, W)

    def view(self, w: Work, params: LikelihoodParams) -> PriorView:
        return PriorView(self.start_from.frequency_update)

    def x_view(self, w: Work, params: LikelihoodParams, view) -> PriorView:
        return view if view is not None else self.view(w, params)

    def scorer(self, Phi: np.ndarray, params: LikelihoodParams):
        return lambda Phi_d: 0.0


class PriorView:
    def __init__(self, frequency_update: str = "mh") -> None:
        self.frequency_update = frequency_update

    def row_target(self, w: Work) -> NoLikelihood:
        return NoLikelihood()

    def compact(self) -> None:
        pass

    def update_x(self, rng, w: Work) -> int:
        # ESS without a likelihood: the first point of the ellipse is accepted.
        N = w.X.shape[0]
        theta = rng.random(N) * 2.0 * math.pi
        nu = rng.standard_normal(w.X.shape)
        w.X = w.X * np.cos(theta)[:, None] + nu * np.sin(theta)[:, None]
        return 0

    def update_w(self, rng, w: Work) -> tuple[int, int]:
        if not w.W.shape[1]:
            return 0, 0
        M = w.W.shape[0]
        if self.frequency_update == "ess":
            w.W = ess_frequencies_prior(rng, w.W, w.zeta, w.mu, w.Sigma)
            return M, M
        # MH whose proposal is the prior accepts every draw: W is its mixture component's draw.
        e = rng.standard_normal(w.W.shape)
        chol = np.array([np.linalg.cholesky(S) for S in w.Sigma])
        w.W = w.mu[w.zeta] + np.einsum("mab,mb->ma", chol[w.zeta], e)
        return M, M

    def finish(self, rng, w: Work, params: LikelihoodParams):
        return w.Y, params, 0.0
