"""The delayed-acceptance frequency update (:mod:`ibp_rflvm.samplers.frequency_da`) and the
likelihood derivatives it screens with."""

import numpy as np
import pytest
from scipy import stats
from scipy.special import expit, gammaln

from ibp_rflvm import model
from ibp_rflvm.likelihoods import make_likelihood
from ibp_rflvm.likelihoods.negbinom import NegBinomLikelihood
from ibp_rflvm.samplers import factorised, frequency_da


def _data(name: str, rng, n: int = 30, j: int = 7, offsets: bool = False):
    hyper = {"n_trials": 5} if name == "binomial" else {}
    if offsets:
        hyper["size_factors"] = rng.uniform(0.5, 2.0, n)
    lik = make_likelihood(name, **hyper)
    Y = rng.binomial(1 if name == "bernoulli" else 5, 0.4, (n, j)).astype(float)
    Y[rng.random((n, j)) < 0.15] = np.nan
    return lik, model.Data.from_array(Y, lik)


@pytest.mark.parametrize(
    ("name", "offsets"),
    [("negbinom", False), ("negbinom", True), ("binomial", False), ("bernoulli", False), ("poisson", True)],
)
def test_psi_derivatives_are_those_of_the_entry_log_densities(name, offsets):
    """Central differences of ``logpdf_entries`` at every observed entry, 0 elsewhere."""
    rng = np.random.default_rng(1)
    lik, data = _data(name, rng, offsets=offsets)
    n, j = data.Y.shape
    psi = rng.normal(0.0, 2.0, (n, j))
    psi[0, 0], psi[1, 1] = 30.0, -30.0  # far tails: no overflow, no cancellation
    params = {"r": rng.gamma(2.0, 1.0, j)} if name == "negbinom" else {}
    rows = np.arange(n)
    g, h = lik.psi_derivatives(psi, rows, params, data.prep)
    obs = data.observed
    assert np.all(g[~obs] == 0.0) and np.all(h[~obs] == 0.0)
    assert np.all(h[obs] >= 0.0)
    ii, jj = np.nonzero(obs)
    y = data.Y[ii, jj]

    def logpdf(x):
        return lik.logpdf_entries(y, x, ii, jj, params, data.prep, rows)

    eps = 1e-4
    base = np.zeros((n, j))
    up, down = base.copy(), base.copy()
    up[ii, jj], down[ii, jj] = eps, -eps
    f0, fp, fm = logpdf(psi), logpdf(psi + up), logpdf(psi + down)
    g_num = (fp - fm) / (2 * eps)
    h_num = -(fp - 2 * f0 + fm) / eps**2
    # Differences lose digits to the O(y) log-densities: errors are compared in units of 1 + y.
    scale = 1.0 + np.abs(y)
    assert np.max(np.abs(g[ii, jj] - g_num) / scale) < 1e-6
    assert np.max(np.abs(h[ii, jj] - h_num) / scale) < 1e-3


def test_screen_is_the_entrywise_expansion_and_exact_for_a_quadratic_change():
    """``screen`` (through ``U, V``) equals ``taylor_change`` (entry by entry) for a proposal,
    and both match the exact change to third order in a small step."""
    rng = np.random.default_rng(2)
    lik, data = _data("negbinom", rng, n=40, j=9)
    M, K = 4, 2
    X, Z = rng.standard_normal((40, K)), np.ones((40, K))
    W = rng.standard_normal((M, K))
    params = {"beta": rng.normal(0, 0.8, (2 * M + 1, 9)), "r": rng.gamma(2.0, 1.0, 9)}
    fs = factorised.FactorisedState(X, Z, W, True, params["beta"], lik, params, data.prep)
    U, V = frequency_da.expansion(fs, np.arange(M), M)
    m = 2
    for step in (1.0, 1e-3):
        w_new = W[m] + step * rng.standard_normal(K)
        D = frequency_da.frequency_columns(X * Z, w_new, M) - fs.Phi[:, [m, m + M]]
        psi_new = fs.psi + D @ fs.beta[[m, m + M]]
        via_uv = frequency_da.screen(D, U[:, m], U[:, M + m], V[:, 3 * m : 3 * m + 3])
        direct = frequency_da.taylor_change(fs, fs.psi, psi_new)
        assert via_uv == pytest.approx(direct, rel=1e-10, abs=1e-10)
        exact = lik.loglik_rows(psi_new, fs.all_rows, params, data.prep).sum() - fs.ll.sum()
        if step < 1:
            assert abs(via_uv - exact) < 1e-6 * max(1.0, abs(exact))


def _nb_loglik(Y, obs, psi, r):
    """NB log-likelihood written out here, independent of the library's kernels."""
    y = np.where(obs, Y, 0.0)
    terms = gammaln(y + r) - gammaln(r) - gammaln(y + 1) + y * psi - (y + r) * np.logaddexp(0.0, psi)
    return np.sum(np.where(obs, terms, 0.0), axis=(-2, -1))


class _SkewedScreen(NegBinomLikelihood):
    """The NB likelihood with deliberately wrong derivatives: a screen far from the exact change.
    The delayed update must stay exact with ANY screen; only its cost depends on the screen."""

    def psi_derivatives(self, psi, rows, params, prep):
        g, h = super().psi_derivatives(psi, rows, params, prep)
        return g, 0.1 * h  # a tenth of the curvature: the screen passes far too many proposals


