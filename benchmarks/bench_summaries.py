"""Time of the latent-space summaries (issue 54) on a posterior of 10,000 x 2,000 counts with 200
kept samples: ``dimensions_`` with ``top_columns`` (every kept sample), the posterior embedding
(its kept samples thinned to 50) and ``embedding_std_`` (the same 50).

The summaries are functions of the kept samples alone, so the posterior is built directly, not
sampled (a 10,000 x 2,000 chain of 400 sweeps would take hours on one core): 12 dimensions
used by 20-60% of the rows, each sample's ``X``, ``Z``, ``W`` and ``beta`` a small perturbation
of one reference (2% of ``Z`` flipped, noise on the rest), 50 frequencies, bias on, the
negative binomial's model of a fit on a small slice of the counts. Run on one thread::

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_summaries.py [--rows N --cols J --kept S]

Results and the command: BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from ibp_rflvm import IBPRFLVM
from ibp_rflvm.likelihoods.base import LikelihoodParams
from ibp_rflvm.mcmc.record import ChainRecord, ChainResult, Sample
from ibp_rflvm.model import Data
from ibp_rflvm.summaries import dimension_summary, embedding, embedding_std
from ibp_rflvm.summaries.embedding import own_dimension, posterior_embedding
from ibp_rflvm.summaries.posterior import Posterior


def build(rows: int, cols: int, kept: int, dims: int = 12, seed: int = 0) -> Posterior:
    rng = np.random.default_rng(seed)
    Y = rng.negative_binomial(2, 0.4, size=(rows, cols)).astype(np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        small = IBPRFLVM(likelihood="negbinom", n_iter=2, random_state=0).fit(Y[:60, :40])
    spec = small.spec_
    M = spec.n_frequencies
    L = 2 * M + int(spec.bias)
    usage = rng.uniform(0.2, 0.6, dims)
    Z0 = rng.random((rows, dims)) < usage
    X0 = rng.standard_normal((rows, dims))
    W0 = rng.standard_normal((M, dims))
    beta0 = 0.3 * rng.standard_normal((L, cols))
    samples = []
    for _ in range(kept):
        Z = Z0 ^ (rng.random(Z0.shape) < 0.02)
        H = (X0 + 0.1 * rng.standard_normal(X0.shape)) * Z
        W = W0 + 0.05 * rng.standard_normal(W0.shape)
        beta = beta0 + 0.02 * rng.standard_normal(beta0.shape)
        samples.append(Sample(H, W, LikelihoodParams(beta=beta, r=np.full(cols, 2.0)), usage.copy()))
    sweeps = 2 * kept
    record = ChainRecord(
        n_active=[dims] * sweeps, loglik=[0.0] * sweeps, alpha=[1.0] * sweeps, eta=[1.0] * sweeps,
        n_components=[1] * sweeps, z_traces={"ibp_beta": [1.0] * sweeps}, samples=samples,
    )  # fmt: skip
    template = small.posterior_
    data = Data.from_array(Y, spec.likelihood)
    chain = ChainResult(template.chains[0].state, record)
    return Posterior((chain,), data, spec, np.array([dims]), template.stacking, kept)


def size_arguments(parser: argparse.ArgumentParser) -> None:
    """The built posterior's size: ``--rows``, ``--cols`` and ``--kept`` samples."""
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--cols", type=int, default=2_000)
    parser.add_argument("--kept", type=int, default=200)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size_arguments(parser)
    parser.add_argument("--embedding-draws", type=int, default=embedding.EMBEDDING_MAX_DRAWS,
                        help="kept samples the embedding uses (its default 50 holds 2 x 50 N x J blocks: "
                             "16 GB at 10,000 x 2,000)")  # fmt: skip
    args = parser.parse_args()
    embedding.EMBEDDING_MAX_DRAWS = args.embedding_draws
    post = build(args.rows, args.cols, args.kept)
    # CPU seconds of this one-threaded process: on a shared machine its wall time also counts
    # the other processes' turns.
    with threadpool_limits(limits=1):
        start = time.process_time()
        summary = dimension_summary(post)
        t_dims = time.process_time() - start
        start = time.process_time()
        posterior_embedding(post)
        n = own_dimension(post)
        t_emb = time.process_time() - start
        start = time.process_time()
        embedding_std(post, n)
        t_std = time.process_time() - start
    print(f"{args.rows} x {args.cols}, {args.kept} kept samples, 12 dimensions, one thread, CPU seconds:")
    print(f"  dimensions_ + top_columns: {t_dims:.1f} s ({len(summary.labels)} dimensions reported, "
          f"{summary.n_aligned} aligned)")
    draws = embedding.EMBEDDING_MAX_DRAWS
    print(f"  posterior embedding (existing, {draws} samples): {t_emb:.1f} s")
    print(f"  embedding_std_ ({n} coordinates, {draws} samples): {t_std:.1f} s")


if __name__ == "__main__":
    main()
