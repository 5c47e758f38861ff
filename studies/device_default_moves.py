"""Issue 65, item 1: ``backend="jax"`` with the numba sweep's default moves (elliptical slice
sampling of the frequencies, then the HMC move of all used latent coordinates and frequencies at
once, then the scale move), on the CPU. The device runs all three
(:mod:`ibp_rflvm.jax_backend.hmc_device` for the HMC move); the estimator gives the HMC move
``hmc_leapfrog`` = 10 leapfrog steps and adapts its step factor over the burn-in on either
backend. The device's Gibbs pass of ``Z`` alternates each column with its stick
(:data:`ibp_rflvm.jax_backend.ibp_device.STICK_ROUNDS` rounds, since 2026-11-29): without it the
device's ``Z`` left the all-on start over tens of sweeps and its held-out LPD at 20 sweeps lagged
numba's (docs/record/jax_backend.md).

Data: the simulated NB counts of ``studies/frequency_moves.py`` (2,000 x 500, three latent
dimensions, generating frequencies ``N(0, 0.5^2 I)``), 20% of the entries held out
(``holdout_mask``, seed 0); every fit sees the same training entries.

``PYTHONPATH=src OPENBLAS_NUM_THREADS=1 python studies/device_default_moves.py fit --backend jax --seed S``
    One fit of ``--n-iter`` sweeps (20; the second half kept) with the estimator's defaults on
    that backend; prints one JSON line: the held-out LPD per entry (``score``), the share of
    frequencies the frequency move changed per kept sweep (``w_moved / M``), the share of
    frequency rows that changed between consecutive kept samples, each row compared as a
    multiset of its coordinates (so up to the sweep's permutation of dimensions; a change of
    ``K+`` counts as a change of every row), ``K+``, the fit's seconds (for ``jax`` after a
    2-sweep fit of the same shapes has compiled the programs), and the scale move's acceptance
    rate at the final state (20 moves from it, each of 3 proposals per dimension; the device's
    function for ``jax``, the host's for ``numba``), ``hmc_leapfrog`` and the HMC step factor at
    the end of the fit (``hmc_step_factor``: the one the burn-in adapted; ``None`` without the
    move). ``--no-hmc`` (numba): the default sweep without its HMC move (elliptical slice
    sampling and the scale move: the device's default before it had the HMC move), to tell the
    HMC move's part in the figures and to compare with results from before it.

``... device_default_moves.py time [--sweeps 4]``
    Seconds per device sweep on the CPU (one compiled step, timed after a first call that
    compiles it) under the device's first default (``frequency_update="mh"``, no scale move),
    the elliptical slice move alone, the elliptical slice move and the scale move, those and
    the HMC move (10 leapfrog steps, at the base step: no adaptation in a timing) with one
    stick round, and the default (the same with the stick rounds), from the same start.

``... device_default_moves.py table FILE``
    Per backend: the mean of each figure over the seeds, and for the LPD its standard error
    over seeds and the Welch difference jax - numba with its standard error.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from frequency_moves import simulated_nb  # noqa: E402
from ibp_rflvm import IBPRFLVM, holdout_mask, model  # noqa: E402
from ibp_rflvm.samplers import scale  # noqa: E402


def _data():
    return holdout_mask(simulated_nb(0), fraction=0.2, random_state=0)


def _estimator(backend: str, seed: int, n_iter: int, **kw) -> IBPRFLVM:
    return IBPRFLVM(likelihood="negbinom", n_iter=n_iter, random_state=seed, backend=backend, **kw)


def _row_moves(samples) -> list[float]:
    """Share of frequency rows that changed between consecutive kept samples, each row as a
    sorted vector (the dimensions' order is not the chain's business)."""
    out = []
    for a, b in zip(samples[:-1], samples[1:], strict=True):
        if a.W.shape != b.W.shape:
            out.append(1.0)
            continue
        same = np.all(np.sort(a.W, axis=1) == np.sort(b.W, axis=1), axis=1)
        out.append(float(1.0 - same.mean()))
    return out


def _scale_acceptance(state, backend: str, lam0: float, seed: int, repeats: int = 20) -> float:
    """Acceptance rate of the scale move at `state` (each of `repeats` moves from it)."""
    proposed = accepted = 0
    if backend == "jax":
        from ibp_rflvm.jax_backend import jax, scale_device

        active = np.ones(state.X.shape[1], dtype=bool)
        move = jax.jit(scale_device.scale_moves)
        for r in range(repeats):
            _, _, p, a = move(jax.random.key(seed * 1000 + r), state.X, state.Z != 0, state.W,
                              state.zeta.astype(np.int32), active, lam0)  # fmt: skip
            proposed, accepted = proposed + int(p), accepted + int(a)
    else:
        rng = np.random.default_rng(seed)
        for _ in range(repeats):
            p, a = scale.scale_moves(rng, state.X.copy(), state.Z, state.W.copy(), state.zeta, lam0)
            proposed, accepted = proposed + p, accepted + a
    return accepted / max(proposed, 1)


def _step_factor(tuning: dict) -> float | None:
    """The HMC step factor in a state's `tuning` (``None`` when the sweep has no HMC move)."""
    factor = tuning.get("hmc_step_factor")
    return None if factor is None else float(factor)


