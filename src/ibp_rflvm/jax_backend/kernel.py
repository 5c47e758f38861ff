"""The device sweep as a kernel: for the library's driver, and for users who drive their own loop.

* :class:`DeviceSweepTarget` is what :func:`ibp_rflvm.targets.make_target` gives for
  ``backend="jax"``: the start of a chain (on the host, as the numba backend's) and the whole
  sweep as one compiled device step (:mod:`.sweep`). :func:`ibp_rflvm.model.build_sweep` wraps
  it as the driver's kernel ``step(rng, state)``: one key drawn from the chain's Generator per
  sweep, the state crossing as a :class:`~ibp_rflvm.state.ChainState`, so records, checkpoints
  and resuming are the numba backend's. Its ``run(rng, state, n)`` runs ``n`` sweeps in one
  ``lax.scan`` with the same keys and reads back only the traces.
* :func:`sweep_kernel` is the same step for a user's own loop (BlackJAX's shape): ``(state,
  step)`` with ``step(key, state) -> (state, info)`` a pure function of device arrays.
"""

from __future__ import annotations

from dataclasses import fields, replace
from functools import partial
from typing import Any, NamedTuple

import numpy as np

from ..features import feature_map
from ..likelihoods.base import LikelihoodParams
from ..plumbing import blocks
from ..state import ChainState, Data, ModelSpec, MoveCounts, SweepInfo
from ..targets import register_device_target
from ..targets.factorised import FactorisedTarget
from . import jax, programs
from .hmc_device import STEP_FACTOR
from .ibp_device import STICK_ROUNDS
from .likelihoods_more import for_likelihood
from .rowsum import row_groups
from .sweep import DeviceInfo, DeviceState, SweepConfig, sweep_step

jnp = jax.numpy
Mesh, NamedSharding, PartitionSpec = jax.sharding.Mesh, jax.sharding.NamedSharding, jax.sharding.PartitionSpec


def key_from(rng: np.random.Generator) -> np.ndarray:
    """A JAX key (the raw two-word form) drawn from the chain's Generator."""
    return rng.integers(0, 2**32, size=2, dtype=np.uint32)


def check_spec(spec: ModelSpec) -> None:
    """Refuse, with the reason, what the device sweep does not run."""
    if spec.ibp and spec.max_dims is None:
        raise ValueError(
            "backend='jax' holds the latent dimensions in a fixed number of slots: give max_dims "
            "(a cap on K+; the default is 50), or use backend='numba' for an uncapped IBP"
        )
    if spec.ibp and not spec.moves:
        raise ValueError(
            "backend='jax' runs the library's sampler (rows in parallel given the sticks); the "
            "paper's slice sampler (sampler='paper') runs on backend='numba'"
        )
    if spec.ibp:
        spec.z_prior.on_device(1)  # the prior refuses, with its reason, what the device cannot run


def sweep_config(spec: ModelSpec, dlik, n_rows: int) -> SweepConfig:
    width = int(max(spec.max_dims, spec.n_dims)) if spec.ibp else int(spec.n_dims)
    # The dense model's sticks are never drawn: any values serve.
    sticks = spec.z_prior.on_device(n_rows) if spec.ibp else (1.0, 0.0, 0.0)
    return SweepConfig(
        dlik=dlik, bias=bool(spec.bias), M=int(spec.n_frequencies), width=width, ibp=bool(spec.ibp),
        moves=bool(spec.moves), flip_scale=float(spec.flip_scale),
        transfer_min_cos=spec.transfer_min_cos, absorb_min_cos=spec.absorb_min_cos,
        pairs_per_dim=spec.pairs_per_dim, lam0=float(spec.lam0),
        alpha_prior=tuple(float(v) for v in spec.alpha_prior),
        fixed_alpha=None if spec.fixed_alpha is None else float(spec.fixed_alpha),
        eta_prior=tuple(float(v) for v in spec.eta_prior), sticks=float(sticks[0]),
        harmonic=float(sticks[1]), new_rate_per_alpha=float(sticks[2]),
        frequency_update=spec.frequency_update, scale_move=bool(spec.scale_move),
        hmc_leapfrog=int(spec.hmc_leapfrog), hmc_steps=tuple(float(v) for v in spec.hmc_steps),
        stick_rounds=STICK_ROUNDS,
    )  # fmt: skip


# ------------------------------------------------------------------------------------------
# Between the host's ChainState and the device's padded state


def _device_tuning(tuning: dict, cfg: SweepConfig) -> dict:
    """The warm-up's values as device scalars, with the HMC move's step factor (1 before any
    warm-up, as on the host) where the sweep runs the move."""
    out = {k: jnp.asarray(v, dtype=jnp.float64) for k, v in tuning.items()}
    if cfg.hmc_leapfrog > 0:
        out.setdefault(STEP_FACTOR, jnp.asarray(1.0, dtype=jnp.float64))
    return out


