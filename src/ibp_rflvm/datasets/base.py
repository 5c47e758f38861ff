"""What every loader returns, :class:`Dataset`, and the preprocessing the real-valued sets share."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


@dataclass(frozen=True, eq=False)
class Dataset:
    """A loaded data set, as :func:`~ibp_rflvm.datasets.load` returns it.

    Parameters
    ----------
    name : str
        The data set's name.
    data : ndarray of shape (n_samples, n_features)
        float64, with NaN only where the data itself has no value.
    labels : ndarray of int of shape (n_samples,) or (n_samples, 4)
        Row labels, or for ``cambridge`` the ``N x 4`` binary ``Z``.
    label_names : list of str
        ``label_names[k]`` names the k-th smallest label value (for ``cambridge``: column
        ``k`` of ``Z``).
    kind : {"real", "counts"}
        Which likelihoods apply.
    feature_names : list of str or None
        The columns' names, where the source has them.
    description : str
        What the data are, where they come from and how they were prepared.
    row_names : list of str or None, default=None
        The rows' names in the source (member names, message line numbers, archive paths...)
        where that is meaningful.
    files : tuple of pathlib.Path, default=()
        The files read.
    """

    name: str
    data: np.ndarray
    labels: np.ndarray
    label_names: list[str]
    kind: str
    feature_names: list[str] | None
    description: str
    row_names: list[str] | None = None
    files: tuple[Path, ...] = field(default=())

    @property
    def shape(self) -> tuple[int, int]:
        """``(n_samples, n_features)`` of ``data``."""
        return (int(self.data.shape[0]), int(self.data.shape[1]))


def _standardise(A: np.ndarray) -> np.ndarray:
    """Columns to mean 0, sd 1 (population sd), ignoring NaN; constant columns become 0."""
    A = np.asarray(A, dtype=np.float64)
    with warnings.catch_warnings():
        # An all-NaN column has no mean; it stays NaN, which is what it already is.
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(A, axis=0)
        sd = np.nanstd(A, axis=0)
    # Dividing a constant column by 0 would turn it into NaN, i.e. into "missing".
    sd = np.where(np.isfinite(sd) & (sd > 0), sd, 1.0)
    return (A - mean) / sd
