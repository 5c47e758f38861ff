"""The collapsed Gaussian target: weights and noise integrated out (SPEC section 2.1).

``y_ij ~ N(phi_i^T beta_j, sigma_j^2)`` with ``beta_j ~ N(0, sigma_j^2 I)`` and
``sigma_j^2 ~ InvGamma(a0, b0)`` integrated out; the unobserved entries are completed by
imputation once a sweep (data augmentation). The marginal couples the rows, so the moves run
row by row as the compiled row kernels of :mod:`ibp_rflvm.samplers`, over the rank-2 row cache
(:mod:`.row_cache`) as their row scorer, each proposal scored in ``O(L^2 + L J)``; a frequency
changes two columns of ``Phi``, scored by the block formula of :mod:`.collapsed_frequencies`.
The cache is rebuilt from scratch at the start of every pass, which bounds the round-off of
the low-rank updates.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import solve_triangular

from ..features import feature_map, row_features
from ..likelihoods.base import LikelihoodParams
from ..likelihoods.gaussian import LOG_2PI, GaussianPrior
from ..samplers.ess import ess_rows
from ..state import Data, ModelSpec
from .base import Work, mean_filled, pca_start
from .collapsed_frequencies import ess_frequencies_collapsed, mh_frequencies
from .gradients import collapsed_value_and_grad
from .row_cache import (
    Cache,
    RowCache,
    begin_row,
    build_cache,
    collapsed_loglik,
    commit_row,
    row_cache,
    score_row,
)


def loglik_direct(Phi: np.ndarray, Y: np.ndarray, prior: GaussianPrior) -> float:
    """The collapsed marginal of complete data `Y` given `Phi`, from scratch (for checks)."""
    return build_cache(Phi, Y, prior).loglik


class CollapsedRows:
    """Rows of the collapsed Gaussian: each proposal is one rank-2 evaluation of the row cache
    `rows`, the compiled row scorer of the moves' row kernels; `delta` and `accept` score one
    row from Python (the singleton births and deaths)."""

    def __init__(self, rows: RowCache, bias: bool):
        self.rows, self.bias = rows, bias
        self.phi_new = np.empty(rows.Phi.shape[1])

    def delta(self, i: int, h: np.ndarray, W: np.ndarray) -> float:
        rows = self.rows
        begin_row(rows, i)
        row_features(np.ascontiguousarray(h), np.ascontiguousarray(W), self.bias, self.phi_new)
        return float(score_row(rows, i, self.phi_new) - rows.state[1])

    def accept(self, i: int) -> None:
        commit_row(self.rows, i, self.phi_new)


def sample_weights(
    rng: np.random.Generator, cache: Cache, N: int, prior: GaussianPrior
) -> tuple[np.ndarray, np.ndarray]:
    """``(beta_j, sigma_j^2)`` from their normal-inverse-gamma posterior given the completed data."""
    a_n = prior.a0 + 0.5 * N
    b_n = prior.b0 + 0.5 * (cache.yy - cache.Q)
    sigma2 = b_n / rng.gamma(a_n, 1.0, size=b_n.size)
    L, J = cache.P.shape
    eps = rng.standard_normal((L, J))
    # S = R R^T, so R^-T eps has covariance S^-1.
    draw = solve_triangular(cache.chol, eps, lower=True, trans="T", check_finite=False)
    beta = cache.P + draw * np.sqrt(sigma2)
    return beta, sigma2


def impute(
    rng: np.random.Generator,
    Phi: np.ndarray,
    Y: np.ndarray,
    missing: tuple[np.ndarray, np.ndarray],
    cache: Cache,
    prior: GaussianPrior,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Draw the weights, then every unobserved entry from ``N(phi_i^T beta_j, sigma_j^2)``.

    Returns ``(Y_completed, beta, sigma2, mean)`` with ``mean = Phi beta``; `Y` is not modified.
    """
    beta, sigma2 = sample_weights(rng, cache, Phi.shape[0], prior)
    mean = Phi @ beta
    Y = Y.copy()
    rows, cols = missing
    if rows.size:
        Y[rows, cols] = mean[rows, cols] + np.sqrt(sigma2[cols]) * rng.standard_normal(rows.size)
    return Y, beta, sigma2, mean


def observed_loglik(Y: np.ndarray, observed: np.ndarray, mean: np.ndarray, sigma2: np.ndarray) -> float:
    """``sum over observed entries of log N(y_ij | mean_ij, sigma_j^2)``."""
    ll = -0.5 * (LOG_2PI + np.log(sigma2) + (Y - mean) ** 2 / sigma2)
    return float(np.sum(ll[observed], dtype=np.float64))


# --------------------------------------------------------------------------------------------
# The target
# --------------------------------------------------------------------------------------------


