"""Save, or compare against a saved file, the chains of fits of every likelihood.

Run by hand before and after a change that must not change the chains:

    python benchmarks/check_identical.py save /tmp/before.npz
    python benchmarks/check_identical.py compare /tmp/before.npz

The data have 600 rows (several of the sweep's row blocks) and 25 columns, 20% of the entries
unobserved. For each of the six likelihoods it fits the IBP-RFLVM under the paper's and the
default sampler and the dense RFLVM; then a checkpointed-and-resumed fit, a 2-thread fit and
a tempered (replica-exchange) fit; gamma-Poisson fits (counts in ``Z``) of a Gaussian and a
count likelihood, one learning the IBP's ``ibp_beta``, and a small ``backend="jax"`` fit of a
count likelihood (CPU unless JAX sees a device). ``compare`` reports, per array (traces, the final state's
``X``, ``Z``, ``W`` and weights, ``latent_``), whether it is bit-identical, and the largest
difference otherwise. ``--rows`` changes the number of rows (60 for a quick look).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

from ibp_rflvm import IBPRFLVM, RFLVM

LIKELIHOODS = ("gaussian", "negbinom", "poisson", "multinomial", "binomial", "bernoulli")


def data_for(lik: str, rng: np.random.Generator, n_rows: int) -> tuple[np.ndarray, dict]:
    N, J = n_rows, 25
    H = rng.standard_normal((N, 2))
    lam = np.exp(0.5 * H @ rng.standard_normal((2, J)))
    params: dict = {}
    if lik == "gaussian":
        Y = H @ rng.standard_normal((2, J)) + 0.3 * rng.standard_normal((N, J))
    elif lik == "binomial":
        Y = rng.binomial(5, lam / (1 + lam)).astype(float)
        params = {"n_trials": 5}
    elif lik == "bernoulli":
        Y = rng.binomial(1, lam / (1 + lam)).astype(float)
    else:
        Y = rng.poisson(lam).astype(float)
    Y[rng.random(Y.shape) < 0.2] = np.nan
    return Y, params


def _record(out: dict, key: str, est) -> None:
    out[f"{key}/loglik"] = np.asarray(est.log_likelihood_)
    out[f"{key}/n_active"] = np.asarray(est.traces_["n_active"])
    out[f"{key}/latent"] = np.asarray(est.latent_)
    state = est.state_
    for name in ("X", "Z", "W"):
        out[f"{key}/state_{name}"] = np.asarray(getattr(state, name))
    out[f"{key}/state_weights"] = np.asarray(state.params.beta)


def fits(n_rows: int) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    common = {"n_frequencies": 8, "n_iter": 6, "n_threads": 1}
    for lik in LIKELIHOODS:
        Y, params = data_for(lik, np.random.default_rng(7), n_rows)
        kw = dict(common, likelihood=lik, likelihood_params=params)
        models = {
            "ibp-paper": IBPRFLVM(sampler="paper", random_state=3, **kw),
            "ibp-default": IBPRFLVM(random_state=4, **kw),
            "dense": RFLVM(n_components=3, sampler="paper", random_state=5, **kw),
        }
        for name, est in models.items():
            est.fit(Y)
            _record(out, f"{lik}/{name}", est)
    # A checkpointed run stopped after 3 sweeps and resumed to 6.
    for lik in ("gaussian", "negbinom"):
        Y, params = data_for(lik, np.random.default_rng(7), n_rows)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "chain.ckpt"
            kw = dict(common, likelihood=lik, likelihood_params=params, burn_in=2, random_state=6)
            kw["n_iter"] = 3
            IBPRFLVM(checkpoint_path=str(path), checkpoint_every=1, **kw).fit(Y)
            kw["n_iter"] = 6
            est = IBPRFLVM(checkpoint_path=str(path), checkpoint_every=1, **kw).fit(Y, resume=True)
        _record(out, f"{lik}/resumed", est)
    # Two threads (several row blocks each).
    Y, params = data_for("negbinom", np.random.default_rng(7), n_rows)
    est = IBPRFLVM(likelihood="negbinom", n_frequencies=8, n_iter=6, n_threads=2, random_state=8).fit(Y)
    _record(out, "negbinom/threads2", est)
    # Replica exchange over the Gaussian noise prior.
    Y, _ = data_for("gaussian", np.random.default_rng(7), n_rows)
    est = IBPRFLVM(n_frequencies=8, n_iter=6, n_threads=1, n_replicas=3, random_state=9).fit(Y)
    _record(out, "gaussian/tempered", est)
    out["gaussian/tempered/swap_rates"] = np.asarray(est.swap_rates_)
    # The gamma-Poisson prior on Z, and the two-parameter IBP with ibp_beta learned.
    for lik in ("gaussian", "poisson"):
        Y, params = data_for(lik, np.random.default_rng(7), n_rows)
        kw = dict(common, likelihood=lik, likelihood_params=params)
        est = IBPRFLVM(z_prior="gamma-poisson", random_state=10, **kw).fit(Y)
        _record(out, f"{lik}/gamma-poisson", est)
    Y, params = data_for("negbinom", np.random.default_rng(7), n_rows)
    est = IBPRFLVM(likelihood="negbinom", ibp_beta=None, random_state=11, **common).fit(Y)
    _record(out, "negbinom/ibp-beta-learned", est)
    out["negbinom/ibp-beta-learned/ibp_beta"] = np.asarray(est.ibp_beta_)
    # The JAX backend at a small size (its sweep is one compiled program).
    Y, params = data_for("poisson", np.random.default_rng(7), min(n_rows, 120))
    est = IBPRFLVM(likelihood="poisson", backend="jax", random_state=12, **dict(common, n_iter=4)).fit(Y)
    _record(out, "poisson/jax", est)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("mode", choices=("save", "compare"))
    parser.add_argument("path")
    parser.add_argument("--rows", type=int, default=600)
    args = parser.parse_args()
    got = fits(args.rows)
    if args.mode == "save":
        np.savez(args.path, **got)
        print(f"saved {len(got)} arrays to {args.path}")
        return 0
    saved = np.load(args.path)
    bad = 0
    for key in sorted(set(saved.files) - set(got)):
        bad += 1
        print(f"{key:<40} MISSING from this run")
    for key, value in got.items():
        if key not in saved.files:
            bad += 1
            print(f"{key:<40} NOT in the saved file")
            continue
        ref = saved[key]
        if ref.shape == value.shape and np.array_equal(ref, value):
            print(f"{key:<40} identical")
            continue
        bad += 1
        diff = np.max(np.abs(ref - value)) if ref.shape == value.shape else float("nan")
        print(f"{key:<40} DIFFERS (shapes {ref.shape} {value.shape}, max |diff| {diff:.3g})")
    print(f"all {len(got)} arrays identical" if not bad else f"{bad} array(s) differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
