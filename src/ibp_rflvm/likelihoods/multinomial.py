"""Multinomial likelihood: ``y_i ~ Mult(n_i, softmax(psi_i))`` with ``beta_J = 0``.

Each row is a multinomial over its OBSERVED categories ``S_i`` only: ``n_i`` is the total of
the observed counts and the softmax runs over ``S_i``,

``log p(y_i | psi_i) = lgamma(n_i + 1) - sum_{j in S_i} lgamma(y_ij + 1)
+ sum_{j in S_i} y_ij psi_ij - n_i log sum_{j in S_i} exp(psi_ij)``.

Weights (Holmes and Held 2006; the paper's appendix): as a function of ``psi_ij`` alone the row
likelihood is ``exp(psi - xi)^y / (1 + exp(psi - xi))^n`` with
``xi_ij = log sum_{j' in S_i, j' != j} exp(psi_ij')``, so given the other categories
``omega_ij ~ PG(n_i, psi_ij - xi_ij)`` and ``beta_j ~ N(V Phi^T (kappa_j + Omega_j xi_j), V)``,
``kappa_ij = y_ij - n_i / 2``, ``V = (Phi^T Omega_j Phi + I / s^2)^-1``. Categories are updated
one after another (``xi`` depends on the others), each vectorised over rows; the last category
is the fixed reference.

Unobserved entries: ``omega_ij = kappa_ij = 0`` whenever ``j`` is not in ``S_i``, and rows
with fewer than two observed categories (or ``n_i = 0``) carry no information about ``beta``
(their likelihood is 1). A row whose reference category ``J`` is unobserved needs nothing
special: ``beta_J = 0`` fixes the one global shift of all the ``psi``; in such a row the
softmax simply runs over its other observed categories, and ``psi_iJ = 0`` never enters.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from scipy.special import gammaln, logsumexp

from .base import Likelihood, Prepared
from .polya_gamma import _positive, check_finite_counts, draw_pg, gaussian_weights

#: When category j holds more than ``1 - exp(-_CANCEL)`` of a row's mass, ``xi`` is recomputed
#: from scratch instead of by subtracting ``exp(psi_ij)`` from the running total (cancellation).
_CANCEL = 1e-2


@njit(cache=True)
def _multinomial_rows(psi, rows, Y0, observed, n_rows, const, out):
    """Row log-likelihoods, the log-sum-exp over each row's observed categories."""
    J = psi.shape[1]
    for k in range(rows.size):
        i = rows[k]
        m = -np.inf
        for j in range(J):
            if observed[i, j] and psi[k, j] > m:
                m = psi[k, j]
        if m == -np.inf:
            out[k] = 0.0
            continue
        s = 0.0
        acc = 0.0
        for j in range(J):
            if observed[i, j]:
                x = psi[k, j]
                s += math.exp(x - m)
                acc += Y0[i, j] * x
        out[k] = const[i] + acc - n_rows[i] * (m + math.log(s))


def _log_softmax(psi: np.ndarray) -> np.ndarray:
    return psi - logsumexp(psi, axis=1, keepdims=True)


