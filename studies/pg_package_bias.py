"""How far the ``polyagamma`` package's draws were from exact at the shapes and tilts a
multinomial fit draws (issue 29; run by hand).

Before issue 29 the likelihoods drew ``omega ~ PG(b, c)`` with ``polyagamma``'s default method.
The multinomial's shapes are row totals ``b = n_i`` (integers) and its tilts ``c = psi_ij - xi_ij``
(a category's log odds against the row's other categories). This script

1. fits the multinomial IBP-RFLVM to the data set for `--sweeps` sweeps (all entries observed)
   and tabulates the ``(b, c)`` of every Polya-gamma draw its weight update makes (informative
   rows, observed categories), by shape and by tilt bin;
2. draws `--draws` values from the package at each shape and at the centre of each tilt bin,
   and compares their mean and variance with the exact cumulants (``pg_moments.scores``), with
   z-scores from the sampling error;
3. reports the entry-weighted relative error of the mean and of the variance over the fit's
   draws, and the largest error among the cells that hold at least 0.1% of them.

Needs the package, which the library no longer uses: ``pip install polyagamma==2.0.2`` (for
example ``pip install --target /tmp/pgpkg polyagamma==2.0.2`` and ``PYTHONPATH=src:/tmp/pgpkg``).

    OPENBLAS_NUM_THREADS=1 IBP_RFLVM_DATA=../shared/datasets PYTHONPATH=src:benchmarks:/tmp/pgpkg \\
        python studies/pg_package_bias.py spam --sweeps 10

A one-off study (``studies/``, not maintained): its result and command are in
docs/record/polya_gamma.md.
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy.special import logsumexp

from ibp_rflvm import IBPRFLVM
from ibp_rflvm.evaluation.cells import dataset_arrays
from ibp_rflvm.features import feature_map
from pg_moments import scores

EDGES = np.array([-np.inf, -11.0, -9.0, -7.0, -5.0, -3.0, -1.5, -0.5, 0.5, np.inf])
CENTRES = np.array([-12.0, -10.0, -8.0, -6.0, -4.0, -2.0, -1.0, 0.0, 1.0])


def shapes_and_tilts(Y: np.ndarray, sweeps: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(b, c)`` of every draw of one multinomial weight update at the fit's final state."""
    m = IBPRFLVM(likelihood="multinomial", n_iter=sweeps, random_state=seed).fit(Y)
    st = m.state_
    n = Y.sum(axis=1)
    informative = n > 0  # every entry is observed, so every row has all categories
    full = feature_map(st.H[informative], st.W, True) @ st.params.beta
    total = logsumexp(full, axis=1)
    psi = full[:, :-1]  # the last category is the fixed reference, never drawn
    # xi_ij = log(sum_{j' != j} exp(psi_ij')), from the row's total without category j
    xi = total[:, None] + np.log(-np.expm1(psi - total[:, None]))
    c = (psi - xi).ravel()
    b = np.repeat(n[informative], psi.shape[1])
    return b, c


def moments(rng, b: float, c: float, draws: int) -> tuple[float, float, float, float]:
    """Relative error and z of the package's mean and variance at ``(b, c)`` (the z-scores of
    :func:`pg_moments.scores`, against the exact cumulants)."""
    from polyagamma import random_polyagamma  # not a dependency of the library

    x = random_polyagamma(np.full(draws, b), np.full(draws, c), random_state=rng)
    z_mean, z_var, _, rel_mean, rel_var = scores(x, b, c)
    return rel_mean, z_mean, rel_var, z_var


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset")
    parser.add_argument("--sweeps", type=int, default=10)
    parser.add_argument("--draws", type=int, default=2_000_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    Y = np.nan_to_num(dataset_arrays(args.dataset, False, None, None)[0])
    b, c = shapes_and_tilts(Y, args.sweeps, args.seed)
    shapes = f"{int(b.min())}-{int(b.max())}"
    print(f"{args.dataset}: {b.size} Polya-gamma draws per weight update; shapes {shapes}")
    bins = np.digitize(c, EDGES[1:-1])
    rng = np.random.default_rng(args.seed)
    w_mean = w_var = total = 0.0
    worst = (0.0, None)
    print("| b | c (bin centre) | share of draws | mean: rel. error (z) | variance: rel. error (z) |")
    print("|---|---|---|---|---|")
    for shape in np.unique(b):
        for k, centre in enumerate(CENTRES):
            share = float(np.mean((b == shape) & (bins == k)))
            if share < 1e-4:
                continue
            rm, zm, rv, zv = moments(rng, float(shape), float(centre), args.draws)
            cell = f"| {int(shape)} | {centre:g} | {share:.4f} |"
            print(f"{cell} {rm:+.4%} ({zm:+.1f}) | {rv:+.3%} ({zv:+.1f}) |", flush=True)
            w_mean += share * abs(rm)
            w_var += share * abs(rv)
            total += share
            if share >= 1e-3 and abs(rv) > worst[0]:
                worst = (abs(rv), f"b = {int(shape)}, c = {centre:g}: mean {rm:+.4%}, variance {rv:+.3%}")
    print(f"cells shown hold {total:.4f} of the draws")
    print(f"draw-weighted |relative error|: mean {w_mean / total:.4%}, variance {w_var / total:.3%}")
    print(f"largest variance error among cells with >= 0.1% of the draws: {worst[1]}")


if __name__ == "__main__":
    main()
