"""The figures of the device sweep's checks (issue 47) as numbers, for the record: the prior check,
Geweke's joint-distribution test (NB, and binomial with 60 trials), and the agreement with numba.

Run by hand from the repository root (JAX on whatever device it sees)::

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src:. python studies/device_checks.py [--sweeps 4000]

The tests (tests/jax_backend/) assert the same quantities; this prints them with their standard
errors so that the record can quote them.
"""

from __future__ import annotations

import argparse

import numpy as np
from tests.jax_backend import test_agreement as agreement
from tests.jax_backend.test_device_sweep import _prior_chain
from tests.likelihoods.test_likelihood_joint import _expected, _successive_conditional

from ibp_rflvm import holdout_mask
from ibp_rflvm.samplers import ibp
from ibp_rflvm.summaries.diagnostics import batch_mean_se


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sweeps", type=int, default=4000)
    a = p.parse_args()
    n, alpha = 10, 2.0
    k_plus, steps = _prior_chain(a.sweeps, n=n, alpha=alpha)
    target = alpha * ibp.harmonic(n)
    mean, se = batch_mean_se(k_plus)
    var, var_se = batch_mean_se((k_plus - target) ** 2)
    names = ("births", "deaths", "flips", "transfers", "absorbs")
    moved = {k: sum(getattr(info, k) for _, info in steps) for k in names}
    print(f"prior check (N={n}, alpha={alpha}, {a.sweeps} sweeps): mean K+ {mean:.3f} "
          f"(MCSE {se:.3f}) vs {target:.3f}; variance {var:.3f} (MCSE {var_se:.3f}) vs "
          f"{target:.3f}; moves {moved}")  # fmt: skip
    for name in ("negbinom", "binomial+many"):
        draws = _successive_conditional(name, True, a.sweeps, backend="jax", max_dims=6)
        expected = _expected(name.split("+")[0], True, max_dims=6)
        parts = []
        for key, value in expected.items():
            m, s = batch_mean_se(draws[key])
            parts.append(f"{key} {(m - value) / s:+.2f}")
        print(f"Geweke {name} ({a.sweeps} sweeps, max_dims 6), z per statistic: " + ", ".join(parts))
    Y_train, Y_test = holdout_mask(agreement._simulated(), fraction=0.2, random_state=0)
    res = {b: agreement._chains(b, Y_train, Y_test) for b in ("numba", "jax")}
    for key in ("k_plus", "lpd", "effective"):
        x, y = res["numba"][key], res["jax"][key]
        se = np.sqrt(x.var(ddof=1) / x.size + y.var(ddof=1) / y.size)
        print(f"agreement {key}: numba {x.mean():.4f}, jax {y.mean():.4f}, Welch SE {se:.4f}, "
              f"t {(y.mean() - x.mean()) / se:+.2f} ({x.size} chains each)")  # fmt: skip


if __name__ == "__main__":
    main()
