"""The prior on the sparsity indicators ``Z``, as a component the moves ask (:mod:`.base`).

* ``"ibp"`` (:class:`~.indian_buffet.IndianBuffet`): the Indian buffet process, one- or
  two-parameter, binary ``Z``; the paper's model and the default.
* ``"gamma-poisson"`` (:class:`~.gamma_poisson.GammaPoisson`): the infinite gamma-Poisson
  feature model of Titsias (2007), counts in ``Z`` that scale the coordinates they switch on.
"""

from __future__ import annotations

from .base import FeaturePrior
from .gamma_poisson import GammaPoisson
from .indian_buffet import IndianBuffet

#: The names ``z_prior`` takes.
Z_PRIORS = ("ibp", "gamma-poisson")


def make_prior(name: str, ibp_beta: float = 1.0, rate: float = 1.0) -> FeaturePrior:
    """The prior on ``Z`` called `name`, at the chain's current `ibp_beta` (the IBP's) or with
    the gamma-Poisson's `rate`.

    Parameters
    ----------
    name : str
        One of :data:`Z_PRIORS`.
    ibp_beta : float
        The IBP's sharing parameter (1: one-parameter).
    rate : float
        The gamma-Poisson's rate ``b``.

    Returns
    -------
    FeaturePrior
        The prior.

    Raises
    ------
    ValueError
        For a name not in :data:`Z_PRIORS`.
    """
    if name == "ibp":
        return IndianBuffet(ibp_beta)
    if name == "gamma-poisson":
        return GammaPoisson(rate)
    raise ValueError(f"z_prior must be one of {list(Z_PRIORS)}; got {name!r}")


__all__ = ["FeaturePrior", "GammaPoisson", "IndianBuffet", "Z_PRIORS", "make_prior"]
