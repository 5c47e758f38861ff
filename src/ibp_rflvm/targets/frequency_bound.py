"""An upper bound on a frequency proposal's log-likelihood change, cheap enough to reject with.

The paper's update of ``w_m`` (prior proposal, accepted when ``log u < D``, ``D`` the change of
the log-likelihood) pays a pass over all ``N x J`` entries per proposal, and on count data
nearly every proposal is rejected by thousands of nats. If a cheap ``B >= D`` is known, then
``log u >= B`` already decides the rejection, and the proposal is scored exactly only when
``log u < B``. Same random numbers, same decisions: the chain is the paper's update's, bit for
bit, whatever the bound's quality (which only sets how often the exact pass runs).

**The bound.** A proposal changes the two columns of frequency ``m`` by ``a = cos' - cos`` and
``c = sin' - sin`` (N-vectors), so ``d_ij = a_i beta_mj + c_i beta_{m+M}j``. Taylor's theorem
with the Lagrange remainder, entry by entry, with ``g`` and ``h`` the first and minus the second
derivative of the entry's log-likelihood at the current ``psi``:

    f(psi + d) = f(psi) + g d - h d^2 / 2 + f'''(xi) d^3 / 6,   and   f'''(xi) d^3 / 6 <= t |d|^3,

with ``t`` per entry from the likelihood (:meth:`Likelihood.psi_derivatives`):

* ``y x - b softplus(x)`` (negative binomial, binomial, Bernoulli): ``f''' = -b s (1 - s)(1 - 2s)``,
  whose size is at most ``b / (6 sqrt 3)`` (at ``s = 1/2 +- 1/sqrt 12``): ``t = b / (36 sqrt 3)``;
* ``y x - e^x`` (Poisson): ``f''' = -e^xi``; the remainder is negative for ``d > 0`` and, for
  ``d < 0``, ``xi < x`` gives ``e^xi < e^x``: ``t = e^x / 6``.

``|p + q|^3 <= 4 (|p|^3 + |q|^3)`` (convexity of ``z^3`` on ``z >= 0``) splits the cube, so

    D <= B = a.U_m + c.U_{m+M} - (a^2.V_m0 + 2 a c.V_m1 + c^2.V_m2) / 2 + 4 (|a|^3.T_m + |c|^3.T_{m+M}),

``U = g [beta_m, beta_{m+M}]^T``, ``V = h [beta_m^2, beta_m beta_{m+M}, beta_{m+M}^2]^T`` and
``T = t [|beta_m|^3, |beta_{m+M}|^3]^T``: products made once per update, by row blocks (again,
for the frequencies left, after an acceptance moves ``psi``), after which each proposal's bound
is O(N) instead of O(N J).

**Rounding.** ``D`` as the exact pass computes it differs from the true change by rounding, and
so does ``B``; a rejection by the bound needs ``log u >= B + margin`` with ``margin`` a
millionth of the magnitudes summed (about 8 nats at 10,000 x 2,000, where rejected proposals
fall thousands of nats short), far above the rounding of either.
"""

from __future__ import annotations

import numpy as np

from ..plumbing import blocks as _blocks

#: Relative size of the rounding margin (see the module's docstring).
MARGIN = 1e-6


class FrequencyBound:
    """The products ``U, V, T`` of the frequencies ``first, ..., stop - 1`` (``stop`` None: to
    ``M - 1``) at the current ``psi`` of `fs` (a :class:`~.factorised.FactorisedState`), and the
    bound they give."""

    def __init__(self, fs, M: int, first: int = 0, stop: int | None = None):
        self.first = first
        self.scale = float(np.sum(np.abs(fs.ll), dtype=np.float64))
        ms = np.arange(first, M if stop is None else stop)
        bc, bs = fs.beta[ms], fs.beta[ms + M]
        pair = np.concatenate([bc, bs]).T  # J x 2n: the cos rows, then the sin rows
        B = np.ascontiguousarray(pair)
        C = np.ascontiguousarray(np.stack([bc * bc, bc * bs, bs * bs], axis=1).reshape(3 * ms.size, -1).T)
        A = np.ascontiguousarray(np.abs(pair) ** 3)
        n = fs.psi.shape[0]
        self.U, self.V = np.empty((n, 2 * ms.size)), np.empty((n, 3 * ms.size))
        self.T = np.empty((n, 2 * ms.size))

        def part(_b: int, rows: slice) -> None:
            g, h, t = fs.lik.psi_derivatives(fs.psi[rows], fs.all_rows[rows], fs.params, fs.prep)
            np.matmul(g, B, out=self.U[rows])
            np.matmul(h, C, out=self.V[rows])
            np.matmul(t, A, out=self.T[rows])

        blocks = _blocks.current()
        blocks.run(part, blocks.row_slices(n))

    def terms(self, m: int, D: np.ndarray) -> tuple[float, float, float]:
        """The bound's three parts for frequency `m` changing its columns by ``D = [a, c]``
        (N x 2): ``a.U_m + c.U_{m+M}``, ``a^2.V_m0 + 2 a c.V_m1 + c^2.V_m2`` and the cubic term."""
        k, n = m - self.first, self.U.shape[1] // 2
        a, c = D[:, 0], D[:, 1]
        first = float(a @ self.U[:, k] + c @ self.U[:, n + k])
        v = self.V[:, 3 * k : 3 * k + 3]
        second = float((a * a) @ v[:, 0] + 2.0 * ((a * c) @ v[:, 1]) + (c * c) @ v[:, 2])
        third = float(4.0 * (np.abs(a) ** 3 @ self.T[:, k] + np.abs(c) ** 3 @ self.T[:, n + k]))
        return first, second, third

    def bound(self, m: int, D: np.ndarray) -> tuple[float, float]:
        """``(B, margin)`` for frequency `m` changing its columns by ``D = [a, c]`` (N x 2)."""
        first, second, third = self.terms(m, D)
        margin = MARGIN * (self.scale + abs(first) + abs(second) + third) + 1e-9
        return first - 0.5 * second + third, margin

    def rejects(self, m: int, D: np.ndarray, log_u: float) -> bool:
        """Whether ``log u`` is at or above the bound of this proposal, by more than the margin
        (a bound that is not a number rejects nothing)."""
        B, margin = self.bound(m, D)
        return bool(log_u >= B + margin)


__all__ = ["MARGIN", "FrequencyBound"]
