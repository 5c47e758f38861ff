"""Memory of a fit on sparse and on dense counts: what the chain holds and the peak.

Run by hand: ``python benchmarks/bench_sparse_memory.py [--n 2000] [--j 1000] [--likelihood L]``.
Synthetic counts (about 91% zeros, as congress109) from ``bench_counts.synthetic_counts``, 20%
of the entries held out through ``missing_mask``. NumPy's allocations are traced with
``tracemalloc`` (the compiled kernels' small per-row buffers are not, nor is memory outside
NumPy and Python), and reported in units of one ``N x J`` float64 array (``8 N J`` bytes):

* the input: the sparse matrix or the dense array handed to ``fit``;
* held: the ``N x J`` arrays the fitted estimator keeps (the chain's data and constants, and the
  running sum of the reconstruction);
* peak on the way in: the peak of ``data_matrix`` (the conversion to the chain's dense form)
  over the input;
* peak of the fit: the peak of the whole ``fit`` over the input.
"""

from __future__ import annotations

import argparse
import platform
import tracemalloc
from dataclasses import fields

import numpy as np
import scipy.sparse as sp

from bench_counts import synthetic_counts
from ibp_rflvm import IBPRFLVM, holdout_mask
from ibp_rflvm.plumbing.sparse import data_matrix


def held_arrays(model) -> dict[str, int]:
    """Bytes of the arrays of the size of the data (or a fair share of it) the estimator keeps."""
    data = model.posterior_.data
    n_entries = data.Y.size
    found = {"Data.Y": data.Y.nbytes, "Data.observed": data.observed.nbytes}
    if data.prep is not None:
        found["prep.Y0"] = data.prep.Y0.nbytes
        found["prep.observed"] = data.prep.observed.nbytes
        for f in fields(data.prep):
            value = getattr(data.prep, f.name)
            big = isinstance(value, np.ndarray) and value.size >= n_entries // 20
            if f.name not in ("Y0", "observed") and big:
                found[f"prep.{f.name}"] = value.nbytes
    found["Data.missing (indices)"] = sum(idx.nbytes for idx in data.missing)
    found["reconstruction_"] = model.reconstruction_.nbytes
    sums = [res.record.reconstruction_sum for res in model.posterior_.chains]
    found["chains' reconstruction sums"] = sum(0 if a is None else a.nbytes for a in sums)
    return found


def traced_peak(fn) -> tuple[object, int]:
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    out = fn()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return out, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--j", type=int, default=1000)
    parser.add_argument("--likelihood", default="negbinom")
    parser.add_argument("--sweeps", type=int, default=3)
    args = parser.parse_args()
    Y = synthetic_counts(args.n, args.j)
    S = sp.csr_matrix(Y)
    train_missing, _ = holdout_mask(S, 0.2, random_state=0, return_mask=True)
    unit = 8 * Y.size
    print(
        f"python {platform.python_version()}, {args.n} x {args.j} {args.likelihood} counts, "
        f"{np.mean(Y == 0):.1%} zeros, {args.sweeps} sweeps; unit = one N x J float64 array "
        f"= {unit / 2**20:.1f} MiB"
    )
    inputs = {
        "sparse CSR + missing_mask": (S, train_missing),
        "dense + missing_mask": (Y, train_missing),
        "dense with NaN": (np.where(train_missing, np.nan, Y), None),
    }
    sparse_bytes = S.data.nbytes + S.indices.nbytes + S.indptr.nbytes
    print(f"{'input':<28} {'input':>7} {'held':>6} {'peak in':>8} {'peak fit':>9}")
    for name, (data, mask) in inputs.items():
        size = sparse_bytes if sp.issparse(data) else data.nbytes
        _, peak_in = traced_peak(lambda data=data, mask=mask: data_matrix(data, mask))
        model = IBPRFLVM(args.likelihood, n_iter=args.sweeps, n_frequencies=50, random_state=0)
        model.fit(data[:50], missing_mask=None if mask is None else mask[:50])  # compile the kernels
        model, peak_fit = traced_peak(lambda m=model, data=data, mask=mask: m.fit(data, missing_mask=mask))
        held = held_arrays(model)
        print(
            f"{name:<28} {size / unit:7.2f} {sum(held.values()) / unit:6.2f} {peak_in / unit:8.2f} "
            f"{peak_fit / unit:9.2f}"
        )
    print("held arrays (units):", ", ".join(f"{k} {v / unit:.3g}" for k, v in held.items()))


if __name__ == "__main__":
    main()
