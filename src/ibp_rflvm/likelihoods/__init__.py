"""Observation models, each a plug-in behind the small interface in :mod:`.base`."""

from __future__ import annotations

import inspect

from .base import Likelihood
from .bernoulli import BernoulliLikelihood
from .binomial import BinomialLikelihood
from .gaussian import GaussianLikelihood
from .multinomial import MultinomialLikelihood
from .negbinom import NegBinomLikelihood
from .poisson import PoissonLikelihood

#: name -> class; each class takes its hyperparameters as keyword arguments.
REGISTRY: dict[str, type] = {
    "gaussian": GaussianLikelihood,
    "negbinom": NegBinomLikelihood,
    "poisson": PoissonLikelihood,
    "multinomial": MultinomialLikelihood,
    "bernoulli": BernoulliLikelihood,
    "binomial": BinomialLikelihood,
}


def make_likelihood(name: str, **hyper: float) -> Likelihood:
    """The likelihood called `name`, with its hyperparameters.

    Parameters
    ----------
    name : str
        A key of ``REGISTRY``: ``"gaussian"``, ``"negbinom"``, ``"poisson"``,
        ``"multinomial"``, ``"bernoulli"`` or ``"binomial"``.
    **hyper : dict
        The class's keyword arguments (an estimator's ``likelihood_params``).

    Returns
    -------
    Likelihood
        An instance of ``REGISTRY[name]``.

    Raises
    ------
    ValueError
        An unknown `name`, or a hyperparameter out of range.
    TypeError
        A hyperparameter the class does not take.
    """
    try:
        cls = REGISTRY[name]
    except KeyError:
        raise ValueError(f"likelihood must be one of {sorted(REGISTRY)}; got {name!r}") from None
    valid = [p for p in inspect.signature(cls).parameters if p != "self"]
    unknown = sorted(set(hyper) - set(valid))
    if unknown:
        raise TypeError(
            f"likelihood_params {unknown} not taken by the {name!r} likelihood; its keys are "
            f"{valid or 'none'} (docs: likelihoods)"
        )
    return cls(**hyper)


__all__ = [
    "REGISTRY",
    "BernoulliLikelihood",
    "BinomialLikelihood",
    "GaussianLikelihood",
    "MultinomialLikelihood",
    "NegBinomLikelihood",
    "PoissonLikelihood",
    "make_likelihood",
]