class CollapsedGaussianTarget:
    """The collapsed Gaussian posterior of one data set (see the module docstring)."""

    def __init__(self, likelihood, data: Data, spec: ModelSpec) -> None:
        self.prior: GaussianPrior = likelihood.prior
        self.data = data
        self.bias = spec.bias
        self.frequency_update = spec.frequency_update

    def start_positions(self, k: int) -> np.ndarray:
        return pca_start(mean_filled(self.data), k)

    def start(self, rng: np.random.Generator, X, Z, W) -> tuple[np.ndarray, LikelihoodParams, float]:
        Phi = feature_map(X * Z, W, self.bias)
        Y0 = mean_filled(self.data)
        cache = build_cache(Phi, Y0, self.prior)
        Y1, beta, sigma2, mean = impute(rng, Phi, Y0, self.data.missing, cache, self.prior)
        params = LikelihoodParams(beta=beta, sigma2=sigma2)
        return Y1, params, observed_loglik(Y1, self.data.observed, mean, sigma2)

    def view(self, w: Work, params: LikelihoodParams) -> CollapsedView:
        return CollapsedView(self, w)

    def x_view(self, w: Work, params: LikelihoodParams, view) -> CollapsedView:
        # X and W move after Z: the features are computed afresh.
        return CollapsedView(self, w)

    def scorer(self, Phi: np.ndarray, params: LikelihoodParams):
        """``f(Phi_d)``: the collapsed log-likelihood of the data completed by this sample's
        mean, so the weights adapt to a changed ``Phi`` (the effective dimensions' score).

        The sample's own mean keeps unobserved entries from carrying information of their own
        (zeros or column means would fight the observed ones); it favours the full model
        slightly, as those entries fit it exactly, which only matters when much of the data is
        unobserved."""
        Yc = np.where(self.data.observed, self.data.Y, Phi @ params.beta)
        return lambda Phi_d: build_cache(Phi_d, Yc, self.prior).loglik

    def loglik_under(self, Y: np.ndarray, Phi: np.ndarray, priors: list[GaussianPrior]) -> np.ndarray:
        """The collapsed log-likelihood of the completed data `Y` under each of `priors` (the
        levels of a replica-exchange ladder): one cache serves them all."""
        cache = build_cache(Phi, Y, self.prior)
        N = Phi.shape[0]
        return np.array([collapsed_loglik(cache.Q, cache.yy, cache.logdet, N, p) for p in priors])


class CollapsedView:
    """The features ``Phi`` of one working state; each pass builds its row cache from them."""

    def __init__(self, target: CollapsedGaussianTarget, w: Work) -> None:
        self.t = target
        self.Phi = feature_map(w.X * w.Z, w.W, target.bias)

    def _rows(self, w: Work) -> RowCache:
        """A row cache built afresh from the current features and completed data."""
        return row_cache(self.Phi, w.Y, build_cache(self.Phi, w.Y, self.t.prior), self.t.prior)

    def row_target(self, w: Work) -> CollapsedRows:
        # Each pass starts from a cache built afresh, which bounds the low-rank updates' round-off.
        return CollapsedRows(self._rows(w), self.t.bias)

    def compact(self) -> None:
        pass

    def update_x(self, rng, w: Work) -> int:
        return ess_rows(rng, w.X, w.Z, w.W, self.t.bias, self._rows(w))

    def update_w(self, rng, w: Work) -> tuple[int, int]:
        cache = build_cache(self.Phi, w.Y, self.t.prior)
        args = (rng, w.X * w.Z, w.W, w.zeta, w.mu, w.Sigma, self.Phi, w.Y, cache, self.t.prior)
        if self.t.frequency_update == "ess":
            _, moved, _ = ess_frequencies_collapsed(*args)
            return (w.W.shape[0] if w.W.shape[1] else 0), moved
        accepted, _ = mh_frequencies(*args)
        return accepted, accepted

    def value_and_grad(self, w: Work):
        """``f(H, W) -> (log L, dL/dH, dL/dW)`` of the completed data (:mod:`.gradients`)."""
        Y, prior, bias = w.Y, self.t.prior, self.t.bias
        return lambda H, W: collapsed_value_and_grad(H, W, Y, prior, bias)

    def moved(self, w: Work) -> None:
        pass  # finish computes the features afresh

    def finish(self, rng, w: Work, params: LikelihoodParams) -> tuple[np.ndarray, LikelihoodParams, float]:
        Phi = feature_map(w.X * w.Z, w.W, self.t.bias)
        cache = build_cache(Phi, w.Y, self.t.prior)
        Y, beta, sigma2, mean = impute(rng, Phi, w.Y, self.t.data.missing, cache, self.t.prior)
        params = LikelihoodParams(beta=beta, sigma2=sigma2)
        return Y, params, observed_loglik(Y, self.t.data.observed, mean, sigma2)
