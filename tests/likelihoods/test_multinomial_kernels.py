"""The multinomial's per-category kernels against direct NumPy sums, including the rows where
one category holds almost all the mass (the subtraction from the running total would cancel)."""

import numpy as np
from scipy.special import logsumexp

from ibp_rflvm.likelihoods.multinomial import _category_terms, _commit_category


def _rows():
    rng = np.random.default_rng(5)
    N, J = 7, 5
    psi = rng.normal(size=(N, J))
    psi[1, 2] = 60.0  # category 2 holds all but ~e^-60 of row 1's mass
    psi[2, 2] = 3.0  # holds ~99% of row 2's mass: within _CANCEL of the total
    psi[2, [0, 1, 3, 4]] = [-2.0, -1.5, -3.0, -2.5]
    obs = np.ones((N, J), dtype=bool)
    obs[3, 2] = False  # category 2 unobserved
    obs[4, [0, 1, 3, 4]] = False  # category 2 is the only one observed
    y = rng.integers(0, 6, size=(N, J)).astype(float)
    y[5] = 0.0  # no counts: no information
    n = np.where(obs, y, 0.0).sum(axis=1)
    informative = (obs.sum(axis=1) >= 2) & (n > 0)
    return psi, obs, y, n, informative


def test_category_terms_match_direct_sums():
    psi, obs, y, n, informative = _rows()
    N, J = psi.shape
    j = 2
    log_total = logsumexp(np.where(obs, psi, -np.inf), axis=1)
    xi, b, c, kappa = (np.full(N, np.nan) for _ in range(4))
    _category_terms(psi, j, log_total, obs, informative, n, y, xi, b, c, kappa)
    others = obs.copy()
    others[:, j] = False
    with np.errstate(divide="ignore"):
        want_xi = np.where(obs[:, j], logsumexp(np.where(others, psi, -np.inf), axis=1), log_total)
    np.testing.assert_allclose(xi, want_xi, rtol=1e-13)
    assert xi[4] == -np.inf  # nothing else observed in row 4
    valid = obs[:, j] & informative
    assert valid[[0, 1, 2, 6]].all() and not valid[[3, 4, 5]].any()
    np.testing.assert_array_equal(b, np.where(valid, n, 0.0))
    np.testing.assert_allclose(c, np.where(valid, psi[:, j] - want_xi, 0.0), rtol=1e-13)
    np.testing.assert_array_equal(kappa, np.where(valid, y[:, j] - n / 2, 0.0))


def test_commit_category_keeps_the_running_total():
    psi, obs, y, n, informative = _rows()
    N, J = psi.shape
    log_total = logsumexp(np.where(obs, psi, -np.inf), axis=1)
    xi, b, c, kappa = (np.empty(N) for _ in range(4))
    for j in range(J - 1):
        _category_terms(psi, j, log_total, obs, informative, n, y, xi, b, c, kappa)
        new = np.random.default_rng(j).normal(size=N) * 4.0
        _commit_category(psi, j, new, xi, obs, log_total)
        np.testing.assert_array_equal(psi[:, j], new)
        np.testing.assert_allclose(log_total, logsumexp(np.where(obs, psi, -np.inf), axis=1), rtol=1e-12)
