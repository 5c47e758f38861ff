"""``psi + D B`` for a rank-``r`` change of the linear predictor (``D`` is ``N x r``, ``B`` is
``r x J``, r small): a frequency proposal changes two columns of ``Phi``."""

from __future__ import annotations

from numba import njit


@njit(cache=True)
def low_rank_add(psi, D, B, out):
    """``out = psi + D B`` in one pass; `out` may be `psi` itself (each entry is read, then written).

    Compiled without ``fastmath`` and called only from Python: numba compiles a jitted callee
    with its caller's flags, and a caller that allows fused multiply-adds would round these
    sums differently.
    """
    N, J = psi.shape
    r = D.shape[1]
    for i in range(N):
        for j in range(J):
            acc = 0.0
            for t in range(r):
                acc += D[i, t] * B[t, j]
            out[i, j] = psi[i, j] + acc