def to_device(state: ChainState, cfg: SweepConfig, dlik) -> DeviceState:
    """`state` padded to the config's slots and to ``M`` mixture labels (the canonical form of
    :func:`.sweep.canonical`, so that the round trip is exact)."""
    N, K = state.X.shape
    Kw, M = cfg.width, cfg.M
    X = np.zeros((N, Kw))
    X[:, :K] = state.X
    Z = np.zeros((N, Kw), dtype=bool)
    Z[:, :K] = state.Z != 0
    pi = np.full(Kw, 0.5)
    pi[:K] = state.pi
    W = np.zeros((M, Kw))
    W[:, :K] = state.W
    C = state.mu.shape[0]
    mu = np.zeros((M, Kw))
    mu[:C, :K] = state.mu
    Sigma = np.broadcast_to(np.eye(Kw), (M, Kw, Kw)).copy()
    Sigma[:C, :K, :K] = state.Sigma
    f64 = partial(jnp.asarray, dtype=jnp.float64)
    return DeviceState(
        jnp.asarray(X), jnp.asarray(Z), jnp.asarray(pi), f64(state.alpha), jnp.asarray(W),
        jnp.asarray(state.zeta.astype(np.int32)), jnp.asarray(mu), jnp.asarray(Sigma), f64(state.eta),
        None, dlik.device_params(state.params), f64(state.loglik), jnp.asarray(state.sweep, dtype=jnp.int64),
        {k: f64(v) for k, v in state.z_state.items()}, _device_tuning(state.tuning, cfg),
    )  # fmt: skip


def to_host(st: DeviceState, dlik) -> ChainState:
    """The device state as a :class:`ChainState`: the dimensions in use, the mixture's labels."""
    host = jax.device_get(st)
    Z = np.asarray(host.Z)
    K = int(np.count_nonzero(Z.any(axis=0)))
    zeta = np.asarray(host.zeta).astype(np.int64)
    C = int(zeta.max()) + 1
    return ChainState(
        np.ascontiguousarray(host.X[:, :K]), np.ascontiguousarray(Z[:, :K].astype(np.int8)),
        np.ascontiguousarray(host.pi[:K]), float(host.alpha), np.ascontiguousarray(host.W[:, :K]), zeta,
        np.ascontiguousarray(host.mu[:C, :K]), np.ascontiguousarray(host.Sigma[:C, :K, :K]),
        float(host.eta), None, dlik.host_params(host.params), float(host.loglik), int(host.sweep),
        {k: float(v) for k, v in host.z_state.items()}, {k: float(v) for k, v in host.tuning.items()},
    )  # fmt: skip


def info_of(info: DeviceInfo) -> SweepInfo:
    """A device sweep's info read back as the host's: ``K+``, the components and the move
    counts as plain ints (the device runs no slice step)."""
    info = jax.device_get(info)
    moves = MoveCounts(*(int(v) for v in info.moves))
    return SweepInfo(int(info.k_plus), int(info.n_components), moves)


def check_finite(row: int, sweep: int, state: ChainState, target) -> None:
    """Raise ``FloatingPointError`` naming `row` (and the columns whose log-likelihood is not
    finite there, or the non-finite values behind them) when the device reported one."""
    if row < 0:
        return
    cols = target.nonfinite_columns(state, row)
    where = f"row {row}" + (f", column(s) {cols[:10]}" if len(cols) else "")
    raise FloatingPointError(
        f"backend='jax': the log-likelihood is not finite at {where} after sweep {sweep} "
        "(a NaN or infinite value in the data, the latent positions, the frequencies or the "
        "likelihood's variables); the chain stops here rather than run on a state it cannot score"
    )


class Traces(NamedTuple):
    """What the record reads of a sweep it does not keep (``ChainRecord.add``)."""

    loglik: float
    alpha: float
    eta: float
    z_state: dict


# ------------------------------------------------------------------------------------------
# The compiled programs


#: Sweeps one device call runs at most; the keys arrive padded to this many, so one compiled
#: program serves every call of a fit. Calls of several sweeps are safe since :mod:`.linalg`
#: (the stop that once forced one sweep a call was jaxlib's batched LAPACK waiting on its own
#: thread pool) and give the same chain, but were not faster: ten sweeps a call against one, in
#: three alternated pairs at 2,000 x 500 on a quiet 2-core CPU, gave a ratio of 0.99
#: (``benchmarks/bench_run_length.py``; docs/record/jax_backend.md). The state stays on the
#: device between calls either way.
RUN_LENGTH = 1


