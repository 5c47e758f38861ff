"""Bayesian GPLVM baseline: analytic gradients, agreement with GPy, optimisation, held-out
density, NaN handling, reproducibility."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ibp_rflvm.baselines import gplvm, gplvm_bound
from ibp_rflvm.baselines.gplvm import BayesianGPLVM
from ibp_rflvm.datasets.holdout import holdout_mask
from ibp_rflvm.summaries.scoring import gaussian_logpdf, heldout_entries


def _simulate(rng, N, J, D=2, lengthscale=1.5, noise_sd=0.1):
    """Data from the GPLVM itself: x_i ~ N(0, I), each column an RBF-GP draw plus noise, then
    shifted and scaled per column so the standardisation is exercised."""
    X = rng.standard_normal((N, D))
    sq = ((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=-1)
    K = np.exp(-0.5 * sq / lengthscale**2) + 1e-8 * np.eye(N)
    F = np.linalg.cholesky(K) @ rng.standard_normal((N, J))
    shift = rng.normal(0.0, 5.0, size=J)
    scale = rng.uniform(0.5, 3.0, size=J)
    F = F * scale + shift
    Y = F + noise_sd * scale * rng.standard_normal((N, J))
    return Y, F


def _random_theta(rng, N, M, Q):
    return gplvm.pack_theta(
        rng.standard_normal((N, Q)),
        rng.uniform(0.05, 0.5, (N, Q)),
        rng.standard_normal((M, Q)),
        1.3,
        rng.uniform(0.7, 1.5, Q),
        0.3,
    )


# Observed masks covering each code path: fewer distinct column patterns than rows with two
# columns sharing a pattern; more patterns than rows (whitening per row); complete data.
_MASK_7x4 = np.array(
    [[1, 1, 1, 1], [0, 1, 0, 1], [1, 1, 1, 0], [1, 0, 1, 1], [1, 1, 1, 1], [0, 1, 0, 1], [1, 1, 1, 1]], bool
)
_MASK_4x9 = np.array(
    [
        [1, 1, 0, 1, 0, 0, 1, 1, 1],
        [1, 0, 1, 1, 1, 0, 0, 1, 0],
        [0, 1, 1, 1, 0, 1, 1, 0, 0],
        [1, 1, 1, 0, 1, 1, 0, 0, 1],
    ],
    bool,
)


@pytest.mark.parametrize(
    "mask", [_MASK_7x4, _MASK_4x9, np.ones((6, 4), bool)], ids=["7x4", "4x9", "complete"]
)
def test_analytic_gradient_matches_finite_differences(mask):
    rng = np.random.default_rng(11)
    N, J = mask.shape
    M, Q = 3, 2
    Y = np.where(mask, rng.standard_normal((N, J)), np.nan)
    obs = gplvm_bound.observed_data(Y)
    theta = _random_theta(rng, N, M, Q)
    _, grad = gplvm.negative_elbo(theta, obs, M, Q)
    h = 1e-5
    fd = np.empty_like(theta)
    for i in range(theta.size):
        step = np.zeros_like(theta)
        step[i] = h
        fd[i] = (
            gplvm.negative_elbo(theta + step, obs, M, Q)[0] - gplvm.negative_elbo(theta - step, obs, M, Q)[0]
        ) / (2 * h)
    sizes = {"mu": N * Q, "log S": N * Q, "Z": M * Q, "log sf2": 1, "log l": Q, "log noise": 1}
    start = 0
    for name, size in sizes.items():
        block = slice(start, start + size)
        np.testing.assert_allclose(grad[block], fd[block], rtol=1e-5, atol=1e-7, err_msg=name)
        start += size
    assert start == theta.size


def _gpy_model(Y, mu, S, Z, sf2, ell, noise):
    GPy = pytest.importorskip("GPy")
    from GPy.models.bayesian_gplvm_minibatch import BayesianGPLVMMiniBatch

    M, Q = Z.shape
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=DeprecationWarning)
        kernel = GPy.kern.RBF(Q, ARD=True, variance=sf2, lengthscale=ell)
        args = {"X": mu.copy(), "X_variance": S.copy(), "Z": Z.copy(), "num_inducing": M, "kernel": kernel}
        if np.isnan(Y).any():
            model = BayesianGPLVMMiniBatch(Y, Q, missing_data=True, **args)
        else:
            model = GPy.models.BayesianGPLVM(Y, Q, **args)
        model.likelihood.variance = noise
    return model


@pytest.mark.parametrize("missing", [False, True], ids=["complete", "missing"])
def test_bound_and_predictive_equal_gpy(missing):
    rng = np.random.default_rng(21)
    N, J, M, Q = 12, 5, 4, 2
    Y = rng.standard_normal((N, J))
    if missing:
        Y[rng.random((N, J)) < 0.25] = np.nan
        Y[0, :] = rng.standard_normal(J)  # keep every column observed somewhere
    mu = rng.standard_normal((N, Q))
    S = rng.uniform(0.05, 0.5, (N, Q))
    Z = rng.standard_normal((M, Q))
    sf2, ell, noise = 1.3, np.array([0.8, 1.4]), 0.3
    model = _gpy_model(Y, mu, S, Z, sf2, ell, noise)

    obs = gplvm_bound.observed_data(Y)
    theta = gplvm.pack_theta(mu, S, Z, sf2, ell, noise)
    # GPy adds an absolute 1e-8 to Kmm's diagonal; ours is relative to sf2, so this matches it.
    jitter = 1e-8 / sf2
    ours = gplvm.elbo(theta, obs, M, Q, jitter=jitter)
    assert ours == pytest.approx(np.asarray(model.log_likelihood()).item(), rel=1e-8)

    mean, var = gplvm.predictive_moments(mu, theta, obs, M, Q, jitter=jitter)
    gpy_mean, gpy_var = model.predict(mu)
    np.testing.assert_allclose(mean, gpy_mean, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(var, np.broadcast_to(gpy_var, (N, J)), rtol=1e-8)


def test_fit_raises_the_bound_to_a_stationary_point():
    rng = np.random.default_rng(31)
    Y, _ = _simulate(rng, 40, 6)
    Y[rng.random(Y.shape) < 0.15] = np.nan
    kwargs = {"n_components": 2, "num_inducing": 8, "random_state": 32}
    start = BayesianGPLVM(max_iters=0, **kwargs).fit(Y)
    fitted = BayesianGPLVM(max_iters=500, **kwargs).fit(Y)
    assert start.n_iter_ == 0 and not start.converged_
    assert 0 < fitted.n_iter_ < 500 and fitted.converged_
    # A budget too small to converge is reported as such.
    short = BayesianGPLVM(max_iters=5, **kwargs).fit(Y)
    assert short.n_iter_ == 5 and not short.converged_
    assert fitted.elbo_ > start.elbo_ + 10.0, (start.elbo_, fitted.elbo_)

    obs = gplvm_bound.observed_data(gplvm.standardise(Y)[0])

    def gradient(model):
        p = model.params_
        theta = gplvm.pack_theta(
            model.latent_,
            model.latent_variance_,
            p.inducing_inputs,
            p.variance,
            p.lengthscales,
            p.noise_variance,
        )
        value, grad = gplvm.negative_elbo(theta, obs, 8, 2)
        assert -value == pytest.approx(model.elbo_, rel=1e-12)
        return np.linalg.norm(grad)

    assert gradient(fitted) < 1e-3 * gradient(start), (gradient(start), gradient(fitted))


def test_heldout_density_clearly_beats_column_gaussians():
    rng = np.random.default_rng(71)
    Y, _ = _simulate(rng, 60, 12)
    Y_train, Y_held = holdout_mask(Y, 0.2, random_state=72)
    model = BayesianGPLVM(n_components=2, num_inducing=15, max_iters=200, random_state=73).fit(Y_train)
    rows, cols, vals = heldout_entries(Y_held)

    ours = model.pointwise_log_density(Y_held)
    base = gaussian_logpdf(vals, np.nanmean(Y_train, axis=0)[cols], np.nanvar(Y_train, axis=0)[cols])
    diff = ours - base
    # Paired comparison over the held-out entries: the mean gain must exceed 4 standard errors.
    assert diff.mean() > 4.0 * diff.std(ddof=1) / np.sqrt(diff.size), (ours.mean(), base.mean())

    lpd = model.log_predictive_density(Y_held)
    assert lpd == pytest.approx(ours.sum())
    assert model.score(Y_held) == pytest.approx(ours.mean())
    assert model.latent_.shape == (60, 2)
    assert model.latent_variance_.shape == (60, 2)
    assert model.params_.inducing_inputs.shape == (15, 2)
    assert model.params_.lengthscales.shape == (2,)
    assert model.predict().shape == (60, 12)
    assert np.all(model.predictive_variance_ > 0)


def test_many_latent_dimensions_do_not_collapse_to_all_noise():
    """With more latent dimensions than the data needs (as when D comes from an IBP chain
    that grew), the fit must still explain the data. Unit starting lengthscales put
    unit-variance inputs so far apart that the bound's easiest ascent is to the trivial optimum
    (kernel variance to zero, every entry noise); GPy's PCA-scaled start avoids it."""
    rng = np.random.default_rng(91)
    Y, _ = _simulate(rng, 80, 30, noise_sd=0.3)
    Y_train, Y_held = holdout_mask(Y, 0.2, random_state=92)
    model = BayesianGPLVM(n_components=40, num_inducing=20, max_iters=300, random_state=93).fit(Y_train)
    rows, cols, vals = heldout_entries(Y_held)
    base = gaussian_logpdf(vals, np.nanmean(Y_train, axis=0)[cols], np.nanvar(Y_train, axis=0)[cols])
    diff = model.pointwise_log_density(Y_held) - base
    assert diff.mean() > 4.0 * diff.std(ddof=1) / np.sqrt(diff.size), diff.mean()
    # Standardised columns: the collapsed fit has kernel variance ~0 and noise ~1 (with unit
    # starting lengthscales this seed gives 3e-7 and 1.00); the data are mostly signal.
    assert model.params_.variance > 0.5 and model.params_.noise_variance < 0.5, model.params_


