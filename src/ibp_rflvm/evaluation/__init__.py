"""The experiment harness (the paper's tables and figures); its held-out scores are those of
:mod:`ibp_rflvm.summaries.scoring`, handed on here."""

from ..summaries.scoring import gaussian_logpdf, log_mean_exp, lpd_from_samples, perplexity

__all__ = ["gaussian_logpdf", "log_mean_exp", "lpd_from_samples", "perplexity"]