def _one_frequency_problem(lik):
    """One frequency (M = 1, K = 1) and a small NB data set: ``p(w | rest)`` by quadrature."""
    rng = np.random.default_rng(11)
    n, j = 12, 4
    h = rng.standard_normal((n, 1)) * 1.5
    beta = rng.normal(0.0, 1.0, (3, j))
    r = rng.gamma(3.0, 1.0, j)
    w_true = np.array([0.9])
    psi = np.hstack([np.cos(h @ w_true[:, None]), np.sin(h @ w_true[:, None]), np.ones((n, 1))]) @ beta
    Y = rng.negative_binomial(r, expit(-psi)).astype(float)
    Y[0, 0] = np.nan
    data = model.Data.from_array(Y, lik)
    mu, sd = np.array([[0.3]]), 1.2
    grid = np.linspace(mu[0, 0] - 9 * sd, mu[0, 0] + 9 * sd, 40001)
    proj = h[None, :, 0] * grid[:, None]
    Phi = np.stack([np.cos(proj), np.sin(proj), np.ones_like(proj)], axis=2)
    log_post = _nb_loglik(Y, data.observed, Phi @ beta, r) + stats.norm.logpdf(grid, mu[0, 0], sd)
    p = np.exp(log_post - log_post.max())
    cdf = np.cumsum(p)
    cdf /= cdf[-1]
    return h, beta, r, data, mu, np.array([[[sd**2]]]), grid, cdf


def _one_step(kernel, lik, seed: int, n_draws: int = 4000):
    """Start ``n_draws`` chains at exact draws of ``p(w | rest)`` and apply `kernel` once to each:
    the KS p-values of the starts and of the results, and the share of chains that moved."""
    h, beta, r, data, mu, Sigma, grid, cdf = _one_frequency_problem(lik)
    rng = np.random.default_rng(seed)
    starts = np.interp(rng.random(n_draws), cdf, grid)
    params = {"beta": beta, "r": r}
    Z = np.ones_like(h)
    after, moved = np.empty(n_draws), 0
    for t, w0 in enumerate(starts):
        W = np.array([[w0]])
        fs = factorised.FactorisedState(h, Z, W, True, beta, lik, params, data.prep)
        moved += kernel(rng, h, W, np.zeros(1, dtype=np.int64), mu, Sigma, fs)
        after[t] = W[0, 0]
    cdf_at = lambda x: np.interp(x, grid, cdf)  # noqa: E731
    return stats.kstest(starts, cdf_at).pvalue, stats.kstest(after, cdf_at).pvalue, moved / n_draws


def _screen_only(rng, H, W, zeta, mu, Sigma, fs):
    """A wrong kernel, for the test's power: accepts on the screen alone (no second stage)."""
    U, V = frequency_da.expansion(fs, np.arange(1), 1)
    w_prop = mu[0] + np.linalg.cholesky(Sigma[0]) @ rng.standard_normal(1)
    D = frequency_da.frequency_columns(H, w_prop, 1) - fs.Phi[:, [0, 1]]
    if np.log(rng.random()) < frequency_da.screen(D, U[:, 0], U[:, 1], V[:, 0:3]):
        W[0] = w_prop
        return 1
    return 0


@pytest.mark.parametrize("lik", [NegBinomLikelihood(), _SkewedScreen()], ids=["nb", "skewed-screen"])
def test_delayed_acceptance_leaves_the_frequency_conditional_invariant(lik):
    """Exact draws of ``p(w | rest)`` (quadrature on a grid) stay so after one update.

    Kolmogorov-Smirnov at level 0.001 on 4,000 draws, with the NB's own screen and with a
    deliberately wrong one. The update must move at least a tenth of the draws (else invariance
    is trivial); with the wrong screen, the same test must reject the kernel that accepts on the
    screen alone, so it has the power to see a second stage that did not correct the screen.
    """
    p_start, p_after, moved = _one_step(frequency_da.update_w_delayed, lik, seed=3)
    assert p_start > 0.001  # the grid's inverse CDF is right
    assert moved > 0.1, moved
    assert p_after > 0.001, p_after
    if isinstance(lik, _SkewedScreen):
        _, p_wrong, moved_wrong = _one_step(_screen_only, lik, seed=3)
        assert moved_wrong > 0.1 and p_wrong < 1e-6, (p_wrong, moved_wrong)


def test_paper_mh_passes_the_same_invariance_check():
    """The paper's update on the same problem: the reference the delayed update is held to."""
    p_start, p_after, moved = _one_step(factorised.update_w, NegBinomLikelihood(), seed=4)
    assert p_start > 0.001 and moved > 0.1 and p_after > 0.001, (p_start, p_after, moved)


def test_delayed_update_needs_a_likelihood_with_derivatives():
    with pytest.raises(ValueError, match="psi_derivatives"):
        model.ModelSpec(frequency_update="delayed", likelihood=make_likelihood("multinomial"))
    with pytest.raises(ValueError, match="psi_derivatives"):
        model.ModelSpec(frequency_update="delayed")  # the collapsed Gaussian


def test_estimator_passes_frequency_update_through():
    from ibp_rflvm import IBPRFLVM

    Y = np.random.default_rng(0).poisson(2.0, (25, 6)).astype(float)
    est = IBPRFLVM(likelihood="negbinom", frequency_update="delayed", n_iter=3, init_dims=2, random_state=0)
    assert est._spec().frequency_update == "delayed"
    assert np.isfinite(est.fit(Y).score(Y))
    with pytest.raises(ValueError, match="frequency_update must be one of"):
        IBPRFLVM(likelihood="negbinom", frequency_update="fast", n_iter=3).fit(Y)
    with pytest.raises(ValueError, match="psi_derivatives"):
        IBPRFLVM(likelihood="multinomial", frequency_update="delayed", n_iter=3).fit(Y)
