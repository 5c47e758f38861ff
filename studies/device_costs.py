"""Issue 65, item 3, without a GPU: each stage of one default device sweep as XLA's compiled cost
analysis counts it (flops, transcendentals, bytes accessed), with every loop weighted by its trip
count, and the lower bound ``max(flops / peak, bytes / bandwidth)`` of each stage on an H200.

Model: the estimator's defaults for ``likelihood="negbinom", backend="jax"`` (``M = 50``, bias,
``max_dims = 50`` latent slots, elliptical slice sampling of ``X`` and of the frequencies, the
HMC move with 10 leapfrog steps, the scale move, the mixture's step). State: simulated NB data
from the model itself with ``K+ = 10`` dimensions in use (``x ~ N(0, I)``, frequencies
``N(0, 0.5^2 I)``, weights ``N(0, 1)``, bias -1, ``r = 2``), the chain sitting at the generating
values (a converged chain's state).

XLA's cost analysis counts a loop's body once, whatever its trip count (``verify`` shows it).
So every ``lax.while_loop`` and ``lax.fori_loop`` the stages call is wrapped here (the library is
not edited): ``count`` runs each stage for real on the CPU at ``--rows`` and records every loop's
total trips (keyed by its call site, the loop around it and its ordinal); ``costs`` compiles each
stage at the target sizes from abstract shapes (``jax.ShapeDtypeStruct``, nothing allocated),
once as it is (cost ``C``) and once with each loop's body applied twice (cost ``C + D_s``), and
reports ``C + sum_s (T_s - 1) own_s``, ``own_s = D_s - sum_{children c} D_c``, ``T_s`` the trips
per stage call. The row sums' ``lax.map`` over row groups is made a single trip by costing with
one row group (the same arithmetic); the blocked row sums (Polya-gamma draws, the weights'
precisions, the dispersions) are costed for one block of rows and multiplied by the number of
blocks. Loops inside JAX's own samplers (``random.gamma``, ``beta``, ``poisson``) stay at one
trip (they act on vectors of ``J``, ``K`` or ``N`` values).

``PYTHONPATH=src OPENBLAS_NUM_THREADS=1 python studies/device_costs.py verify``
    The cost of a ``fori_loop`` of 1 and of 10 trips, a ``while_loop`` and a ``cond``.

``... device_costs.py count --rows 10000 --out results/device_costs/trips_10000.json``
    Every loop's trips per stage call, each stage run once on the CPU from the simulated state
    (the blocked stages on one block of ``--block-rows`` rows: 1250 at 10^4 rows, 4096 at 10^5).

``... device_costs.py costs --rows 10000 100000 --trips results/device_costs/trips_10000.json
[--block-trips 4096=results/device_costs/trips_block4096.json] --out results/device_costs/costs.json``
    Per stage and size: flops, transcendentals, bytes, and the bound on an H200; the totals
    against the goals (0.25 s a sweep at 10^4 rows, 2 s at 10^5; 20 s at 10^6 by linear
    extrapolation from 10^5). Prints a markdown table and writes the JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections import defaultdict
from dataclasses import replace
from functools import partial
from pathlib import Path

import numpy as np

from ibp_rflvm.jax_backend import jax

jnp = jax.numpy
lax = jax.lax

#: H200 peaks assumed (NVIDIA's data sheet, SXM): FP64 vector 34 TFLOP/s, FP64 tensor core 67,
#: FP32 67; HBM3e 4.8 TB/s. The sweep computes in float64 (the counts float32).
PEAK_FP64 = 34e12
PEAK_FP64_TC = 67e12
BANDWIDTH = 4.8e12
GOALS = {10_000: 0.25, 100_000: 2.0, 1_000_000: 20.0}
J_COLS = 2000
K_PLUS = 10

# ------------------------------------------------------------------------------------------
# Loops, wrapped: counted at run time, or with one body doubled at compile time

_WHILE, _FORI = lax.while_loop, lax.fori_loop


class Loops:
    mode: str | None = None  # None, "count" or "double"
    double = None  # the key whose body runs twice ("double")
    stack: list = []
    ordinals: dict = defaultdict(int)
    parent: dict = {}
    trips: dict = defaultdict(int)  # key -> total trips (count)
    static: dict = {}  # key -> static trips of a fori_loop

    @classmethod
    def reset(cls, mode, double=None):
        cls.mode, cls.double = mode, double
        cls.stack, cls.ordinals, cls.parent = [], defaultdict(int), {}
        cls.trips, cls.static = defaultdict(int), {}
        jax.clear_caches()  # jitted helpers (draw_pg) must be traced again, through the wrappers

    @classmethod
    def enter(cls):
        f = sys._getframe(2)
        site = f"{os.path.basename(f.f_code.co_filename)}:{f.f_lineno}"
        parent = cls.stack[-1] if cls.stack else None
        n = cls.ordinals[(site, parent)]
        cls.ordinals[(site, parent)] += 1
        key = f"{site}#{n}" + ("" if parent is None else f" < {parent}")
        cls.parent[key] = parent
        cls.stack.append(key)
        return key

    @classmethod
    def record(cls, key, n):
        cls.trips[key] += int(n)


def _while(cond, body, init):
    key = Loops.enter()
    try:
        if Loops.mode == "count":
            def body2(c):
                return body(c[0]), c[1] + 1

            out, n = _WHILE(lambda c: cond(c[0]), body2, (init, jnp.zeros((), jnp.int64)))
            jax.debug.callback(partial(Loops.record, key), n)
            return out
        if Loops.mode == "double" and key == Loops.double:
            return _WHILE(cond, lambda s: body(body(s)), init)
        return _WHILE(cond, body, init)
    finally:
        Loops.stack.pop()


def _fori(lower, upper, body, init, **kw):
    key = Loops.enter()
    try:
        Loops.static[key] = int(upper) - int(lower)
        if Loops.mode == "double" and key == Loops.double:
            return _FORI(lower, upper, lambda i, s: body(i, body(i, s)), init, **kw)
        return _FORI(lower, upper, body, init, **kw)
    finally:
        Loops.stack.pop()


lax.while_loop = _while
lax.fori_loop = _fori

# imported after the wrappers are in place (the modules look ``lax.while_loop`` up at call time)
from ibp_rflvm.jax_backend import ibp_device as zmoves  # noqa: E402
from ibp_rflvm.jax_backend import programs, rowsum  # noqa: E402
from ibp_rflvm.jax_backend.crt import crt_column_totals  # noqa: E402
from ibp_rflvm.jax_backend.dp_device import dp_step  # noqa: E402
from ibp_rflvm.jax_backend.ess import elliptical_slice_rows  # noqa: E402
from ibp_rflvm.jax_backend.frequencies import ess_frequencies  # noqa: E402
from ibp_rflvm.jax_backend.likelihoods import DeviceData, gaussian_draw, precisions  # noqa: E402
from ibp_rflvm.jax_backend.polya_gamma import draw_pg  # noqa: E402
from ibp_rflvm.jax_backend.scale_device import scale_moves  # noqa: E402
from ibp_rflvm.likelihoods.base import LikelihoodParams  # noqa: E402


def cost_of(fn, *args) -> dict:
    ca = jax.jit(fn).lower(*args).compile().cost_analysis()
    ca = ca[0] if isinstance(ca, list) else ca
    return {k: float(ca.get(k, 0.0) or 0.0) for k in ("flops", "transcendentals", "bytes accessed")}


# ------------------------------------------------------------------------------------------
# The model's settings and the simulated state


def config():
    """The estimator's default spec and the device's sweep config (one row group)."""
    import ibp_rflvm.jax_backend.kernel as kernel
    from ibp_rflvm import IBPRFLVM
    from ibp_rflvm.jax_backend.likelihoods_more import for_likelihood

    spec = IBPRFLVM(likelihood="negbinom", backend="jax")._spec()
    dlik = replace(for_likelihood(spec.likelihood), row_groups=1)
    return spec, kernel.sweep_config(spec, dlik, 1000)


def simulate(N: int, J: int, cfg, seed: int = 0) -> dict:
    """The generating state and NB counts (module docstring), padded to the config's slots."""
    rng = np.random.default_rng(seed)
    M, Kw = cfg.M, cfg.width
    X = np.zeros((N, Kw))
    X[:, :K_PLUS] = rng.standard_normal((N, K_PLUS))
    Z = np.zeros((N, Kw), dtype=bool)
    Z[:, :K_PLUS] = True
    W = np.zeros((M, Kw))
    W[:, :K_PLUS] = 0.5 * rng.standard_normal((M, K_PLUS))
    P = X @ W.T
    Phi = np.hstack([np.cos(P), np.sin(P), np.ones((N, 1))]) / np.array([math.sqrt(M)] * (2 * M) + [1.0])
    beta = np.vstack([rng.standard_normal((2 * M, J)), -np.ones((1, J))])
    p = 1.0 / (1.0 + np.exp(-(Phi @ beta)))
    y = rng.negative_binomial(2.0, 1.0 - p).astype(np.float32)
    mu = np.zeros((M, Kw))
    Sigma = np.broadcast_to(np.eye(Kw), (M, Kw, Kw)).copy()
    Sigma[0, :K_PLUS, :K_PLUS] = 0.25 * np.eye(K_PLUS)
    pi = np.full(Kw, 0.5)
    pi[:K_PLUS] = 0.9
    return {
        "X": X, "Z": Z, "W": W, "mu": mu, "Sigma": Sigma, "zeta": np.zeros(M, np.int32), "pi": pi,
        "eta": np.float64(1.0), "alpha": np.float64(2.0), "beta": beta, "r": np.full(J, 2.0),
        "y": y, "offset": np.zeros(N),
    }  # fmt: skip


