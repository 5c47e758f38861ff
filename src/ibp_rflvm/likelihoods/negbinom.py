"""Negative binomial likelihood with a Gamma prior on each column's dispersion.

``y_ij ~ NB(r_j, p_ij)``, ``p_ij = logistic(psi_ij)``, so ``E[y_ij] = r_j exp(psi_ij)`` and

``log p(y | psi, r) = lgamma(y + r) - lgamma(r) - lgamma(y + 1) + y psi - (y + r) log(1 + e^psi)``.

Weights: Polya-gamma with ``b = y + r_j``, ``kappa = (y - r_j) / 2`` (see :mod:`.polya_gamma`).
Dispersion (Zhou and Carin 2015): ``y ~ NB(r, p)`` is a compound Poisson of ``L ~ Poisson(-r
log(1 - p))`` logarithmic draws, and ``L | y, r ~ CRT(y, r)``; with ``r_j ~ Gamma(e0, f0)``
(shape, rate) this gives ``r_j | L, psi ~ Gamma(e0 + sum_i L_ij, f0 + sum_i log(1 + e^psi_ij))``,
both sums over the OBSERVED entries of column ``j`` only.

``size_factors`` (see :mod:`.offsets`) adds the offset ``log s_i`` to every ``psi_ij`` of row ``i``:
``E[y_ij] = r_j s_i exp(phi_i beta_j)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.special import gammaln

from ..plumbing import blocks as _blocks
from .base import LikelihoodParams, Prepared
from .offsets import add_offset, check_size_factors, offset_arrays, offset_of
from .polya_gamma import (
    LogisticPG,
    _positive,
    check_finite_counts,
    crt_column_totals,
    softplus,
    softplus_column_sums,
)

# A Gamma draw with a tiny shape can round to 0, where lgamma(r) is infinite.
_R_MIN = 1e-300


class RowConstCache:
    """The row constants of the last dispersions seen, as one ``(key, value)`` pair: assigned in
    one go, so that a reader on another thread never sees a key without its value."""

    __slots__ = ("entry",)

    def __init__(self) -> None:
        self.entry: tuple[bytes, np.ndarray] | None = None


@dataclass(frozen=True, kw_only=True)
class NegBinomPrepared(Prepared):
    """The negative binomial's constants: the positive observed counts as a sparse list (only
    they carry the ``r``-dependent ``lgamma(y + r) - lgamma(r)``), ``-sum log(y!)`` per row, and
    the cache of each row's full constant under the current ``r``."""

    pos_rows: np.ndarray
    pos_cols: np.ndarray
    pos_y: np.ndarray
    logc_rows: np.ndarray
    r_cache: RowConstCache = field(default_factory=RowConstCache)


class NegBinomLikelihood(LogisticPG):
    """Negative binomial counts, with a dispersion ``r_j`` per column.

    The weights are drawn exactly through Polya-gamma augmentation (:doc:`/likelihoods`).

    Parameters
    ----------
    e0 : float, default=1.0
        Shape of the Gamma prior on each column's dispersion ``r_j``.
    f0 : float, default=1.0
        Rate of that prior (with `e0`: a proper, weak prior with mean 1).
    prior_scale : float, default=1.0
        ``s`` in the weights' prior ``beta_j ~ N(0, s^2 I)``.
    size_factors : {"total"}, array-like of shape (n_samples,) or None, default=None
        Per-row depths ``s_i``, an offset ``log s_i`` in the linear predictor: None (none),
        ``"total"`` (each row's mean observed count, so each row's factor depends on that row
        alone) or one positive number per row (:doc:`/likelihoods`, *Size factors*).
    """

    name = "negbinom"

    def __init__(self, e0: float = 1.0, f0: float = 1.0, prior_scale: float = 1.0, size_factors=None):
        super().__init__(prior_scale)
        self.size_factors = check_size_factors(size_factors)
        self.e0 = _positive(e0, "e0")
        self.f0 = _positive(f0, "f0")

    def validate(self, Y: np.ndarray) -> None:
        check_finite_counts(Y, "the negative binomial likelihood")

    def _prepare(self, Y: np.ndarray, Y0: np.ndarray, observed: np.ndarray) -> NegBinomPrepared:
        y = np.where(observed, Y, 0.0)
        # Only positive counts carry lgamma(y + r) - lgamma(r) (it is 0 at y = 0), so the
        # r-dependent part of log c(y) is a sum over this sparse list.
        rows, cols = np.nonzero(observed & (y > 0))
        yv = y[rows, cols]
        N = Y.shape[0]
        logc = -np.bincount(rows, weights=gammaln(yv + 1.0), minlength=N)
        offset, row_offset = offset_arrays(self.size_factors, Y, observed)
        return NegBinomPrepared(
            Y0=Y0, observed=observed, offset=offset, row_offset=row_offset, pos_rows=rows, pos_cols=cols,
            pos_y=yv, logc_rows=logc,
        )  # fmt: skip

    def _r(self, params: LikelihoodParams) -> np.ndarray:
        return params.r

    def _row_const(self, params: LikelihoodParams, prep: NegBinomPrepared) -> np.ndarray:
        """``sum_j [lgamma(y + r_j) - lgamma(r_j) - lgamma(y + 1)]`` per row, cached per ``r``.

        Computed once each time ``r`` changes (once per sweep), never inside a proposal.
        """
        r = params.r
        key = r.tobytes()
        hit = prep.r_cache.entry
        if hit is not None and hit[0] == key:
            return hit[1]
        rc = r[prep.pos_cols]
        part = gammaln(prep.pos_y + rc) - gammaln(rc)
        const = prep.logc_rows + np.bincount(prep.pos_rows, weights=part, minlength=prep.logc_rows.size)
        prep.r_cache.entry = (key, const)
        return const

    def _initial(self, prep: Prepared, beta: np.ndarray) -> LikelihoodParams:
        return LikelihoodParams(beta=beta, r=np.full(prep.Y0.shape[1], self.e0 / self.f0))

    def update_params(
        self, rng: np.random.Generator, Phi: np.ndarray, params: LikelihoodParams, prep: NegBinomPrepared
    ) -> LikelihoodParams:
        beta = self._draw_beta(rng, Phi, params.beta, params, prep)
        psi = add_offset(_blocks.matmul_rows(Phi, beta), prep)
        r = params.r
        tables = crt_column_totals(rng, prep.Y0, prep.observed, r)
        rate = self.f0 + softplus_column_sums(psi, prep.observed)
        r_new = np.maximum(rng.gamma(self.e0 + tables, 1.0 / rate), _R_MIN)
        return LikelihoodParams(beta=beta, r=r_new)

    def logpdf_entries(self, y, psi_u, row_pos, cols, params, prep=None, rows=None) -> np.ndarray:
        r = params.r[cols]
        psi = psi_u[row_pos, cols]
        off = offset_of(prep, rows)
        if off is not None:
            psi = psi + off[row_pos]
        return gammaln(y + r) - gammaln(r) - gammaln(y + 1.0) + y * psi - (y + r) * softplus(psi)

    def mean(self, psi: np.ndarray, params: LikelihoodParams, rows=None, prep=None) -> np.ndarray:
        with np.errstate(over="ignore"):
            return params.r[None, :] * np.exp(add_offset(psi, prep, rows))
