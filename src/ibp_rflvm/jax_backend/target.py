"""The factorised target on a JAX device: the same posterior and moves as
:class:`ibp_rflvm.targets.factorised.FactorisedTarget`, with the ``N x J`` work on the device.

The sweep (:func:`ibp_rflvm.model.build_sweep`) is the numba backend's: the IBP's slice step,
the dimension moves, the sticks, ``alpha`` and the Dirichlet-process mixture run on the host,
on the chain's Generator, and ask this target's view for likelihood changes, as they ask the
numba target's. The view keeps the state ``(ll, Phi, psi, P)`` on the device: the row
log-likelihoods, the features, ``psi = Phi beta`` and the projections ``P = H W^T``. A move of one
dimension's column (the Gibbs pass of ``Z``, the joint flips) sends only that column's change,
``N`` numbers, and receives one number per row; a move of a few rows sends those rows. The
elliptical slice sampler of ``X``, the frequencies' Metropolis-Hastings step and the weights'
Gibbs step (Polya-gamma draws, Gaussian weights, the likelihood's own variables) run entirely
on the device.

Randomness: the host moves draw from the chain's Generator as on the numba backend (the
frequency proposals too, in the same order); each device program gets a key drawn from that
Generator. So a seed fixes the chain on a given device, and a checkpoint (the Generator's state
and the chain state, both on the host) resumes it.

Shapes: the latent dimensions are padded to ``width`` columns (a multiple of 8, more than
``max_dims``), and row subsets to :func:`.programs.bucket` sizes, so the compiled programs
are reused from one sweep to the next; :attr:`JaxFactorisedTarget.widenings` counts the times a
sweep needed more columns than ``width`` (each one compiles the programs again).
"""

from __future__ import annotations

import numpy as np

from ..samplers import ibp
from ..samplers.dimension_moves import accept_flips
from ..state import Data, ModelSpec
from ..targets.base import Work
from ..targets.factorised import FactorisedTarget
from ..targets.moves import ArrayMoves
from . import jax, programs
from .likelihoods_more import for_likelihood

jnp = jax.numpy


#: The shapes whose row-subset programs this process has compiled (:meth:`JaxFactorisedTarget._warm_up`).
_WARMED: set = set()


def key_from(rng: np.random.Generator) -> np.ndarray:
    """A JAX key (the raw two-word form, which crosses to the device with no dispatch of its
    own) drawn from the chain's Generator."""
    return rng.integers(0, 2**32, size=2, dtype=np.uint32)