def test_initial_lengthscales_are_gpy_pca_defaults():
    rng = np.random.default_rng(95)
    Y, _ = _simulate(rng, 40, 8)
    model = BayesianGPLVM(n_components=3, num_inducing=10, max_iters=0, random_state=96).fit(Y)
    Yn = (Y - Y.mean(axis=0)) / Y.std(axis=0)
    eig = np.linalg.eigvalsh(Yn.T @ Yn)[::-1][:3]
    np.testing.assert_allclose(model.params_.lengthscales, eig[0] / eig, rtol=1e-10)


def test_unobserved_entries_are_not_read_as_zeros():
    rng = np.random.default_rng(81)
    Y, F = _simulate(rng, 60, 10)
    # Put column 0 far from zero, so reading its unobserved half as zeros could not go unseen.
    Y[:, 0] += 10.0
    F[:, 0] += 10.0
    masked = np.zeros_like(Y, dtype=bool)
    masked[:30, 0] = True
    model = BayesianGPLVM(n_components=2, num_inducing=15, max_iters=200, random_state=82)
    model.fit(np.where(masked, np.nan, Y))
    mean = model.predict()[masked]
    sd = np.sqrt(model.predictive_variance_[masked])
    # The masked half of column 0 is predicted from the latent positions (learnt from the other
    # columns) and the observed half: the error is well below the spread of the true values...
    rmse = np.sqrt(np.mean((mean - F[masked]) ** 2))
    assert rmse < 0.5 * F[masked].std(), (rmse, F[masked].std())
    # ...and the 99% predictive intervals cover the hidden values: with 30 entries, four or
    # more misses has probability ~3e-4 if the intervals are calibrated.
    inside = np.abs(Y[masked] - mean) < 2.576 * sd
    assert inside.sum() >= 27, inside.sum()


