"""Stacked chains against each chain alone and equal pooling (run by hand; prints a Markdown block).

``python benchmarks/stacking.py cancer gaussian [--chains 4] [--sweeps 300] [--trial 0]``

One default ``IBPRFLVM(n_chains=4)`` fit (chains from 2, 5, 9 and 12 dimensions, the default
spread) on the harness's training matrix of the trial (20% of the entries held out, the mask and
model seed of the reproduction's cell). From the same kept samples it scores the held-out
entries under the stacked mixture (``chain_weights_``), under equal pooling and under each chain
alone, with the standard error of each paired per-entry difference against the stacked fit
(``sqrt(n) * sd(d_t)``, as the held-out entries are the units), and for counts the perplexity.
It prints each chain's start, ``K+`` and effective dimensions (medians), PSIS-LOO score, share of
entries with a high Pareto ``k`` and weight, the stacked posteriors of ``K+`` and of the effective
dimensions, and the fit's wall time.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from scipy.special import logsumexp
from threadpoolctl import threadpool_limits

from ibp_rflvm import IBPRFLVM
from ibp_rflvm.evaluation.cells import dataset_arrays, split_for
from ibp_rflvm.evaluation.experiments import RunConfig, model_seed


def _fmt_posterior(post: dict[int, float]) -> str:
    return ", ".join(f"{k}: {p:.2f}" for k, p in post.items() if p >= 0.005)


def _shares(values: np.ndarray, counts: np.ndarray) -> dict:
    return dict(zip(values.tolist(), np.round(counts / counts.sum(), 2).tolist(), strict=True))


def main() -> None:
    fmt = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=fmt)
    parser.add_argument("dataset")
    parser.add_argument("likelihood")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--sweeps", type=int, default=300)
    parser.add_argument("--trial", type=int, default=0)
    parser.add_argument("--init-dims", type=int, default=12)
    args = parser.parse_args()

    cfg = RunConfig(sampler="default")
    method = (
        "ibp-rflvm"
        if args.likelihood == "gaussian"
        else f"{args.likelihood.replace('negbinom', 'nb')}-ibp-rflvm"
    )
    Y, _, _ = dataset_arrays(args.dataset, cfg.sqrt, cfg.data_home, cfg.max_rows)
    Y_train, Y_test, _, digest = split_for(Y, args.dataset, args.trial, cfg.seed)
    seed = model_seed(args.dataset, method, args.trial, cfg.seed)
    est = IBPRFLVM(
        likelihood=args.likelihood,
        n_iter=args.sweeps,
        n_chains=args.chains,
        random_state=seed,
        init_dims=args.init_dims,
        n_jobs=min(args.chains, 2),
    )
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(Y_train)
    wall = time.perf_counter() - t0
    with threadpool_limits(limits=1, user_api="blas"):
        logp = est.pointwise_log_predictive(Y_test)
        sizes = [len(r.record.samples) for r in est.posterior_.chains]
        bounds = np.cumsum([0, *sizes])
        n = logp.shape[1]
        per_entry = {"stacked": logsumexp(logp, axis=0, b=est.posterior_.sample_weights[:, None])}
        per_entry["pooled"] = logsumexp(logp, axis=0) - np.log(logp.shape[0])
        for k in range(len(sizes)):
            block = logp[bounds[k] : bounds[k + 1]]
            per_entry[f"chain {k}"] = logsumexp(block, axis=0) - np.log(block.shape[0])
        counts = est.spec_.likelihood.kind == "counts"
        perp = {}
        if counts:
            perp["stacked"] = est.perplexity(Y_test)
            # Every sample's weight follows the chains' weights: pooling is each chain's share of
            # the samples, a chain alone is weight one on it.
            weights = est.chain_weights_
            est.chain_weights_ = np.asarray(sizes, dtype=np.float64) / sum(sizes)
            perp["pooled"] = est.perplexity(Y_test)
            for k in range(len(sizes)):
                est.chain_weights_ = np.eye(len(sizes))[k]
                perp[f"chain {k}"] = est.perplexity(Y_test)
            est.chain_weights_ = weights
        table = est.summary().loc[[f"chain {k}" for k in range(len(sizes))]]
        k_plus_post = est.k_plus_posterior_
        eff_post = est.effective_dims_posterior_
    stacked = per_entry["stacked"]
    print(f"### {args.dataset} ({args.likelihood}), trial {args.trial} (mask {digest}), "
          f"{args.chains} chains x {args.sweeps} sweeps, seed {seed}\n")  # fmt: skip
    scored = f"{est.stacking_.n_entries} of {est.stacking_.n_observed}"
    print(f"fit wall time {wall:.0f} s on 2 workers; {n} held-out entries; stacking scored {scored} "
          "training entries\n")  # fmt: skip
    header = "| combination | LPD per entry | difference to stacked (SE) |"
    if counts:
        header += " perplexity |"
    print(header)
    print("|---|---|---|" + ("---|" if counts else ""))
    for name, values in per_entry.items():
        diff = values - stacked
        se = np.std(diff, ddof=1) / np.sqrt(n)
        row = f"| {name} | {values.mean():.4f} | {diff.mean():+.4f} ({se:.4f}) |"
        if counts:
            row += f" {perp[name]:.2f} |"
        print(row)
    print("\n| chain | start | K+ (median) | effective (median) | PSIS-LOO per entry (SE) | k > threshold "
          "| k > 0.7 | weight |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for name, row in table.iterrows():
        print(f"| {name} | {int(row['start'])} | {row['k_plus']:.0f} | {row['effective_dims']:.0f} | "
              f"{row['elpd_loo']:.4f} ({row['elpd_loo_se']:.4f}) | {row['pareto_k_bad']:.3f} | "
              f"{row['pareto_k_above_07']:.3f} | {row['weight']:.3f} |")  # fmt: skip
    print(f"\nstacked posterior of K+: {_fmt_posterior(k_plus_post)}")
    print(f"stacked posterior of the effective dimensions: {_fmt_posterior(eff_post)}")
    for k in range(len(sizes)):
        kept = est.traces_["n_active"][k, -sizes[k] :]
        vals, cnt = np.unique(kept, return_counts=True)
        eff_v, eff_c = np.unique(est.effective_dims_[k], return_counts=True)
        print(f"chain {k}: K+ {_shares(vals, cnt)}; effective {_shares(eff_v, eff_c)}")
    for w in caught:
        print(f"\nwarning: {w.category.__name__}: {w.message}")


if __name__ == "__main__":
    main()
