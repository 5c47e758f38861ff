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
from dataclasses import dataclass

import numpy as np
from numba import njit
from scipy.linalg.blas import dsyrk as _syrk
from scipy.special import gammaln, logsumexp

from ..plumbing import blocks as _blocks
from .base import Likelihood, LikelihoodParams, Prepared
from .polya_gamma import _FAST, _positive, check_finite_counts, cholesky_draw, draw_pg, exp_poly

#: When category j holds more than ``1 - exp(-_CANCEL)`` of a row's mass, ``xi`` is recomputed
#: from scratch instead of by subtracting ``exp(psi_ij)`` from the running total (cancellation).
_CANCEL = 1e-2


@njit(cache=True, nogil=True, error_model="numpy", fastmath=_FAST)
def _multinomial_rows(psi, rows, Y0, observed, n_rows, const, out):
    """Row log-likelihoods, the log-sum-exp over each row's observed categories.

    The hot loop of every X, Z and W update. As in the Poisson kernel, the polynomial
    ``exp_poly`` and selects (not branches) for unobserved categories let LLVM vectorise; the
    terms go to buffers that are then summed in order, so no sum depends on the vector width.
    """
    J = psi.shape[1]
    ebuf = np.empty(J)
    ybuf = np.empty(J)
    for k in range(rows.size):
        i = rows[k]
        m = -np.inf
        for j in range(J):
            m = max(m, psi[k, j] if observed[i, j] else -np.inf)
        if m == -np.inf:
            out[k] = 0.0
            continue
        for j in range(J):
            x = psi[k, j]
            ebuf[j] = exp_poly(x - m) if observed[i, j] else 0.0
            ybuf[j] = Y0[i, j] * x if observed[i, j] else 0.0
        s = 0.0
        acc = 0.0
        for j in range(J):
            s += ebuf[j]
            acc += ybuf[j]
        out[k] = const[i] + acc - n_rows[i] * (m + math.log(s))


@njit(cache=True)
def _category_terms(psi, j, log_total, observed, informative, n_rows, Y0, xi, b, c, kappa):
    """For category `j`: the log mass of each row's other observed categories (`xi`) and the
    Polya-gamma shape `b`, tilt `c` and ``kappa = y - n / 2`` (zero where row `i` carries no
    information about ``beta_j``).

    ``xi = log(total - exp(psi_ij))`` comes from the running total, except when category `j`
    holds more than ``1 - exp(-_CANCEL)`` of the row's mass, where the subtraction would cancel
    and the other categories are summed afresh.
    """
    N, J = psi.shape
    for i in range(N):
        if not observed[i, j]:
            xi[i] = log_total[i]
            b[i] = c[i] = kappa[i] = 0.0
            continue
        d = psi[i, j] - log_total[i]
        if d > -_CANCEL:
            m = -np.inf
            for t in range(J):
                if t != j and observed[i, t] and psi[i, t] > m:
                    m = psi[i, t]
            acc = 0.0
            if m > -np.inf:  # else the row's only observed category: nothing else has mass
                for t in range(J):
                    if t != j and observed[i, t]:
                        acc += math.exp(psi[i, t] - m)
            xi[i] = m + math.log(acc) if acc > 0.0 else -np.inf
        else:
            xi[i] = log_total[i] + math.log(-math.expm1(d))
        if informative[i]:
            b[i] = n_rows[i]
            c[i] = psi[i, j] - xi[i]
            kappa[i] = Y0[i, j] - 0.5 * n_rows[i]
        else:
            b[i] = c[i] = kappa[i] = 0.0


@njit(cache=True)
def _commit_category(psi, j, psi_j, xi, observed, log_total):
    """Store the new ``psi_.j`` and add its mass back to each observed row's running total."""
    for i in range(psi.shape[0]):
        psi[i, j] = psi_j[i]
        if observed[i, j]:
            a, x = xi[i], psi_j[i]
            hi = max(a, x)
            log_total[i] = x if a == -np.inf else hi + math.log1p(math.exp(min(a, x) - hi))


@njit(cache=True)
def _gaussian_draw(P, tau, rhs, eps):
    """``beta ~ N(W^-1 rhs, W^-1)``, ``W = tau I + P`` with only the lower triangle of `P` read
    (what BLAS ``syrk`` fills)."""
    L = rhs.size
    W = np.empty((L, L))
    for a in range(L):
        for col in range(a + 1):
            W[a, col] = W[col, a] = P[a, col]
        W[a, a] += tau
    u = np.empty(L)
    cholesky_draw(W, rhs, eps, u)
    return u