def abstract(state: dict) -> dict:
    return {k: jax.ShapeDtypeStruct(np.shape(v), np.asarray(v).dtype) for k, v in state.items()}


def shapes(N: int, J: int, cfg) -> dict:
    """The state's shapes and dtypes at `N` x `J` without simulating it."""
    small = simulate(4, 3, cfg)
    out = {}
    for k, v in small.items():
        v = np.asarray(v)
        shape = tuple(N if (i == 0 and k in ("X", "Z", "y", "offset")) else s for i, s in enumerate(v.shape))
        if k in ("y", "beta", "r"):
            shape = shape[:-1] + (J,)
        out[k] = jax.ShapeDtypeStruct(shape, v.dtype)
    return out


# ------------------------------------------------------------------------------------------
# The stages, each as the sweep calls it (src/ibp_rflvm/jax_backend/sweep.py)


def _pieces(s, cfg):
    dlik = cfg.dlik
    params = LikelihoodParams(beta=s["beta"], r=s["r"])
    data = DeviceData(s["y"], s["offset"])
    const = dlik.row_constants(params, data)
    # sweep.make_scorers, written out so that every product is a row_matmul of one group
    def times(A, B):
        return rowsum.row_matmul(A, B, dlik.row_groups, dlik.replicated)

    def score(P):
        return dlik.row_loglik(times(programs.features_of(P, cfg.bias, cfg.M), s["beta"]), slice(None),
                               const, params, data)  # fmt: skip

    def score_row(p, i):
        psi = programs.features_of(p[None, :], cfg.bias, cfg.M) @ s["beta"]
        return dlik.row_loglik(psi, jnp.reshape(i, (1,)), const, params, data)[0]

    def score_psi(psi):
        return dlik.row_loglik(psi, slice(None), const, params, data)

    return params, data, const, times, score, score_row, score_psi


