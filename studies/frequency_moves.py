"""The frequency moves compared (issue 56; docs/record/sampler.md section 12).

``PYTHONPATH=src OPENBLAS_NUM_THREADS=1 python studies/frequency_moves.py candidates``
    From a state of the default sweep (MH frequencies, 15 sweeps) on simulated NB counts
    (2,000 x 500, generating frequencies ``N(0, 0.5^2 I)``: lengthscale 2), time each candidate
    update of all ``M`` frequencies on copies of the same state, three updates in a row: the
    paper's MH, elliptical slice sampling (with and without the bound's screen), and
    preconditioned Crank-Nicolson at steps ``b`` of 0.02, 0.05 and 0.2 (all but one screened by
    the bound of :mod:`ibp_rflvm.targets.frequency_bound`). Movement: the share of ``w_m`` that
    changed and the squared Mahalanobis distance (under the component's ``Sigma_k``) moved per
    second.

``... frequency_moves.py heldout DATASET --n-iter N [--seed S]``
    For each of ``mh`` and ``ess``: two chains, from 2 and 12 dimensions (``n_chains=2``), 20%
    of the entries held out; prints the stacked held-out LPD per entry (and perplexity for
    counts), R-hat over the second half of the log-likelihood and of ``K+``, seconds per
    sweep, the share of frequencies that moved per sweep and the root mean square of each chain's
    final frequencies. DATASET: cancer, mice, congress,
    montreal, or ``sim`` (the simulated NB counts above).
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import time
import warnings

import arviz as az
import numpy as np

from ibp_rflvm import IBPRFLVM, holdout_mask, model
from ibp_rflvm.datasets import load
from ibp_rflvm.likelihoods import make_likelihood
from ibp_rflvm.targets import factorised_state as fsm
from ibp_rflvm.targets.base import Work


def simulated_nb(seed: int = 0, N: int = 2000, J: int = 500, K: int = 3, M: int = 50) -> np.ndarray:
    """NB counts from the model: ``x ~ N(0, I_3)``, frequencies ``N(0, 0.5^2 I)`` (lengthscale 2),
    weights ``N(0, 1)``, bias -1, ``r = 2``."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N, K))
    W = 0.5 * rng.standard_normal((M, K))
    Phi = np.hstack([np.cos(X @ W.T), np.sin(X @ W.T)]) / math.sqrt(M)
    psi = Phi @ rng.standard_normal((2 * M, J)) - 1.0
    p = 1.0 / (1.0 + np.exp(-psi))
    return rng.negative_binomial(2.0, 1.0 - p).astype(float)


def _pcn(rng, W, zeta, mu, Sigma, block, b: float) -> int:
    """Preconditioned Crank-Nicolson: ``w' = mu + sqrt(1 - b^2)(w - mu) + b L e`` is reversible
    with respect to ``N(mu, Sigma)``, so the acceptance ratio is the likelihood ratio alone."""
    chols = np.linalg.cholesky(Sigma)
    moved = 0
    for m in range(W.shape[0]):
        k = zeta[m]
        step = b * (chols[k] @ rng.standard_normal(W.shape[1]))
        w_prop = mu[k] + math.sqrt(1.0 - b * b) * (W[m] - mu[k]) + step
        floor = block.ll + math.log(rng.random())
        ll, pieces = block.evaluate(m, w_prop, floor)  # the bound screens as for MH
        if ll > floor:
            block.commit(m, w_prop, pieces)
            moved += 1
    return moved


