"""ibp-rflvm from the command line: a demo, the data sets, fitting your own data, and the paper's
experiments. `ibp-rflvm COMMAND --help` describes each command."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from .fit import CHECKPOINT_NAME, numba_note


def _demo(args: argparse.Namespace) -> int:
    from sklearn.datasets import load_breast_cancer

    from .. import IBPRFLVM, RFLVM, holdout_mask
    from ..plots import k_plus_plot, latent_heatmaps
    from ..summaries.dimensions import effective_dims_posterior, k_plus_posterior

    out = Path(args.out)
    data = load_breast_cancer()
    Y = data.data
    Y = (Y - Y.mean(axis=0)) / Y.std(axis=0)
    labels = data.target  # 0 malignant, 1 benign
    Y_train, Y_test = holdout_mask(Y, fraction=0.2, random_state=args.seed)
    n_test = int(np.count_nonzero(~np.isnan(Y_test)))
    print(f"Wisconsin breast cancer: {Y.shape[0]} x {Y.shape[1]}, standardised; {n_test} entries held out")
    note = numba_note("gaussian")
    if note is not None:
        print(note, flush=True)

    t0 = time.perf_counter()
    ibp = IBPRFLVM(n_iter=args.n_iter, random_state=args.seed, verbose=args.progress).fit(Y_train)
    t_ibp = time.perf_counter() - t0
    post = ibp.posterior_
    k_trace = post.traces["n_active"][post.best_chain]
    k_final = int(k_trace[-1])
    t0 = time.perf_counter()
    dense = RFLVM(n_components=max(k_final, 1), n_iter=args.n_iter, random_state=args.seed,
                  verbose=args.progress).fit(Y_train)  # fmt: skip
    t_dense = time.perf_counter() - t0

    print(f"\n{'model':<12} {'D':>3} {'held-out LPD':>14} {'per entry':>10} {'s/sweep':>8}")
    for name, model, d, t in (("IBP-RFLVM", ibp, k_final, t_ibp), ("RFLVM", dense, k_final, t_dense)):
        lpd = model.log_predictive_density(Y_test)
        print(f"{name:<12} {d:>3} {lpd:>14.2f} {lpd / n_test:>10.4f} {t / args.n_iter:>8.3f}")
    trace = " ".join(str(int(k)) for k in k_trace)
    print(f"\nK+ after each sweep: {trace}")
    k_plus = k_plus_posterior(post)
    print(f"posterior of K+ (kept sweeps): {', '.join(f'{v}: {p:.2f}' for v, p in k_plus.items())}")
    eff = effective_dims_posterior(post)
    print("effective dimensions (posterior): " + ", ".join(f"{v}: {p:.2f}" for v, p in eff.items()))

    latent_heatmaps(
        [ibp.latent_, dense.latent_], ["IBP-RFLVM", f"RFLVM (D={k_final})"], labels,
        out / "latent_space.png", label_names=["malignant", "benign"],
        suptitle="Breast cancer latent space (rows sorted by diagnosis)",
        embeddings=[ibp.view(), dense.view()],
    )  # fmt: skip
    k_plus_plot({"IBP-RFLVM": k_trace}, out / "k_plus_trace.png", post.burn_in, k_plus,
                posterior_label="posterior of K+")  # fmt: skip
    print(f"\nwrote {out / 'latent_space.png'} and {out / 'k_plus_trace.png'}")
    return 0


def _datasets(args: argparse.Namespace) -> int:
    from ..datasets import available_datasets

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
    from ..plumbing.io import read_table
    from ..plumbing.validation import as_data_matrix, labelled
    from . import fit as cf

    prog = "ibp-rflvm fit"
    out = cf.OutputFolder(args.out)
    try:
        out.check()
        table = read_table(args.data, key=args.key, label_column=args.labels)
        params = cf.likelihood_params(args.likelihood_param, args.likelihood)
        table, sf = cf.size_factors(
            table, args.likelihood, args.size_factors, args.size_factor_column, params
        )
        if sf is not None:
            params["size_factors"] = sf
        # The checks fit makes, here, so that bad input stops before an output folder exists.
        with labelled(table.rows, table.columns):
            Y = as_data_matrix(table.values)
            lik = cf.likelihood_class(args.likelihood)(**params)
            lik.validate(Y)
    except (OSError, ValueError, TypeError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    common = {
        "likelihood": args.likelihood, "n_frequencies": args.n_frequencies, "n_iter": args.n_iter,
        "burn_in": args.burn_in, "random_state": args.seed, "n_chains": args.n_chains,
        "verbose": not args.quiet, "sampler": args.sampler, "n_threads": args.threads,
        "likelihood_params": params or None, "n_jobs": args.n_jobs, "backend": args.backend,
        "frequency_update": args.frequency_update,
    }  # fmt: skip
    if args.checkpoint:
        common["checkpoint_path"] = str(out.path / cf.CHECKPOINT_NAME)
        old = out.path / cf.OLD_CHECKPOINT_NAME
        if old.exists() and not any(out.path.glob(cf.CHECKPOINT_NAME + "*")):
            print(f"{prog}: {old} is a checkpoint of an older version (a zip despite its name); rename "
                  f"it to {cf.CHECKPOINT_NAME} to resume from it", file=sys.stderr)  # fmt: skip
    try:
        model = _model(args, common)
    except ValueError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    n, j = Y.shape
    print(f"{args.data}: {n} rows x {j} columns, {int(np.isnan(Y).sum())} unobserved entries")
    for note in table.notes:
        print(f"  {note}")
    title = f"{'IBP-RFLVM' if args.model == 'ibp' else 'RFLVM'} ({args.likelihood})"
    chains = f"{args.n_chains} chains" if args.n_chains > 1 else "1 chain"
    print(f"fitting {title}: {chains} x {args.n_iter} sweeps")
    note = cf.numba_note(args.likelihood)
    if note is not None:
        print(note, flush=True)
    t0 = time.perf_counter()
    try:
        if args.checkpoint:
            out.make()
        with cf.readable_warnings(prog), labelled(table.rows, table.columns):
            model.fit(Y, resume=args.checkpoint)
    except (ValueError, TypeError) as exc:
        out.discard_if_empty()
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    except BaseException:
        out.discard_if_empty()
        raise
    elapsed = time.perf_counter() - t0
    print(f"{args.n_iter} sweeps x {chains} in {elapsed:.1f} s")
    out.make()
    with cf.readable_warnings(prog):
        lines, summary, written = cf.write_results(model, table, out.path, title, str(args.data))
    for line in lines:
        print(line)
    print(summary[["mean", "sd", "ess_bulk", "ess_tail", "r_hat"]].head(6).to_string())
    if args.checkpoint:
        written.append(cf.CHECKPOINT_NAME + (".chain<c>" if args.n_chains > 1 else ""))
    print(f"wrote {', '.join(written)} in {out.path}")
    return 0


def _model(args: argparse.Namespace, common: dict):
    """The estimator the options ask for; a cap below the default start lowers the start."""
    from .. import IBPRFLVM, RFLVM

    if args.model == "dense":
        return RFLVM(n_components=2 if args.dims is None else args.dims, **common)
    ibp_only = {} if args.dims is None else {"init_dims": args.dims}
    if args.model == "gamma-poisson":
        ibp_only["z_prior"] = "gamma-poisson"
    if args.max_dims != -1:  # -1: not given, so IBPRFLVM's default
        ibp_only["max_dims"] = args.max_dims
    cap = ibp_only.get("max_dims", IBPRFLVM().max_dims)
    start = ibp_only.get("init_dims", IBPRFLVM().init_dims)
    if cap is not None and start > cap:
        if args.dims is not None:
            raise ValueError(f"--dims {args.dims} exceeds --max-dims {cap}: the start must respect the cap")
        ibp_only["init_dims"] = cap
    return IBPRFLVM(**ibp_only, **common)


def _reproduce(args: argparse.Namespace) -> int:
    """Run (or resume) the paper's experiments; see :mod:`ibp_rflvm.evaluation.harness`."""
    from ..evaluation.harness import ReproduceError, RunConfig, reproduce, status
    from .fit import OutputFolder

    out = OutputFolder(args.out)
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
        out.discard_if_empty()
        print(f"ibp-rflvm reproduce: {exc}", file=sys.stderr)
        return 2
    print(
        f"{len(summary.computed)} cells computed, {len(summary.skipped)} already done, "
        f"{len(summary.failed)} failed, {len(summary.blocked)} blocked, in {summary.seconds:.0f} s"
    )
    if summary.interrupted:
        return 130
    return 1 if summary.failed or summary.blocked else 0


