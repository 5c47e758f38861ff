"""Why the paper's sweep freezes K+: slice, new sticks and alpha along a chain (run by hand).

``python studies/diagnose_paper_sweep.py cambridge --n-iter 60 --init-dims 2``

Runs the paper's sweep (``sampler="paper"``: no dimension moves, unscaled start) and reports,
per sweep, the slice ``s``, how many new dimensions the slice step represented, how many of them
a row switched on, ``K+`` and ``alpha``.

A one-off study (``studies/``, not maintained): its result and command are in
docs/record/sampler.md.
"""

from __future__ import annotations

import argparse

import numpy as np
from threadpoolctl import threadpool_limits

from ibp_rflvm import holdout_mask, model
from ibp_rflvm.datasets import load


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dataset")
    p.add_argument("--n-iter", type=int, default=60)
    p.add_argument("--init-dims", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    Y_train, _ = holdout_mask(load(args.dataset).data, fraction=0.2, random_state=0)
    data = model.Data.from_array(Y_train)
    spec = model.ModelSpec(n_dims=args.init_dims, moves=False, scaled_start=False)
    rng = np.random.default_rng(args.seed)
    slices, new, kp, alpha = [], [], [], []
    with threadpool_limits(limits=1, user_api="blas"):
        state = model.init_state(rng, data, spec)
        for _ in range(args.n_iter):
            state, info = model.sweep(rng, state, data, spec)
            slices.append(info.slice)
            new.append(info.new_dims)
            kp.append(state.k_plus)
            alpha.append(state.alpha)
    print(f"{args.dataset}, paper's sweep from K = {args.init_dims}, {args.n_iter} sweeps")
    print(f"mean slice s: {np.mean(slices):.3f}; new dimensions represented: {int(np.sum(new))} "
          f"(in {int(np.count_nonzero(new))} sweeps)")  # fmt: skip
    print(f"K+ first/last/max: {kp[0]}/{kp[-1]}/{max(kp)}; alpha over the last half: "
          f"{np.mean(alpha[args.n_iter // 2:]):.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
