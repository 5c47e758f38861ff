"""On data simulated from each count model, the fitted RFLVMs predict held-out entries far better
than a per-column model with no latent structure, and the NB dispersion is recovered."""

import numpy as np
import pytest
from scipy import stats
from scipy.special import expit, xlogy

from ibp_rflvm import IBPRFLVM, RFLVM, holdout_mask
from ibp_rflvm.features import feature_map
from ibp_rflvm.summaries.scoring import perplexity

N, J, K, M = 120, 25, 2, 20
N_TRIALS = 8
ROW_TOTAL = 60


def _simulate(name, seed=0):
    """A small RFLVM: sparse latent inputs, random frequencies, weights with a strong signal."""
    rng = np.random.default_rng(seed)
    H = rng.standard_normal((N, K)) * (rng.random((N, K)) < 0.8)
    W = rng.standard_normal((M, K))
    # Binary entries carry little information each: a stronger signal for the Bernoulli.
    beta = (3.0 if name == "bernoulli" else 2.0) * rng.standard_normal((2 * M + 1, J))
    truth = {}
    if name == "negbinom":
        r = rng.uniform(0.5, 2.0, size=J)
        beta[-1] = np.log(5.0 / r)  # mean counts around 5
        truth["r"] = r
    elif name == "poisson":
        beta[-1] = np.log(4.0)
    elif name in ("bernoulli", "binomial"):
        beta[-1] = 0.0
    psi = feature_map(H, W, bias=True) @ beta
    if name == "negbinom":
        Y = rng.negative_binomial(truth["r"][None, :], expit(-psi))
    elif name == "poisson":
        Y = rng.poisson(np.exp(psi))
    elif name == "bernoulli":
        Y = rng.random(psi.shape) < expit(psi)
    elif name == "binomial":
        Y = rng.binomial(N_TRIALS, expit(psi))
    else:
        p = np.exp(psi - psi.max(axis=1, keepdims=True))
        Y = np.array([rng.multinomial(ROW_TOTAL, q / q.sum()) for q in p])
    return Y.astype(float), truth


def _column_baseline(name, Y_train, rows, cols, y):
    """Held-out log density under a per-column model of the same family, fitted to the training
    entries (no latent structure), and its predicted shares for perplexity."""
    m = np.nanmean(Y_train, axis=0)
    share = (m / m.sum())[cols]
    mc = m[cols]
    if name == "poisson":
        logp = stats.poisson.logpmf(y, mc)
    elif name == "negbinom":
        v = np.nanvar(Y_train, axis=0)[cols]
        r = np.where(v > mc, mc**2 / np.maximum(v - mc, 1e-12), 1e6)
        logp = stats.nbinom.logpmf(y, r, r / (r + mc))
    elif name == "bernoulli":
        logp = stats.bernoulli.logpmf(y, np.clip(mc, 1e-3, 1 - 1e-3))
    elif name == "binomial":
        logp = stats.binom.logpmf(y, N_TRIALS, np.clip(mc / N_TRIALS, 1e-3, 1 - 1e-3))
    else:
        logp = xlogy(y, share)
    return float(np.sum(logp)), share


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("negbinom", IBPRFLVM),
        ("negbinom", RFLVM),
        ("poisson", IBPRFLVM),
        ("bernoulli", IBPRFLVM),
        ("binomial", IBPRFLVM),
        ("multinomial", IBPRFLVM),
    ],
)
def test_heldout_prediction_beats_column_means(name, cls):
    Y, truth = _simulate(name)
    Y_train, Y_test = holdout_mask(Y, fraction=0.2, random_state=1)
    hyper = {"n_trials": N_TRIALS} if name == "binomial" else None
    dims = {"n_components": K} if cls is RFLVM else {}
    model = cls(likelihood=name, likelihood_params=hyper, n_iter=160, n_frequencies=M, random_state=0, **dims)
    model.fit(Y_train)
    rows, cols = np.nonzero(~np.isnan(Y_test))
    y = Y_test[rows, cols]
    lpd = model.log_predictive_density(Y_test)
    base_lpd, share = _column_baseline(name, Y_train, rows, cols, y)
    n_test = y.size
    print(f"{name} {cls.__name__}: LPD/entry {lpd / n_test:.3f} vs column model {base_lpd / n_test:.3f}")
    # "Clearly": at least 0.05 nats per held-out entry better; binary entries carry less, and over
    # 8 chains (seeds 0-3, with and without absorb/emit) the Bernoulli model's margin was
    # 0.043-0.060 (mean 0.050, sd 0.006), so its bar is 0.03, more than 3 sd below that mean.
    margin = 0.03 if name == "bernoulli" else 0.05
    assert lpd > base_lpd + margin * n_test
    if name != "bernoulli":
        ppx = model.perplexity(Y_test)
        base_ppx = perplexity(y, share)
        print(f"   perplexity {ppx:.3f} vs column model {base_ppx:.3f}")
        assert ppx < 0.97 * base_ppx


def test_negbinom_dispersions_are_recovered():
    """Posterior intervals of the column dispersions cover the simulated ones.

    The latent signal is kept moderate: overdispersion that an imperfectly recovered latent
    function leaves over is absorbed by ``r`` (biasing it low, as in any NB regression), and the
    ``r``-intercept ridge mixes slowly, so short chains give intervals that are too narrow.
    """
    rng = np.random.default_rng(3)
    n, j, m = 200, 16, 10
    H = rng.standard_normal((n, 1))
    beta = 0.7 * rng.standard_normal((2 * m + 1, j))
    r = rng.uniform(0.4, 1.6, size=j)
    beta[-1] = np.log(4.0 / r)
    psi = feature_map(H, rng.standard_normal((m, 1)), bias=True) @ beta
    Y = rng.negative_binomial(r[None, :], expit(-psi)).astype(float)
    Y[rng.random(Y.shape) < 0.1] = np.nan
    model = RFLVM(n_components=1, likelihood="negbinom", n_iter=300, n_frequencies=m, random_state=0).fit(Y)
    draws = np.array([s.params.r for s in model._samples])
    lo, hi = np.quantile(draws, [0.025, 0.975], axis=0)
    covered = (lo <= r) & (r <= hi)
    ratio = np.median(draws, axis=0) / r
    print(f"r: {covered.sum()} of {j} 95% intervals cover; posterior median / truth {np.round(ratio, 2)}")
    # Short chains give intervals too narrow (above), so fewer than 95% cover: over seeds 0-2,
    # 11-13 of the 16 with the HMC move in the sweep and 11-12 without it. The bar is two thirds;
    # a biased sampler shows in the ratio.
    assert covered.mean() >= 2 / 3
    assert 0.75 < np.median(ratio) < 1.33
