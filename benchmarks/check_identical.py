"""Save, or compare against a saved file, the chains of small fits of every likelihood.

Run by hand before and after a speed change that must not change the chains:

    python benchmarks/check_identical.py save /tmp/before.npz
    python benchmarks/check_identical.py compare /tmp/before.npz

Each fit is small (seconds) and covers the IBP (paper's and default sweeps) and the dense
model, with 20% of the entries unobserved. ``compare`` reports, per fit, whether
``log_likelihood_`` and ``latent_`` are bit-identical, and the largest difference otherwise.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from ibp_rflvm import IBPRFLVM, RFLVM

LIKELIHOODS = ("gaussian", "negbinom", "poisson", "multinomial", "binomial", "bernoulli")


def data_for(lik: str, rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    N, J = 60, 25
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


def fits() -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for lik in LIKELIHOODS:
        Y, params = data_for(lik, np.random.default_rng(7))
        models = {
            "ibp-paper": IBPRFLVM(likelihood=lik, likelihood_params=params, n_frequencies=8,
                                  n_iter=6, sampler="paper", random_state=3),
            "ibp-default": IBPRFLVM(likelihood=lik, likelihood_params=params, n_frequencies=8,
                                    n_iter=6, random_state=4),
            "dense": RFLVM(likelihood=lik, likelihood_params=params, n_components=3,
                           n_frequencies=8, n_iter=6, sampler="paper", random_state=5),
        }  # fmt: skip
        for name, est in models.items():
            est.fit(Y)
            out[f"{lik}/{name}/loglik"] = np.asarray(est.log_likelihood_)
            out[f"{lik}/{name}/latent"] = np.asarray(est.latent_)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mode", choices=("save", "compare"))
    parser.add_argument("path")
    args = parser.parse_args()
    got = fits()
    if args.mode == "save":
        np.savez(args.path, **got)
        print(f"saved {len(got)} arrays to {args.path}")
        return 0
    saved = np.load(args.path)
    bad = 0
    for key, value in got.items():
        ref = saved[key]
        if ref.shape == value.shape and np.array_equal(ref, value):
            print(f"{key:<40} identical")
            continue
        bad += 1
        diff = np.max(np.abs(ref - value)) if ref.shape == value.shape else float("nan")
        print(f"{key:<40} DIFFERS (shapes {ref.shape} {value.shape}, max |diff| {diff:.3g})")
    print("all identical" if not bad else f"{bad} array(s) differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
