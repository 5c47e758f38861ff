"""The paper's baselines behind the same estimator interface and metrics as the RFLVMs."""

from .gplvm import BayesianGPLVM
from .ibp_lfm import IBPLinearFactorModel
from .lda import LDA
from .pfa import PoissonFactorAnalysis

__all__ = ["LDA", "BayesianGPLVM", "IBPLinearFactorModel", "PoissonFactorAnalysis"]
