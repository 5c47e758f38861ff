"""The two-parameter IBP prior check of tests/samplers/test_ibp_beta.py, long, over seeds (run by hand).

``python benchmarks/prior_check_beta.py --beta 0.3 --path prior --sweeps 30000 --seeds 1 2 3 4``

With the likelihood off and ``beta`` fixed, the sweep must sample the prior: ``K+ ~
Poisson(alpha sum_i beta / (beta + i - 1))`` and each row's count ``~ Poisson(alpha)``
(``N = 10``, ``alpha = 2`` fixed, ``M = 3`` frequencies so that most pairs of dimensions are
aligned and the pair moves run often). Under a cap (`--max-dims`) ``K+`` is that Poisson
truncated at the cap (the cap conditions on an event of ``Z`` alone); rows are then no longer
``Poisson(alpha)`` and only ``K+`` is checked.

`--path` picks the ``Z`` path: ``prior`` (the estimator's sweep with the likelihood off: array
flips and pair moves), ``gaussian`` (the collapsed Gaussian's compiled kernels on data with no
columns) or ``lfm`` (the IBP linear factor model's exchangeable Gibbs pass with its data off).
`--transfer-min-cos none` / `--absorb-min-cos none` switch the pair moves off, to isolate them.

Printed: per seed, the mean of ``K+`` and its z-score against the target (batch-means standard
error, 40 batches, the first `--burn` sweeps dropped) and the same for a row's count; pooled over
seeds, the mean of ``K+`` with its standard error, the integrated autocorrelation time of ``K+``
(from that standard error), the bias of ``E[K+]`` the run detects with 80% power at the 5% level
(2.8 standard errors), and chi-square tests of the whole distribution of ``K+`` and of a row's
count against their pmf, on draws thinned every `--thin` sweeps (each thinned draw reads one row,
in turn, so the row counts are as nearly independent as the ``K+`` draws).
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np
from joblib import Parallel, delayed
from scipy import stats

from ibp_rflvm import model
from ibp_rflvm.baselines import IBPLinearFactorModel
from ibp_rflvm.priors import IndianBuffet
from ibp_rflvm.samplers import ibp
from ibp_rflvm.summaries.diagnostics import batch_mean_se

N, ALPHA = 10, 2.0


def _off_or_float(value: str) -> float | None:
    return None if value == "none" else float(value)


def _off_or_int(value: str) -> int | None:
    return None if value == "none" else int(value)


def run_sweep(seed: int, n_sweeps: int, beta: float, path: str, settings: dict) -> dict:
    rng = np.random.default_rng(seed)
    use_lik = path == "gaussian"
    data = model.Data.from_array(np.zeros((N, 0 if use_lik else 1)))
    spec = model.ModelSpec(
        n_frequencies=3, fixed_alpha=ALPHA, use_likelihood=use_lik, z_prior=IndianBuffet(beta), **settings
    )
    state = model.init_state(rng, data, spec)
    k_plus = np.empty(n_sweeps, dtype=np.int64)
    rows = np.empty((n_sweeps, N), dtype=np.int64)
    for t in range(n_sweeps):
        state, _ = model.sweep(rng, state, data, spec)
        k_plus[t] = state.k_plus
        rows[t] = state.Z.sum(axis=1)
    return {"k_plus": k_plus, "rows": rows}


def run_lfm(seed: int, n_sweeps: int, beta: float, path: str, settings: dict) -> dict:
    Y = np.random.default_rng(seed).standard_normal((N, 2))
    m = IBPLinearFactorModel(
        n_iter=n_sweeps, burn_in=0, init_dims=2, fixed_alpha=ALPHA, use_likelihood=False,
        random_state=seed, ibp_beta=beta,
    ).fit(Y)  # fmt: skip
    k_plus = np.asarray(m.n_active_, dtype=np.int64)
    return {"k_plus": k_plus, "rows_mean": np.asarray(m.mean_active_per_row_)}


def target_pmf(mean: float, cap: int | None, top: int) -> np.ndarray:
    """``P(K = 0..top)`` of ``Poisson(mean)``, truncated at `cap` when given."""
    k = np.arange(top + 1)
    p = stats.poisson.pmf(k, mean)
    if cap is not None:
        p[k > cap] = 0.0
        p /= stats.poisson.cdf(cap, mean)
    return p


def chi_square(draws: np.ndarray, pmf: np.ndarray, min_expected: float = 5.0) -> dict:
    """Pearson's chi-square of integer `draws` against `pmf` (on ``0..len(pmf)-1``, the last bin
    taking everything above), merging adjacent bins until each expects `min_expected` draws.
    Returns the statistic, its degrees of freedom, the p-value and the bins' observed and
    expected counts (each bin named by its lowest value)."""
    n = draws.size
    observed = np.bincount(np.minimum(draws, pmf.size - 1), minlength=pmf.size).astype(float)
    expected = pmf.copy()
    expected[-1] = max(0.0, 1.0 - pmf[:-1].sum())
    expected *= n
    bins_o, bins_e, starts, acc_o, acc_e, start = [], [], [], 0.0, 0.0, 0
    for value, (o, e) in enumerate(zip(observed, expected, strict=True)):
        acc_o += o
        acc_e += e
        if acc_e >= min_expected:
            bins_o.append(acc_o)
            bins_e.append(acc_e)
            starts.append(start)
            acc_o = acc_e = 0.0
            start = value + 1
    if acc_e > 0 or acc_o > 0:
        bins_o[-1] += acc_o
        bins_e[-1] += acc_e
    o, e = np.array(bins_o), np.array(bins_e)
    stat = float(np.sum((o - e) ** 2 / e))
    dof = o.size - 1
    return {
        "stat": stat, "dof": dof, "p": float(stats.chi2.sf(stat, dof)), "bins": starts,
        "observed": o.tolist(), "expected": [round(float(x), 1) for x in e],
    }  # fmt: skip


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--beta", type=float, required=True)
    p.add_argument("--path", choices=["prior", "gaussian", "lfm"], default="prior")
    p.add_argument("--sweeps", type=int, default=30000)
    p.add_argument("--burn", type=int, default=200)
    p.add_argument("--thin", type=int, default=20)
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4])
    p.add_argument("--transfer-min-cos", type=_off_or_float, default=0.3)
    p.add_argument("--absorb-min-cos", type=_off_or_float, default=0.3)
    p.add_argument("--max-dims", type=_off_or_int, default=None)
    p.add_argument("--n-jobs", type=int, default=1)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    settings = {
        "transfer_min_cos": args.transfer_min_cos, "absorb_min_cos": args.absorb_min_cos,
        "max_dims": args.max_dims,
    }  # fmt: skip
    if args.max_dims is not None:
        settings["n_dims"] = min(2, args.max_dims)
    runner = run_lfm if args.path == "lfm" else run_sweep
    out = Parallel(n_jobs=args.n_jobs)(
        delayed(runner)(s, args.sweeps, args.beta, args.path, settings) for s in args.seeds
    )
    mean_k = ALPHA * ibp.sharing_sum(N, args.beta)
    pmf = target_pmf(mean_k, args.max_dims, int(mean_k + 8 * math.sqrt(mean_k) + 8))
    e_k = float(np.sum(np.arange(pmf.size) * pmf))
    check_rows = args.max_dims is None
    print(
        f"beta {args.beta}, path {args.path}, {settings}, {args.sweeps} sweeps x {len(args.seeds)} seeds; "
        f"E[K+] = {e_k:.4f}"
    )
    per_seed, k_thin, r_thin, k_means, k_ses = [], [], [], [], []
    for seed, res in zip(args.seeds, out, strict=True):
        k = res["k_plus"][args.burn :].astype(float)
        km, kse = batch_mean_se(k)
        row = {"seed": seed, "k_mean": km, "k_se": kse, "k_z": (km - e_k) / kse}
        if check_rows:
            rows = res["rows"][args.burn :] if "rows" in res else None
            r = rows.mean(axis=1) if rows is not None else res["rows_mean"][args.burn :]
            rm, rse = batch_mean_se(r.astype(float))
            row.update({"row_mean": rm, "row_z": (rm - ALPHA) / rse})
            if rows is not None:
                idx = np.arange(0, rows.shape[0], args.thin)
                r_thin.append(rows[idx, np.arange(idx.size) % N])
        k_thin.append(res["k_plus"][args.burn :: args.thin])
        k_means.append(km)
        k_ses.append(kse)
        per_seed.append(row)
        extra = f"  row {row['row_mean']:.4f} (z {row['row_z']:+.2f})" if check_rows else ""
        print(f"seed {seed}: K+ {km:.4f} (z {row['k_z']:+.2f}){extra}")
    k_means, k_ses = np.array(k_means), np.array(k_ses)
    # Equal weights: the seeds run equally long, and weights from each seed's own standard error
    # would favour the seeds with a low K+ (a Poisson's variance grows with its mean).
    pooled = float(k_means.mean())
    pooled_se = float(math.sqrt(np.sum(k_ses**2)) / k_ses.size)
    n_kept = (args.sweeps - args.burn) * len(args.seeds)
    var_k = float(np.sum((np.arange(pmf.size) - e_k) ** 2 * pmf))
    tau = pooled_se**2 * n_kept / var_k
    detectable = 2.8 * pooled_se
    chi_k = chi_square(np.concatenate(k_thin), pmf)
    summary = {
        "beta": args.beta, "path": args.path, "settings": settings, "sweeps": args.sweeps,
        "seeds": args.seeds, "target_k_plus": e_k, "pooled_k_plus": pooled, "pooled_se": pooled_se,
        "pooled_z": (pooled - e_k) / pooled_se, "tau_k_plus": tau,
        "detectable_bias": detectable, "detectable_bias_rel": detectable / e_k,
        "chi2_k_plus": chi_k, "per_seed": per_seed,
    }  # fmt: skip
    print(
        f"pooled K+ {pooled:.4f} +- {pooled_se:.4f} (z {summary['pooled_z']:+.2f}); tau {tau:.1f} sweeps; "
        f"80% power for a bias of {detectable:.3f} ({100 * detectable / e_k:.1f}%)"
    )
    chi_text = f"chi2 {chi_k['stat']:.1f} on {chi_k['dof']} dof, p = {chi_k['p']:.3f}"
    print(f"K+ thinned every {args.thin}: {chi_text}")
    print("  from", chi_k["bins"], "observed", chi_k["observed"], "expected", chi_k["expected"])
    if r_thin:
        chi_r = chi_square(np.concatenate(r_thin), target_pmf(ALPHA, None, 14))
        summary["chi2_row"] = chi_r
        print(
            f"a row's count thinned every {args.thin}: chi2 {chi_r['stat']:.1f} on {chi_r['dof']} dof,"
            f" p = {chi_r['p']:.3f}"
        )
    if args.out:
        with open(args.out, "w") as f:
            json.dump(summary, f, indent=1)
    return summary


if __name__ == "__main__":
    main()
