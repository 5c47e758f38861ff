"""A compiled row scorer: what the row-by-row moves ask of a likelihood whose rows are coupled.

When the likelihood couples the rows (the collapsed Gaussian's marginal), a row's proposal
must be scored against the others as they stand, so a move runs row by row in one compiled
pass: :func:`ibp_rflvm.samplers.ess.ess_rows`, :func:`ibp_rflvm.samplers.ibp.gibbs_z_rows`,
:func:`ibp_rflvm.samplers.dimension_moves.flip_rows`, :func:`ibp_rflvm.samplers.transfer.transfer_rows`
and :func:`ibp_rflvm.samplers.absorb.absorb_rows`. Each builds the proposed latent row, its
features (:func:`ibp_rflvm.features.row_features`), and decides with its own acceptance ratio;
the likelihood enters through three compiled functions of one value ``rows`` that the target
supplies (its row cache and work buffers):

* ``begin(rows, i)``: get ready to score proposals for row ``i``; returns the current
  log-likelihood;
* ``score(rows, i, phi)``: the log-likelihood if row ``i``'s features became ``phi``;
* ``commit(rows, i, phi)``: accept the proposal last scored (``phi``, the same array), after
  which the current log-likelihood is its score and ``begin`` must run again before the row's
  next proposal.

The three are generic functions: a target registers their compiled versions for the type of
its ``rows`` (``numba.extending.overload``), so a kernel compiled for one type of ``rows`` is
cached on disk like any other (the prior on ``Z`` reaches the kernels the same way,
:mod:`.z_prior`). A function handed over as an argument would be part of the cache's key with
its address, and the kernel compiled again in every process.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..features import n_features

# Reassociation lets LLVM vectorise the dot products of the row kernels and the scorer (about
# 4x); no assumptions about NaN or infinity are made, and results stay deterministic for a given
# build. The row kernels compile with these flags too: the chains' bits depend on them.
FAST = {"reassoc", "contract", "arcp", "nsz"}


def begin(rows, i: int) -> float:
    """Get ready to score row `i`'s proposals; the current log-likelihood (compiled per target)."""
    raise TypeError(f"no compiled row scorer for {type(rows).__name__}")


def score(rows, i: int, phi) -> float:
    """The log-likelihood if row `i`'s features became `phi` (compiled per target)."""
    raise TypeError(f"no compiled row scorer for {type(rows).__name__}")


def commit(rows, i: int, phi) -> None:
    """Accept the proposal `phi` that `score` scored last (compiled per target)."""
    raise TypeError(f"no compiled row scorer for {type(rows).__name__}")


@njit(cache=True)
def feature_buffer(W: np.ndarray, bias: bool) -> np.ndarray:
    """An array for one row's features (:func:`ibp_rflvm.features.row_features`) under `W`."""
    return np.empty(n_features(W.shape[0], bias))


@njit(cache=True)
def latent_row(X: np.ndarray, Z: np.ndarray, i: int, h: np.ndarray) -> None:
    """``h = x_i * z_i``, the latent row the proposals of row `i` start from."""
    for k in range(h.size):
        h[k] = X[i, k] * Z[i, k]
