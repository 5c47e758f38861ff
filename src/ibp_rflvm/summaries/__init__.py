"""Posterior summaries that read the latent space: what each dimension does to the data and
how sure the posterior is about each row's place. Pure functions of a
:class:`~ibp_rflvm.summaries.posterior.Posterior`; the estimators name them through
:class:`~ibp_rflvm.summaries.mixin.LatentSummaryMixin`."""

from .align import align
from .counts import KPlusStuckWarning, dimension_counts
from .effects import SampleEffects, sample_effects
from .meaning import DimensionSummary, dimension_summary
from .uncertainty import embedding_std

__all__ = [
    "DimensionSummary",
    "KPlusStuckWarning",
    "SampleEffects",
    "align",
    "dimension_counts",
    "dimension_summary",
    "embedding_std",
    "sample_effects",
]
