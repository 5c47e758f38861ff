"""Birth and death of whole latent dimensions by reversible jump (SPEC 2.2, moves that cross modes).

In the exchangeable view the active dimensions are the points of a Poisson process: a dimension
whose ``z`` column has ``m`` ones has intensity ``lambda(z) = alpha (m - 1)! (N - m)! / N!`` (under
the two-parameter IBP ``alpha beta Gamma(m) Gamma(N - m + beta) / Gamma(N + beta)``, :mod:`.ibp_beta`) and
carries ``x ~ N(0, 1)`` in every row and frequency and mixture coordinates from their conditional
prior. A birth proposes one new dimension, a death removes one of the ``K`` chosen uniformly,
each with probability 1/2 (Geyer and Moller 1994). The coordinates of the new dimension and its
``x`` in rows where ``z = 0`` are proposed from their prior, so they cancel, and

* birth (``K -> K + 1``):
  ``A = lambda(z) prod_{z_i = 1} N(x_i; 0, 1) * p(Y | new) / p(Y | old) / ((K + 1) q(z, x))``;
* death of ``d`` (``K -> K - 1``): the reciprocal, ``K q(z_d, x_d) / (lambda(z_d) prod N(x_id))``
  times the likelihood ratio, with ``q`` evaluated from the state without ``d``.

Two proposals ``q`` for the new column:

* ``"prior"``: ``rho ~ U(0, 1)``, ``z_i ~ Bern(rho)``, ``x_i ~ N(0, 1)``, so
  ``q = m! (N - m)! / (N + 1)!`` and ``A = alpha (N + 1) / ((K + 1) m)`` times the likelihood ratio;
* ``"informed"``: each row independently, from a grid quadrature of its own log-likelihood
  along the new coordinate. With ``c_i(g)`` the row's log-likelihood when its new coordinate
  is ``g`` (``g = 0`` is ``z_i = 0``), ``P(z_i = 0) ∝ c_i(0) / 2`` and the cell of width ``h``
  around grid point ``g_k`` gets ``∝ N(g_k; 0, 1) h exp(c_i(g_k)) / 2``, ``x`` uniform in the
  cell. The row curves come from the state without the dimension in question (the same state
  for a birth and for the death that reverses it): for count likelihoods the current weights,
  which the move conditions on; for the collapsed Gaussian the posterior mean weights and noise
  of that smaller state, a function of the collapsed target's own variables.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln, logsumexp

from .. import blocks as _blocks
from ..features import feature_map
from ..row_cache import LOG_2PI, GaussianPrior, build_cache
from . import dp_mixture
from .dimension_moves import Dimensions

GRID_HALF_WIDTH = 4.0
GRID_CELLS = 17


def log_intensity(alpha: float, n: int, m: int, beta: float = 1.0) -> float:
    """``log lambda(z)`` of a dimension with ``m`` of ``n`` rows on (`beta`: the two-parameter
    IBP's sharing parameter; 1 is the one-parameter IBP, computed as it always was)."""
    if beta == 1.0:
        return math.log(alpha) + gammaln(n - m + 1) + gammaln(m) - gammaln(n + 1)
    return math.log(alpha * beta) + gammaln(n - m + beta) + gammaln(m) - gammaln(n + beta)


def _log_std_normal(x: np.ndarray) -> np.ndarray:
    return -0.5 * (LOG_2PI + x * x)


class PriorProposal:
    """``rho ~ U(0, 1)``, ``z_i ~ Bern(rho)``, ``x_i ~ N(0, 1)``."""

    name = "prior"

    def draw(self, rng: np.random.Generator, curves_fn) -> tuple[np.ndarray, np.ndarray, float]:
        """A new column ``(z, x)`` and its log proposal density."""
        n = curves_fn.n_rows
        rho = rng.random()
        z = (rng.random(n) < rho).astype(np.int8)
        x = rng.standard_normal(n)
        return z, x, self.log_density(z, x, curves_fn)

    def log_density(self, z: np.ndarray, x: np.ndarray, curves_fn) -> float:
        n, m = z.size, int(z.sum())
        log_z = gammaln(m + 1) + gammaln(n - m + 1) - gammaln(n + 2)
        return float(log_z + np.sum(_log_std_normal(x[z == 1])))


class InformedProposal:
    """Each row from its own log-likelihood along the new coordinate, on a grid (module doc)."""

    name = "informed"

    def __init__(self, half_width: float = GRID_HALF_WIDTH, cells: int = GRID_CELLS):
        self.h = 2.0 * half_width / cells
        self.grid = -half_width + self.h * (np.arange(cells) + 0.5)

    def _log_probs(self, curves_fn) -> np.ndarray:
        """``N x (1 + G)`` log-probabilities: column 0 is ``z = 0``, column ``k + 1`` is cell ``k``."""
        c0, cg = curves_fn(self.grid)
        logw = np.empty((c0.size, 1 + self.grid.size))
        logw[:, 0] = c0
        logw[:, 1:] = cg + _log_std_normal(self.grid)[None, :] + math.log(self.h)
        return logw - logsumexp(logw, axis=1, keepdims=True)

    def draw(self, rng: np.random.Generator, curves_fn) -> tuple[np.ndarray, np.ndarray, float]:
        """A new column ``(z, x)`` and its log proposal density (the row curves evaluated once)."""
        logp = self._log_probs(curves_fn)
        p = np.exp(logp)
        cum = np.cumsum(p, axis=1)
        u = rng.random(p.shape[0]) * cum[:, -1]
        pick = np.minimum((cum < u[:, None]).sum(axis=1), p.shape[1] - 1)
        z = (pick > 0).astype(np.int8)
        cell = np.maximum(pick - 1, 0)
        x = self.grid[cell] + self.h * (rng.random(p.shape[0]) - 0.5)
        x = np.where(z == 1, x, rng.standard_normal(p.shape[0]))  # z = 0: x from its prior
        return z, x, self._log_density(z, x, logp)

    def log_density(self, z: np.ndarray, x: np.ndarray, curves_fn) -> float:
        return self._log_density(z, x, self._log_probs(curves_fn))

    def _log_density(self, z: np.ndarray, x: np.ndarray, logp: np.ndarray) -> float:
        on = z == 1
        cell = np.floor((x[on] - self.grid[0] + 0.5 * self.h) / self.h).astype(np.int64)
        if np.any((cell < 0) | (cell >= self.grid.size)):
            return -math.inf  # outside the grid: a birth can never create this dimension
        rows = np.flatnonzero(on)
        return float(np.sum(logp[~on, 0]) + np.sum(logp[rows, cell + 1]) - on.sum() * math.log(self.h))


PROPOSALS = {"prior": PriorProposal, "informed": InformedProposal}


# --------------------------------------------------------------------------------------------
# Whole-matrix targets: the likelihood of a new H, and each row's curve along a new coordinate
# --------------------------------------------------------------------------------------------


class RowCurves:
    """``curves(grid) -> (c0, cg)``: every row's log-likelihood with the new coordinate at 0 and at
    each grid value, for the base state ``H_base`` and the new frequency coordinates ``w_new``."""

    def __init__(
        self, H_base: np.ndarray, W_base: np.ndarray, w_new: np.ndarray, bias: bool, row_loglik
    ) -> None:
        self.n_rows = H_base.shape[0]
        self.proj = H_base @ W_base.T
        self.w_new = w_new
        self.row_loglik = row_loglik
        self.M = W_base.shape[0]
        self.bias = [np.ones((self.n_rows, 1))] if bias else []

    def _features(self, proj: np.ndarray) -> np.ndarray:
        """``feature_map`` of the base rows with projections `proj` (the new coordinate added)."""
        s = 1.0 / math.sqrt(self.M)
        return np.hstack([np.cos(proj) * s, np.sin(proj) * s, *self.bias])

    def __call__(self, grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        c0 = self.row_loglik(self._features(self.proj))
        cg = np.empty((self.n_rows, grid.size))
        for k, g in enumerate(grid):  # a loop over the few grid points; each pass is N x L x J
            cg[:, k] = self.row_loglik(self._features(self.proj + g * self.w_new[None, :]))
        return c0, cg


class CollapsedTarget:
    """The collapsed Gaussian of the completed data; row curves from the posterior-mean weights."""

    def __init__(self, Phi: np.ndarray, Y: np.ndarray, cache, prior: GaussianPrior, bias: bool) -> None:
        self.Phi, self.Y, self.cache, self.prior, self.bias = Phi, Y, cache, prior, bias

    def delta(self, H: np.ndarray, W: np.ndarray) -> float:
        self._Phi = feature_map(H, W, self.bias)
        self._cache = build_cache(self._Phi, self.Y, self.prior)
        return self._cache.loglik - self.cache.loglik

    def accept(self) -> None:
        self.Phi[:] = self._Phi
        self.cache = self._cache

    def curves(self, H_base: np.ndarray, W_base: np.ndarray, w_new: np.ndarray) -> RowCurves:
        Phi_base = feature_map(H_base, W_base, self.bias)
        base = build_cache(Phi_base, self.Y, self.prior)
        n = self.Y.shape[0]
        sigma2 = (self.prior.b0 + 0.5 * (base.yy - base.Q)) / (self.prior.a0 + 0.5 * n)
        beta = base.P

        def row_loglik(feats: np.ndarray) -> np.ndarray:
            r = self.Y - feats @ beta
            return -0.5 * np.sum(LOG_2PI + np.log(sigma2) + r * r / sigma2, axis=1)

        return RowCurves(H_base, W_base, w_new, self.bias, row_loglik)


class FactorisedTarget:
    """A likelihood that factorises given its weights (a ``FactorisedState`` ``fs``)."""

    def __init__(self, fs) -> None:
        self.fs = fs

    def delta(self, H: np.ndarray, W: np.ndarray) -> float:
        self._new = self.fs.rows_loglik(H, W, self.fs.all_rows)
        return float(np.sum(self._new[0], dtype=np.float64) - np.sum(self.fs.ll, dtype=np.float64))

    def accept(self) -> None:
        self.fs.ll, self.fs.Phi, self.fs.psi = self._new

    def curves(self, H_base: np.ndarray, W_base: np.ndarray, w_new: np.ndarray) -> RowCurves:
        fs = self.fs

        def row_loglik(feats: np.ndarray) -> np.ndarray:
            return fs.lik.loglik_rows(_blocks.matmul_rows(feats, fs.beta), fs.all_rows, fs.params, fs.prep)

        return RowCurves(H_base, W_base, w_new, fs.bias, row_loglik)


class PriorTarget:
    """No likelihood (the sampler checks)."""

    def delta(self, H: np.ndarray, W: np.ndarray) -> float:
        return 0.0

    def accept(self) -> None:
        pass

    def curves(self, H_base, W_base, w_new) -> RowCurves:
        return RowCurves(H_base, W_base, w_new, False, lambda feats: np.zeros(feats.shape[0]))


# --------------------------------------------------------------------------------------------
# The move
# --------------------------------------------------------------------------------------------


def birth_death_step(
    rng: np.random.Generator, dims: Dimensions, alpha: float, lam0: float, target, proposal,
    ibp_beta: float = 1.0,
) -> tuple[Dimensions, dict]:
    """One birth or death of a whole dimension (module doc for the acceptance ratios)."""
    N, K = dims.Z.shape
    info = {"whole_birth": 0, "whole_death": 0}
    if rng.random() < 0.5:
        W_ext, mu_ext, Sigma_ext = dp_mixture.add_dimension(rng, dims.W, dims.zeta, dims.mu, dims.Sigma, lam0)
        H = dims.X * dims.Z
        curves = target.curves(H, dims.W, W_ext[:, K])
        z, x, log_q = proposal.draw(rng, curves)
        m = int(z.sum())
        log_u = math.log(rng.random())
        if m == 0:
            return dims, info  # no dimension at all: rejected
        x_on = x[z == 1]
        log_a = log_intensity(alpha, N, m, ibp_beta) + float(np.sum(_log_std_normal(x_on)))
        log_a -= math.log(K + 1) + log_q
        log_a += target.delta(np.hstack([H, (x * z)[:, None]]), W_ext)
        if log_u < log_a:
            target.accept()
            dims = Dimensions(
                np.ascontiguousarray(np.hstack([dims.X, x[:, None]])),
                np.ascontiguousarray(np.hstack([dims.Z, z[:, None].astype(dims.Z.dtype)])),
                np.ascontiguousarray(W_ext), dims.zeta, mu_ext, Sigma_ext,
            )  # fmt: skip
            info["whole_birth"] = 1
        return dims, info
    if K == 0:
        return dims, info
    d = int(rng.integers(K))
    log_u = math.log(rng.random())
    keep = np.delete(np.arange(K), d)
    H_base = (dims.X * dims.Z)[:, keep]
    W_base = dims.W[:, keep]
    z, x = dims.Z[:, d], dims.X[:, d]
    curves = target.curves(H_base, W_base, dims.W[:, d])
    log_q = proposal.log_density(z, x, curves)
    if log_q == -math.inf:
        return dims, info
    m = int(z.sum())
    log_a = -log_intensity(alpha, N, m, ibp_beta) - float(np.sum(_log_std_normal(x[z == 1])))
    log_a += math.log(K) + log_q
    log_a += target.delta(H_base, W_base)
    if log_u < log_a:
        target.accept()
        W_new, mu_new, Sigma_new = dp_mixture.keep_dimensions(dims.W, dims.mu, dims.Sigma, keep)
        dims = Dimensions(
            np.ascontiguousarray(dims.X[:, keep]), np.ascontiguousarray(dims.Z[:, keep]),
            np.ascontiguousarray(W_new), dims.zeta, mu_new, Sigma_new,
        )  # fmt: skip
        info["whole_death"] = 1
    return dims, info
