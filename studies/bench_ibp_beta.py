"""One default fit with the IBP's beta learned or fixed, for timing with farm-bench (run by hand).

``farm-bench -n 3 --timeout 1800 -- python studies/bench_ibp_beta.py cancer --ibp-beta none
--vs 'python studies/bench_ibp_beta.py cancer --ibp-beta 1'``

Fits one chain from `--init-dims` on the training entries (20% held out, mask seed 0) for
`--n-iter` sweeps and prints its final ``K+``, median ``beta`` over the second half and seconds.

A one-off study (``studies/``, not maintained): its result and command are in
docs/record/sampler.md.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ibp_rflvm import IBPRFLVM, holdout_mask
from ibp_rflvm.datasets import load


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dataset")
    p.add_argument("--ibp-beta", type=lambda v: None if v == "none" else float(v), default=1.0)
    p.add_argument("--n-iter", type=int, default=100)
    p.add_argument("--init-dims", type=int, default=12)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    ds = load(args.dataset)
    lik = "gaussian" if ds.kind == "real" else "negbinom"
    Y_train, _ = holdout_mask(ds.data, fraction=0.2, random_state=0)
    t0 = time.perf_counter()
    est = IBPRFLVM(
        likelihood=lik, n_iter=args.n_iter, init_dims=args.init_dims, random_state=args.seed,
        ibp_beta=args.ibp_beta,
    ).fit(Y_train)
    half = args.n_iter // 2
    print(
        f"{args.dataset} beta={args.ibp_beta}: K+ {est.n_active_[-1]}, median beta "
        f"{np.median(est.ibp_beta_[half:]):.3f}, {time.perf_counter() - t0:.1f} s"
    )


if __name__ == "__main__":
    main()
