"""Targets: the posterior a sweep samples, chosen once (:func:`make_target`).

* :class:`~.prior.PriorTarget`: the prior alone (``ModelSpec.use_likelihood=False``), for the
  sampler checks;
* :class:`~.collapsed.CollapsedGaussianTarget`: the Gaussian with its weights and noise
  integrated out, rows coupled: the moves run as compiled row kernels over its row cache;
* :class:`~.factorised.FactorisedTarget`: every other likelihood, sampled with its weights,
  given which the rows are independent.

What the sweep asks of a target is in :mod:`.base`.
"""

from __future__ import annotations

from collections.abc import Callable

from ..likelihoods.base import Likelihood
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


#: The targets that hold a whole sweep on a device, by ``ModelSpec.backend``. A device backend
#: sits a floor above the targets and registers its own when its module is imported, so that
#: choosing the model kind never imports a device library.
DEVICE_TARGETS: dict[str, Callable[[Likelihood, Data, ModelSpec], Target]] = {}


def register_device_target(backend: str, target: Callable[[Likelihood, Data, ModelSpec], Target]) -> None:
    """Make `target` what :func:`make_target` gives for ``ModelSpec(backend=backend)``."""
    DEVICE_TARGETS[backend] = target


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
        :class:`PriorTarget` without the likelihood; on a device backend the whole-sweep
        target registered for it (``"jax"``:
        :class:`ibp_rflvm.jax_backend.kernel.DeviceSweepTarget`); else the collapsed Gaussian
        or the factorised target.

    Raises
    ------
    ValueError
        On ``backend="jax"``, for a likelihood or setting the device sweep does not run.
    RuntimeError
        On a device backend whose module has not been imported (the estimators import it).
    """
    if spec.backend != "numba" and spec.use_likelihood:
        target = DEVICE_TARGETS.get(spec.backend)
        if target is None:
            raise RuntimeError(
                f"backend={spec.backend!r} has no device target registered: import "
                f"ibp_rflvm.{spec.backend}_backend.kernel first (the estimators do)"
            )
        # The device likelihoods say which likelihoods run there (ValueError for the others).
        return target(spec.likelihood, data, spec)
    target = likelihood_target(spec, data)
    return target if spec.use_likelihood else PriorTarget(target)


__all__ = [
    "DEVICE_TARGETS", "CollapsedGaussianTarget", "FactorisedTarget", "PriorTarget", "Target", "View", "Work",
    "likelihood_target", "make_target", "register_device_target",
]  # fmt: skip
