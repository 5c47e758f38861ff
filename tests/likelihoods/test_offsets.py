"""Per-row size factors of the Poisson and negative binomial likelihoods."""

import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import expit
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.neighbors import KNeighborsClassifier

from ibp_rflvm import IBPRFLVM
from ibp_rflvm.features import feature_map
from ibp_rflvm.likelihoods import make_likelihood
from ibp_rflvm.likelihoods.base import LikelihoodParams
from ibp_rflvm.likelihoods.offsets import row_offsets

RNG = np.random.default_rng(5)
Y_SMALL = RNG.poisson(3.0, size=(7, 5)).astype(float)
Y_SMALL[2, 1] = np.nan
S_SMALL = np.exp(RNG.normal(0.0, 0.7, 7))


def _params(name, J):
    return LikelihoodParams(beta=np.zeros((1, J)), r=np.linspace(0.5, 3.0, J) if name == "negbinom" else None)


def _reference_logpmf(name, y, psi, params):
    if name == "poisson":
        return stats.poisson.logpmf(y, np.exp(psi))
    # NB(r, p = logistic(psi)) counts successes; scipy's nbinom counts failures with prob 1 - p.
    return stats.nbinom.logpmf(y, params.r[None, :], expit(-psi))


@pytest.mark.parametrize("name", ["poisson", "negbinom"])
@pytest.mark.parametrize("size_factors", ["array", "total"])
def test_offset_enters_every_density_and_mean(name, size_factors):
    sf = S_SMALL if size_factors == "array" else "total"
    lik = make_likelihood(name, size_factors=sf)
    prep = lik.prepare(Y_SMALL)
    observed = ~np.isnan(Y_SMALL)
    offset = np.log(S_SMALL) if size_factors == "array" else np.log(np.nansum(Y_SMALL, 1) / observed.sum(1))
    np.testing.assert_allclose(prep.row_offset, offset)
    psi = np.random.default_rng(0).normal(0.0, 1.0, Y_SMALL.shape)
    params = _params(name, Y_SMALL.shape[1])
    full = _reference_logpmf(name, np.nan_to_num(Y_SMALL), psi + offset[:, None], params)
    rows = np.array([4, 0, 2])
    ll = lik.loglik_rows(psi[rows], rows, params, prep)
    np.testing.assert_allclose(ll, np.where(observed, full, 0.0)[rows].sum(axis=1), rtol=1e-10)
    # Held-out entries: rows given by their training index, psi for the distinct rows only.
    row_pos, cols = np.array([0, 1, 2, 0]), np.array([1, 3, 0, 4])
    y = np.array([2.0, 0.0, 5.0, 1.0])
    lp = lik.logpdf_entries(y, psi[rows], row_pos, cols, params, prep, rows=rows)
    psi_e = (psi + offset[:, None])[rows[row_pos], cols]
    if name == "poisson":
        expected = stats.poisson.logpmf(y, np.exp(psi_e))
    else:
        expected = stats.nbinom.logpmf(y, params.r[cols], expit(-psi_e))
    np.testing.assert_allclose(lp, expected, rtol=1e-10)
    mean = lik.mean(psi[rows], params, rows=rows, prep=prep)
    r = np.ones(Y_SMALL.shape[1]) if params.r is None else params.r
    np.testing.assert_allclose(mean, r[None, :] * np.exp(psi[rows] + offset[rows, None]), rtol=1e-12)


def test_no_size_factors_is_no_offset():
    for name in ("poisson", "negbinom"):
        prep = make_likelihood(name).prepare(Y_SMALL)
        assert prep.offset is None
        assert np.all(prep.row_offset == 0.0)


@pytest.mark.parametrize(
    ("value", "exc", "match"),
    [
        ("library", ValueError, "'total'"),
        ([1.0, -2.0], ValueError, "finite and positive"),
        ([[1.0, 2.0]], ValueError, "1-D"),
        ({"a": 1}, TypeError, "size_factors"),
    ],
)
def test_bad_size_factors_are_refused(value, exc, match):
    with pytest.raises(exc, match=match):
        make_likelihood("negbinom", size_factors=value)


def test_size_factors_must_match_rows_and_rows_need_counts():
    with pytest.raises(ValueError, match="7 rows"):
        make_likelihood("poisson", size_factors=np.ones(3)).prepare(Y_SMALL)
    Y = Y_SMALL.copy()
    Y[3] = 0.0
    with pytest.raises(ValueError, match="rows \\[3\\]"):
        row_offsets("total", Y, ~np.isnan(Y))


def test_new_rows_get_their_own_size_factors():
    Y = np.random.default_rng(1).poisson(2.0, size=(30, 8)).astype(float)
    fitted = IBPRFLVM(
        likelihood="negbinom", n_iter=4, n_frequencies=5, init_dims=2, random_state=0,
        likelihood_params={"size_factors": np.ones(30)},
    ).fit(Y)  # fmt: skip
    with pytest.raises(ValueError, match="new rows' size_factors"):
        fitted.transform(Y[:5], n_sweeps=2, burn_in=1)
    doubled = fitted.predict(2.0 * Y[:5], size_factors=2.0 * np.ones(5))
    single = fitted.predict(2.0 * Y[:5], size_factors=np.ones(5))
    assert doubled.shape == (5, 8) and np.all(np.isfinite(doubled))
    # Twice the depth predicts more for the same latent rates: the offset reaches the mean.
    assert np.mean(doubled) > np.mean(single), (np.mean(doubled), np.mean(single))
    total = IBPRFLVM(
        likelihood="poisson", n_iter=4, n_frequencies=5, init_dims=2, random_state=0,
        likelihood_params={"size_factors": "total"},
    ).fit(Y)  # fmt: skip
    assert total.transform(Y[:5], n_sweeps=2, burn_in=1).shape[0] == 5
    plain = IBPRFLVM(likelihood="poisson", n_iter=2, n_frequencies=5, init_dims=2, random_state=0).fit(Y)
    with pytest.raises(ValueError, match="fitted without size factors"):
        plain.transform(Y[:5], n_sweeps=2, burn_in=1, size_factors="total")


