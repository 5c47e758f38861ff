"""Mixing study: several IBP-RFLVM chains from different starts on one data set (run by hand).

``python studies/mixing.py cambridge --starts 2 12 --chains-per-start 4 --n-iter 300``

`--ibp-beta` sets the two-parameter IBP's ``beta``: 1 (the default here, so that the commands of
docs/sampler.md measured before it existed give what they gave), another number to fix it,
``none`` to learn it under `--ibp-beta-prior`.

Every chain sees the same training matrix (20% of the observed entries held out with
`--mask-seed`) and gets its own seed. Reported: each chain's ``K+`` over the second half (min,
median, max), its effective dimensions (median), the mean training log-likelihood over the
second half, its held-out LPD per entry and its wall time; across chains, the split R-hat of
``K+`` and of the training log-likelihood over the second half, and the posterior of ``K+``
pooled over chains. `--out` writes everything as JSON. Chains run in parallel processes;
with `--backend jax` (the count likelihoods' N x J work in JAX, issue 43) they run one after
another in this process, which holds the device.

`dataset` is a catalogue name or ``sim-nb:NxJ`` (e.g. ``sim-nb:400x200``): NB counts from an
RFLVM with a 3-dimensional latent (:func:`simulate_nb`, seed 0).

A one-off study (``studies/``, not maintained): its results and commands are in
docs/record/sampler.md and (`--backend`) docs/record/jax_backend.md.
Its `--frequency-update` and `--start-density` options went with the ModelSpec options they
set (measured, not adopted); the runs that used them need commit 70e3788 or earlier.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace

import numpy as np
from joblib import Parallel, delayed

from ibp_rflvm import IBPRFLVM, holdout_mask
from ibp_rflvm.datasets import load
from ibp_rflvm.features import feature_map
from ibp_rflvm.priors import IndianBuffet
from ibp_rflvm.summaries.predictive import heldout_shares

THRESHOLDS = (0.01, 0.02, 0.03, 0.05)
#: Shares of the gain over no latent dimensions (the default effective count is at 0.05).
SHARES = (0.02, 0.05, 0.1)


class _Estimator(IBPRFLVM):
    """IBPRFLVM with the dimension moves' settings (ModelSpec options the estimator does not
    expose) set on the instance after construction."""

    transfer_min_cos = 0.3
    flip_scale = 0.2
    absorb_min_cos = 0.3
    ibp_beta_warmup = 0

    def _spec(self):
        return replace(
            super()._spec(), transfer_min_cos=self.transfer_min_cos, flip_scale=self.flip_scale,
            absorb_min_cos=self.absorb_min_cos,
            z_prior=IndianBuffet(self.ibp_beta, tuple(self.ibp_beta_prior), self.ibp_beta_warmup),
        )


def _chain(
    Y_train, Y_test, likelihood, init_dims, seed, n_iter, sampler, alpha_prior, replicas=(1, 5.0),
    transfer_min_cos=0.3, flip_scale=0.2,
    absorb_min_cos=0.3, max_dims=None, ibp_beta=1.0, ibp_beta_prior=(1.0, 1.0), ibp_beta_warmup=0,
    backend="numba",
):
    t0 = time.perf_counter()
    est = _Estimator(
        likelihood=likelihood, n_iter=n_iter, init_dims=init_dims, random_state=seed, sampler=sampler,
        alpha_prior=alpha_prior, n_replicas=replicas[0], replica_top=replicas[1], max_dims=max_dims,
        ibp_beta=ibp_beta, ibp_beta_prior=ibp_beta_prior, backend=backend,
    )
    est.transfer_min_cos = transfer_min_cos
    est.flip_scale = flip_scale
    est.absorb_min_cos = absorb_min_cos
    est.ibp_beta_warmup = ibp_beta_warmup
    est.fit(Y_train)
    seconds = time.perf_counter() - t0
    out = {
        "init_dims": init_dims,
        "seed": seed,
        "seconds": seconds,
        "backend": backend,
        "k_plus": est.n_active_.tolist(),
        "loglik": est.log_likelihood_.tolist(),
        "alpha": est.alpha_.tolist(),
        "beta": est.ibp_beta_.tolist(),
        "score": float(est.score(Y_test)),
        # Each held-out entry's log predictive density, for paired comparisons of two runs on
        # the same mask (studies/paired_lpd.py).
        "pointwise_lpd": _pointwise_lpd(est, Y_test).tolist(),
    }
    if replicas[0] > 1:
        out["swap_rates"] = est.swap_rates_[0].tolist()
    if likelihood != "gaussian":
        out["perplexity"] = float(est.perplexity(Y_test))
        # Each held-out count's ``y log p`` (p: its predicted share), for paired perplexities.
        counts, shares = heldout_shares(est.posterior_, Y_test)
        with np.errstate(divide="ignore", invalid="ignore"):
            out["pointwise_ylogp"] = np.where(counts > 0, counts * np.log(shares), 0.0).tolist()
        out["heldout_total"] = float(np.sum(counts))
    out["effective_dims"] = np.asarray(est.effective_dims_).ravel().tolist()
    # Other thresholds (nats per observed entry) reuse the cached importances.
    out["effective_by_threshold"] = {
        str(t): np.asarray(est.effective_dimensions(t)).ravel().tolist() for t in THRESHOLDS
    }
    out["effective_by_share"] = {
        str(s): np.asarray(est.effective_dimensions(share=s)).ravel().tolist() for s in SHARES
    }
    return out


def _pointwise_lpd(est, Y_test) -> np.ndarray:
    """``log mean_s p(y_j | sample s)`` of every held-out entry (one chain: equal sample weights)."""
    from scipy.special import logsumexp

    logp = est.pointwise_log_predictive(Y_test)
    return logsumexp(logp, axis=0) - np.log(logp.shape[0])


def simulate_nb(n: int, j: int, seed: int = 0, k: int = 3, m: int = 30) -> np.ndarray:
    """NB counts from a dense RFLVM with a `k`-dimensional latent: ``psi = Phi(H, W) beta`` with
    ``H``, ``W`` standard normal, ``beta`` standard normal (sd of ``psi`` about 1.4), intercept 0,
    dispersions ``r_j ~ Gamma(10, 0.5)`` (about 5). Stronger than benchmarks/bench_scale.py's
    sparse simulator (about 90% zeros), in which 400 x 200 chains find no dimension at all."""
    rng = np.random.default_rng(seed)
    H = rng.standard_normal((n, k))
    Phi = feature_map(H, rng.standard_normal((m, k)), bias=True)
    beta = rng.standard_normal((2 * m + 1, j))
    beta[-1] = 0.0
    r = rng.gamma(10.0, 0.5, size=j)
    lam = rng.gamma(r, np.exp(Phi @ beta) / r)  # mean exp(psi), NB dispersion r_j
    return rng.poisson(lam).astype(np.float64)


def _load(name: str) -> tuple[np.ndarray, str]:
    """``(data, kind)`` of a catalogue data set or of ``sim-nb:NxJ`` (:func:`simulate_nb`, seed 0)."""
    if name.startswith("sim-nb:"):
        n, j = (int(v) for v in name.split(":", 1)[1].lower().split("x"))
        return simulate_nb(n, j, seed=0, k=3), "counts"
    ds = load(name)
    return ds.data, ds.kind


def rhat(chains: np.ndarray) -> float:
    import arviz as az

    return float(az.rhat(np.asarray(chains, dtype=float)))


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dataset")
    p.add_argument("--likelihood", default=None, help="default: gaussian for real data, negbinom for counts")
    p.add_argument("--starts", type=int, nargs="+", default=[2, 12])
    p.add_argument("--chains-per-start", type=int, default=4)
    p.add_argument("--n-iter", type=int, default=300)
    p.add_argument("--sampler", default="default")
    p.add_argument("--alpha-prior", type=float, nargs=2, default=None)
    p.add_argument("--mask-seed", type=int, default=0)
    p.add_argument("--replicas", type=int, default=1, help="levels of replica exchange (Gaussian only)")
    p.add_argument("--replica-top", type=float, default=5.0, help="the hottest level's multiple of b0")
    p.add_argument(
        "--transfer-min-cos", type=lambda v: None if v == "none" else float(v), default=0.3,
        help="row transfers between dimensions whose frequencies have |cos| >= this ('none': off)",
    )
    p.add_argument(
        "--absorb-min-cos", type=lambda v: None if v == "none" else float(v), default=0.3,
        help="absorb/emit moves between dimensions whose frequencies have |cos| >= this ('none': off)",
    )
    p.add_argument("--flip-scale", type=float, default=0.2, help="sd of a flipped-on coordinate")
    p.add_argument(
        "--max-dims", type=lambda v: None if v == "none" else int(v), default=IBPRFLVM().max_dims,
        help="cap on K+ ('none': no cap; default: the estimator's)",
    )
    p.add_argument(
        "--ibp-beta", type=lambda v: None if v == "none" else float(v), default=1.0,
        help="the two-parameter IBP's beta ('none': learned; default 1, the one-parameter IBP)",
    )
    p.add_argument("--ibp-beta-prior", type=float, nargs=2, default=[1.0, 1.0], help="Gamma (shape, rate)")
    p.add_argument(
        "--ibp-beta-warmup", type=int, default=0, help="sweeps with a learned beta held at 1 (slice step on)"
    )
    p.add_argument("--seed-offset", type=int, default=0, help="added to every chain's seed")
    p.add_argument("--backend", choices=["numba", "jax"], default="numba", help="the estimator's backend")
    p.add_argument("--n-jobs", type=int, default=2, help="processes for the chains (1 with --backend jax)")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    data, kind = _load(args.dataset)
    lik = args.likelihood or ("gaussian" if kind == "real" else "negbinom")
    Y_train, Y_test = holdout_mask(data, fraction=0.2, random_state=args.mask_seed)
    jobs = [
        (s, 1000 * s + c + args.seed_offset) for s in args.starts for c in range(args.chains_per_start)
    ]
    alpha_prior = tuple(args.alpha_prior) if args.alpha_prior else (1.0, 1.0)
    t0 = time.perf_counter()
    # JAX holds the device in one process: its chains run one after another there.
    n_jobs = 1 if args.backend == "jax" else args.n_jobs
    chains = Parallel(n_jobs=n_jobs)(
        delayed(_chain)(
            Y_train, Y_test, lik, s, seed, args.n_iter, args.sampler, alpha_prior,
            (args.replicas, args.replica_top), args.transfer_min_cos, args.flip_scale,
            args.absorb_min_cos, args.max_dims, args.ibp_beta,
            tuple(args.ibp_beta_prior), args.ibp_beta_warmup, args.backend,
        )
        for s, seed in jobs
    )
    wall = time.perf_counter() - t0
    half = args.n_iter // 2
    k = np.array([c["k_plus"][half:] for c in chains])
    ll = np.array([c["loglik"][half:] for c in chains])
    values, counts = np.unique(k, return_counts=True)
    report = {
        "dataset": args.dataset,
        "likelihood": lik,
        "sampler": args.sampler,
        "backend": args.backend,
        "mask_seed": args.mask_seed,
        "alpha_prior": alpha_prior,
        "replicas": [args.replicas, args.replica_top],
        "transfer_min_cos": args.transfer_min_cos,
        "flip_scale": args.flip_scale,
        "absorb_min_cos": args.absorb_min_cos,
        "seed_offset": args.seed_offset,
        "max_dims": args.max_dims,
        "ibp_beta": args.ibp_beta,
        "ibp_beta_prior": list(args.ibp_beta_prior),
        "ibp_beta_warmup": args.ibp_beta_warmup,
        "n_iter": args.n_iter,
        "wall_seconds": wall,
        "rhat_k_plus": rhat(k),
        "rhat_loglik": rhat(ll),
        "k_plus_posterior": {
            int(v): round(float(n) / k.size, 4) for v, n in zip(values, counts, strict=True)
        },
        "chains": chains,
    }
    print(
        f"{args.dataset} ({lik}, backend={args.backend}, sampler={args.sampler}, {args.n_iter} sweeps,"
        f" wall {wall:.0f} s)"
    )
    print(f"R-hat K+ {report['rhat_k_plus']:.3f}, R-hat loglik {report['rhat_loglik']:.3f}")
    print("start seed  K+ (min/med/max)  eff.dims  beta (median)  loglik  LPD/entry  s")
    for c in chains:
        kk = np.array(c["k_plus"][half:])
        eff = np.median(c["effective_dims"]) if "effective_dims" in c else float("nan")
        extra = f"  perplexity {c['perplexity']:.1f}" if "perplexity" in c else ""
        print(
            f"{c['init_dims']:5d} {c['seed']:5d}  {kk.min():3d}/{np.median(kk):5.1f}/{kk.max():3d}"
            f"  {eff:8.1f}  {np.median(c['beta'][half:]):6.3f}  {np.mean(c['loglik'][half:]):9.1f}"
            f"  {c['score']:.4f}  {c['seconds']:.0f}{extra}"
        )
    print("posterior of K+:", report["k_plus_posterior"])
    if args.out:
        write_report(report, args.out)
    return report


def write_report(report: dict, path: str) -> None:
    """JSON; a name ending in ``.gz`` is written gzipped and compact, with the per-entry values to
    7 significant digits (paired differences are of order 1e-3 per entry; a large data set's
    entries otherwise take megabytes)."""
    if not path.endswith(".gz"):
        with open(path, "w") as f:
            json.dump(report, f, indent=1)
        return
    import gzip

    for chain in report.get("chains", []):
        for key in ("pointwise_lpd", "pointwise_ylogp"):
            if key in chain:
                chain[key] = [float(f"{x:.7g}") for x in chain[key]]
    with gzip.open(path, "wt") as f:
        json.dump(report, f, separators=(",", ":"))


if __name__ == "__main__":
    main()
