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

``... frequency_moves.py heldout DATASET --n-iter N [--seed S] [--chains-per-start 3] [--n-jobs 2]``
    For each of ``mh`` and ``ess``: ``--chains-per-start`` chains from each of ``--starts``
    (2 and 12 dimensions), each its own fit with its own seed, 20% of the entries held out;
    prints the held-out LPD per entry of the chains' equal-weight mixture and of each chain (and
    the perplexity for counts), R-hat over the second half of the log-likelihood and of ``K+``
    over all chains and within each start, each chain's mean ``K+`` and seconds per sweep, the
    share of frequencies that moved per sweep and the root mean square of each chain's
    frequencies over its kept samples. DATASET: cancer, mice, congress, montreal, or ``sim``
    (the simulated NB counts above).

``... frequency_moves.py lengthscale --n-iter N [--seed S]``
    One chain of each move from 12 dimensions on the simulated NB counts (every sweep kept):
    the root mean square of the frequencies at every tenth sweep, against the generating 0.5.

``... frequency_moves.py table FILE [FILE ...]``
    The record's table from the JSON lines that ``heldout`` printed.
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
from joblib import Parallel, delayed
from scipy.special import logsumexp

from ibp_rflvm import IBPRFLVM, holdout_mask, model
from ibp_rflvm.datasets import load
from ibp_rflvm.likelihoods import make_likelihood
from ibp_rflvm.summaries.predictive import heldout_shares
from ibp_rflvm.summaries.scoring import perplexity
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
    base = Work(state)
    view0 = target.view(base, state.params)
    prec = np.linalg.inv(state.Sigma)
    rows = []
    runs = [("mh", None), ("ess", None), ("ess-unbounded", None), ("pcn", 0.02), ("pcn", 0.05), ("pcn", 0.2)]
    for name, b in runs:
        w = Work(state)
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


def _chain(Y_train, Y_test, lik: str, update: str, start: int, seed: int, n_iter: int) -> dict:
    """One chain from ``start`` dimensions: its traces, its held-out pointwise densities (and
    predicted shares for counts), the frequencies' scale over its kept samples and its seconds."""
    warnings.simplefilter("ignore")
    t0 = time.perf_counter()
    m = IBPRFLVM(likelihood=lik, n_iter=n_iter, init_dims=start, n_chains=1, n_jobs=1, random_state=seed,
                 frequency_update=update, n_threads=1).fit(Y_train)  # fmt: skip
    sec = time.perf_counter() - t0
    logp = m.pointwise_log_predictive(Y_test)
    out = {
        "start": start, "seed": seed, "seconds": sec,
        "loglik": m.traces_["loglik"][0].tolist(), "k_plus": m.traces_["n_active"][0].tolist(),
        "pointwise_lpd": (logsumexp(logp, axis=0) - math.log(logp.shape[0])).tolist(),
        # Root mean square of the frequencies over the kept samples: about 1 at the start; the
        # simulated data's generating frequencies have 0.5 (lengthscale 2).
        "w_rms": float(np.mean([np.sqrt(np.mean(s.W**2)) for s in m.posterior_.samples])),
        "w_moved_share": float(np.mean(m.posterior_.moves.w_moved)) / m.n_frequencies,
    }  # fmt: skip
    if lik != "gaussian":
        counts, shares = heldout_shares(m.posterior_, Y_test)
        out["counts"], out["shares"] = counts.tolist(), shares.tolist()
    return out


def _pooled(chains: list[dict], lik: str) -> dict:
    """Equal-weight mixture of the chains' predictives; R-hat over all chains and within each start."""
    half = len(chains[0]["loglik"]) // 2
    lpd = logsumexp(np.array([c["pointwise_lpd"] for c in chains]), axis=0) - math.log(len(chains))
    ll = np.array([c["loglik"][half:] for c in chains])
    k = np.array([c["k_plus"][half:] for c in chains], dtype=float)
    starts = sorted({c["start"] for c in chains})
    by_start = {s: [i for i, c in enumerate(chains) if c["start"] == s] for s in starts}
    out = {
        "lpd": round(float(np.mean(lpd)), 4),
        "lpd_per_chain": [round(float(np.mean(c["pointwise_lpd"])), 4) for c in chains],
        "rhat_loglik": round(float(az.rhat(ll)), 3), "rhat_k": round(float(az.rhat(k)), 3),
        "rhat_within_start": {str(s): [round(float(az.rhat(ll[i])), 3), round(float(az.rhat(k[i])), 3)]
                              for s, i in by_start.items()},
        "k_plus_mean": [round(float(v), 1) for v in k.mean(axis=1)],
        "loglik_mean": [round(float(v), 1) for v in ll.mean(axis=1)],
        "w_rms": [round(c["w_rms"], 3) for c in chains],
        "w_moved_share": round(float(np.mean([c["w_moved_share"] for c in chains])), 4),
        "s_per_sweep": [round(c["seconds"] / len(c["loglik"]), 3) for c in chains],
    }  # fmt: skip
    if lik != "gaussian":
        counts = np.asarray(chains[0]["counts"])
        shares = np.mean([c["shares"] for c in chains], axis=0)
        out["perplexity"] = round(perplexity(counts, shares), 2)
    return out


