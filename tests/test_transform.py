"""transform: latent positions of new rows against the fitted model."""

import numpy as np
import pytest

from ibp_rflvm import IBPRFLVM, RFLVM
from ibp_rflvm.features import feature_map


@pytest.fixture(scope="module")
def simulated():
    rng = np.random.default_rng(5)
    N, J, M = 180, 20, 20
    X = rng.standard_normal((N, 2))
    W = 0.7 * rng.standard_normal((M, 2))
    Y = feature_map(X, W) @ rng.standard_normal((2 * M, J)) + 0.1 * rng.standard_normal((N, J))
    Y_new = Y[150:].copy()
    Y_new[rng.random(Y_new.shape) < 0.2] = np.nan  # new rows may have unobserved entries
    return X, Y, Y_new


def _procrustes_map(fitted_train, true_train, points):
    """Rotation/reflection, scale and shift that best map the fitted training positions onto the
    true ones, applied to `points`."""
    mu_f, mu_t = fitted_train.mean(0), true_train.mean(0)
    U, s, Vt = np.linalg.svd((fitted_train - mu_f).T @ (true_train - mu_t))
    scale = s.sum() / ((fitted_train - mu_f) ** 2).sum()
    return (points - mu_f) @ (U @ Vt) * scale + mu_t


@pytest.mark.parametrize(("cls", "kw"), [(RFLVM, {"n_components": 2}), (IBPRFLVM, {"init_dims": 2})])
def test_new_rows_land_near_their_true_positions(simulated, cls, kw):
    X, Y, Y_new = simulated
    m = cls(n_iter=80, random_state=0, **kw).fit(Y[:150])
    H_new = m.transform(Y_new)
    assert H_new.shape == (30, m.latent_.shape[1])
    k = min(2, H_new.shape[1])
    mapped = _procrustes_map(m.latent_[:, :k], X[:150], H_new[:, :k])
    err = np.linalg.norm(mapped - X[150:], axis=1).mean()
    rng = np.random.default_rng(0)
    chance = np.array(
        [np.linalg.norm(mapped[rng.permutation(30)] - X[150:], axis=1).mean() for _ in range(500)]
    )
    # Far better than chance: below every one of 500 random assignments of rows, by a wide margin.
    assert err < chance.min() and err < 0.3 * chance.mean(), (err, chance.min(), chance.mean())


def test_transform_checks_its_input(simulated):
    _, Y, _ = simulated
    m = RFLVM(n_iter=4, n_frequencies=6, random_state=0).fit(Y[:40])
    with pytest.raises(ValueError, match="features"):
        m.transform(Y[:3, :5])
    with pytest.raises(ValueError, match="no observed entry"):
        m.transform(np.full((2, Y.shape[1]), np.nan))
    one = m.transform(Y[:1])
    assert one.shape[0] == 1
    np.testing.assert_array_equal(m.transform(Y[:5]), m.transform(Y[:5]))  # deterministic