def _round_up(k: int, step: int = 8) -> int:
    return max(step, -(-k // step) * step)


class JaxFactorisedTarget:
    """The posterior of a factorising likelihood, its ``N x J`` work on the default JAX device."""

    def __init__(self, likelihood, data: Data, spec: ModelSpec) -> None:
        self.dlik = for_likelihood(likelihood)  # first: it refuses what the device cannot run
        self.host = FactorisedTarget(likelihood, data, spec)
        self.lik = likelihood
        self.prep = self.host.prep
        self.data = self.dlik.device_data(likelihood, self.prep)
        self.bias = bool(spec.bias)
        self.M = int(spec.n_frequencies)
        # The programs see the used dimensions only (K+ <= max_dims; a column move sends its change
        # alone). The one column more than the cap is what the first version's Gibbs pass needed;
        # it stays because the padded width enters the products' rounding, hence the chains.
        self.width = _round_up(max(spec.max_dims or 0, spec.n_dims, 8) + 1)
        self.widenings = 0
        self.n_rows = int(data.Y.shape[0])

    @property
    def static(self) -> dict:
        return {"dlik": self.dlik, "bias": self.bias, "M": self.M}

    def pad(self, A: np.ndarray) -> np.ndarray:
        """`A`'s columns (latent dimensions) padded with zeros to ``width``."""
        k = A.shape[-1]
        if k > self.width:
            # Doubling bounds the compilations of a fit whose sweeps need ever more columns.
            self.width = _round_up(max(k, 2 * self.width))
            self.widenings += 1
        out = np.zeros(A.shape[:-1] + (self.width,))
        out[..., :k] = A
        return out  # a compiled program's NumPy argument goes to the device on its fast path

    # the Target protocol ---------------------------------------------------------------------
    def start_positions(self, k: int) -> np.ndarray:
        return self.host.start_positions(k)

    def start(self, rng: np.random.Generator, X, Z, W) -> tuple[None, dict, float]:
        Phi = programs.features(self.pad(X * Z), self.pad(W), self.bias, self.M)
        L, J = Phi.shape[1], self.prep.Y0.shape[1]
        dparams = self.dlik.initial(self.lik, self.prep, L, J)
        dparams = programs.update_params(key_from(rng), Phi, dparams, self.data, **self.static)
        _, ll, _ = programs.total_loglik(Phi, dparams, self.data, **self.static)
        return None, self.dlik.host_params(dparams), float(np.sum(np.asarray(ll), dtype=np.float64))

    def view(self, w: Work, params: dict) -> JaxView:
        view = JaxView(self, w, params)
        shapes = (self.n_rows, self.width, view.beta.shape, self.data.y.dtype, self.M, self.bias, self.dlik)
        if shapes not in _WARMED:
            self._warm_up(view)
            _WARMED.add(shapes)
        return view

    def _warm_up(self, view: JaxView) -> None:
        """Run the row-subset programs once at every padded size, so that none compiles in a
        later sweep when a move first meets a subset of that size."""
        width = self.width
        for size in programs.bucket_sizes(self.n_rows):
            rows = np.zeros(size, dtype=np.int64)
            prop = programs.rows_loglik(
                np.zeros((size, width)), np.zeros((self.M, width)), view.beta, rows, view.const,
                view.dparams, self.data, **self.static,
            )  # fmt: skip
            spare = tuple(jnp.copy(a) for a in view.state)
            programs.commit_rows(spare, prop, np.full(size, self.n_rows), rows)

    def x_view(self, w: Work, params: dict, view) -> JaxView:
        return view if view is not None else self.view(w, params)

    def scorer(self, Phi: np.ndarray, params: dict):
        return self.host.scorer(Phi, params)


class JaxRows:
    """The row target of the dimension moves (:class:`ibp_rflvm.samplers.dimension_moves.RowTarget`)
    on the device state of a :class:`JaxView`."""

    def __init__(self, view: JaxView) -> None:
        self.v = view
        self._last = None

    def _score(self, rows: np.ndarray, H_rows: np.ndarray, W: np.ndarray) -> np.ndarray:
        v, t = self.v, self.v.t
        n = rows.size
        size = programs.bucket(n, t.n_rows)
        rows_p = np.zeros(size, dtype=np.int64)
        rows_p[:n] = rows
        H_p = np.zeros((size, H_rows.shape[1]))
        H_p[:n] = H_rows
        prop = programs.rows_loglik(
            t.pad(H_p), t.pad(W), v.beta, rows_p, v.const, v.dparams, t.data, **t.static
        )
        self._last = (rows, size, prop)
        return np.asarray(prop[0])[:n] - v.ll_host[rows]

    def _commit(self, idx: np.ndarray) -> None:
        rows, size, prop = self._last
        idx = np.asarray(idx, dtype=np.int64)
        if idx.size == 0:
            return
        v = self.v
        dst = np.full(size, v.t.n_rows, dtype=np.int64)  # past the rows: dropped
        src = np.zeros(size, dtype=np.int64)
        dst[: idx.size] = rows[idx]
        src[: idx.size] = idx
        v.set_state(programs.commit_rows(v.state, prop, dst, src))

    def delta(self, i: int, h: np.ndarray, W: np.ndarray) -> float:
        return float(self._score(np.array([i]), h[None, :], W)[0])

    def accept(self, i: int) -> None:
        self._commit(np.array([0]))

    def deltas(self, H_alt: np.ndarray, W: np.ndarray) -> np.ndarray:
        return self._score(np.arange(self.v.t.n_rows), H_alt, W)

    def accept_rows(self, rows: np.ndarray) -> None:
        self._commit(rows)

    def deltas_at(self, rows: np.ndarray, H_rows: np.ndarray, W: np.ndarray) -> np.ndarray:
        return self._score(np.asarray(rows, dtype=np.int64), H_rows, W)

    def accept_at(self, idx: np.ndarray) -> None:
        self._commit(idx)


class JaxView(ArrayMoves):
    """The likelihood at one working state, its ``Phi``, ``psi`` and row log-likelihoods on the
    device (with a host copy of the row log-likelihoods, which every move's ratio reads)."""

    def __init__(self, target: JaxFactorisedTarget, w: Work, params: dict) -> None:
        self.t = target
        self.dparams = target.dlik.device_params(params)
        self.beta = self.dparams["beta"]
        used = w.Z.any(axis=0)  # the slice step's new sticks are columns of zeros in H
        self.const, state = programs.feature_state(
            target.pad(w.X[:, used] * w.Z[:, used]), target.pad(w.W[:, used]), self.dparams,
            target.data, **target.static,
        )  # fmt: skip
        self.set_state(state)

    def set_state(self, state) -> None:
        self.state = state
        self.ll_host = np.asarray(state[0])

    def _row_target(self) -> JaxRows:
        return JaxRows(self)

    def _column_change(self, step: np.ndarray, w_col: np.ndarray):
        """Each row's log-likelihood change when its coordinate in one dimension (frequencies
        `w_col`) moves by `step`, on the host; and the moved rows' state, on the device."""
        t = self.t
        diff, alt = programs.column_change(
            step, w_col, self.state[3], self.beta, self.const, self.state[0], self.dparams, t.data,
            **t.static,
        )  # fmt: skip
        return np.asarray(diff), alt

    def gibbs_z(self, rng, w: Work, counts, room) -> int:
        """The slice sampler's Gibbs pass of every ``z_id``: each column's likelihood ratios for
        all rows in one device pass, the rows then visited in turn on the host for ``pi*``
        (:func:`ibp_rflvm.samplers.ibp.gibbs_column`)."""
        flips = 0
        for d in range(w.Z.shape[1]):
            z_before = w.Z[:, d].copy()
            # Switching z_id moves row i's coordinate x_id z_id to x_id (1 - z_id).
            diff, alt = self._column_change(w.X[:, d] * (1 - 2 * z_before), w.W[:, d])
            ibp.gibbs_column(rng, w.Z, d, np.where(z_before == 1, -diff, diff), w.pi, counts, room)
            changed = w.Z[:, d] != z_before
            if changed.any():
                self.set_state(programs.commit_mask(self.state, alt, changed))
                flips += int(changed.sum())
        return flips

    def flips(self, rng, w: Work, counts, q_sd: float) -> int:
        """Joint ``(z_id, x_id)`` flips (:func:`ibp_rflvm.samplers.dimension_moves.flip_columns`:
        the same proposals from the same draws, the same acceptance ratio), each column scored by
        one rank-1 change on the device."""
        N, K = w.Z.shape
        accepted = np.zeros(N, dtype=np.bool_)
        n_acc = 0
        for d in range(K):
            e = rng.standard_normal(N)
            z = w.Z[:, d]
            x_prop = np.where(z == 0, q_sd * e, e)
            diff, alt = self._column_change(x_prop * (1 - z) - w.X[:, d] * z, w.W[:, d])
            n_acc += accept_flips(rng, w.X, w.Z, d, x_prop, diff, counts, q_sd, float(w.ibp_beta), accepted)
            if accepted.any():
                self.set_state(programs.commit_mask(self.state, alt, accepted.copy()))
        return n_acc

    def compact(self) -> None:
        """Dropped dimensions were inactive: the device state does not change."""

    def update_x(self, rng, w: Work) -> int:
        t = self.t
        K = w.X.shape[1]
        X, state, n_evals = programs.ess_x(
            key_from(rng), t.pad(w.X), t.pad(w.Z.astype(np.float64)), t.pad(w.W), self.beta,
            self.const, self.state, self.dparams, t.data, **t.static,
        )  # fmt: skip
        w.X = np.ascontiguousarray(np.asarray(X)[:, :K])
        self.set_state(state)
        return int(n_evals)

    def update_w(self, rng, w: Work) -> int:
        """The frequencies' proposals are drawn on the host, in the numba backend's order (each
        ``m``: ``K`` normals, then a uniform); the accept/reject pass runs on the device."""
        t = self.t
        M, K = w.W.shape
        if K == 0:
            return 0
        chols = np.linalg.cholesky(w.Sigma)
        W_prop = np.empty((M, K))
        log_u = np.empty(M)
        for m in range(M):
            k = w.zeta[m]
            W_prop[m] = w.mu[k] + chols[k] @ rng.standard_normal(K)
            log_u[m] = np.log(rng.random())
        W, state, acc = programs.mh_frequencies(
            t.pad(W_prop), log_u, t.pad(w.X * w.Z), t.pad(w.W), self.beta, self.const, self.state,
            self.dparams, t.data, **t.static,
        )  # fmt: skip
        w.W = np.ascontiguousarray(np.asarray(W)[:, :K])
        self.set_state(state)
        return int(acc)

    def finish(self, rng, w: Work, params: dict) -> tuple[None, dict, float]:
        t = self.t
        Phi = self.state[1]
        self.state = None  # psi is stale once beta changes; freed before the weights' update
        dparams = programs.update_params(key_from(rng), Phi, self.dparams, t.data, **t.static)
        _, ll, _ = programs.total_loglik(Phi, dparams, t.data, **t.static)
        return w.Y, t.dlik.host_params(dparams), float(np.sum(np.asarray(ll), dtype=np.float64))


__all__ = ["JaxFactorisedTarget", "JaxRows", "JaxView", "key_from"]
