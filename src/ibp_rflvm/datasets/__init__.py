"""Data sets: hold-out masks, synthetic generators and (in loaders) the paper's data files."""

from .holdout import holdout_mask
from .synthetic import cambridge_shapes, make_cambridge, make_linear_cambridge

__all__ = ["cambridge_shapes", "holdout_mask", "make_cambridge", "make_linear_cambridge"]
