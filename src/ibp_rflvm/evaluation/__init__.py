"""The experiment harness (the paper's tables and figures); its held-out scores are those of
:mod:`ibp_rflvm.scoring`, handed on here."""

from ..scoring import gaussian_logpdf, log_mean_exp, lpd_from_samples, perplexity

__all__ = ["gaussian_logpdf", "log_mean_exp", "lpd_from_samples", "perplexity"]
