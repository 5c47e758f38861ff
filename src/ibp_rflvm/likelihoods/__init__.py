"""Observation models, each a plug-in behind the small interface in :mod:`.base`."""

from __future__ import annotations

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
    """The likelihood called `name`, with hyperparameters `hyper` (unknown ones are an error)."""
    try:
        cls = REGISTRY[name]
    except KeyError:
        raise ValueError(f"likelihood must be one of {sorted(REGISTRY)}; got {name!r}") from None
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
