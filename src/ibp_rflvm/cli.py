"""Command line: ``ibp-rflvm demo | datasets | fit``."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np


def _demo(args: argparse.Namespace) -> int:
    from sklearn.datasets import load_breast_cancer

    from . import IBPRFLVM, RFLVM, holdout_mask
    from .plots import k_plus_plot, latent_heatmaps

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data = load_breast_cancer()
    Y = data.data
    Y = (Y - Y.mean(axis=0)) / Y.std(axis=0)
    labels = data.target  # 0 malignant, 1 benign
    Y_train, Y_test = holdout_mask(Y, fraction=0.2, random_state=args.seed)
    n_test = int(np.count_nonzero(~np.isnan(Y_test)))
    print(f"Wisconsin breast cancer: {Y.shape[0]} x {Y.shape[1]}, standardised; {n_test} entries held out")

    t0 = time.perf_counter()
    ibp = IBPRFLVM(n_iter=args.n_iter, random_state=args.seed, verbose=args.progress).fit(Y_train)
    t_ibp = time.perf_counter() - t0
    k_final = int(ibp.n_active_[-1])
    t0 = time.perf_counter()
    dense = RFLVM(n_components=max(k_final, 1), n_iter=args.n_iter, random_state=args.seed,
                  verbose=args.progress).fit(Y_train)  # fmt: skip
    t_dense = time.perf_counter() - t0

    print(f"\n{'model':<12} {'D':>3} {'held-out LPD':>14} {'per entry':>10} {'s/sweep':>8}")
    for name, model, d, t in (("IBP-RFLVM", ibp, k_final, t_ibp), ("RFLVM", dense, k_final, t_dense)):
        lpd = model.log_predictive_density(Y_test)
        print(f"{name:<12} {d:>3} {lpd:>14.2f} {lpd / n_test:>10.4f} {t / args.n_iter:>8.3f}")
    trace = " ".join(str(int(k)) for k in ibp.n_active_)
    print(f"\nK+ after each sweep: {trace}")
    kept = ibp.n_active_[ibp._burn_in():]
    values, counts = np.unique(kept, return_counts=True)
    posterior = ", ".join(f"{v}: {c / kept.size:.2f}" for v, c in zip(values, counts, strict=True))
    print(f"posterior of K+ (kept sweeps): {posterior}")
    eff = ibp.effective_dims_posterior_
    print("effective dimensions (posterior): " + ", ".join(f"{v}: {p:.2f}" for v, p in eff.items()))

    latent_heatmaps(
        [ibp.latent_, dense.latent_], ["IBP-RFLVM", f"RFLVM (D={k_final})"], labels,
        out / "latent_space.png", label_names=["malignant", "benign"],
        suptitle="Breast cancer latent space (rows sorted by diagnosis)",
    )  # fmt: skip
    k_plus_plot({"IBP-RFLVM": ibp.n_active_}, out / "k_plus_trace.png", burn_in=ibp._burn_in())
    print(f"\nwrote {out / 'latent_space.png'} and {out / 'k_plus_trace.png'}")
    return 0


def _datasets(args: argparse.Namespace) -> int:
    from .datasets import available_datasets

    rows = available_datasets(data_home=args.data_home)
    print(f"{'name':<11} {'kind':<7} {'shape':<12} {'local':<6} location / where to put it")
    for r in rows:
        shape = "x".join(str(s) for s in r["shape"]) if r.get("shape") else "-"
        if r["found"]:
            where = "; ".join(str(f["location"]) for f in r["files"] if f.get("location")) or "(built in)"
        else:
            where = f"missing: {r['put_missing_in']}"
        print(f"{r['name']:<11} {r['kind']:<7} {shape:<12} {'yes' if r['found'] else 'no':<6} {where}")
    return 0


def _fit(args: argparse.Namespace) -> int:
    import warnings

    from . import IBPRFLVM, RFLVM
    from .io import read_matrix
    from .plots import k_plus_plot, latent_heatmaps

    try:
        Y, header = read_matrix(args.data, key=args.key)
    except (OSError, ValueError) as exc:
        print(f"ibp-rflvm fit: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    common = {
        "likelihood": args.likelihood, "n_frequencies": args.n_frequencies, "n_iter": args.n_iter,
        "burn_in": args.burn_in, "random_state": args.seed, "n_chains": args.n_chains,
        "checkpoint_path": str(out / "checkpoint.pkl") if args.checkpoint else None,
        "verbose": not args.quiet, "sampler": args.sampler, "n_threads": args.threads,
    }  # fmt: skip
    if args.model == "ibp":
        ibp_only = {} if args.dims is None else {"init_dims": args.dims}
        if args.max_dims != -1:  # -1: not given, so IBPRFLVM's default
            ibp_only["max_dims"] = args.max_dims
        model = IBPRFLVM(**ibp_only, **common)
    else:
        model = RFLVM(n_components=2 if args.dims is None else args.dims, **common)
    shape = "x".join(str(s) for s in Y.shape) if Y.ndim else "scalar"
    print(f"{args.data}: {shape}, {int(np.isnan(Y).sum()) if Y.ndim else 0} unobserved entries")
    t0 = time.perf_counter()
    try:
        model.fit(Y, resume=args.checkpoint)
    except ValueError as exc:
        print(f"ibp-rflvm fit: {exc}", file=sys.stderr)
        return 2
    elapsed = time.perf_counter() - t0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ArviZ warns about few draws on short runs
        idata = model.to_inference_data()
        idata.to_netcdf(str(out / "samples.nc"))
        table = model.summary()
    table.to_csv(out / "summary.csv")
    np.savetxt(out / "latent.csv", model.latent_, delimiter=",")
    np.savetxt(out / "embedding.csv", model.embedding_, delimiter=",")
    labels = np.zeros(Y.shape[0], dtype=int)
    latent_heatmaps([model.latent_], [f"{type(model).__name__} ({args.likelihood})"], labels,
                    out / "latent_space.png", suptitle=str(args.data))  # fmt: skip
    k_plus_plot({f"chain {c}": k for c, k in enumerate(model.traces_["n_active"])}, out / "k_plus_trace.png",
                burn_in=model._burn_in())  # fmt: skip
    print(f"{args.n_iter} sweeps x {args.n_chains} chain(s) in {elapsed:.1f} s; "
          f"final K+ = {model.n_active_[-1]}")  # fmt: skip
    print(table[["mean", "sd", "ess_bulk", "ess_tail", "r_hat"]].head(6).to_string())
    files = "samples.nc, summary.csv, latent.csv, embedding.csv, latent_space.png, k_plus_trace.png"
    print(f"wrote {files} in {out}")
    return 0


def _reproduce(args: argparse.Namespace) -> int:
    """Run (or resume) the paper's experiments; see :mod:`ibp_rflvm.evaluation.harness`."""
    from .evaluation.harness import ReproduceError, RunConfig, reproduce, status

    if args.status and args.report_only:
        print("ibp-rflvm reproduce: --status and --report-only exclude each other", file=sys.stderr)
        return 2
    try:
        cfg = RunConfig(
            n_iter=args.n_iter,
            n_frequencies=args.n_frequencies,
            gplvm_iters=args.gplvm_iters,
            max_rows=args.max_rows,
            sqrt=args.sqrt,
            seed=args.seed,
            data_home=args.data_home,
            sampler=args.sampler,
        )
        if args.status:
            print(status(args.target, args.out, args.trials, cfg, args.datasets, args.methods, args.n_jobs))
            return 0
        summary = reproduce(
            args.target,
            out=args.out,
            trials=args.trials,
            config=cfg,
            datasets=args.datasets,
            methods=args.methods,
            n_jobs=args.n_jobs,
            scheduler=args.scheduler,
            progress=not args.quiet,
            report_only=args.report_only,
        )
    except ReproduceError as exc:
        print(f"ibp-rflvm reproduce: {exc}", file=sys.stderr)
        return 2
    print(
        f"{len(summary.computed)} cells computed, {len(summary.skipped)} already done, "
        f"{len(summary.failed)} failed, {len(summary.blocked)} blocked, in {summary.seconds:.0f} s"
    )
    if summary.interrupted:
        return 130
    return 1 if summary.failed or summary.blocked else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ibp-rflvm", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="fit IBP-RFLVM and RFLVM to breast cancer with 20%% held out")
    demo.add_argument("--out", default="results/demo", help="folder for the figures")
    demo.add_argument("--n-iter", type=int, default=100, help="MCMC sweeps (default 100)")
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--progress", action="store_true", help="show progress bars")
    demo.set_defaults(func=_demo)
    ds = sub.add_parser("datasets", help="list the data sets and whether their files are found")
    ds.add_argument("--data-home", default=None)
    ds.set_defaults(func=_datasets)
    fit = sub.add_parser("fit", help="fit a model to your own data file (CSV/TSV, .npy, .npz)")
    fit.add_argument("data", help="CSV/TSV (header optional; empty or NA cells unobserved), .npy or .npz")
    fit.add_argument("--likelihood", default="gaussian", help="gaussian (default) or a count likelihood")
    fit.add_argument("--model", choices=["ibp", "dense"], default="ibp", help="IBP-RFLVM (default) or RFLVM")
    fit.add_argument(
        "--dims", type=int, default=None,
        help="initial (ibp; default: init_dims of IBPRFLVM) or fixed (dense; default 2) dimensions",
    )  # fmt: skip
    fit.add_argument(
        "--max-dims", type=lambda v: None if v == "none" else int(v), default=-1,
        help="cap on K+ (ibp; 'none': no cap; default: IBPRFLVM's, 50)",
    )
    fit.add_argument("--sampler", choices=["default", "paper"], default="default",
                     help="the mixing sampler (default) or the paper's sweep and start")  # fmt: skip
    fit.add_argument("--n-iter", type=int, default=100)
    fit.add_argument("--burn-in", type=int, default=None)
    fit.add_argument("--n-frequencies", type=int, default=50)
    fit.add_argument("--n-chains", type=int, default=1)
    fit.add_argument(
        "--threads", type=int, default=None,
        help="threads per chain (n_threads; default: the CPUs shared among the chains); same result",
    )  # fmt: skip
    fit.add_argument("--seed", type=int, default=0)
    fit.add_argument("--key", default=None, help="array name inside a .npz file")
    fit.add_argument("--checkpoint", action="store_true", help="checkpoint in OUT and resume from it")
    fit.add_argument("--out", default="results/fit", help="output folder")
    fit.add_argument("--quiet", action="store_true", help="no progress bar")
    fit.set_defaults(func=_fit)
    rep = sub.add_parser(
        "reproduce",
        help="run the paper's Tables 1-2 and Figures 1-2, and Table 3 (kNN accuracy of the latent spaces); "
        "resumable, parallel or on Dask",
    )
    rep.add_argument(
        "target",
        choices=["table1", "table2", "table3", "fig1", "fig2", "all"],
        help="what to reproduce; figures use trial 0's cells",
    )
    rep.add_argument("--trials", type=int, default=5, help="trials per data set and method (default 5)")
    rep.add_argument(
        "--n-iter",
        type=int,
        default=100,
        help="MCMC sweeps of every sampler (default 100); GPLVM uses --gplvm-iters instead",
    )
    rep.add_argument(
        "--gplvm-iters", type=int, default=1000, help="GPLVM optimiser iterations (default 1000)"
    )
    rep.add_argument("--n-frequencies", type=int, default=50, help="random frequencies M of the RFLVMs")
    rep.add_argument("--out", default="results", help="output folder for cells/, tables/, figures/")
    rep.add_argument(
        "--n-jobs",
        type=int,
        default=None,
        help="local worker processes (default: one per core; 1 runs in this process)",
    )
    rep.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="run the cells on the Dask cluster at ADDRESS (e.g. tcp://host:8786)",
    )
    rep.add_argument("--datasets", default=None, help="comma-separated subset of the target's data sets")
    rep.add_argument("--methods", default=None, help="comma-separated subset of the target's methods")
    rep.add_argument("--sqrt", action="store_true", help="square-root transform the counts (rounded)")
    rep.add_argument("--seed", type=int, default=0, help="base seed of every cell's seeds (default 0)")
    rep.add_argument(
        "--sampler", choices=["paper", "default"], default="paper",
        help="the paper's sweep and start (default; the committed cells) or the library's mixing sampler",
    )  # fmt: skip
    rep.add_argument("--data-home", default=None, help="data folder searched after $IBP_RFLVM_DATA")
    rep.add_argument("--quiet", action="store_true", help="no progress bar")
    rep.add_argument(
        "--report-only",
        action="store_true",
        help="compute nothing: write the target's tables and figures from the cells already in --out",
    )
    rep.add_argument(
        "--status",
        action="store_true",
        help="compute and write nothing: show the cells done and in flight in --out, and the time "
        "left with --n-jobs workers",
    )
    # For smoke tests only: evenly spaced row subsets (recorded in every cell file).
    rep.add_argument("--max-rows", type=int, default=None, help=argparse.SUPPRESS)
    rep.set_defaults(func=_reproduce)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
