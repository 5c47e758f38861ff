"""Targets: the posterior a sweep samples, chosen once (:func:`make_target`).

* :class:`~.prior.PriorTarget`: the prior alone (``ModelSpec.use_likelihood=False``), for the
  sampler checks;
* :class:`~.collapsed.CollapsedGaussianTarget`: the Gaussian with its weights and noise
  integrated out, rows coupled, moves as compiled kernels on a row cache;
* :class:`~.factorised.FactorisedTarget`: every other likelihood, sampled with its weights,
  given which the rows are independent.

What the sweep asks of a target is in :mod:`.base`.
"""

from __future__ import annotations

from ..state import Data, ModelSpec
from .base import Target, View, Work
from .collapsed import CollapsedGaussianTarget
from .factorised import FactorisedTarget
from .prior import PriorTarget


def likelihood_target(spec: ModelSpec, data: Data) -> CollapsedGaussianTarget | FactorisedTarget:
    """The target of `spec`'s likelihood on `data`, whether or not the chain uses it."""
    lik = spec.likelihood
    kind = CollapsedGaussianTarget if lik.collapsed else FactorisedTarget
    return kind(lik, data, spec)


def make_target(spec: ModelSpec, data: Data) -> Target:
    """The target a chain of `spec` on `data` samples: the one place the kind is chosen.

    Parameters
    ----------
    spec : ModelSpec
        The model's settings (its likelihood, backend and whether the likelihood is used).
    data : Data
        The training data.

    Returns
    -------
    Target
        :class:`PriorTarget` without the likelihood; on ``backend="jax"`` the whole-sweep
        device target (:class:`ibp_rflvm.jax_backend.kernel.DeviceSweepTarget`); else the
        collapsed Gaussian or the factorised target.

    Raises
    ------
    ValueError
        On ``backend="jax"``, for a likelihood or setting the device sweep does not run.
    """
    if spec.backend == "jax" and spec.use_likelihood:
        # The device likelihoods say which likelihoods run there (ValueError for the others).
        from ..jax_backend.kernel import DeviceSweepTarget

        return DeviceSweepTarget(spec.likelihood, data, spec)
    target = likelihood_target(spec, data)
    return target if spec.use_likelihood else PriorTarget(target)


__all__ = [
    "CollapsedGaussianTarget", "FactorisedTarget", "PriorTarget", "Target", "View", "Work",
    "likelihood_target", "make_target",
]  # fmt: skip