@pytest.mark.parametrize("missing", [False, True], ids=["complete", "missing"])
def test_same_seed_identical_fit_and_global_numpy_state_untouched(missing):
    rng = np.random.default_rng(91)
    Y, _ = _simulate(rng, 30, 5)
    if missing:
        Y, _ = holdout_mask(Y, 0.2, random_state=92)
    np.random.seed(5)  # noqa: NPY002 - the test checks that fitting leaves this state alone
    before = np.random.get_state()  # noqa: NPY002
    a = BayesianGPLVM(n_components=2, num_inducing=10, max_iters=30, random_state=3).fit(Y)
    after = np.random.get_state()  # noqa: NPY002
    assert before[0] == after[0]
    np.testing.assert_array_equal(before[1], after[1])
    assert before[2:] == after[2:]

    b = BayesianGPLVM(n_components=2, num_inducing=10, max_iters=30, random_state=3).fit(Y)
    c = BayesianGPLVM(n_components=2, num_inducing=10, max_iters=30, random_state=4).fit(Y)
    np.testing.assert_array_equal(a.latent_, b.latent_)
    np.testing.assert_array_equal(a.latent_variance_, b.latent_variance_)
    np.testing.assert_array_equal(a.predictive_mean_, b.predictive_mean_)
    np.testing.assert_array_equal(a.predictive_variance_, b.predictive_variance_)
    assert a.elbo_ == b.elbo_
    assert not np.array_equal(a.latent_, c.latent_)
    assert not np.array_equal(a.predictive_mean_, c.predictive_mean_)