def stage_start(key, s, cfg):
    """The sweep's start: ``P = (X Z) W^T`` and every row's log-likelihood."""
    *_, times, score, _, _ = _pieces(s, cfg)
    P = times(s["X"] * s["Z"], s["W"].T)
    return score(P)


def stage_z(key, s, cfg):
    """The moves of ``Z``: Gibbs pass, flips, transfers, absorbs, singletons, sticks, alpha."""
    *_, times, score, score_row, _ = _pieces(s, cfg)
    X, Z, W = s["X"], s["Z"], s["W"]
    P = times(X * Z, W.T)
    ll = score(P)
    active = jnp.any(Z, axis=0)
    zs = zmoves.ZState(X, Z, P, ll, W, s["mu"], s["Sigma"])
    k_g, k_f, k_p, k_t, k_a, k_s, k_pi, k_al = jax.random.split(key, 8)
    zs, _, _ = zmoves.gibbs_columns(k_g, zs, s["pi"], active, score)
    zs, _, _ = zmoves.flip_columns(k_f, zs, s["pi"], active, cfg.flip_scale, score)
    pairs = zmoves.aligned_pairs(k_p, zs.W, active, cfg.transfer_min_cos, cfg.pairs_per_dim)
    zs, _, _ = zmoves.transfers(k_t, zs, s["pi"], pairs, score)
    zs, _, _ = zmoves.absorbs(k_a, zs, s["pi"], pairs, score)
    rate = s["alpha"] * cfg.new_rate_per_alpha
    zs, *_ = zmoves.singletons(k_s, zs, s["zeta"], rate, cfg.flip_scale, cfg.lam0, cfg.width, score_row)
    pi = zmoves.draw_sticks(k_pi, zs.Z, cfg.sticks)
    alpha = jax.random.gamma(k_al, 1.0 + jnp.sum(active), dtype=jnp.float64) / (1.0 + cfg.harmonic)
    return zs, pi, alpha


