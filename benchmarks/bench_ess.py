"""Effective samples of what users read, per 1,000 sweeps and per CPU-second (issue 64, item 1),
for the default sweep before issue 64 (``none``), with the scale move only (``scale``:
:mod:`ibp_rflvm.samplers.scale`) and the estimator's own (``default``: the scale move and the
continuous block's HMC move, :mod:`ibp_rflvm.samplers.hmc`; ``hmc``: the default with ``--hmc``'s
settings).

One chain per variant and seed, one after another in this process (so ``time.process_time`` is
each fit's CPU time and the variants share the machine's state). From every kept sample: the
training log-likelihood, ``K+``, the frequencies' scale (RMS of ``W``), the latent scale (RMS of
the non-zero ``H``), the first three matched dimensions' own two scales (the dimensions of
``dimensions_``, each sample's column oriented alike; the samples that have it) and the median
of the pairwise latent distances ``summary()`` tracks. ESS is ArviZ's ``ess_bulk``.

Run by ``make bench`` (breast cancer, 600 sweeps), or::

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ess.py cancer --sweeps 1000
    IBP_RFLVM_DATA=../shared/datasets ... benchmarks/bench_ess.py congress --sweeps 300 --holdout

Results and the command: BENCHMARKS.md and docs/record/sampler.md, sections 13 and 14.
"""

from __future__ import annotations

import argparse
import time
import warnings
from dataclasses import replace

import arviz as az
import numpy as np

from ibp_rflvm import IBPRFLVM
from ibp_rflvm.summaries import meaning
from ibp_rflvm.summaries.diagnostics import _pairwise, distance_rows
from ibp_rflvm.summaries.reading import dimension_reading


class _Scaled(IBPRFLVM):
    """The estimator with the scale move and without the HMC move (issue 64's first step)."""

    def _spec(self):
        return replace(super()._spec(), scale_move=True, hmc_leapfrog=0)


class _Unscaled(IBPRFLVM):
    """The estimator without the scale move and the HMC move (the default sweep before issue 64)."""

    def _spec(self):
        return replace(super()._spec(), scale_move=False, hmc_leapfrog=0)


#: The HMC variant's settings over the default's (``--hmc``; none: the default's own).
HMC: dict = {}


class _Hmc(IBPRFLVM):
    """The default sweep with the HMC move's settings of ``--hmc``."""

    def _spec(self):
        return replace(super()._spec(), **HMC)


VARIANTS = {"none": _Unscaled, "scale": _Scaled, "default": IBPRFLVM, "hmc": _Hmc}


def load_table(name: str) -> tuple[np.ndarray, str]:
    if name == "cancer":
        from sklearn.datasets import load_breast_cancer
        from sklearn.preprocessing import StandardScaler

        return StandardScaler().fit_transform(load_breast_cancer().data), "gaussian"
    from ibp_rflvm.datasets import load

    ds = load({"congress": "congress"}.get(name, name))
    return ds.data, ("negbinom" if ds.kind == "counts" else "gaussian")


def ess(values) -> float:
    values = np.asarray(values, dtype=np.float64)
    if values.size < 8 or np.ptp(values) == 0:
        return float("nan")
    return float(az.ess(values[None, :], method="bulk"))


def traces(model) -> dict[str, np.ndarray]:
    """The per-sample quantities of the module docstring, over every kept sample."""
    post = model.posterior_
    samples = post.chain_samples(0)
    rows = distance_rows(post.shape[0])
    out = {
        "loglik": post.kept("loglik")[0],
        "k_plus": post.kept("n_active")[0].astype(float),
        "frequency_scale": np.array([np.sqrt(np.mean(s.W**2)) for s in samples]),
        "latent_scale": np.array([np.sqrt(np.mean(s.H[s.H != 0] ** 2)) for s in samples if s.H.any()]),
        "median_distance": np.array([np.median(_pairwise(s.H, rows)) for s in samples]),
    }
    meaning.SUMMARY_MAX_DRAWS = len(samples)  # every kept sample, for the per-dimension traces
    r = dimension_reading(post)
    for t, dd in enumerate(r.dims[:3]):
        if dd.draw.size < 0.9 * len(samples):
            continue  # a dimension some samples lack has no trace to measure
        H = dd.values(r.draws)
        on = H != 0
        name = r.summary.labels[t]
        out[f"{name}_latent_scale"] = np.sqrt((H**2).sum(axis=1) / np.maximum(on.sum(axis=1), 1))
        W = np.stack([r.draws.samples[i].W[:, c] for i, c in zip(dd.draw, dd.column, strict=True)])
        out[f"{name}_frequency_scale"] = np.sqrt(np.mean(W**2, axis=1))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data")
    parser.add_argument("--sweeps", type=int, default=1000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--variants", nargs="+", default=["none", "default"], choices=sorted(VARIANTS))
    parser.add_argument("--holdout", action="store_true", help="fit on 80%% of the entries, score the rest")
    parser.add_argument(
        "--hmc", nargs=3, type=float, metavar=("LEAPFROG", "STEP_X", "STEP_W"),
        help="the hmc variant's leapfrog steps and base step sizes (default: the default sweep's)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.hmc:
        HMC.update(hmc_leapfrog=int(args.hmc[0]), hmc_steps=(args.hmc[1], args.hmc[2]))
    Y, likelihood = load_table(args.data)
    Y_test = None
    if args.holdout:
        from ibp_rflvm import holdout_mask

        Y, Y_test = holdout_mask(Y, fraction=0.2, random_state=0)
    warnings.simplefilter("ignore")
    for seed in args.seeds:
        for variant in args.variants:
            cls = VARIANTS[variant]
            start = time.process_time()
            model = cls(likelihood=likelihood, n_iter=args.sweeps, random_state=seed).fit(Y)
            cpu = time.process_time() - start
            meaning.SUMMARY_MAX_DRAWS = 100
            kept = model.posterior_.n_kept
            print(f"{args.data} seed {seed} {variant}: {args.sweeps} sweeps, {kept} kept, {cpu:.0f} CPU-s")
            if Y_test is not None:
                print(f"  held-out log predictive density per entry: {model.score(Y_test):.4f}")
            for name, values in traces(model).items():
                e = ess(values)
                print(f"  {name:28s} mean {np.mean(values):10.3f}  ESS_bulk {e:7.1f}  "
                      f"per 1,000 sweeps {1000 * e / args.sweeps:7.1f}  per CPU-s {e / cpu:.4f}")  # fmt: skip


if __name__ == "__main__":
    main()
