"""Could one move remove or merge a dimension many rows use? Two probes (run by hand).

``python studies/probe_widely_used.py cambridge --init-dims 12 --warmup 200 --seed 12``

From the default sampler's state after `--warmup` sweeps, for the dimensions more than 20 rows
use, it prints the change in the collapsed log-likelihood of the completed data for

* **merge** ``k' -> k``: the rows of ``k'`` switch ``k`` on and ``k'`` is dropped; each moved
  row's ``x_k`` is set to the best point of the row's own log-likelihood along ``k`` (a
  17-point grid, the informed proposal's), so the figure is an upper bound on what a merge
  proposal could reach without moving anything else. Beside it: the change in the IBP prior
  of ``Z`` (one column of ``m_k + m_k' - both`` ones in place of two).
* **annealed death** of ``k`` (``--anneal T``): ``k``'s frequencies are scaled down to 0 over
  ``T`` steps, each followed by one elliptical slice sweep of every row of ``X`` in random
  order; the sum of the log-likelihood increments is the annealed importance weight (Neal 2001)
  that an annealed reversible-jump death (Karagiannis and Andrieu 2013) would accept on,
  beside the direct drop of ``k`` with nothing else moved.

A one-off study (``studies/``, not maintained): its result and command are in
docs/record/sampler.md.
"""

from __future__ import annotations

import argparse
import itertools
import math

import numpy as np
from scipy.special import gammaln, logsumexp

from ibp_rflvm.datasets import holdout_mask, load
from ibp_rflvm.features import feature_map
from ibp_rflvm.likelihoods import gaussian
from ibp_rflvm.model import Data, ModelSpec, init_state, sweep
from ibp_rflvm.row_cache import build_cache
from ibp_rflvm.samplers.whole_dimension import CollapsedTarget, InformedProposal


def log_column_prior(n: int, m: int) -> float:
    """``log (m - 1)! (N - m)! / N!``: the IBP's exchangeable weight of one column with `m` ones."""
    return gammaln(m) + gammaln(n - m + 1) - gammaln(n + 1)


def merge_table(st, prior) -> list[tuple]:
    N, K = st.Z.shape
    H = st.X * st.Z
    base = build_cache(feature_map(H, st.W, False), st.Y, prior).loglik
    target = CollapsedTarget(feature_map(H, st.W, False), st.Y, None, prior, False)
    grid = InformedProposal().grid
    big = [k for k in range(K) if st.Z[:, k].sum() > 20]
    rows = []
    for k, k2 in itertools.permutations(big, 2):
        zk, zk2 = st.Z[:, k].astype(bool), st.Z[:, k2].astype(bool)
        others = [j for j in range(K) if j not in (k, k2)]
        _, cg = target.curves(H[:, others], st.W[:, others], st.W[:, k])(grid)
        logp = cg - 0.5 * grid[None, :] ** 2
        best = grid[np.argmax(logp - logsumexp(logp, axis=1, keepdims=True), axis=1)]
        Hn = H.copy()
        Hn[:, k] = np.where(zk2, best, np.where(zk, st.X[:, k], 0.0))
        ll = build_cache(feature_map(np.delete(Hn, k2, 1), np.delete(st.W, k2, 1), False), st.Y, prior).loglik
        m1, m2, mu = int(zk.sum()), int(zk2.sum()), int((zk | zk2).sum())
        split = log_column_prior(N, m1) + log_column_prior(N, m2) + math.log(st.alpha)
        dprior = log_column_prior(N, mu) - split
        rows.append((ll - base, dprior, k2, k, m2, m1, int((zk & zk2).sum())))
    return sorted(rows, reverse=True)


def annealed_death(rng, st, k: int, steps: int, prior) -> tuple[float, float]:
    N, J = st.Y.shape
    X, Z, Y = st.X.copy(), st.Z, st.Y

    def ll(W):
        return build_cache(feature_map(X * Z, W, False), Y, prior).loglik

    gammas = np.cos(np.linspace(0.0, math.pi / 2, steps + 1)) ** 2
    keep = np.delete(np.arange(Z.shape[1]), k)
    direct = build_cache(feature_map((X * Z)[:, keep], st.W[:, keep], False), Y, prior).loglik - ll(st.W)
    weight = 0.0
    for g0, g1 in itertools.pairwise(gammas):
        W0, W1 = st.W.copy(), st.W.copy()
        W0[:, k] *= g0
        W1[:, k] *= g1
        weight += ll(W1) - ll(W0)
        perm = rng.permutation(N)  # a random scan keeps each step reversible
        Xp, Zp, Yp = X[perm].copy(), np.ascontiguousarray(Z[perm]), np.ascontiguousarray(Y[perm])
        Phi = feature_map(Xp * Zp, W1, False)
        c = build_cache(Phi, Yp, prior)
        gaussian.ess_rows(
            rng, Xp, Zp, W1, False, Phi, Yp, c.A, c.P, c.Q, c.yy, c.state,
            prior.a0 + 0.5 * N, prior.b0, prior.constant(N, J),
        )  # fmt: skip
        X[perm] = Xp
    return direct, weight


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dataset")
    p.add_argument("--init-dims", type=int, default=12)
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--seed", type=int, default=12)
    p.add_argument("--anneal", type=int, default=50, help="annealing steps T (0: skip the probe)")
    args = p.parse_args()
    Y_train, _ = holdout_mask(load(args.dataset).data, fraction=0.2, random_state=0)
    spec = ModelSpec(n_dims=args.init_dims)
    data = Data.from_array(Y_train, spec.likelihood)
    rng = np.random.default_rng(args.seed)
    st = init_state(rng, data, spec)
    for _ in range(args.warmup):
        st, _ = sweep(rng, st, data, spec)
    prior = spec.likelihood.prior
    print(f"{args.dataset} after {args.warmup} sweeps from {args.init_dims}: K+ {st.k_plus}, "
          f"loglik {st.loglik:.1f}, rows per dimension {st.Z.sum(axis=0).tolist()}")  # fmt: skip
    for dll, dprior, k2, k, m2, m1, both in merge_table(st, prior)[:6]:
        print(f"merge {k2} -> {k} (m {m2} + {m1}, {both} both): loglik {dll:+9.1f}, IBP prior {dprior:+7.1f}")
    if args.anneal:
        N = st.Z.shape[0]
        for k in range(st.Z.shape[1]):
            m = int(st.Z[:, k].sum())
            direct, weight = annealed_death(rng, st, k, args.anneal, prior)
            prior_term = math.log(st.Z.shape[1] * m / (st.alpha * (N + 1)))
            print(f"death of {k} (m {m}): direct {direct:+9.1f}, annealed over {args.anneal} steps "
                  f"{weight:+9.1f}, log acceptance {weight + prior_term:+9.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