def _start_pll(s, cfg, times, score):
    P = times(s["X"] * s["Z"], s["W"].T)
    return P, score(P)


def stage_x(key, s, cfg):
    """``X`` by elliptical slice sampling, the rows still searching gathered (sweep.x_loglik)."""
    params, data, const, times, score, _, _ = _pieces(s, cfg)
    dlik = cfg.dlik
    Zf = s["Z"].astype(jnp.float64)
    W, beta = s["W"], s["beta"]
    P, ll = _start_pll(s, cfg, times, score)

    def x_loglik(prop, rows):
        if isinstance(rows, slice):
            P_prop = times(prop * Zf, W.T)
            return score(P_prop), (P_prop,)
        P_prop = (prop * Zf[rows]) @ W.T
        psi = programs.features_of(P_prop, cfg.bias, cfg.M) @ beta
        return dlik.row_loglik(psi, rows, const, params, data), (P_prop,)

    return elliptical_slice_rows(key, s["X"], x_loglik, ll, (P,))


def stage_w(key, s, cfg):
    """Each frequency by elliptical slice sampling (frequencies.ess_frequencies)."""
    *_, times, score, _, score_psi = _pieces(s, cfg)
    P, _ = _start_pll(s, cfg, times, score)
    active = jnp.any(s["Z"], axis=0)
    H = s["X"] * s["Z"]
    return ess_frequencies(key, s["W"], s["zeta"], s["mu"], s["Sigma"], active, H, P, s["beta"], score_psi,
                           cfg)  # fmt: skip


def hmc_value_and_grad(s, cfg):
    """``jax.value_and_grad`` of the summed row log-likelihood with respect to ``(H, W)``."""
    *_, times, _, _, score_psi = _pieces(s, cfg)
    dlik = cfg.dlik

    def total(H, W):
        psi = times(programs.features_of(times(H, W.T), cfg.bias, cfg.M), s["beta"])
        return rowsum.row_sum(score_psi(psi), dlik.row_groups, dlik.replicated)

    return jax.value_and_grad(total, argnums=(0, 1))(s["X"] * s["Z"], s["W"])


def stage_scale(key, s, cfg):
    dlik = cfg.dlik
    active = jnp.any(s["Z"], axis=0)

    def column_sums(v):
        return rowsum.row_sum(v, dlik.row_groups, dlik.replicated)

    return scale_moves(key, s["X"], s["Z"], s["W"], s["zeta"], active, cfg.lam0, column_sums=column_sums)