class MultinomialLikelihood(Likelihood):
    """Multinomial rows (e.g. bag-of-words documents); ``prior_scale`` is ``s`` in
    ``beta_j ~ N(0, s^2 I)`` for ``j < J`` (default 1).

    :meth:`mean` gives the category probabilities ``softmax(psi_i)`` over all ``J`` categories
    (what perplexity needs; the row total is not a model quantity for a held-out row).
    :meth:`logpdf_entries` gives the per-token log probability ``y_ij log softmax(psi_i)_j`` of
    a held-out entry: the log probability of its ``y_ij`` tokens as an ordered sequence of
    categorical draws. Summed over a row's held-out entries this is the multinomial log pmf of
    those tokens without the multinomial coefficient (which does not depend on the model), and
    ``-sum / sum y`` is the log of the (single-sample) perplexity.
    """

    name = "multinomial"
    default_bias = True
    kind = "counts"

    def __init__(self, prior_scale: float = 1.0):
        self.prior_scale = _positive(prior_scale, "prior_scale")

    def validate(self, Y: np.ndarray) -> None:
        check_finite_counts(Y, "the multinomial likelihood")
        if np.asarray(Y).shape[1] < 2:
            raise ValueError("the multinomial likelihood needs at least 2 categories (columns)")

    def _extra(self, Y: np.ndarray, observed: np.ndarray) -> dict:
        y = np.where(observed, Y, 0.0)
        n = np.sum(y, axis=1, dtype=np.float64)
        n_cats = np.sum(observed, axis=1)
        logc = gammaln(n + 1.0) - np.sum(np.where(observed, gammaln(y + 1.0), 0.0), axis=1, dtype=np.float64)
        # Rows with one observed category or no counts have likelihood 1: no information.
        informative = (n_cats >= 2) & (n > 0)
        return {"n_rows": n, "logc_rows": logc, "informative": informative}

    def loglik_rows(self, psi: np.ndarray, rows, params: dict, prep: Prepared) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        out = np.empty(rows.size)
        ex = prep.extra
        _multinomial_rows(
            np.ascontiguousarray(psi), rows, prep.Y0, prep.observed, ex["n_rows"], ex["logc_rows"], out
        )
        return out

    def init_params(self, rng: np.random.Generator, Phi: np.ndarray, prep: Prepared) -> dict:
        # One sweep of the category updates from beta = 0 (all categories equally likely).
        return self.update_params(rng, Phi, {"beta": np.zeros((Phi.shape[1], prep.Y0.shape[1]))}, prep)

    def update_params(self, rng: np.random.Generator, Phi: np.ndarray, params: dict, prep: Prepared) -> dict:
        obs = prep.observed
        n = prep.extra["n_rows"]
        informative = prep.extra["informative"]
        beta = params["beta"].copy()
        J = beta.shape[1]
        psi = Phi @ beta
        with np.errstate(divide="ignore"):
            log_total = logsumexp(np.where(obs, psi, -np.inf), axis=1)
        tau = self.prior_scale**-2
        for j in range(J - 1):
            obs_j = obs[:, j]
            valid = obs_j & informative
            d = np.where(obs_j, psi[:, j] - log_total, -np.inf)
            with np.errstate(divide="ignore", invalid="ignore"):
                # log(total - exp(psi_j)) = log_total + log(1 - exp(d)), d <= 0.
                xi = log_total + np.log(-np.expm1(d))
            exact = valid & (d > -_CANCEL)
            if exact.any():
                others = obs[exact].copy()
                others[:, j] = False
                xi[exact] = logsumexp(np.where(others, psi[exact], -np.inf), axis=1)
            xi_v = np.where(valid, xi, 0.0)
            b = np.where(valid, n, 0.0)
            omega = draw_pg(rng, b, np.where(valid, psi[:, j] - xi_v, 0.0))
            kappa = np.where(valid, prep.Y0[:, j] - 0.5 * n, 0.0)
            rhs = Phi.T @ (kappa + omega * xi_v)
            beta_j = gaussian_weights(rng, Phi, omega[:, None], rhs[:, None], tau)[:, 0]
            beta[:, j] = beta_j
            psi_j = Phi @ beta_j
            # New running total: the other categories' mass plus the new exp(psi_ij).
            with np.errstate(divide="ignore", invalid="ignore"):
                upd = np.logaddexp(xi, psi_j)
            log_total = np.where(obs_j, upd, log_total)
            psi[:, j] = psi_j
        return {"beta": beta}

    def logpdf_entries(self, y, psi_u, row_pos, cols, params, prep=None, rows=None) -> np.ndarray:
        return y * _log_softmax(psi_u)[row_pos, cols]

    def mean(self, psi: np.ndarray, params: dict, rows=None) -> np.ndarray:
        return np.exp(_log_softmax(psi))
