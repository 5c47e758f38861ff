"""Binomial likelihood: ``y_ij ~ Binomial(n_ij, logistic(psi_ij))``.

``log p(y | psi) = log C(n, y) + y psi - n log(1 + e^psi)``; Polya-gamma weights with
``b = n_ij`` (see :mod:`.polya_gamma`). Entries with ``n_ij = 0`` carry no information
(``omega = 0``, ``kappa = 0``), exactly like unobserved ones.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit, gammaln

from ..plumbing.validation import MAX_COUNT, _positions
from .base import LikelihoodParams, Prepared
from .polya_gamma import LogisticPG, check_finite_counts, softplus


@dataclass(frozen=True, kw_only=True)
class BinomialPrepared(Prepared):
    """The binomial's constants: each entry's trials (0 where unobserved, so those entries drop
    out as entries with no trials do) and ``log C(n, y)`` summed over each row."""

    trials: np.ndarray
    logc_rows: np.ndarray


class BinomialLikelihood(LogisticPG):
    """Binomial counts out of `n_trials`, with a logistic link.

    Parameters
    ----------
    n_trials : int or array-like of int of shape (n_samples, n_features)
        Trials of every entry, or of each entry; required (give it through an estimator's
        ``likelihood_params``). Observed counts must not exceed it.
    prior_scale : float, default=1.0
        ``s`` in the weights' prior ``beta_j ~ N(0, s^2 I)``.

    Notes
    -----
    :meth:`mean` is ``n p``; with per-entry trials it needs the rows' indices (``rows``).
    """

    name = "binomial"

    def __init__(self, n_trials=None, prior_scale: float = 1.0):
        super().__init__(prior_scale)
        if n_trials is None:
            raise ValueError(
                "the binomial likelihood needs n_trials (an int or an N x J array), e.g. "
                "likelihood_params={'n_trials': 10}"
            )
        n = np.asarray(n_trials, dtype=np.float64)
        if n.ndim not in (0, 2):
            raise ValueError(f"n_trials must be an int or an N x J array; got shape {n.shape}")
        if not np.all(np.isfinite(n)) or np.any(n < 0) or np.any(n != np.floor(n)):
            raise ValueError("n_trials must hold non-negative integers")
        if np.any(n > MAX_COUNT):
            raise ValueError("n_trials must be at most 2^53 (float64 holds larger integers inexactly)")
        self.n_trials = n

    def _n_matrix(self, shape: tuple) -> np.ndarray:
        if self.n_trials.ndim == 2 and self.n_trials.shape != tuple(shape):
            raise ValueError(
                f"n_trials has shape {self.n_trials.shape} but the data has shape {tuple(shape)}"
            )
        return np.broadcast_to(self.n_trials, shape)

    def _entry_trials(self, rows, cols, n_rows: int) -> np.ndarray | float:
        """Trials of the entries at (`rows`, `cols`); `rows` None means the rows are ``0..n_rows-1``."""
        n = self.n_trials
        if n.ndim == 0:
            return float(n)
        if rows is None:
            if n_rows != n.shape[0]:
                raise ValueError("per-entry n_trials need the row indices of the predictions")
            rows = np.arange(n_rows)
        if cols is None:
            return n[rows]
        return n[rows, cols]

    def validate(self, Y: np.ndarray) -> None:
        check_finite_counts(Y, f"the {self.name} likelihood")
        n = self._n_matrix(Y.shape)
        over = ~np.isnan(Y) & (Y > n)
        if over.any():
            raise ValueError(
                f"Y has {int(over.sum())} count(s) above the number of trials at (row, column) "
                f"{_positions(over)}; a {self.name} count must be at most n_trials"
            )

    def _prepare(self, Y: np.ndarray, Y0: np.ndarray, observed: np.ndarray) -> BinomialPrepared:
        y = np.where(observed, Y, 0.0)
        trials = np.where(observed, self._n_matrix(Y.shape), 0.0)
        logc = gammaln(trials + 1.0) - gammaln(y + 1.0) - gammaln(trials - y + 1.0)
        return BinomialPrepared(
            Y0=Y0, observed=observed, trials=trials, logc_rows=np.sum(logc, axis=1, dtype=np.float64)
        )

    def _trials(self, prep: BinomialPrepared) -> np.ndarray:
        return prep.trials

    def _row_const(self, params: LikelihoodParams, prep: BinomialPrepared) -> np.ndarray:
        return prep.logc_rows

    def logpdf_entries(self, y, psi_u, row_pos, cols, params, prep=None, rows=None) -> np.ndarray:
        entry_rows = None if rows is None else np.asarray(rows)[row_pos]
        n = self._entry_trials(entry_rows, cols, -1 if rows is None else len(rows))
        psi = psi_u[row_pos, cols]
        logc = gammaln(n + 1.0) - gammaln(y + 1.0) - gammaln(n - y + 1.0)
        return logc + y * psi - n * softplus(psi)

    def mean(self, psi: np.ndarray, params: LikelihoodParams, rows=None, prep=None) -> np.ndarray:
        return self._entry_trials(rows, None, psi.shape[0]) * expit(psi)

    def unit_mean(self, psi: np.ndarray, params: LikelihoodParams) -> np.ndarray:
        return expit(psi)  # the success probability: one trial
