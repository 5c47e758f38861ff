"""Held-out metrics and the experiment harness."""

from .metrics import gaussian_logpdf, log_mean_exp, lpd_from_samples, perplexity

__all__ = ["gaussian_logpdf", "log_mean_exp", "lpd_from_samples", "perplexity"]
