"""Where the device step's time goes: each stage of :func:`ibp_rflvm.jax_backend.sweep.sweep_step`
compiled and timed on its own, from the state a chain reaches after a few sweeps.

Run by hand (a CPU or a GPU)::

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/profile_device_step.py --size 2000x500

The stages, in the sweep's order: the Gibbs pass of ``Z`` given the sticks, the joint flips, the
pair moves (transfers and absorb/emit), the singleton births and deaths, the elliptical slice
sampling of ``X``, the frequencies' Metropolis-Hastings, the Dirichlet-process mixture and the
likelihood's update (weights, then the dispersions). Each is timed as the median of `--reps`
calls after its compiling call; the whole step is timed the same way, and the stages' sum is
printed beside it (the step fuses across stages, so the two differ a little).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scale import simulate  # noqa: E402
from ibp_rflvm import IBPRFLVM, model  # noqa: E402
from ibp_rflvm.jax_backend import ibp_device as zm  # noqa: E402
from ibp_rflvm.jax_backend import jax  # noqa: E402
from ibp_rflvm.jax_backend.dp_device import dp_step  # noqa: E402
from ibp_rflvm.jax_backend.ess import elliptical_slice_rows  # noqa: E402
from ibp_rflvm.jax_backend.kernel import to_device  # noqa: E402
from ibp_rflvm.jax_backend.programs import features_of  # noqa: E402
from ibp_rflvm.jax_backend.sweep import make_scorers, mh_frequencies, rows_times, sweep_step  # noqa: E402
from ibp_rflvm.targets import make_target  # noqa: E402

jnp = jax.numpy


def timed(fn, *args, reps: int) -> float:
    jax.block_until_ready(fn(*args))  # compiles
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", default="2000x500")
    p.add_argument("--warm", type=int, default=3, help="sweeps run before the state is profiled")
    p.add_argument("--reps", type=int, default=3)
    a = p.parse_args()
    n, j = (int(v) for v in a.size.split("x"))
    Y = simulate(n, j)
    spec = replace(IBPRFLVM(likelihood="negbinom", random_state=0)._spec(), backend="jax", n_dims=25)
    target = make_target(spec, model.Data.from_array(Y, spec.likelihood))
    kernel = model.build_sweep(spec, target)
    rng = np.random.default_rng(0)
    state = kernel.run(rng, kernel.init(rng), a.warm)[0]
    cfg, data, dlik = target.cfg, target.data, target.dlik
    st = to_device(state, cfg, dlik)
    key = jax.random.key(1)
    const = dlik.row_constants(st.params, data)
    beta = st.params.beta
    active = jnp.any(st.Z, axis=0)

    def zstate(st):
        score, _ = make_scorers(beta, const, st.params, data, cfg)
        P = rows_times(st.X * st.Z, st.W.T, cfg)
        return zm.ZState(st.X, st.Z, P, score(P), st.W, st.mu, st.Sigma), score

    def gibbs(st):
        zs, score = zstate(st)
        return zm.gibbs_columns(key, zs, st.pi, active, score)[:2]

    def flips(st):
        zs, score = zstate(st)
        return zm.flip_columns(key, zs, st.pi, active, cfg.flip_scale, score)

    def pairs(st):
        zs, score = zstate(st)
        pr = zm.aligned_pairs(key, zs.W, active, cfg.transfer_min_cos, cfg.pairs_per_dim)
        zs = zm.transfers(key, zs, st.pi, pr, score)[0]
        return zm.absorbs(key, zs, st.pi, pr, score)

    def singletons(st):
        zs, _ = zstate(st)
        _, score_row = make_scorers(beta, const, st.params, data, cfg)
        rate = st.alpha * cfg.new_rate_per_alpha
        return zm.singletons(key, zs, st.zeta, rate, cfg.flip_scale, cfg.lam0, cfg.width, score_row)

    def ess(st):
        zs, score = zstate(st)
        Zf = st.Z.astype(jnp.float64)

        def x_loglik(prop, rows):
            if isinstance(rows, slice):
                P = rows_times(prop * Zf, st.W.T, cfg)
                return score(P), (P,)
            P = (prop * Zf[rows]) @ st.W.T
            psi = features_of(P, cfg.bias, cfg.M) @ beta
            return dlik.row_loglik(psi, rows, const, st.params, data), (P,)

        return elliptical_slice_rows(key, st.X, x_loglik, zs.ll, (zs.P,))

    def mh(st):
        zs, _ = zstate(st)

        def score_psi(psi):
            return dlik.row_loglik(psi, slice(None), const, st.params, data)

        H = st.X * st.Z.astype(jnp.float64)
        return mh_frequencies(key, st.W, st.zeta, st.mu, st.Sigma, active, H, zs.P, beta, score_psi, cfg)

    def dp(st):
        return dp_step(key, st.W, active, st.zeta, st.eta, cfg.lam0, *cfg.eta_prior)

    def likelihood(st):
        P = rows_times(st.X * st.Z, st.W.T, cfg)
        return dlik.update(key, features_of(P, cfg.bias, cfg.M), st.params, data)

    stages = {"Z Gibbs": gibbs, "joint flips": flips, "pair moves": pairs, "singletons": singletons,
              "X (ESS)": ess, "W (MH)": mh, "DP mixture": dp, "likelihood update": likelihood}  # fmt: skip
    print(f"jax {jax.__version__} on {jax.devices()[0]}; {a.size} NB, K+ {int(jnp.sum(active))}")
    total = 0.0
    for name, fn in stages.items():
        t = timed(jax.jit(fn), st, reps=a.reps)
        total += t
        print(f"{name:<18} {t:8.3f} s", flush=True)
    whole = timed(jax.jit(lambda s: sweep_step(key, s, data, cfg)), st, reps=a.reps)
    print(f"{'sum of stages':<18} {total:8.3f} s\n{'whole step':<18} {whole:8.3f} s")


if __name__ == "__main__":
    main()