FIT_HELP = """Fit IBP-RFLVM (or the dense RFLVM) to a data file and write the results.

Text files: the delimiter (comma, tab, semicolon, spaces) is detected; the first line is a header
when it names columns of numbers. The first column is read as row names, not data, when its
header cell is empty (the index pandas' to_csv writes by default, or R's write.csv), when the
header is one cell shorter than the rows (R's write.table), or when its cells are distinct text.
Any other column of text is refused, naming it. Messages count rows and columns from 1."""

FIT_EPILOG = f"""output files (in --out):
  samples.nc        every chain's kept samples (ArviZ InferenceData)
  summary.csv       R-hat and effective sizes, then one row per chain (start, K+, weight)
  latent.csv        the final latent positions of the best chain (largest stacking weight),
                    its active dimensions most used first; header and row names
  embedding.csv     the posterior embedding of all chains' kept samples, stacking-weighted
  embedding_std.csv each row's posterior sd in embedding.csv's coordinates
  view.csv          a 2-D picture of embedding.csv that keeps each row's neighbours (t-SNE;
                    distances between clusters mean nothing; 10 rows or more)
  latent_space.png  latent.csv as a heat map, titled with its chain, over the view's scatter
  k_plus_trace.png  K+ per sweep of every chain, and the combined posterior of K+
  dimensions.csv    the dimensions matched across samples and chains: usage, probability,
                    share of the fit, share of chains that found it, top columns
  top_columns.csv   each dimension's top columns (by variation along it), with effects
  dimension_positions.csv, dimension_positions_std.csv
                    each row's posterior mean (sd) position on each dimension
  dimension_effects.png    each dimension's on-minus-off effect on its top columns
  dimension_profiles.png   each dimension's top columns along it, over a rug of the rows
  view_by_dimension.png    the view coloured by each dimension's usage (when view.csv is)
  groups.csv        with --labels: each group's usage and mean position on each dimension
  {CHECKPOINT_NAME}    with --checkpoint
Chains are numbered from 0, as in samples.nc and summary.csv.

The first fit after installing compiles numba kernels (10-30 s, said when it happens); numba
caches them in the package's __pycache__ folders when they are writable (an editable install),
otherwise in ~/.cache/numba; set NUMBA_CACHE_DIR to choose the folder (needed when neither is
writable)."""