def stage_dp(key, s, cfg):
    active = jnp.any(s["Z"], axis=0)
    return dp_step(key, s["W"], active, s["zeta"], s["eta"], cfg.lam0, *cfg.eta_prior)


def _block_inputs(s, cfg):
    P = s["X"] * s["Z"] @ s["W"].T  # the block's rows of Phi (the sweep holds Phi already)
    Phi = programs.features_of(P, cfg.bias, cfg.M)
    obs = ~jnp.isnan(s["y"])
    y = jnp.where(obs, s["y"], 0.0).astype(jnp.float64)
    return Phi, obs, y


def block_pg(key, s, cfg):
    """One block's Polya-gamma draws (likelihoods.LogisticPGDevice.draw_beta's block)."""
    Phi, obs, y = _block_inputs(s, cfg)
    x = Phi @ s["beta"] + s["offset"][:, None]
    b = jnp.where(obs, y + s["r"][None, :], 0.0)
    return draw_pg(key, b, x)


def block_weights(key, s, omega, cfg):
    """One block's share of the weights' update given its draws: precisions and ``Phi^T kappa``."""
    Phi, obs, y = _block_inputs(s, cfg)
    b = jnp.where(obs, y + s["r"][None, :], 0.0)
    kappa = jnp.where(obs, y - 0.5 * b, 0.0) - omega * s["offset"][:, None]
    return precisions(Phi, omega), Phi.T @ kappa


def weights_draw(key, Pr, rhs):
    """The weights' batched Cholesky and solves (once a sweep)."""
    return gaussian_draw(key, Pr + jnp.eye(Pr.shape[1]), rhs)


def block_dispersion(key, s, cfg):
    """One block's CRT tables and softplus sums (likelihoods.NegBinomDevice.update's block)."""
    Phi, obs, _ = _block_inputs(s, cfg)
    x = Phi @ s["beta"] + s["offset"][:, None]
    tables = crt_column_totals(key, s["y"], obs, s["r"])
    return tables, jnp.sum(jnp.where(obs, jnp.logaddexp(0.0, x), 0.0), axis=0)


def stage_final(key, s, cfg):
    """The last log-likelihood: features, ``psi``, row constants, rows, total."""
    params, data, _, times, _, _, _ = _pieces(s, cfg)
    Phi = programs.features_of(times(s["X"] * s["Z"], s["W"].T), cfg.bias, cfg.M)
    const = cfg.dlik.row_constants(params, data)
    ll = cfg.dlik.row_loglik(times(Phi, s["beta"]), slice(None), const, params, data)
    return rowsum.row_sum(ll, cfg.dlik.row_groups, cfg.dlik.replicated)


ROW_STAGES = {"start": stage_start, "z_moves": stage_z, "x_ess": stage_x, "w_ess": stage_w,
              "scale": stage_scale, "dp": stage_dp, "final_loglik": stage_final}  # fmt: skip
BLOCK_STAGES = {"pg_draws": block_pg, "dispersion": block_dispersion}