def fit(args) -> None:
    Y_train, Y_test = _data()
    if args.no_hmc:
        # The numba default sweep without its HMC move: the device's default before the device
        # had the move (elliptical slice sampling and the scale move).
        IBPRFLVM._hmc_leapfrog = lambda self, paper, lik: 0
    if args.backend == "jax":
        _estimator("jax", args.seed, 2).fit(Y_train)  # compiles the programs of these shapes
    est = _estimator(args.backend, args.seed, args.n_iter)
    t0 = time.perf_counter()
    est.fit(Y_train)
    seconds = time.perf_counter() - t0
    post = est.posterior_
    M = est.n_frequencies
    kept = slice(args.n_iter - post.n_kept, None)
    w_moved = post.moves.w_moved[0, kept] / M
    rows = _row_moves(post.chains[0].record.samples)
    spec = est.spec_
    out = {
        "backend": args.backend + ("-nohmc" if args.no_hmc else ""), "seed": args.seed,
        "n_iter": args.n_iter, "frequency_update": spec.frequency_update, "scale_move": spec.scale_move,
        "hmc_leapfrog": spec.hmc_leapfrog, "hmc_step_factor": _step_factor(est.state_.tuning),
        "lpd": float(est.score(Y_test)), "w_moved_share": float(np.mean(w_moved)),
        "w_moved_share_min": float(np.min(w_moved)), "row_moved_share": float(np.mean(rows)),
        "row_moved_share_min": float(np.min(rows)), "k_plus": float(np.mean(post.kept("n_active"))),
        "seconds": seconds, "seconds_per_sweep": seconds / args.n_iter,
        "scale_acceptance": _scale_acceptance(est.state_, args.backend, spec.lam0, args.seed),
    }  # fmt: skip
    print(json.dumps(out), flush=True)


def timing(args) -> None:
    import ibp_rflvm.jax_backend.kernel  # noqa: F401  (registers the device target)
    from ibp_rflvm.targets import make_target

    Y_train, _ = _data()
    base = _estimator("jax", 0, 20)._spec()
    data = model.Data.from_array(Y_train, base.likelihood)
    # (frequency_update, scale_move, hmc_leapfrog); the estimator's spec has the HMC move on,
    # adapted over the burn-in: no variant adapts its step in a timing.
    # The stick rounds of the Gibbs pass of Z are the device's constant, set per variant.
    rounds = ibp_rflvm.jax_backend.kernel.STICK_ROUNDS
    variants = {
        "mh, no scale move (the first device default)": ("mh", False, 0, 1),
        "ess, no scale move": ("ess", False, 0, 1),
        "ess and the scale move (the previous default)": ("ess", True, 0, 1),
        "ess, the scale move and HMC, one stick round (the default of 2026-11-28)": ("ess", True, 10, 1),
        f"ess, the scale move, HMC and {rounds} stick rounds (the default)": ("ess", True, 10, rounds),
    }
    start = None
    for name, (update, scale_move, leapfrog, n_rounds) in variants.items():
        ibp_rflvm.jax_backend.kernel.STICK_ROUNDS = n_rounds
        settings = {"frequency_update": update, "scale_move": scale_move, "hmc_leapfrog": leapfrog}
        spec = replace(base, **settings, hmc_adapt_sweeps=0)
        kernel = model.build_sweep(spec, make_target(spec, data))
        if start is None:
            start = kernel.init(np.random.default_rng(0))
        rng = np.random.default_rng(1)
        state, _ = kernel.step(rng, start)  # compiles
        t0 = time.perf_counter()
        for _ in range(args.sweeps):
            state, _ = kernel.step(rng, state)
        per = (time.perf_counter() - t0) / args.sweeps
        print(json.dumps({"variant": name, "seconds_per_sweep": per, "sweeps": args.sweeps}), flush=True)


def table(args) -> None:
    rows = [json.loads(line) for line in Path(args.file).read_text().splitlines() if line.startswith("{")]
    lpd = {}
    for backend in ("jax", "numba", "numba-nohmc"):
        mine = [r for r in rows if r.get("backend") == backend]
        if not mine:
            continue
        lpd[backend] = np.array([r["lpd"] for r in mine])
        print(f"{backend}: seeds {[r['seed'] for r in mine]}")
        for key in ("lpd", "w_moved_share", "w_moved_share_min", "row_moved_share", "row_moved_share_min",
                    "k_plus", "seconds_per_sweep", "scale_acceptance", "hmc_step_factor"):  # fmt: skip
            if any(r.get(key) is None for r in mine):
                continue  # the HMC step factor of a fit without the move, or from before it was recorded
            values = np.array([r[key] for r in mine])
            se = values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else float("nan")
            listed = np.round(values, 4).tolist()
            print(f"  {key}: mean {values.mean():.4f} (SE over seeds {se:.4f}; {listed})")
    for other in ("numba", "numba-nohmc"):
        if "jax" in lpd and other in lpd:
            a, b = lpd["jax"], lpd[other]
            se = np.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
            gap = a.mean() - b.mean()
            print(f"LPD jax - {other}: {gap:+.4f}, Welch SE {se:.4f}, t {gap / se:.2f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fit")
    f.add_argument("--backend", choices=("jax", "numba"), required=True)
    f.add_argument("--seed", type=int, default=0)
    f.add_argument("--n-iter", type=int, default=20)
    f.add_argument("--no-hmc", action="store_true", help="numba: the default sweep without its HMC move")
    t = sub.add_parser("time")
    t.add_argument("--sweeps", type=int, default=4)
    s = sub.add_parser("table")
    s.add_argument("file")
    args = p.parse_args()
    {"fit": fit, "time": timing, "table": table}[args.command](args)


if __name__ == "__main__":
    main()
