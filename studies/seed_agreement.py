"""Do fits from different seeds agree on breast cancer (issue 64, items 1 and 4)? One chain per
seed and variant (``none``: the sweep before issue 64; ``default``: today's), each on the same
80% of the entries: for every pair of seeds, the share of one fit's dimensions with a share of
at least 5% that the other has (effect cosine at least 0.8, each dimension paired once:
:func:`ibp_rflvm.summaries.reproducibility.found_in_chain`) and the mean 10-NN Jaccard overlap of
their ``embedding_``; over the seeds, the held-out log predictive density's spread and the
split R-hat of the log-likelihood and ``K+`` with each seed's chain as one of the chains.

Run::

    OPENBLAS_NUM_THREADS=1 .venv/bin/python studies/seed_agreement.py --sweeps 1000 --seeds 0 1 2 3

A one-off study (``studies/``, not maintained): its results and commands are in
docs/record/sampler.md, section 14.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
import warnings
from pathlib import Path

import arviz as az
import numpy as np
from sklearn.neighbors import NearestNeighbors

from ibp_rflvm import holdout_mask
from ibp_rflvm.summaries.meaning import dimension_summary
from ibp_rflvm.summaries.reproducibility import found_in_chain

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from bench_ess import VARIANTS, load_table  # noqa: E402


def knn_sets(E: np.ndarray, k: int = 10) -> np.ndarray:
    idx = NearestNeighbors(n_neighbors=k + 1).fit(E).kneighbors(E, return_distance=False)
    return idx[:, 1:]


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    scores = [len(set(x) & set(y)) / len(set(x) | set(y)) for x, y in zip(a, b, strict=True)]
    return float(np.mean(scores))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweeps", type=int, default=1000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--variants", nargs="+", default=["none", "default"], choices=sorted(VARIANTS))
    args = parser.parse_args()
    Y, likelihood = load_table("cancer")
    Y_train, Y_test = holdout_mask(Y, fraction=0.2, random_state=0)
    warnings.simplefilter("ignore")
    for variant in args.variants:
        fits = []
        for seed in args.seeds:
            start = time.process_time()
            model = VARIANTS[variant](likelihood=likelihood, n_iter=args.sweeps, random_state=seed).fit(
                Y_train
            )
            cpu = time.process_time() - start
            post = model.posterior_
            summary = dimension_summary(post)
            big = summary.share >= 0.05
            fits.append(
                {
                    "seed": seed, "cpu": cpu, "lpd": model.score(Y_test), "effect": summary.effect,
                    "big": big, "knn": knn_sets(np.asarray(model.embedding_)),
                    "loglik": post.kept("loglik")[0], "k_plus": post.kept("n_active")[0].astype(float),
                }
            )  # fmt: skip
            f = fits[-1]
            k_median = np.median(f["k_plus"])
            print(f"{variant} seed {seed}: {cpu:.0f} CPU-s, LPD {f['lpd']:.4f}, {len(big)} dimensions, "
                  f"{int(big.sum())} with share >= 5%, K+ median {k_median:.0f}", flush=True)  # fmt: skip
        matched, total, jac = 0, 0, []
        for a, b in itertools.permutations(fits, 2):
            found = found_in_chain(a["effect"][a["big"]], b["effect"])
            matched += int(found.sum())
            total += found.size
            if a["seed"] < b["seed"]:
                jac.append(jaccard(a["knn"], b["knn"]))
        lpd = np.array([f["lpd"] for f in fits])
        n = min(len(f["loglik"]) for f in fits)
        rhat = {q: float(az.rhat(np.stack([f[q][:n] for f in fits]))) for q in ("loglik", "k_plus")}
        spread = f"LPD {lpd.min():.4f} to {lpd.max():.4f} (sd {lpd.std(ddof=1):.4f})"
        print(f"{variant}: matched {matched}/{total} = {matched / max(total, 1):.2f} of the dimensions with "
              f"share >= 5% (over ordered pairs of seeds); 10-NN Jaccard {np.min(jac):.2f}-{np.max(jac):.2f} "
              f"(mean {np.mean(jac):.2f}); {spread}; "
              f"R-hat log-likelihood {rhat['loglik']:.2f}, K+ {rhat['k_plus']:.2f}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
