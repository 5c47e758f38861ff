"""Do four chains of the default sweep agree on breast cancer (issue 64, item 4)? One fit of
``n_chains=4`` (seeds spawned from `--seed`, starts spread from 2 to 12 dimensions, as the
estimator does; `--same-start`: all from 12): whether it warns that the chains disagree, the
split R-hat of the log-likelihood and ``K+``, each chain's ``K+`` and stacking weight, and for
the dimensions with a share of at least 5%, the share of chains that found each
(``dimensions_['chains']``).

Run::

    OPENBLAS_NUM_THREADS=1 .venv/bin/python studies/four_chains.py --sweeps 1000 --n-jobs 1

A one-off study (``studies/``, not maintained): its results and commands are in
docs/record/sampler.md.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler

from ibp_rflvm import IBPRFLVM


class _SameStart(IBPRFLVM):
    """Every chain from `init_dims`, each with its own seed, rather than starts spread from 2."""

    def _chain_starts(self, spec, n_chains):
        return [spec.n_dims] * n_chains


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweeps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--same-start", action="store_true", help="every chain from init_dims (12)")
    args = parser.parse_args()
    Y = StandardScaler().fit_transform(load_breast_cancer().data)
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cls = _SameStart if args.same_start else IBPRFLVM
        model = cls(n_iter=args.sweeps, n_chains=4, n_jobs=args.n_jobs, random_state=args.seed).fit(Y)
    took = time.perf_counter() - start
    names = sorted({type(w.message).__name__ for w in caught})
    print(f"4 chains x {args.sweeps} sweeps in {took:.0f} s wall; warnings: {names}")
    for w in caught:
        if type(w.message).__name__ == "ChainsDisagreeWarning":
            print(f"  {w.message}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = model.summary()
    print(table.loc[["loglik", "k_plus"], ["mean", "ess_bulk", "r_hat"]].to_string())
    kept = model.posterior_.kept("n_active")
    print("K+ median per chain:", np.median(kept, axis=1), "weights:", np.round(model.chain_weights_, 3))
    dims = model.dimensions_
    big = dims[dims["share"] >= 0.05]
    print(big[["usage", "probability", "share", "chains"]].round(3).to_string())
    print(
        f"dimensions with share >= 5%: {len(big)}; found by every chain: {int((big['chains'] == 1).sum())}; "
        f"by at least 3 of 4: {int((big['chains'] >= 0.75).sum())}"
    )


if __name__ == "__main__":
    main()