@partial(jax.jit, static_argnames=("cfg",), donate_argnames=("state",))
def device_run(keys, n, state: DeviceState, data, cfg: SweepConfig, adapt_sweeps):
    """The first `n` of ``len(keys)`` sweeps (:func:`.sweep.sweep_step`, the HMC move's warm-up
    in the sweeps numbered below `adapt_sweeps`) in one device loop; returns the last state, and
    each sweep's info and the traces the record keeps (rows past `n` are zeros)."""
    zeros = jax.eval_shape(
        lambda: sweep_step(jax.random.wrap_key_data(keys[0]), state, data, cfg, adapt_sweeps)[1]
    )
    infos = jax.tree.map(lambda a: jnp.zeros((keys.shape[0],) + a.shape, a.dtype), zeros)
    traces = jnp.zeros((keys.shape[0], 3 + len(state.z_state)))

    def body(t, c):
        st, infos, traces = c
        st, info = sweep_step(jax.random.wrap_key_data(keys[t]), st, data, cfg, adapt_sweeps)
        infos = jax.tree.map(lambda buf, v: buf.at[t].set(v), infos, info)
        z_values = (st.z_state[k] for k in sorted(st.z_state))
        traces = traces.at[t].set(jnp.stack([st.loglik, st.alpha, st.eta, *z_values]))
        return st, infos, traces

    return jax.lax.fori_loop(0, n, body, (state, infos, traces))


def compiled_count() -> int:
    """Compiled variants of the sweep programs in this process (fixed once a fit has started)."""
    return device_run._cache_size()


# ------------------------------------------------------------------------------------------
# The target the library's driver uses


def resolve_devices(devices) -> tuple:
    """`devices` as a tuple of JAX devices (an int: the first that many of ``jax.devices()``)."""
    if isinstance(devices, int) and not isinstance(devices, bool):
        avail = jax.devices()
        if not 1 <= devices <= len(avail):
            raise ValueError(f"devices={devices}: JAX sees {len(avail)} device(s)")
        return tuple(avail[:devices])
    out = tuple(devices)
    if not out or not all(isinstance(d, jax.Device) for d in out):
        raise ValueError(f"devices must be a non-empty sequence of jax.Device or an int; got {devices!r}")
    return out


class Placement(NamedTuple):
    """Where one chain lives: the config (its likelihood holding the rows' layout), the data,
    and the shardings of the row arrays and of everything else (None on one device)."""

    cfg: SweepConfig
    data: Any
    rows: Any
    replicated: Any


