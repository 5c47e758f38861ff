"""Bayesian GPLVM baseline (GPy wrapper): held-out density, NaN handling, reproducibility."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("GPy")

from ibp_rflvm.baselines.gplvm import BayesianGPLVM  # noqa: E402
from ibp_rflvm.datasets.holdout import holdout_mask  # noqa: E402
from ibp_rflvm.evaluation.metrics import gaussian_logpdf, heldout_entries  # noqa: E402


def _simulate(rng, N, J, D=2, lengthscale=1.5, noise_sd=0.1):
    """Data from the GPLVM itself: x_i ~ N(0, I), each column an RBF-GP draw plus noise, then
    shifted and scaled per column so the wrapper's standardisation is exercised."""
    X = rng.standard_normal((N, D))
    sq = ((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=-1)
    K = np.exp(-0.5 * sq / lengthscale**2) + 1e-8 * np.eye(N)
    F = np.linalg.cholesky(K) @ rng.standard_normal((N, J))
    shift = rng.normal(0.0, 5.0, size=J)
    scale = rng.uniform(0.5, 3.0, size=J)
    F = F * scale + shift
    Y = F + noise_sd * scale * rng.standard_normal((N, J))
    return Y, F


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
    assert model.predict().shape == (60, 12)
    assert np.all(model.predictive_variance_ > 0)


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
    assert type(model.model_).__name__ == "BayesianGPLVMMiniBatch"
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


def test_same_seed_identical_fit_and_global_numpy_state_untouched():
    rng = np.random.default_rng(91)
    Y, _ = _simulate(rng, 30, 5)
    np.random.seed(5)  # noqa: NPY002 - the test checks that fitting leaves this state alone
    before = np.random.get_state()  # noqa: NPY002
    a = BayesianGPLVM(n_components=2, num_inducing=10, max_iters=30, random_state=3).fit(Y)
    after = np.random.get_state()  # noqa: NPY002
    assert before[0] == after[0]
    np.testing.assert_array_equal(before[1], after[1])
    assert before[2:] == after[2:]

    b = BayesianGPLVM(n_components=2, num_inducing=10, max_iters=30, random_state=3).fit(Y)
    c = BayesianGPLVM(n_components=2, num_inducing=10, max_iters=30, random_state=4).fit(Y)
    # Complete data goes through GPy's plain BayesianGPLVM.
    assert type(a.model_).__name__ == "BayesianGPLVM"
    np.testing.assert_array_equal(a.latent_, b.latent_)
    np.testing.assert_array_equal(a.predictive_mean_, b.predictive_mean_)
    np.testing.assert_array_equal(a.predictive_variance_, b.predictive_variance_)
    assert not np.array_equal(a.latent_, c.latent_)


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
