"""Wall time of one default IBP-RFLVM fit on breast cancer (569 x 30) with 1 or with 4 chains.

Run by hand, timed from outside by farm-bench (the whole process, start-up included)::

    farm-bench -n 3 --timeout 1800 --vs '.venv/bin/python benchmarks/bench_chains.py 1' -- \
        .venv/bin/python benchmarks/bench_chains.py 4

The 4 chains start from 2, 5, 9 and 12 dimensions (the default spread), run in 2 worker
processes and are combined by stacking (PSIS-LOO of every training entry), all inside the timed
fit; the single chain starts from 12. Prints the fit's own wall seconds too.
"""

from __future__ import annotations

import sys
import time
import warnings

from sklearn.datasets import load_breast_cancer

from ibp_rflvm import IBPRFLVM


def main() -> None:
    n_chains = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    Y = load_breast_cancer().data
    Y = (Y - Y.mean(axis=0)) / Y.std(axis=0)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the chains' disagreement is expected and reported
        model = IBPRFLVM(n_chains=n_chains, random_state=0).fit(Y)
    print(
        f"{n_chains} chain(s): fit {time.perf_counter() - t0:.1f} s, weights "
        f"{', '.join(f'{w:.2f}' for w in model.chain_weights_)}, embedding {model.embedding_.shape}"
    )


if __name__ == "__main__":
    main()