def build_parser() -> argparse.ArgumentParser:
    from ..likelihoods import REGISTRY

    parser = argparse.ArgumentParser(prog="ibp-rflvm", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="fit IBP-RFLVM and RFLVM to breast cancer with 20%% held out")
    demo.add_argument("--out", default="results/demo", help="folder for the figures")
    demo.add_argument("--n-iter", type=int, default=100, help="MCMC sweeps (default 100)")
    demo.add_argument("--seed", type=int, default=0, help="random seed of the hold-out and the chains")
    demo.add_argument("--progress", action="store_true", help="show progress bars")
    demo.set_defaults(func=_demo)
    ds = sub.add_parser("datasets", help="list the data sets and whether their files are found")
    ds.add_argument("--data-home", default=None)
    ds.set_defaults(func=_datasets)
    fit = sub.add_parser(
        "fit", help="fit a model to your own data file (CSV/TSV, .npy, .npz)", description=FIT_HELP,
        epilog=FIT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    fit.add_argument(
        "data", help="CSV/TSV (header and row names optional; empty or NA cells unobserved), .npy or .npz"
    )
    fit.add_argument(
        "--likelihood", default="gaussian", choices=sorted(REGISTRY),
        help="observation model (default gaussian; the others are for counts or binary data)",
    )  # fmt: skip
    fit.add_argument(
        "--likelihood-param", action="append", default=[], metavar="KEY=VALUE",
        help="a likelihood parameter, repeatable: e.g. n_trials=5 (binomial), a0=1 b0=1 (gaussian's "
        "noise prior), e0=1 f0=1 (negbinom); VALUE is JSON or a word, or @FILE for an array read like the "
        "data (e.g. per-entry n_trials)",
    )  # fmt: skip
    fit.add_argument(
        "--size-factors", default=None, metavar="total|FILE",
        help="per-row size factors of poisson/negbinom: 'total' (each row's mean count) or a file of one "
        "positive number per row (matched by row name when both files have them)",
    )  # fmt: skip
    fit.add_argument("--size-factor-column", default=None, metavar="NAME|NUMBER",
                     help="take the size factors from this column of the data (its header name, or its "
                     "number counted from 1); the column is then not fitted")  # fmt: skip
    fit.add_argument(
        "--model", choices=["ibp", "dense", "gamma-poisson"], default="ibp",
        help="IBP-RFLVM (default), RFLVM, or the IBP-RFLVM with the gamma-Poisson prior on Z",
    )  # fmt: skip
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
    fit.add_argument(
        "--frequency-update", choices=["ess", "mh"], default=None,
        help="how the random frequencies move: ess (elliptical slice) or mh (the paper's step); "
        "default: the sampler's own (ess, but mh for --sampler paper and --backend jax)",
    )  # fmt: skip
    fit.add_argument("--n-iter", type=int, default=100, help="MCMC sweeps per chain (default 100)")
    fit.add_argument("--burn-in", type=int, default=None, help="sweeps discarded (default: half)")
    fit.add_argument("--n-frequencies", type=int, default=50, help="random frequencies M (default 50)")
    fit.add_argument("--n-chains", type=int, default=1, help="independent chains, combined by stacking")
    fit.add_argument(
        "--n-jobs", type=int, default=None,
        help="processes for the chains (default: one per chain, at most the CPUs; 1: this one)",
    )  # fmt: skip
    fit.add_argument(
        "--threads", type=int, default=None,
        help="threads per chain (n_threads; default: the CPUs shared among the chains); same result",
    )  # fmt: skip
    fit.add_argument(
        "--backend", choices=["numba", "jax"], default="numba",
        help="where the count likelihoods' sweep runs: numba (CPU, default) or jax (a GPU; the jax extra)",
    )  # fmt: skip
    fit.add_argument("--seed", type=int, default=0, help="random seed; the same seed gives the same chains")
    fit.add_argument("--key", default=None, help="array name inside a .npz file")
    fit.add_argument(
        "--labels", default=None, metavar="COLUMN",
        help="a column of row labels (its header name, or its number counted from 1), taken out of the "
        "data: groups.csv places each group along each dimension, and the pictures are coloured by group",
    )  # fmt: skip
    fit.add_argument(
        "--checkpoint", action="store_true",
        help=f"save the chain to OUT/{CHECKPOINT_NAME} every 10 sweeps (a zip of .npy arrays and JSON, "
        f"never a pickle; with several chains {CHECKPOINT_NAME}.chain<c>) and resume from it when it exists",
    )  # fmt: skip
    fit.add_argument("--out", default="results/fit", help="output folder, created once the data are read")
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