def block_rows(N: int) -> tuple[int, int]:
    """(rows of a block, blocks) of :func:`rowsum.blocked_row_sum` at `N` rows."""
    groups = rowsum.row_groups(N)
    per = N // groups
    rows = min(rowsum.BLOCK_ROWS, per)
    return rows, groups * -(-per // rows)


# ------------------------------------------------------------------------------------------
# Commands


def verify(args) -> None:
    x = jax.ShapeDtypeStruct((1000, 1000), jnp.float64)

    def fori(n):
        return lambda a: _FORI(0, n, lambda i, s: jnp.tanh(s @ a), a)

    def whl(a):
        return _WHILE(lambda c: c[0] < jnp.sum(c[1]), lambda c: (c[0] + 1, jnp.tanh(c[1] @ a)), (0.0, a))[1]

    def cond(a):
        return lax.cond(a[0, 0] > 0, lambda: a @ a, lambda: a)

    one_product = 2 * 1000**3
    for name, fn in [("fori_loop 1 trip", fori(1)), ("fori_loop 10 trips", fori(10)),
                     ("while_loop", whl), ("cond (product or identity)", cond)]:  # fmt: skip
        c = cost_of(fn, x)
        print(json.dumps({"case": name, **c, "products_counted": c["flops"] / one_product}), flush=True)


def count(args) -> None:
    """Every loop's trips per stage call, each stage run once for real on the CPU."""
    _, cfg = config()
    key = jax.random.key(1)
    out = {"rows": args.rows, "block_rows": args.block_rows, "stages": {}}
    todo = args.stages or list(ROW_STAGES) + list(BLOCK_STAGES)
    for name in todo:
        if name in ROW_STAGES:
            st = {k: jnp.asarray(v) for k, v in simulate(args.rows, J_COLS, cfg).items()}
            fn = partial(ROW_STAGES[name], cfg=cfg)
        elif name in BLOCK_STAGES:
            st = {k: jnp.asarray(v) for k, v in simulate(args.block_rows, J_COLS, cfg, seed=2).items()}
            fn = partial(BLOCK_STAGES[name], cfg=cfg)
        else:
            continue
        Loops.reset("count")
        t0 = time.perf_counter()
        jax.block_until_ready(jax.jit(fn)(key, st))
        jax.effects_barrier()
        out["stages"][name] = {"trips": dict(Loops.trips), "static": dict(Loops.static),
                               "seconds_cpu": time.perf_counter() - t0}  # fmt: skip
        print(json.dumps({"stage": name, "trips": dict(Loops.trips)}), flush=True)
        Loops.reset(None)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1))


def weighted(fn, args, trips: dict, static_override: dict | None = None) -> dict:
    """``C + sum_s (T_s - 1) own_s`` (module docstring) and each loop's part."""
    Loops.reset("double", None)
    base = cost_of(fn, *args)
    keys, parents, static = list(Loops.parent), dict(Loops.parent), dict(Loops.static)
    delta = {}
    for k in keys:
        Loops.reset("double", k)
        c = cost_of(fn, *args)
        delta[k] = {m: c[m] - base[m] for m in base}
    Loops.reset(None)
    total = dict(base)
    loops = {}

    def total_trips(k) -> float:
        """Executions of `k`'s body per stage call: counted totals for while loops; a fori_loop's
        static trips (K+ for the slot visits, whose cond skips the unused slots) times its parent's."""
        outer = 1.0 if parents[k] is None else total_trips(parents[k])
        if static_override and any(k.startswith(p) for p in static_override):
            return outer * next(v for p, v in static_override.items() if k.startswith(p))
        if k in static:
            return outer * static[k]
        if k in trips:
            return trips[k]
        # a loop the count did not reach at its size (a deeper level): its site's last count
        site = k.split("#")[0]
        same = [v for kk, v in trips.items() if kk.split("#")[0] == site]
        return same[-1] if same else 1.0

    for k in keys:
        children = [c for c in keys if parents[c] == k]
        own = {m: delta[k][m] - sum(delta[c][m] for c in children) for m in base}
        T = total_trips(k)
        for m in base:
            total[m] += (T - 1) * own[m]
        loops[k] = {"trips": T, "own_flops": own["flops"], "own_bytes": own["bytes accessed"]}
    return {"once": base, "weighted": total, "loops": loops}


def bound(c: dict, peak: float) -> float:
    return max((c["flops"] + c["transcendentals"]) / peak, c["bytes accessed"] / BANDWIDTH)


