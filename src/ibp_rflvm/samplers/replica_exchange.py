"""Swaps between the levels of a replica-exchange ladder (Geyer 1991; SPEC 2.2, moves that cross modes).

Each level ``l`` of the ladder runs its own chain with its own target ``pi_l``. A swap of the
states held at adjacent levels ``l`` and ``l + 1`` is a Metropolis move on the product target
``prod_l pi_l(theta_l)``, accepted with probability ``min(1, r)``,

``log r = log pi_l(theta_{l+1}) + log pi_{l+1}(theta_l) - log pi_l(theta_l) - log pi_{l+1}(theta_{l+1})``.

The caller supplies ``E[i, l] = log pi_l(theta_i)`` up to a constant per level (constants
cancel in ``r``): the log target of level ``l`` evaluated at the state now held by slot ``i``.
A pass proposes the pairs ``(0, 1), (2, 3), ...`` or ``(1, 2), (3, 4), ...`` by `parity`; the
pairs are disjoint, so one pass is a product of independent exact moves.
"""

from __future__ import annotations

import numpy as np


def swap_log_ratio(E: np.ndarray, lo: int) -> float:
    """``log r`` for swapping the states at levels `lo` and ``lo + 1`` (see the module docstring)."""
    hi = lo + 1
    return float(E[hi, lo] + E[lo, hi] - E[lo, lo] - E[hi, hi])


def swap_pass(rng: np.random.Generator, E: np.ndarray, parity: int) -> tuple[np.ndarray, np.ndarray]:
    """One pass of adjacent swaps.

    Returns ``order`` (level ``l`` now holds the state that slot ``order[l]`` held) and a
    boolean per proposed pair saying whether it was accepted. One uniform is drawn per
    proposed pair, in ladder order, so a seed fixes the pass.
    """
    n = E.shape[0]
    order = np.arange(n)
    pairs = range(parity % 2, n - 1, 2)
    accepted = np.zeros(len(pairs), dtype=bool)
    for p, lo in enumerate(pairs):  # at most n / 2 pairs: the ladder is short
        if np.log(rng.random()) < swap_log_ratio(E, lo):
            order[lo], order[lo + 1] = order[lo + 1], order[lo]
            accepted[p] = True
    return order, accepted