def _log_softmax(psi: np.ndarray) -> np.ndarray:
    return psi - logsumexp(psi, axis=1, keepdims=True)


@dataclass(frozen=True, kw_only=True)
class MultinomialPrepared(Prepared):
    """The multinomial's constants: each row's total over its observed categories, the log of
    its multinomial coefficient, and whether it carries information about the weights (at
    least two observed categories and a count)."""

    n_rows: np.ndarray
    logc_rows: np.ndarray
    informative: np.ndarray


class MultinomialLikelihood(Likelihood):
    """Multinomial rows (e.g. bag-of-words documents), with a softmax link over the columns.

    Parameters
    ----------
    prior_scale : float, default=1.0
        ``s`` in the weights' prior ``beta_j ~ N(0, s^2 I)`` for ``j < J`` (the last column is
        the reference category).

    Notes
    -----
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
    row_shift_invariant = True

    def __init__(self, prior_scale: float = 1.0):
        self.prior_scale = _positive(prior_scale, "prior_scale")

    def validate(self, Y: np.ndarray) -> None:
        check_finite_counts(Y, "the multinomial likelihood")
        if np.asarray(Y).shape[1] < 2:
            raise ValueError("the multinomial likelihood needs at least 2 categories (columns)")

    def _prepare(self, Y: np.ndarray, Y0: np.ndarray, observed: np.ndarray) -> MultinomialPrepared:
        y = np.where(observed, Y, 0.0)
        n = np.sum(y, axis=1, dtype=np.float64)
        n_cats = np.sum(observed, axis=1)
        logc = gammaln(n + 1.0) - np.sum(np.where(observed, gammaln(y + 1.0), 0.0), axis=1, dtype=np.float64)
        # Rows with one observed category or no counts have likelihood 1: no information.
        informative = (n_cats >= 2) & (n > 0)
        return MultinomialPrepared(
            Y0=Y0, observed=observed, n_rows=n, logc_rows=logc, informative=informative
        )

    def loglik_rows(
        self, psi: np.ndarray, rows, params: LikelihoodParams, prep: MultinomialPrepared
    ) -> np.ndarray:
        args = (prep.Y0, prep.observed, prep.n_rows, prep.logc_rows)
        return _blocks.row_kernel(_multinomial_rows, psi, rows, *args)

    def init_params(
        self, rng: np.random.Generator, Phi: np.ndarray, prep: MultinomialPrepared
    ) -> LikelihoodParams:
        # One sweep of the category updates from beta = 0 (all categories equally likely).
        start = LikelihoodParams(beta=np.zeros((Phi.shape[1], prep.Y0.shape[1])))
        return self.update_params(rng, Phi, start, prep)

    def update_params(
        self, rng: np.random.Generator, Phi: np.ndarray, params: LikelihoodParams, prep: MultinomialPrepared
    ) -> LikelihoodParams:
        obs = prep.observed
        n = prep.n_rows
        informative = prep.informative
        beta = params.beta.copy()
        N, L = Phi.shape
        J = beta.shape[1]
        psi = Phi @ beta
        with np.errstate(divide="ignore"):
            log_total = logsumexp(np.where(obs, psi, -np.inf), axis=1)
        tau = self.prior_scale**-2
        # Column-major Phi and one column-major buffer for its scaled copies, as syrk wants
        # (a fresh N x L array per category cost page faults on every allocation).
        Phi_f = np.asfortranarray(Phi)
        scaled = np.empty_like(Phi_f, order="F")
        xi, b, c, kappa = (np.empty(N) for _ in range(4))
        for j in range(J - 1):
            _category_terms(psi, j, log_total, obs, informative, n, prep.Y0, xi, b, c, kappa)
            omega = draw_pg(rng, b, c)
            rhs = (kappa + omega * np.where(b > 0.0, xi, 0.0)) @ Phi
            # Phi^T Omega Phi as a symmetric rank-N update: half the flops of a general product.
            np.multiply(Phi_f, np.sqrt(omega)[:, None], out=scaled)
            prec = _syrk(1.0, scaled, trans=1, lower=1)
            beta_j = _gaussian_draw(prec, tau, rhs, rng.standard_normal(L))
            beta[:, j] = beta_j
            _commit_category(psi, j, Phi @ beta_j, xi, obs, log_total)
        return LikelihoodParams(beta=beta)

    def logpdf_entries(self, y, psi_u, row_pos, cols, params, prep=None, rows=None) -> np.ndarray:
        return y * _log_softmax(psi_u)[row_pos, cols]

    def mean(self, psi: np.ndarray, params: LikelihoodParams, rows=None, prep=None) -> np.ndarray:
        return np.exp(_log_softmax(psi))
