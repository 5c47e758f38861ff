"""The factorised target: likelihoods sampled with their weights ``beta``, given which the
rows are independent (negative binomial, Poisson, binomial, Bernoulli, multinomial).

The updates of ``Z``, ``X`` and ``W`` keep ``Phi``, ``psi = Phi beta`` and the row
log-likelihoods consistent (:class:`~.factorised_state.FactorisedState`), so every row's
proposal is scored in one array pass; the likelihood then draws its weights and own variables
(Polya-gamma augmentation, :mod:`ibp_rflvm.likelihoods`).
"""

from __future__ import annotations

import numpy as np

from ..features import feature_map
from ..likelihoods.base import LikelihoodParams
from ..plumbing import blocks as _blocks
from ..state import Data, ModelSpec
from .base import Work, mean_filled, pca_start
from .factorised_state import FactorisedState, ess_w, features_and_predictor, update_w, update_x
from .gradients import factorised_value_and_grad


class FactorisedRows:
    """Rows of a likelihood that factorises given ``beta`` (a ``FactorisedState`` ``fs``): every
    move scores many rows' proposals in one array pass."""

    rows = None  # independent given the weights: no compiled row scorer

    def __init__(self, fs) -> None:
        self.fs = fs
        self.bias = fs.bias
        self._last = None
        self._at = None

    def delta(self, i: int, h: np.ndarray, W: np.ndarray) -> float:
        rows = np.array([i])
        ll, Phi, psi = self.fs.rows_loglik(h[None, :], W, rows)
        self._last = (ll[0], Phi[0], psi[0])
        return float(ll[0] - self.fs.ll[i])

    def accept(self, i: int) -> None:
        ll, phi, psi = self._last
        self.fs.Phi[i] = phi
        self.fs.psi[i] = psi
        self.fs.ll[i] = ll

    def deltas(self, H_alt: np.ndarray, W: np.ndarray) -> np.ndarray:
        """Every row's change if its latent row became the same row of `H_alt` (one array pass)."""
        return self.deltas_at(self.fs.all_rows, H_alt, W)

    def accept_rows(self, rows: np.ndarray) -> None:
        """Commit the proposals of `rows` from the last `deltas` (row numbers are positions)."""
        self.accept_at(rows)

    def deltas_at(self, rows: np.ndarray, H_rows: np.ndarray, W: np.ndarray) -> np.ndarray:
        """The change for each of `rows` if its latent row became the same row of `H_rows`;
        costs only those rows, for moves that concern a few of them."""
        self._at = (rows, self.fs.rows_loglik(H_rows, W, rows))
        return self._at[1][0] - self.fs.ll[rows]

    def accept_at(self, idx: np.ndarray) -> None:
        """Commit the proposals of ``rows[idx]`` from the last `deltas_at`."""
        rows, (ll, Phi, psi) = self._at
        idx = np.asarray(idx)
        r = rows[idx]
        self.fs.Phi[r] = Phi[idx]
        _blocks.copy_rows(self.fs.psi, r, psi, idx)
        self.fs.ll[r] = ll[idx]


class FactorisedTarget:
    """The posterior of a factorising likelihood on one data set."""

    def __init__(self, likelihood, data: Data, spec: ModelSpec) -> None:
        self.lik = likelihood
        self.data = data
        self.prep = data.prep if data.prep is not None else likelihood.prepare(data.Y)
        self.bias = spec.bias
        self.frequency_update = spec.frequency_update

    def start_positions(self, k: int) -> np.ndarray:
        Y0 = mean_filled(self.data)
        # Counts enter the PCA as square roots; in place, the same numbers: at 100,000 x 2,000
        # each N x J copy is 1.5 GiB.
        np.sqrt(np.maximum(Y0, 0.0, out=Y0), out=Y0)
        return pca_start(Y0, k, overwrite=True)

    def start(self, rng: np.random.Generator, X, Z, W) -> tuple[None, LikelihoodParams, float]:
        Phi = feature_map(X * Z, W, self.bias)
        params = self.lik.init_params(rng, Phi, self.prep)
        return None, params, self.loglik(Phi, params)

    def loglik(self, Phi: np.ndarray, params: LikelihoodParams) -> float:
        rows = np.arange(Phi.shape[0])
        ll = self.lik.loglik_rows(_blocks.matmul_rows(Phi, params.beta), rows, params, self.prep)
        return float(np.sum(ll, dtype=np.float64))

    def view(self, w: Work, params: LikelihoodParams) -> FactorisedView:
        fs = FactorisedState(w.X, w.Z, w.W, self.bias, params.beta, self.lik, params, self.prep)
        return FactorisedView(self, fs)

    def x_view(self, w: Work, params: LikelihoodParams, view) -> FactorisedView:
        # The state the moves of Z kept consistent serves X and W too.
        return view if view is not None else self.view(w, params)

    def scorer(self, Phi: np.ndarray, params: LikelihoodParams):
        """``f(Phi_d)``: the observed entries' log-likelihood with this sample's weights held
        fixed (these models have no closed-form marginal to let the weights adapt)."""
        rows = np.arange(Phi.shape[0])
        beta = params.beta
        lik, prep = self.lik, self.prep

        def loglik(Phi_d: np.ndarray) -> float:
            return float(np.sum(lik.loglik_rows(Phi_d @ beta, rows, params, prep), dtype=np.float64))

        return loglik


class FactorisedView:
    def __init__(self, target: FactorisedTarget, fs: FactorisedState) -> None:
        self.t = target
        self.fs = fs

    def row_target(self, w: Work) -> FactorisedRows:
        return FactorisedRows(self.fs)

    def compact(self) -> None:
        self.fs.Phi = np.ascontiguousarray(self.fs.Phi)  # dropped dimensions were inactive

    def update_x(self, rng, w: Work) -> int:
        w.X, n_evals = update_x(rng, w.X, w.Z, w.W, self.fs)
        return n_evals

    def update_w(self, rng, w: Work) -> tuple[int, int]:
        if self.t.frequency_update == "ess":
            _, moved = ess_w(rng, w.X * w.Z, w.W, w.zeta, w.mu, w.Sigma, self.fs)
            return (w.W.shape[0] if w.W.shape[1] else 0), moved
        accepted = update_w(rng, w.X * w.Z, w.W, w.zeta, w.mu, w.Sigma, self.fs)
        return accepted, accepted

    def value_and_grad(self, w: Work):
        """``f(H, W) -> (log L, dL/dH, dL/dW)`` given this sweep's weights (:mod:`.gradients`)."""
        fs, t = self.fs, self.t
        return lambda H, W: factorised_value_and_grad(H, W, fs.beta, t.lik, fs.params, t.prep, t.bias)

    def moved(self, w: Work) -> None:
        """``X`` and ``W`` moved as a block: the features, predictors and rows' terms afresh."""
        fs = self.fs
        fs.Phi, fs.psi = features_and_predictor(w.X * w.Z, w.W, fs.bias, fs.beta)
        fs.ll = fs.lik.loglik_rows(fs.psi, fs.all_rows, fs.params, fs.prep)

    def finish(self, rng, w: Work, params: LikelihoodParams) -> tuple[None, LikelihoodParams, float]:
        self.fs.psi = None  # stale once beta changes; freed so the weight update has its N x J room
        params = self.t.lik.update_params(rng, self.fs.Phi, params, self.t.prep)
        return w.Y, params, self.t.loglik(self.fs.Phi, params)