def heldout(name: str, n_iter: int, seed: int, chains_per_start: int, starts: list[int], n_jobs: int) -> None:
    if name == "sim":
        Y, lik = simulated_nb(), "negbinom"
    else:
        ds = load(name)
        Y, lik = ds.data, ("gaussian" if ds.kind == "real" else "negbinom")
    Y_train, Y_test = holdout_mask(Y, fraction=0.2, random_state=seed)
    jobs = [
        (u, s, 1000 * seed + 100 * s + c)
        for u in ("mh", "ess")
        for s in starts
        for c in range(chains_per_start)
    ]
    # Most expensive first, so that the last chains to finish are short ones.
    order = sorted(range(len(jobs)), key=lambda i: -jobs[i][1])
    done = Parallel(n_jobs=n_jobs)(delayed(_chain)(Y_train, Y_test, lik, *jobs[i], n_iter) for i in order)
    results = dict(zip(order, done, strict=True))
    for u in ("mh", "ess"):
        chains = [results[i] for i, j in enumerate(jobs) if j[0] == u]
        out = {"data": name, "update": u, "n_iter": n_iter, "seed": seed, "starts": starts,
               "chains_per_start": chains_per_start, **_pooled(chains, lik)}  # fmt: skip
        print(json.dumps(out), flush=True)


def lengthscale(n_iter: int, seed: int) -> None:
    Y_train, _ = holdout_mask(simulated_nb(), fraction=0.2, random_state=seed)
    for update in ("ess", "mh"):
        m = IBPRFLVM(likelihood="negbinom", n_iter=n_iter, burn_in=0, init_dims=12, n_chains=1, n_jobs=1,
                     random_state=1200 + seed, frequency_update=update, n_threads=1).fit(Y_train)  # fmt: skip
        rms = [float(np.sqrt(np.mean(s.W**2))) for s in m.posterior_.samples]
        print(json.dumps({"update": update, "seed": seed, "sweeps": list(range(0, n_iter, 10)),
                          "w_rms": [round(v, 3) for v in rms[::10]],
                          "k_plus": m.traces_["n_active"][0, ::10].tolist()}), flush=True)  # fmt: skip


def table(paths: list[str]) -> None:
    """One markdown row per data set and move: pooled LPD (perplexity), its chains' range from each
    start, R-hat over all chains and within each start, mean ``K+`` and frequencies' scale per
    start, median seconds per sweep."""
    print("| data (sweeps) | move | LPD / entry (perplexity) | chains' LPD from 2; from 12 "
          "| R-hat loglik / `K+`, all | within start 2; 12 | mean `K+` from 2; 12 "
          "| rms `w` from 2; 12 | s per sweep | moved |")  # fmt: skip
    print("|" + "---|" * 10)
    for path in paths:
        with open(path) as fh:
            for line in fh:
                d = json.loads(line)
                n = d["chains_per_start"]

                def two(v, fmt, n=n):
                    parts = (v[i * n : (i + 1) * n] for i in range(2))
                    return "; ".join(", ".join(format(x, fmt) for x in part) for part in parts)

                within = "; ".join(f"{a} / {b}" for a, b in d["rhat_within_start"].values())
                ppl = f" ({d['perplexity']})" if d.get("perplexity") else ""
                print(f"| {d['data']} ({d['n_iter']}) | {d['update']} | {d['lpd']}{ppl} | "
                      f"{two(d['lpd_per_chain'], '.3f')} | {d['rhat_loglik']} / {d['rhat_k']} | {within} | "
                      f"{two(d['k_plus_mean'], '.0f')} | {two(d['w_rms'], '.2f')} | "
                      f"{float(np.median(d['s_per_sweep'])):.2f} | {d['w_moved_share']} |")  # fmt: skip


def main() -> None:
    warnings.simplefilter("ignore")
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=("candidates", "heldout", "lengthscale", "table"))
    p.add_argument("dataset", nargs="*")
    p.add_argument("--n-iter", type=int, default=60)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--chains-per-start", type=int, default=3)
    p.add_argument("--starts", type=int, nargs="+", default=[2, 12])
    p.add_argument("--n-jobs", type=int, default=1, help="processes for the chains")
    a = p.parse_args()
    if a.what == "candidates":
        candidates()
    elif a.what == "lengthscale":
        lengthscale(a.n_iter, a.seed)
    elif a.what == "table":
        table(a.dataset)
    else:
        heldout(a.dataset[0], a.n_iter, a.seed, a.chains_per_start, a.starts, a.n_jobs)


if __name__ == "__main__":
    main()
