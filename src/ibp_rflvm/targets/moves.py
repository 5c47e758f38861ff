"""The dimension moves of targets whose rows factorise given the weights, by array passes."""

from __future__ import annotations

from ..samplers.absorb import absorb_pairs
from ..samplers.dimension_moves import flip_columns
from ..samplers.transfer import transfer_pairs
from .base import Work


class ArrayMoves:
    """The dimension moves for a target whose rows factorise given the weights (or the prior
    alone): each move scores many rows' proposals in one array pass of its row target."""

    _rows = None

    def _row_target(self):
        raise NotImplementedError

    @property
    def row_target(self):
        if self._rows is None:
            self._rows = self._row_target()
        return self._rows

    def flips(self, rng, w: Work, counts, q_sd: float, prior) -> tuple[int, int]:
        return flip_columns(rng, w.X, w.Z, w.W, counts, q_sd, self.row_target, prior)

    def transfers(self, rng, w: Work, counts, min_cos: float, budget, prior) -> tuple[int, int]:
        return transfer_pairs(rng, w.X, w.Z, w.W, counts, min_cos, self.row_target, budget, prior)

    def absorbs(self, rng, w: Work, counts, min_cos: float, budget, prior) -> tuple[int, int]:
        return absorb_pairs(rng, w.X, w.Z, w.W, counts, min_cos, self.row_target, budget, prior)
