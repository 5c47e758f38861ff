"""One reproduction cell of an IBP-RFLVM from another start (run by hand; nothing written).

``python benchmarks/start_cell.py newsgroups nb-ibp-rflvm --init-dims 2 [--trial 0] [--sampler default]``

The data, hold-out mask, model seed and settings are the harness's for the cell (as
``ibp-rflvm reproduce --sampler ...`` computes it); only the starting number of dimensions
differs. So its held-out figure can be set beside the cell's record in ``results/default/cells``
to see what the start costs or gains on that mask. Prints the held-out LPD per entry (and the
perplexity for counts), the ``K+`` trace's min / median / max over the kept sweeps, the final
``K+`` and the final sample's effective dimensions.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits

from ibp_rflvm import IBPRFLVM
from ibp_rflvm.evaluation.cells import _final_effective, dataset_arrays, split_for
from ibp_rflvm.evaluation.experiments import METHODS, RunConfig, model_seed


def main() -> None:
    fmt = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=fmt)
    parser.add_argument("dataset")
    ibp_methods = sorted(k for k, m in METHODS.items() if m.family == "rflvm" and m.ibp)
    parser.add_argument("method", choices=ibp_methods)
    parser.add_argument("--init-dims", type=int, required=True)
    parser.add_argument("--trial", type=int, default=0)
    parser.add_argument("--sampler", choices=["paper", "default"], default="default")
    args = parser.parse_args()

    cfg = RunConfig(sampler=args.sampler)
    m = METHODS[args.method]
    with threadpool_limits(limits=1, user_api="blas"):
        Y, _, _ = dataset_arrays(args.dataset, cfg.sqrt, cfg.data_home, cfg.max_rows)
        Y_train, Y_test, _, digest = split_for(Y, args.dataset, args.trial, cfg.seed)
        seed = model_seed(args.dataset, args.method, args.trial, cfg.seed)
        est = IBPRFLVM(
            likelihood=m.likelihood, n_frequencies=cfg.n_frequencies, n_iter=cfg.n_iter,
            random_state=seed, sampler=cfg.sampler, init_dims=args.init_dims,
        )
        t0 = time.perf_counter()
        est.fit(Y_train)
        seconds = time.perf_counter() - t0
        n_test = int(np.count_nonzero(~np.isnan(Y_test)))
        lpd = float(est.log_predictive_density(Y_test)) / n_test
        perplexity = est.perplexity(Y_test) if est.spec_.likelihood.kind == "counts" else None
        effective = _final_effective(est)  # as the cell records it
    kept = np.asarray(est.n_active_).ravel()[cfg.n_iter // 2 :]
    print(
        f"{args.dataset} {args.method} trial {args.trial} (mask {digest}), {args.sampler} sampler from "
        f"{args.init_dims}: LPD/entry {lpd:.4f}"
        + ("" if perplexity is None else f", perplexity {perplexity:.1f}")
        + f"; K+ kept {kept.min()} / {int(np.median(kept))} / {kept.max()}, final {kept[-1]}, "
        f"effective {effective}; fit {seconds:.0f} s"
    )


if __name__ == "__main__":
    main()
