"""Bernoulli likelihood: ``y_ij ~ Bernoulli(logistic(psi_ij))``, the binomial with one trial.

Polya-gamma weights with ``b = 1``, ``kappa = y - 1/2`` (see :mod:`.polya_gamma`).
"""

from __future__ import annotations

import numpy as np

from ..plumbing.validation import _positions
from .binomial import BinomialLikelihood


class BernoulliLikelihood(BinomialLikelihood):
    """Binary data: a binomial with one trial; observed values must be 0 or 1.

    Parameters
    ----------
    prior_scale : float, default=1.0
        ``s`` in the weights' prior ``beta_j ~ N(0, s^2 I)``.
    """

    name = "bernoulli"

    def __init__(self, prior_scale: float = 1.0):
        super().__init__(n_trials=1, prior_scale=prior_scale)

    def validate(self, Y: np.ndarray) -> None:
        Y = np.asarray(Y, dtype=np.float64)
        bad = ~np.isnan(Y) & (Y != 0.0) & (Y != 1.0)
        if bad.any():
            raise ValueError(
                f"Y has {int(bad.sum())} value(s) other than 0 and 1 at (row, column) "
                f"{_positions(bad)}; the bernoulli likelihood needs binary data"
            )