def _clusters_with_depths(seed: int, n_per: int = 100, J: int = 60):
    """Three clusters of NB counts (dispersion 5) whose rows' depths span 10-fold."""
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(3), n_per)
    base = rng.normal(0.0, 0.5, J)
    effect = rng.normal(0.0, 0.5, (3, J))
    depth = np.exp(rng.uniform(math.log(0.3), math.log(3.0), labels.size))
    mu = depth[:, None] * np.exp(base + effect[labels])
    return rng.poisson(rng.gamma(5.0, mu / 5.0)).astype(float), labels, depth


def _knn_correct(H: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Per row: is its label predicted right by 5-NN from the other folds (5-fold, stratified)?"""
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    return cross_val_predict(KNeighborsClassifier(5), H, labels, cv=cv) == labels


def test_size_factors_recover_clusters_that_depth_hides():
    Y, labels, depth = _clusters_with_depths(0)
    gains, row_ses = [], []
    for seed in (0, 1, 2):
        correct, depth_corr = {}, {}
        for sf in (None, "total"):
            fit = IBPRFLVM(
                likelihood="negbinom", n_iter=40, n_frequencies=20, random_state=seed,
                likelihood_params={"size_factors": sf},
            ).fit(Y)  # fmt: skip
            # The posterior embedding (every kept sample), not one sample: the gain is a few rows
            # in a hundred, and the final sample's neighbours alone move by as much between
            # chains (with the scale move in the sweep, 0.016 +- 0.017 over three chains).
            correct[sf] = _knn_correct(fit.embedding_, labels)
            depth_corr[sf] = max(abs(np.corrcoef(np.log(depth), h)[0, 1]) for h in fit.latent_.T)
        # Without offsets a latent dimension is spent on depth; with them none follows depth.
        assert depth_corr[None] > 0.5 and depth_corr["total"] < 0.3, (seed, depth_corr)
        d = correct["total"].astype(float) - correct[None]
        gains.append(d.mean())
        row_ses.append(d.std(ddof=1) / math.sqrt(d.size))
    # The accuracy gain of one chain varies between chains as much as between rows (its final
    # sample is one draw), so the mean gain of three independent chains is judged by the larger
    # of the two standard errors: over the rows (paired per row) and between the chains.
    # Since the HMC move joined the sweep, the embedding without offsets already puts 0.96-0.97
    # of the rows' neighbours in their cluster (0.95-0.97 before), so the gain shrank to
    # 0.003-0.013 a chain (five chains: mean 0.008, standard error 0.004), from 0.020-0.030: the
    # offsets must not cost accuracy, and the dimension spent on depth (above) is what they save.
    gains = np.array(gains)
    se = max(math.sqrt(np.sum(np.square(row_ses))) / gains.size, gains.std(ddof=1) / math.sqrt(gains.size))
    assert gains.mean() > -2.0 * se, (gains, row_ses, se)


def test_checkpoint_settings_see_every_size_factor():
    # numpy abbreviates long arrays' repr; one changed factor among 1,500 must still count.
    from ibp_rflvm import model
    from ibp_rflvm.mcmc.driver import settings_description

    changed = np.ones(1500)
    changed[700] = 2.0
    described = [
        settings_description(model.ModelSpec(likelihood=make_likelihood("poisson", size_factors=sf)))
        for sf in (np.ones(1500), changed)
    ]
    assert described[0] != described[1]


def test_estimator_scores_and_predicts_with_the_offsets():
    rng = np.random.default_rng(3)
    Y = rng.poisson(2.0 * np.linspace(0.3, 3.0, 25)[:, None], size=(25, 6)).astype(float)
    held = np.full(Y.shape, np.nan)
    held[::4, 2] = Y[::4, 2]
    Y_train = np.where(np.isnan(held), Y, np.nan)
    s = np.linspace(0.3, 3.0, 25)
    fit = IBPRFLVM(
        likelihood="poisson", n_iter=4, n_frequencies=5, init_dims=2, random_state=0,
        likelihood_params={"size_factors": s},
    ).fit(Y_train)  # fmt: skip
    logp = fit.pointwise_log_predictive(held)
    rows = np.arange(0, 25, 4)

    for k, smp in enumerate(fit._samples):
        psi = feature_map(smp.H, smp.W, True) @ smp.params.beta + np.log(s)[:, None]
        expected = stats.poisson.logpmf(Y[rows, 2], np.exp(psi[rows, 2]))
        np.testing.assert_allclose(logp[k], expected, rtol=1e-10)
    # The training reconstruction averages s_i exp(phi_i beta) over the kept samples.
    recon = np.mean(
        [s[:, None] * np.exp(feature_map(m.H, m.W, True) @ m.params.beta) for m in fit._samples],
        axis=0,
    )
    np.testing.assert_allclose(fit.predict(), recon, rtol=1e-10)
    assert np.isfinite(fit.perplexity(held))