def costs(args) -> None:
    _, cfg = config()
    counted = json.loads(Path(args.trips).read_text())
    block_counts = {int(counted["block_rows"]): counted}
    for item in args.block_trips or []:
        rows, path = item.split("=")
        block_counts[int(rows)] = json.loads(Path(path).read_text())
    key = jax.random.key(1)
    # the Z moves visit all width slots; the cond leaves the inactive ones at once: K+ trips
    visit = {"ibp_device.py:109": K_PLUS}
    result = {}
    for N in args.rows:
        st = shapes(N, J_COLS, cfg)
        rows_b, n_blocks = block_rows(N)
        sb = shapes(rows_b, J_COLS, cfg)
        near = min(block_counts, key=lambda r: abs(r - rows_b))
        stages = {}
        for name, fn in ROW_STAGES.items():
            trips = counted["stages"].get(name, {}).get("trips", {})
            stages[name] = weighted(partial(fn, cfg=cfg), (key, st), trips, visit)
            print(json.dumps({"N": N, "stage": name, **stages[name]["weighted"]}), flush=True)
        one = cost_of(partial(hmc_value_and_grad, cfg=cfg), st)
        stages["hmc"] = {"weighted": {m: cfg.hmc_leapfrog * v for m, v in one.items()}, "once": one}
        for name, fn in BLOCK_STAGES.items():
            trips = block_counts[near]["stages"].get(name, {}).get("trips", {})
            w = weighted(partial(fn, cfg=cfg), (key, sb), trips)
            w["weighted"] = {m: n_blocks * v for m, v in w["weighted"].items()}
            w["blocks"] = n_blocks
            w["trips_from_block_rows"] = near
            stages[name] = w
            print(json.dumps({"N": N, "stage": name, **w["weighted"]}), flush=True)
        L = 2 * cfg.M + 1
        omega = jax.ShapeDtypeStruct((rows_b, J_COLS), jnp.float64)
        wb = cost_of(partial(block_weights, cfg=cfg), key, sb, omega)
        wd = cost_of(weights_draw, key, jax.ShapeDtypeStruct((J_COLS, L, L), jnp.float64),
                     jax.ShapeDtypeStruct((L, J_COLS), jnp.float64))  # fmt: skip
        stages["weights"] = {"weighted": {m: n_blocks * wb[m] + wd[m] for m in wb}, "blocks": n_blocks}
        for v in stages.values():
            v["bound_s"] = bound(v["weighted"], PEAK_FP64)
            v["bound_s_tc"] = bound(v["weighted"], PEAK_FP64_TC)
        total = sum(v["bound_s"] for v in stages.values())
        result[N] = {"stages": stages, "total_bound_s": total, "goal_s": GOALS.get(N)}
        print(json.dumps({"N": N, "total_bound_s": total}), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1))
    table(result)


def table(result: dict) -> None:
    Ns = sorted(int(n) for n in result)
    names = list(result[Ns[0]]["stages"] if Ns[0] in result else result[str(Ns[0])]["stages"])
    get = lambda N: result[N] if N in result else result[str(N)]  # noqa: E731
    head = "| stage | " + " | ".join(f"GFLOP / transc. G / GB at {N:,} | bound ms" for N in Ns) + " |"
    print(head)
    print("|---|" + "---|---|" * len(Ns))
    for name in names:
        cells = []
        for N in Ns:
            v = get(N)["stages"][name]
            w = v["weighted"]
            cells.append(f"{w['flops'] / 1e9:,.1f} / {w['transcendentals'] / 1e9:,.2f} / "
                         f"{w['bytes accessed'] / 1e9:,.2f} | {1e3 * v['bound_s']:,.2f}")  # fmt: skip
        print(f"| {name} | " + " | ".join(cells) + " |")
    print("| total | " + " | ".join(f"| {1e3 * get(N)['total_bound_s']:,.1f}" for N in Ns) + " |")


def main() -> None:
    jax.config.update("jax_enable_x64", True)
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("verify")
    c = sub.add_parser("count")
    c.add_argument("--rows", type=int, default=10_000)
    c.add_argument("--block-rows", type=int, default=1250)
    c.add_argument("--stages", nargs="*")
    c.add_argument("--out", required=True)
    k = sub.add_parser("costs")
    k.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000])
    k.add_argument("--trips", required=True)
    k.add_argument("--block-trips", nargs="*")
    k.add_argument("--out", required=True)
    args = p.parse_args()
    {"verify": verify, "count": count, "costs": costs}[args.command](args)


if __name__ == "__main__":
    main()
