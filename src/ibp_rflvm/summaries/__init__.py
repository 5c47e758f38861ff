"""Posterior summaries that read the latent space: what each dimension does to the data and
how sure the posterior is about each row's place. Pure functions of a
:class:`~ibp_rflvm.posterior.Posterior`; the estimators name them through
:class:`~ibp_rflvm.summaries.mixin.LatentSummaryMixin`."""

from .align import align
from .effects import SampleEffects, sample_effects
from .meaning import DimensionSummary, dimension_summary
from .uncertainty import embedding_std

__all__ = [
    "DimensionSummary",
    "SampleEffects",
    "align",
    "dimension_summary",
    "embedding_std",
    "sample_effects",
]
