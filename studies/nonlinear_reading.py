"""A real table read before and after the non-linear reading (issue 63): mice protein expression
(1,080 x 77, missing entries, 8 classes of mice) or breast cancer (569 x 30, 2 diagnoses).

Before: what the linear summaries give, each dimension's usage by class and its top columns by
the on-minus-off effect. After: where each class sits on each dimension (``describe``), the
top columns by variation along the dimension, the share of chains that found each dimension,
and the pictures (profiles with the rows' rug, the view by usage), both coloured by class. How
much each reading tells the classes apart is the correlation ratio (eta squared: the share of a
per-row quantity's variance between the classes) of a dimension's usage, and of its positions
over the rows that use it.

Run::

    IBP_RFLVM_DATA=../shared/datasets OPENBLAS_NUM_THREADS=1 \\
        .venv/bin/python studies/nonlinear_reading.py mice --sweeps 300 --chains 4 --pictures docs

A one-off study (``studies/``, not maintained): its results and commands are in
docs/record/latent_space.md.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from ibp_rflvm import IBPRFLVM
from ibp_rflvm.plots import profile_panels, profiles_plot, usage_view_plot


def eta_squared(values: np.ndarray, groups: np.ndarray) -> float:
    """Share of the variance of `values` between the `groups` (NaN for fewer than 3 values)."""
    if values.size < 3 or np.var(values) == 0:
        return float("nan")
    frame = pd.DataFrame({"v": values, "g": groups})
    means = frame.groupby("g")["v"].transform("mean")
    return float(np.sum((means - values.mean()) ** 2) / np.sum((values - values.mean()) ** 2))


def load_table(name: str) -> tuple[pd.DataFrame, np.ndarray]:
    if name == "cancer":
        from sklearn.datasets import load_breast_cancer
        from sklearn.preprocessing import StandardScaler

        data = load_breast_cancer()
        Y = pd.DataFrame(StandardScaler().fit_transform(data.data), columns=data.feature_names)
        return Y, np.where(data.target == 1, "benign", "malignant")
    from ibp_rflvm.datasets import load

    ds = load(name)
    Y = pd.DataFrame(ds.data, columns=ds.feature_names, index=ds.row_names)
    return Y, np.asarray(ds.label_names, dtype=object)[ds.labels]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", choices=["mice", "cancer"])
    parser.add_argument("--sweeps", type=int, default=300)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pictures", default=None, help="folder for the two pictures")
    args = parser.parse_args()
    Y, labels = load_table(args.data)
    warnings.simplefilter("ignore")
    start = time.perf_counter()
    model = IBPRFLVM(n_iter=args.sweeps, n_chains=args.chains, random_state=args.seed).fit(Y)
    took = time.perf_counter() - start
    print(f"{args.data}: {Y.shape[0]} x {Y.shape[1]}, {args.chains} chains x {args.sweeps} sweeps "
          f"in {took:.0f} s; stacking weights {np.round(model.chain_weights_, 2)}")  # fmt: skip
    start = time.perf_counter()
    dims = model.dimensions_
    usage, pos = model.dimension_usage_, model.dimension_positions_
    groups = model.describe(labels)
    by_effect, by_variation = model.top_columns(5, by="effect"), model.top_columns(5)
    print(f"summaries in {time.perf_counter() - start:.1f} s")
    with pd.option_context("display.width", 200, "display.max_colwidth", 70):
        print(dims.round(3).to_string())
        print("\nBEFORE: usage by class (mean probability of using each dimension)")
        print(usage.groupby(labels).mean().round(2).to_string())
        print("\ntop columns by effect:")
        print(by_effect.groupby("dimension", sort=False)["column"].agg(", ".join).to_string())
        print("\nAFTER: mean position of each class on each dimension (rows that use it)")
        print(
            groups.pivot(index="group", columns="dimension", values="position")[dims.index]
            .round(2)
            .to_string()
        )
        print("\ntop columns by variation along the dimension:")
        print(by_variation.groupby("dimension", sort=False)["column"].agg(", ".join).to_string())
    rows = []
    for d in dims.index:
        on = usage[d].to_numpy() >= 0.5
        rows.append(
            (d, eta_squared(usage[d].to_numpy(), labels), eta_squared(pos[d].to_numpy()[on], labels[on]))
        )
    eta = pd.DataFrame(rows, columns=["dimension", "eta2 usage", "eta2 positions"]).set_index("dimension")
    print("\nhow much of each reading lies between the classes (eta squared):")
    print(eta.round(3).to_string())
    print(f"best dimension: usage {eta['eta2 usage'].max():.3f}, positions {eta['eta2 positions'].max():.3f}")
    if args.pictures:
        out = Path(args.pictures)
        panels = profile_panels(model, n_top=8, labels=labels)
        profiles_plot(out / f"nonlinear_{args.data}_profiles.png", panels, n_dims=len(dims))
        view, sd = model.view(return_std=True)
        usage_view_plot(out / f"nonlinear_{args.data}_usage.png", view, usage.to_numpy(), list(dims.index),
                        sd, max_panels=4, labels=labels)  # fmt: skip
        print(f"pictures in {out}")


if __name__ == "__main__":
    main()
