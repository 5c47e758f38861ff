"""Gaussian observation model (docs/likelihoods.md).

``y_ij ~ N(phi_i^T beta_j, sigma_j^2)``, ``beta_j ~ N(0, sigma_j^2 I)``,
``sigma_j^2 ~ InvGamma(a0, b0)``. The chain integrates ``beta`` and ``sigma^2`` out; with
``S = Phi^T Phi + I`` shared by all columns,

``log p(Y | Phi) = sum_j [-N/2 log 2pi - 1/2 log|S| + a0 log b0 - a_n log b_nj + lgamma(a_n) - lgamma(a0)]``,
``b_nj = b0 + (y_j^T y_j - y_j^T Phi S^-1 Phi^T y_j) / 2``.

That marginal couples the rows, so its sampler is a target of its own
(:mod:`ibp_rflvm.targets.collapsed`); this module holds the observation model: the prior's
hyperparameters and the row log-densities given explicit ``(beta, sigma^2)``, which scoring
and new rows use.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln

from ..plumbing.validation import check_magnitude
from .base import LikelihoodParams, Prepared

__all__ = ["GaussianLikelihood", "GaussianPrior"]

LOG_2PI = math.log(2.0 * math.pi)


@dataclass(frozen=True)
class GaussianPrior:
    """``sigma_j^2 ~ InvGamma(a0, b0)``; `constant` is the part of the collapsed marginal that
    depends on neither ``Phi`` nor ``Y``."""

    a0: float = 1.0
    b0: float = 1.0

    def constant(self, N: int, J: int) -> float:
        a_n = self.a0 + 0.5 * N
        return J * (-0.5 * N * LOG_2PI + self.a0 * math.log(self.b0) + gammaln(a_n) - gammaln(self.a0))


class GaussianLikelihood:
    """Gaussian observation model for real values, with a conjugate prior.

    ``y_ij ~ N(phi_i beta_j, sigma_j^2)`` with ``beta_j ~ N(0, sigma_j^2 I)`` and
    ``sigma_j^2 ~ InvGamma(a0, b0)``; the chain integrates the weights and the noise out.
    Expects centred columns of scale about 1 (:doc:`/getting_started`, *Scaling the data*).

    Parameters
    ----------
    a0 : float, default=1.0
        Shape of the inverse-gamma prior on each column's noise variance.
    b0 : float, default=1.0
        Scale of that prior.
    """

    name = "gaussian"
    #: Rows are coupled once the weights are integrated out: the collapsed target samples it.
    collapsed = True
    #: The collapsed target completes the data by imputation; there is nothing to precompute.
    prepares_data = False
    default_bias = False
    kind = "real"
    row_shift_invariant = False
    #: Replica exchange (``n_replicas > 1``) may run over this model's noise prior: its levels
    #: are :meth:`tempered` copies with larger scales (:mod:`ibp_rflvm.mcmc.tempering`).
    tempers = True

    def __init__(self, a0: float = 1.0, b0: float = 1.0):
        self.prior = GaussianPrior(float(a0), float(b0))

    def validate(self, Y: np.ndarray) -> None:
        """Finite (checked by the generic validation) and small enough to square safely."""
        check_magnitude(Y)

    def prepare(self, Y: np.ndarray) -> Prepared:
        observed = ~np.isnan(Y)
        return Prepared(Y0=np.where(observed, Y, 0.0), observed=observed)

    @property
    def tempering_scale(self) -> float:
        """The scale a replica-exchange ladder raises level by level: the noise prior's ``b0``."""
        return self.prior.b0

    def tempered(self, scale: float) -> GaussianLikelihood:
        """This model with the noise prior's scale ``b0`` replaced by `scale` (one level of a
        replica-exchange ladder)."""
        return GaussianLikelihood(a0=self.prior.a0, b0=scale)

    def loglik_rows(self, psi: np.ndarray, rows, params: LikelihoodParams, prep) -> np.ndarray:
        """Row log-likelihoods given explicit ``(beta, sigma^2)``: used for new rows (transform),
        where the weights of a posterior sample are held fixed."""
        var = params.sigma2
        y = prep.Y0[rows]
        ll = -0.5 * (LOG_2PI + np.log(var) + (y - psi) ** 2 / var)
        return np.sum(np.where(prep.observed[rows], ll, 0.0), axis=1, dtype=np.float64)

    def logpdf_entries(self, y, psi_u, row_pos, cols, params, prep=None, rows=None) -> np.ndarray:
        var = params.sigma2[cols]
        mean = psi_u[row_pos, cols]
        return -0.5 * (LOG_2PI + np.log(var) + (y - mean) ** 2 / var)

    def mean(self, psi: np.ndarray, params: LikelihoodParams, rows=None, prep=None) -> np.ndarray:
        return psi

    def unit_mean(self, psi: np.ndarray, params: LikelihoodParams) -> np.ndarray:
        return psi