_GOOD = np.arange(12.0).reshape(4, 3) ** 1.5


@pytest.mark.parametrize(
    ("Y", "message"),
    [
        (np.arange(5.0), "2-D"),
        (np.where(np.eye(4, 3, dtype=bool), np.inf, _GOOD), "infinite"),
        (np.vstack([_GOOD, np.full(3, np.nan)]), "no observed entry"),
        (np.column_stack([_GOOD, np.full(4, np.nan)]), "no observed entry"),
        (np.array([["a", "b"], ["c", "d"]]), "numeric"),
    ],
)
def test_bad_input_raises_clear_value_error(Y, message):
    with pytest.raises(ValueError, match=message):
        BayesianGPLVM(num_inducing=3, max_iters=2).fit(Y)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_components": 0}, "n_components"),
        ({"num_inducing": 0}, "num_inducing"),
        ({"noise_variance": -1.0}, "noise_variance"),
        ({"random_state": 1.5}, "random_state"),
    ],
)
def test_bad_parameters_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        BayesianGPLVM(**kwargs).fit(_GOOD)


def test_heldout_matrix_checks():
    model = BayesianGPLVM(n_components=1, num_inducing=3, max_iters=2, random_state=0)
    with pytest.raises(RuntimeError, match="not fitted"):
        model.score(_GOOD)
    model.fit(_GOOD)
    with pytest.raises(ValueError, match="training shape"):
        model.log_predictive_density(_GOOD[:3])
    with pytest.raises(ValueError, match="no entries"):
        model.log_predictive_density(np.full_like(_GOOD, np.nan))


def test_broken_cholesky_restarts_with_more_jitter(monkeypatch):
    rng = np.random.default_rng(0)
    Y = rng.standard_normal((30, 4))
    real = gplvm.negative_elbo

    def fails_at_default_jitter(theta, obs, M, Q, jitter=gplvm.JITTER):
        if jitter == gplvm.JITTER:
            raise np.linalg.LinAlgError("Matrix is not positive definite")
        return real(theta, obs, M, Q, jitter)

    monkeypatch.setattr(gplvm, "negative_elbo", fails_at_default_jitter)
    m = BayesianGPLVM(n_components=2, num_inducing=5, max_iters=20, random_state=0).fit(Y)
    assert m.jitter_ == pytest.approx(100 * gplvm.JITTER)
    assert np.isfinite(m.elbo_) and np.all(np.isfinite(m.predictive_mean_))

    def always_fails(theta, obs, M, Q, jitter=gplvm.JITTER):
        raise np.linalg.LinAlgError("Matrix is not positive definite")

    monkeypatch.setattr(gplvm, "negative_elbo", always_fails)
    with pytest.raises(np.linalg.LinAlgError, match="n_components"):
        BayesianGPLVM(n_components=2, num_inducing=5, max_iters=20, random_state=0).fit(Y)


def test_a_fit_that_never_fails_keeps_the_default_jitter():
    Y = np.random.default_rng(1).standard_normal((30, 4))
    m = BayesianGPLVM(n_components=2, num_inducing=5, max_iters=10, random_state=0).fit(Y)
    assert m.jitter_ == gplvm.JITTER
