"""Data sets: hold-out masks, synthetic generators and (in loaders) the paper's data files."""

from .holdout import holdout_mask
from .loaders import DATASET_NAMES, Dataset, available_datasets, cache_dir, fetch, load
from .synthetic import Bumps, cambridge_shapes, make_bumps, make_cambridge, make_linear_cambridge

__all__ = [
    "Bumps",
    "DATASET_NAMES",
    "Dataset",
    "available_datasets",
    "cache_dir",
    "cambridge_shapes",
    "fetch",
    "holdout_mask",
    "load",
    "make_bumps",
    "make_cambridge",
    "make_linear_cambridge",
]