class DeviceSweepTarget:
    """A factorising likelihood's posterior, sampled by the whole-sweep device step.

    What :func:`ibp_rflvm.targets.make_target` gives for ``backend="jax"``: the chain's start on
    the host (as the numba backend's), then every sweep on the device (:mod:`.sweep`), the rows
    sharded over the devices of :func:`ibp_rflvm.plumbing.blocks.current` (every device by default).

    Parameters
    ----------
    likelihood : Likelihood
        A count likelihood (negative binomial, Poisson, binomial, Bernoulli, multinomial).
    data : Data
        The training data.
    spec : ModelSpec
        The model's settings; the IBP needs a cap on ``K+`` (``max_dims``), the library's
        sampler and a fixed ``ibp_beta``.

    Raises
    ------
    ValueError
        For a likelihood or setting the device sweep does not run, naming what does.
    """

    def __init__(self, likelihood, data: Data, spec: ModelSpec) -> None:
        dlik = for_likelihood(likelihood)  # first: it refuses what the device cannot run
        check_spec(spec)
        self.n_rows = int(data.Y.shape[0])
        self.dlik = replace(dlik, row_groups=row_groups(self.n_rows))
        self.host = FactorisedTarget(likelihood, data, spec)
        self.lik = likelihood
        self.prep = self.host.prep
        self.data = self.dlik.device_data(likelihood, self.prep)
        self.spec = spec
        self.cfg = sweep_config(spec, self.dlik, self.n_rows)
        self._placed: dict = {}

    def placement(self) -> Placement:
        """The chain's devices (those of :func:`ibp_rflvm.plumbing.blocks.current`, else every device):
        the rows sharded over a mesh of as many of them as divide the number of row groups."""
        devs = blocks.current().devices or tuple(jax.devices())
        groups = self.dlik.row_groups
        d = max(k for k in range(1, len(devs) + 1) if groups % k == 0)
        devs = tuple(devs[:d])
        if devs not in self._placed:
            if d == 1:
                self._placed[devs] = Placement(self.cfg, jax.device_put(self.data, devs[0]), devs[0], devs[0])
            else:
                mesh = Mesh(np.array(devs), ("rows",))
                rows, rep = NamedSharding(mesh, PartitionSpec("rows")), NamedSharding(mesh, PartitionSpec())
                cfg = replace(self.cfg, dlik=replace(self.dlik, replicated=rep))
                data = jax.device_put(self.data, jax.tree.map(lambda a: rows, self.data))
                self._placed[devs] = Placement(cfg, data, rows, rep)
        return self._placed[devs]

    def device_state(self, state: ChainState, where: Placement) -> DeviceState:
        st = to_device(state, self.cfg, self.dlik)
        row_fields = ("X", "Z")
        placed = {f.name: jax.device_put(getattr(st, f.name), where.rows if f.name in row_fields
                                         else where.replicated) for f in fields(st)}  # fmt: skip
        return DeviceState(**placed)

    def start_positions(self, k: int) -> np.ndarray:
        return self.host.start_positions(k)

    def start(self, rng: np.random.Generator, X, Z, W) -> tuple[None, LikelihoodParams, float]:
        """The likelihood's first variables: one Gibbs step from its start given the features."""
        cfg = self.cfg
        pad = np.zeros((X.shape[0], cfg.width))
        pad[:, : X.shape[1]] = X * Z
        Wp = np.zeros((W.shape[0], cfg.width))
        Wp[:, : W.shape[1]] = W
        static = {"dlik": self.dlik, "bias": cfg.bias, "M": cfg.M}
        Phi = programs.features(pad, Wp, cfg.bias, cfg.M)
        L, J = Phi.shape[1], self.prep.Y0.shape[1]
        dparams = self.dlik.initial(self.lik, self.prep, L, J)
        key = jax.random.wrap_key_data(key_from(rng))
        dparams = programs.start_params(key, Phi, dparams, self.data, **static)
        _, ll, _ = programs.total_loglik(Phi, dparams, self.data, **static)
        return None, self.dlik.host_params(dparams), float(np.sum(np.asarray(ll), dtype=np.float64))

    def step(self, rng: np.random.Generator, state: ChainState):
        """One sweep on the device, one key from `rng`."""
        st, out = self.run(rng, state, 1)
        return st, out[0][1]

    def run(self, rng: np.random.Generator, state: ChainState, n: int):
        """`n` sweeps on the device, with the keys `n` calls of :meth:`step` would draw (one
        each from `rng`), in calls of at most :data:`RUN_LENGTH`; returns the last state and
        each sweep's ``(Traces, SweepInfo)``."""
        where = self.placement()
        st = self.device_state(state, where)
        adapt = np.int64(self.spec.hmc_adapt_sweeps)
        calls = []
        for first in range(0, n, RUN_LENGTH):
            k = min(RUN_LENGTH, n - first)
            keys = np.zeros((RUN_LENGTH, 2), dtype=np.uint32)
            keys[:k] = rng.integers(0, 2**32, size=(k, 2), dtype=np.uint32)
            st, infos, traces = device_run(keys, k, st, where.data, where.cfg, adapt)
            calls.append((k, infos, traces))
        out, bad = [], (-1, 0)
        # The device holds the prior's variables as a pytree: a dict in sorted key order.
        z_names = sorted(state.z_state)
        for k, infos, traces in jax.device_get(calls):  # one read of every call's traces
            for t in range(k):
                info = jax.tree.map(lambda v, t=t: v[t], infos)
                row = [float(v) for v in traces[t]]
                out.append((Traces(*row[:3], dict(zip(z_names, row[3:], strict=True))), info_of(info)))
                if bad[0] < 0 and int(info.nonfinite_row) >= 0:
                    bad = (int(info.nonfinite_row), int(state.sweep) + len(out))
        host = to_host(st, self.dlik)
        check_finite(bad[0], bad[1], host, self)
        return host, out

    def nonfinite_columns(self, state: ChainState, row: int) -> list[int]:
        """The columns of `row` whose log-likelihood is not finite in `state` (for the error)."""
        with np.errstate(all="ignore"):
            psi = feature_map(state.H[row : row + 1], state.W, self.cfg.bias) @ state.params.beta
        obs = np.flatnonzero(self.prep.observed[row])
        with np.errstate(all="ignore"):
            lp = self.lik.logpdf_entries(self.prep.Y0[row, obs], psi, np.zeros(obs.size, dtype=np.int64),
                                         obs, state.params, self.prep, rows=np.array([row]))  # fmt: skip
        return [int(j) for j in obs[~np.isfinite(lp)]]


# make_target finds the device target here: the targets sit below this package and name no
# device library.
register_device_target("jax", DeviceSweepTarget)

__all__ = [
    "DeviceSweepTarget", "Placement", "check_finite", "compiled_count", "device_run", "resolve_devices",
    "to_device", "to_host",
]  # fmt: skip