def candidates() -> None:
    Y = simulated_nb()
    lik = make_likelihood("negbinom")
    spec = model.ModelSpec(n_dims=3, likelihood=lik, bias=True)
    data = model.Data.from_array(Y, lik)
    rng = np.random.default_rng(0)
    state = model.init_state(rng, data, spec)
    for _ in range(15):
        state, _info = model.sweep(rng, state, data, spec)
    target = model.make_target(spec, data)
    base = Work.copy_of(state)
    view0 = target.view(base, state.params)
    prec = np.linalg.inv(state.Sigma)
    rows = []
    runs = [("mh", None), ("ess", None), ("ess-unbounded", None), ("pcn", 0.02), ("pcn", 0.05), ("pcn", 0.2)]
    for name, b in runs:
        w = Work.copy_of(state)
        fs = copy.deepcopy(view0.fs)
        H = w.X * w.Z
        r = np.random.default_rng(1)
        seconds = dist = changed = evals = 0.0
        for _ in range(3):
            W0 = w.W.copy()
            t0 = time.perf_counter()
            if name == "mh":
                fsm.update_w(r, H, w.W, w.zeta, w.mu, w.Sigma, fs)
            elif name.startswith("ess"):
                n, _ = fsm.ess_w(r, H, w.W, w.zeta, w.mu, w.Sigma, fs, bounded=name == "ess")
                evals += n
            else:
                _pcn(r, w.W, w.zeta, w.mu, w.Sigma, fsm.FactorisedFrequencies(H, w.W, fs), b)
            seconds += time.perf_counter() - t0
            d = w.W - W0
            dist += float(np.einsum("ma,mab,mb->", d, prec[w.zeta], d))
            changed += float(np.mean(np.any(d != 0.0, axis=1)))
        label = name if b is None else f"pcn b={b}"
        rows.append({"move": label, "s_per_update": seconds / 3, "share_moved": changed / 3,
                     "mahal2_per_update": dist / 3, "mahal2_per_s": dist / seconds,
                     "evals_per_freq": evals / (3 * w.W.shape[0]) if evals else None})  # fmt: skip
        print(json.dumps(rows[-1]), flush=True)


def heldout(name: str, n_iter: int, seed: int) -> None:
    if name == "sim":
        Y, lik = simulated_nb(), "negbinom"
    else:
        ds = load(name)
        Y, lik = ds.data, ("gaussian" if ds.kind == "real" else "negbinom")
    Y_train, Y_test = holdout_mask(Y, fraction=0.2, random_state=seed)
    half = n_iter // 2
    for fu in ("mh", "ess"):
        t0 = time.perf_counter()
        m = IBPRFLVM(likelihood=lik, n_iter=n_iter, init_dims=12, n_chains=2, n_jobs=1, random_state=seed,
                     frequency_update=fu, n_threads=1).fit(Y_train)  # fmt: skip
        sec = time.perf_counter() - t0
        ll = m.traces_["loglik"][:, half:]
        k = m.traces_["n_active"][:, half:].astype(float)
        moves = m.posterior_.moves
        out = {
            "data": name, "update": fu, "n_iter": n_iter, "seed": seed,
            "lpd": round(float(m.score(Y_test)), 4),
            "perplexity": round(float(m.perplexity(Y_test)), 2) if lik != "gaussian" else None,
            "rhat_loglik": round(float(az.rhat(ll)), 3), "rhat_k": round(float(az.rhat(k)), 3),
            "k_plus_end": m.traces_["n_active"][:, -1].tolist(),
            "loglik_means": [round(float(v), 1) for v in ll.mean(axis=1)],
            # Root mean square of the frequencies in each chain's last state (1 at the start; the
            # simulated data's generating frequencies have 0.5).
            "w_rms": [round(float(np.sqrt(np.mean(c.state.W**2))), 3) for c in m.posterior_.chains],
            "s_per_sweep": round(sec / (2 * n_iter), 3),
            "w_moved_share": round(float(np.mean(moves.w_moved)) / m.n_frequencies, 4),
        }  # fmt: skip
        print(json.dumps(out), flush=True)


def main() -> None:
    warnings.simplefilter("ignore")
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=("candidates", "heldout"))
    p.add_argument("dataset", nargs="?")
    p.add_argument("--n-iter", type=int, default=60)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    if a.what == "candidates":
        candidates()
    else:
        heldout(a.dataset, a.n_iter, a.seed)


if __name__ == "__main__":
    main()
