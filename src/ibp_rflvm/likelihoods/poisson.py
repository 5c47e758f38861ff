"""Poisson likelihood: ``y_ij ~ Poisson(exp(psi_ij))``, ``beta_j ~ N(0, s^2 I)``.

Not Polya-gamma conjugate: the weight columns are updated by elliptical slice sampling under
their Gaussian prior. Given ``Phi`` the columns are independent, so all ``J`` run side by side
as the units of :func:`..samplers.ess.elliptical_slice`; a column's log-likelihood sums over its
observed rows only.

``size_factors`` (see :mod:`.offsets`) adds the offset ``log s_i`` to every ``psi_ij`` of row ``i``:
``E[y_ij] = s_i exp(phi_i beta_j)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit
from scipy.special import gammaln

from ..plumbing import blocks as _blocks
from ..samplers.ess import elliptical_slice
from .base import Likelihood, LikelihoodParams, Prepared
from .offsets import add_offset, check_size_factors, offset_arrays, offset_of
from .polya_gamma import _FAST, _positive, check_finite_counts, exp_poly, gaussian_weights


@njit(cache=True, nogil=True, error_model="numpy", fastmath=_FAST)
def _poisson_rows(psi, rows, Y0, observed, off, const, out):
    """``const_i + sum_j (y x - e^x)``, ``x = psi + off_i``, over the observed entries of each row in `rows`.

    The hot loop of every X, Z and W update. libm's exp is a scalar call that stops LLVM from
    vectorising; the polynomial ``exp_poly`` and a select (not a branch) for unobserved entries
    let it vectorise. Each row's terms go to a buffer and are then summed in order, so the sum
    does not depend on the vector width.
    """
    J = psi.shape[1]
    buf = np.empty(J)
    for k in range(rows.size):
        i = rows[k]
        for j in range(J):
            x = psi[k, j] + off[i]
            term = Y0[i, j] * x - exp_poly(x)
            buf[j] = term if observed[i, j] else 0.0
        acc = 0.0
        for j in range(J):
            acc += buf[j]
        out[k] = const[i] + acc


@njit(cache=True, nogil=True, error_model="numpy", fastmath=_FAST)
def _poisson_derivatives(psi, rows, Y0, observed, off, g, h, t):
    """``g = y - e^x``, ``h = e^x`` and ``t = e^x / 6`` (``x = psi + off_i``): the first and
    minus the second derivative of ``y x - e^x`` at each entry of the rows `rows`, and the
    factor that bounds its Taylor remainder by ``t |d|^3`` (:mod:`ibp_rflvm.targets.frequency_bound`);
    0 where unobserved."""
    J = psi.shape[1]
    for k in range(rows.size):
        i = rows[k]
        for j in range(J):
            e = exp_poly(psi[k, j] + off[i])
            obs = observed[i, j]
            g[k, j] = Y0[i, j] - e if obs else 0.0
            h[k, j] = e if obs else 0.0
            t[k, j] = e / 6.0 if obs else 0.0


@njit(cache=True, error_model="numpy", fastmath=_FAST)
def _poisson_cols(psi, cols, Y0, observed, off, const, out):
    """``const_j + sum_i (y x - e^x)``, ``x = psi + off_i``, over the observed entries of each
    column in `cols`."""
    N = psi.shape[0]
    for k in range(cols.size):
        out[k] = const[cols[k]]
    for i in range(N):
        for k in range(cols.size):
            j = cols[k]
            x = psi[i, k] + off[i]
            term = Y0[i, j] * x - exp_poly(x)
            out[k] += term if observed[i, j] else 0.0


@dataclass(frozen=True, kw_only=True)
class PoissonPrepared(Prepared):
    """The Poisson's constants: ``-sum log(y!)`` over each row's and each column's observed
    entries (the row log-likelihoods and the weights' column updates add them)."""

    logc_rows: np.ndarray
    logc_cols: np.ndarray


class PoissonLikelihood(Likelihood):
    """Poisson counts with a log link.

    Parameters
    ----------
    prior_scale : float, default=1.0
        ``s`` in the weights' prior ``beta_j ~ N(0, s^2 I)``.
    size_factors : {"total"}, array-like of shape (n_samples,) or None, default=None
        Per-row depths ``s_i``, an offset ``log s_i`` in the linear predictor: None (none),
        ``"total"`` (each row's mean observed count, so each row's factor depends on that row
        alone) or one positive number per row (:doc:`/likelihoods`, *Size factors*).
    """

    name = "poisson"
    default_bias = True
    kind = "counts"
    has_psi_derivatives = True

    def __init__(self, prior_scale: float = 1.0, size_factors=None):
        self.prior_scale = _positive(prior_scale, "prior_scale")
        self.size_factors = check_size_factors(size_factors)

    def validate(self, Y: np.ndarray) -> None:
        check_finite_counts(Y, "the poisson likelihood")

    def _prepare(self, Y: np.ndarray, Y0: np.ndarray, observed: np.ndarray) -> PoissonPrepared:
        logc = np.where(observed, -gammaln(np.where(observed, Y, 0.0) + 1.0), 0.0)
        offset, row_offset = offset_arrays(self.size_factors, Y, observed)
        return PoissonPrepared(
            Y0=Y0, observed=observed, offset=offset, row_offset=row_offset,
            logc_rows=np.sum(logc, axis=1, dtype=np.float64),
            logc_cols=np.sum(logc, axis=0, dtype=np.float64),
        )  # fmt: skip

    def loglik_rows(
        self, psi: np.ndarray, rows, params: LikelihoodParams, prep: PoissonPrepared
    ) -> np.ndarray:
        args = (prep.Y0, prep.observed, prep.row_offset, prep.logc_rows)
        return _blocks.row_kernel(_poisson_rows, psi, rows, *args)

    def psi_derivatives(self, psi, rows, params, prep):
        g, h, t = np.empty(psi.shape), np.empty(psi.shape), np.empty(psi.shape)
        rows = np.asarray(rows, dtype=np.int64)
        args = (prep.Y0, prep.observed, prep.row_offset)
        _poisson_derivatives(np.ascontiguousarray(psi), rows, *args, g, h, t)
        return g, h, t

    def _columns_loglik(self, psi: np.ndarray, cols: np.ndarray, prep: PoissonPrepared) -> np.ndarray:
        out = np.empty(cols.size)
        _poisson_cols(
            np.ascontiguousarray(psi), np.asarray(cols, dtype=np.int64), prep.Y0, prep.observed,
            prep.row_offset, prep.logc_cols, out,
        )  # fmt: skip
        return out

    def init_params(
        self, rng: np.random.Generator, Phi: np.ndarray, prep: PoissonPrepared
    ) -> LikelihoodParams:
        # Start from a draw of the Gaussian (Laplace) approximation at psi = log(y + 1/2): weights
        # y + 1/2, working response log(y + 1/2). Near the posterior even for large counts, which
        # the prior-ellipse moves of ESS would take many sweeps to reach from beta = 0. The
        # offset is part of psi, so Phi beta's working response is log(y + 1/2) - log s_i.
        y = np.where(prep.observed, prep.Y0, 0.0) + 0.5
        w = np.where(prep.observed, y, 0.0)
        target = np.log(y)
        off = offset_of(prep)
        if off is not None:
            target -= off[:, None]
        beta = gaussian_weights(rng, Phi, w, Phi.T @ (w * target), self.prior_scale**-2)
        return self.update_params(rng, Phi, LikelihoodParams(beta=beta), prep)

    def update_params(
        self, rng: np.random.Generator, Phi: np.ndarray, params: LikelihoodParams, prep: PoissonPrepared
    ) -> LikelihoodParams:
        s = self.prior_scale
        beta = params.beta
        J = beta.shape[1]
        all_cols = np.arange(J)

        def loglik(prop: np.ndarray, cols: np.ndarray) -> np.ndarray:
            return self._columns_loglik(Phi @ (s * prop.T), cols, prep)

        with np.errstate(over="ignore"):
            ll = self._columns_loglik(Phi @ beta, all_cols, prep)
            units, _, _, _ = elliptical_slice(rng, beta.T / s, loglik, ll)
        return LikelihoodParams(beta=np.ascontiguousarray(s * units.T))

    def logpdf_entries(self, y, psi_u, row_pos, cols, params, prep=None, rows=None) -> np.ndarray:
        psi = psi_u[row_pos, cols]
        off = offset_of(prep, rows)
        if off is not None:
            psi = psi + off[row_pos]
        with np.errstate(over="ignore"):
            return y * psi - np.exp(psi) - gammaln(y + 1.0)

    def mean(self, psi: np.ndarray, params: LikelihoodParams, rows=None, prep=None) -> np.ndarray:
        with np.errstate(over="ignore"):
            return np.exp(add_offset(psi, prep, rows))
