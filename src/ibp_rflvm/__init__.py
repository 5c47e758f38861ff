"""ibp-rflvm: sparse, non-linear, Bayesian non-parametric latent variable models.

The IBP random Fourier feature latent variable model (IBP-RFLVM) and its dense counterpart,
sampled by MCMC.
"""

from .datasets.holdout import holdout_mask
from .estimator import IBPRFLVM, RFLVM, CapReachedWarning, ChainsDisagreeWarning
from .plumbing.validation import UnscaledDataWarning

__all__ = [
    "IBPRFLVM", "RFLVM", "CapReachedWarning", "ChainsDisagreeWarning", "UnscaledDataWarning", "holdout_mask",
]
__version__ = "0.1.0"
