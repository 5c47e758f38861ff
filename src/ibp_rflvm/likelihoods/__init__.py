"""Observation models, each a plug-in behind the small interface in :mod:`.base`."""

from __future__ import annotations

from .gaussian import GaussianLikelihood

#: name -> class; each class takes its hyperparameters as keyword arguments.
REGISTRY: dict[str, type] = {"gaussian": GaussianLikelihood}


def make_likelihood(name: str, **hyper):
    """The likelihood called `name`, with hyperparameters `hyper` (unknown ones are an error)."""
    try:
        cls = REGISTRY[name]
    except KeyError:
        raise ValueError(f"likelihood must be one of {sorted(REGISTRY)}; got {name!r}") from None
    return cls(**hyper)


__all__ = ["REGISTRY", "GaussianLikelihood", "make_likelihood"]
