"""How large is a dimension's importance next to the whole log-likelihood? (run by hand)

``python studies/probe_effective_threshold.py spam negbinom --rows 1000 --sweeps 40``

Fits the default sampler on the first `--rows` rows of a data set (trial 0's hold-out mask, as
the reproduction), then prints for the final sample: the training log-likelihood per observed
entry, each dimension's importance (the drop in training log-likelihood when it is removed,
``ibp_rflvm.mcmc.effective``) per observed entry, largest first, and the effective count at a few
thresholds. The default threshold (0.01 nats per entry) was set on dense real-valued data, where
the log-likelihood per entry is of order one; on sparse counts the whole of it can be a few
hundredths of a nat per entry, and this shows where the dimensions fall against it.

A one-off study (``studies/``, not maintained): its result and command are in
docs/record/sampler.md.
"""

from __future__ import annotations

import argparse

import numpy as np
from threadpoolctl import threadpool_limits

from ibp_rflvm import IBPRFLVM
from ibp_rflvm.evaluation.cells import dataset_arrays, split_for
from ibp_rflvm.summaries.dimensions import effective_scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("likelihood")
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--sweeps", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with threadpool_limits(limits=1, user_api="blas"):
        Y, _, _ = dataset_arrays(args.dataset, False, None, args.rows)
        Y_train = split_for(Y, args.dataset, 0, 0)[0]
        est = IBPRFLVM(
            likelihood=args.likelihood, n_frequencies=50, n_iter=args.sweeps,
            random_state=args.seed, sampler="default",
        ).fit(Y_train)
        importance = np.sort(effective_scores(est.posterior_, 1)[0][-1][0])[::-1]
    n_obs = int(np.count_nonzero(~np.isnan(Y_train)))
    loglik = float(np.asarray(est.log_likelihood_).ravel()[-1])
    print(
        f"{args.dataset} {Y.shape[0]} x {Y.shape[1]}, {args.likelihood}, {args.sweeps} sweeps: "
        f"K+ {importance.size}, training log-likelihood {loglik / n_obs:.4f} nats per observed entry"
    )
    print("importance per observed entry, largest first:", " ".join(f"{v:.2e}" for v in importance / n_obs))
    for threshold in (0.01, 0.001, 0.0001):
        print(f"effective at {threshold:g} nats per entry: {int(np.sum(importance > threshold * n_obs))}")


if __name__ == "__main__":
    main()
