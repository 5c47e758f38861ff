r"""Poisson factor analysis (Zhou, Hannah, Dunson and Carin 2012), finite K, by Gibbs sampling.

Model (beta-gamma-gamma-Poisson), for observed entries ``(i, j)``::

    y_ij   ~ Poisson(sum_k theta_ik phi_kj)
    phi_k  ~ Dirichlet(a_phi, ..., a_phi)                    (a distribution over the J columns)
    theta_ik ~ Gamma(shape r_k, scale p_k / (1 - p_k))
    p_k    ~ Beta(c * eps, c * (1 - eps))
    r_k    ~ Gamma(shape e0, scale 1 / f0)

Augmentation. Each count splits into factor-specific counts ``y_ij = sum_k y_ijk`` with
``y_ijk ~ Poisson(theta_ik phi_kj)``. Write ``m_ik = sum_j y_ijk`` (row-factor totals) and
``n_kj = sum_i y_ijk`` (factor-column totals).

Unobserved entries. With some ``y_ij`` missing, the Poisson exposure of ``phi_k`` becomes
``sum_j phi_kj sum_{i: (i,j) observed} theta_ik``: it no longer collapses to ``sum_i theta_ik``
(the Dirichlet constraint only helps when every column is seen), so the ``phi`` conditional is not
Dirichlet and the theta-marginalised updates of ``p_k`` and ``r_k`` lose their negative-binomial
form. We therefore keep the missing counts in the state and draw them each sweep from their
conditional, ``y_ij ~ Poisson(sum_k theta_ik phi_kj)`` split over factors like the observed
ones (the same data augmentation the Gaussian model uses). Given the completed
counts every conditional below is exact and conjugate, and the marginal chain targets the
posterior given the observed entries only. An unobserved entry is never treated as a zero.

One sweep, each step an exact draw from the conditional named:

1. ``(y_ij1, ..., y_ijK) | y_ij, theta, phi ~ Mult(y_ij; theta_ik phi_kj / sum_k' theta_ik' phi_k'j)``
   for observed nonzero entries; for unobserved entries first ``y_ij ~ Poisson(sum_k theta_ik phi_kj)``,
   then the same split. (numba, one pass over the nonzero and unobserved entries.)
2. ``phi_k | counts ~ Dirichlet(a_phi + n_k1, ..., a_phi + n_kJ)``: with complete counts the
   exposure ``sum_j phi_kj theta_ik = theta_ik`` does not depend on ``phi``.
3. ``p_k | counts, r_k ~ Beta(c eps + sum_i m_ik, c (1 - eps) + N r_k)``, with ``theta``
   integrated out: ``m_ik | theta_ik ~ Poisson(theta_ik)`` and the gamma prior make
   ``m_ik ~ NB(r_k, p_k)`` with pmf proportional to ``p_k^m (1 - p_k)^r_k``.
4. ``l_ik ~ CRT(m_ik, r_k)`` and ``r_k | l, p_k ~ Gamma(shape e0 + sum_i l_ik,
   scale 1 / (f0 - N log(1 - p_k)))`` (Zhou and Carin 2015 augmentation of the NB likelihood),
   still with ``theta`` integrated out.
5. ``theta_ik | counts, p_k, r_k ~ Gamma(shape r_k + m_ik, scale p_k)``: the rate is
   ``(1 - p_k) / p_k + sum_j phi_kj = 1 / p_k``.

Steps 3 and 4 integrate ``theta`` out and step 5 then draws it from its full conditional before
anything else uses it, so this partially collapsed sampler keeps the posterior invariant
(van Dyk and Park 2008). CRT draws use a skip-ahead sampler whose cost grows with the number of
tables (about ``r log m``), not with ``m``, so large counts (bike counters) stay cheap.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from scipy.special import gammaln

from ..plumbing.sparse import data_matrix
from ..plumbing.validation import check_counts, check_random_state
from ..samplers.crt import crt_draw
from ..summaries.scoring import poisson_logpmf
from ._common import (
    CountScoresMixin,
    check_fitted,
    check_int,
    check_positive,
    dirichlet_rows,
    resolve_burn_in,
    split_count,
)

_TINY = 1e-300
# Keeps log(1 - p) finite if a Beta draw rounds to one.
_MAX_P = 1.0 - 1e-15


@njit(cache=True)
def _crt_totals(rng, m_ik, r):
    """``sum_i CRT(m_ik, r_k)`` for each k."""
    n, K = m_ik.shape
    out = np.zeros(K, dtype=np.float64)
    for i in range(n):
        for k in range(K):
            out[k] += crt_draw(rng, m_ik[i, k], r[k])
    return out


@njit(cache=True)
def _augment(rng, theta, phi, obs_i, obs_j, obs_y, miss_i, miss_j, m_ik, n_kj):
    """Step 1: split observed counts over factors and impute-and-split unobserved entries.

    Writes the row-factor totals into `m_ik` and the factor-column totals into `n_kj`.
    """
    K = theta.shape[1]
    m_ik[:, :] = 0
    n_kj[:, :] = 0
    prob = np.empty(K)
    out = np.empty(K, dtype=np.int64)
    for t in range(obs_i.shape[0]):
        i = obs_i[t]
        j = obs_j[t]
        for k in range(K):
            prob[k] = theta[i, k] * phi[k, j]
        split_count(rng, obs_y[t], prob, out)
        for k in range(K):
            m_ik[i, k] += out[k]
            n_kj[k, j] += out[k]
    for t in range(miss_i.shape[0]):
        i = miss_i[t]
        j = miss_j[t]
        rate = 0.0
        for k in range(K):
            prob[k] = theta[i, k] * phi[k, j]
            rate += prob[k]
        y = rng.poisson(rate)
        if y == 0:
            continue
        split_count(rng, y, prob, out)
        for k in range(K):
            m_ik[i, k] += out[k]
            n_kj[k, j] += out[k]


def gibbs_sweep(
    rng: np.random.Generator,
    theta: np.ndarray,
    phi: np.ndarray,
    r: np.ndarray,
    data: tuple[np.ndarray, ...],
    prm: dict,
    m_ik: np.ndarray,
    n_kj: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One sweep (steps 1-5 of the module docstring); returns the new ``theta, phi, p, r``.

    `data` is ``(nz_i, nz_j, nz_y, miss_i, miss_j)``: the observed nonzero entries with their
    counts, and the unobserved entries. `prm` holds ``a_phi, c, eps, e0, f0``. `m_ik` and `n_kj`
    are int64 work buffers (``N x K``, ``K x J``). The old ``p`` is not an input: step 3 draws it
    with theta integrated out, so it does not depend on its previous value.
    """
    nz_i, nz_j, nz_y, miss_i, miss_j = data
    N = theta.shape[0]
    _augment(rng, theta, phi, nz_i, nz_j, nz_y, miss_i, miss_j, m_ik, n_kj)
    phi = dirichlet_rows(rng, prm["a_phi"] + n_kj)
    p = rng.beta(prm["c"] * prm["eps"] + m_ik.sum(axis=0), prm["c"] * (1.0 - prm["eps"]) + N * r)
    p = np.minimum(p, _MAX_P)
    tables = _crt_totals(rng, m_ik, r)
    r = rng.gamma(prm["e0"] + tables, 1.0 / (prm["f0"] - N * np.log1p(-p)))
    theta = rng.gamma(r + m_ik, p)
    return theta, phi, p, r


class PoissonFactorAnalysis(CountScoresMixin):
    """Finite Poisson factor analysis with a beta-gamma-gamma prior, sampled by Gibbs.

    The paper's count baseline (Zhou et al. 2012); NaN marks unobserved entries.

    Parameters
    ----------
    n_components : int, default=10
        Number of factors ``K``.
    n_iter : int, default=100
        Gibbs sweeps, burn-in included.
    burn_in : int or None, default=None
        Sweeps discarded (None: the first half); every sample after the burn-in is kept.
    a_phi : float, default=0.05
        Symmetric Dirichlet concentration of each factor loading ``phi_k``.
    c : float, default=1.0
        ``p_k ~ Beta(c eps, c (1 - eps))``.
    eps : float or None, default=None
        See `c`; None means ``1 / n_components`` (0.5 for a single factor).
    e0 : float, default=0.01
        Shape of the Gamma prior on ``r_k``.
    f0 : float, default=0.01
        Rate of the Gamma prior on ``r_k``.
    random_state : int, numpy.random.Generator, numpy.random.SeedSequence or None, default=None
        Seed; one Generator drives the whole chain.

    Attributes
    ----------
    theta_samples_ : ndarray of shape (n_kept, n_samples, n_components)
        Factor scores of every kept sample.
    phi_samples_ : ndarray of shape (n_kept, n_components, n_features)
        Loadings of every kept sample (rows sum to one).
    p_samples_, r_samples_ : ndarray of shape (n_kept, n_components)
        ``p_k`` and ``r_k`` of every kept sample.
    latent_ : ndarray of shape (n_samples, n_components)
        Posterior mean of ``theta``.
    components_ : ndarray of shape (n_components, n_features)
        Posterior mean of ``phi``.
    log_likelihood_ : ndarray of shape (n_iter,)
        Poisson log-likelihood of the observed training entries after every sweep (burn-in
        included, for trace plots).
    """

    def __init__(
        self,
        n_components: int = 10,
        n_iter: int = 100,
        burn_in: int | None = None,
        a_phi: float = 0.05,
        c: float = 1.0,
        eps: float | None = None,
        e0: float = 0.01,
        f0: float = 0.01,
        random_state=None,
    ) -> None:
        self.n_components = n_components
        self.n_iter = n_iter
        self.burn_in = burn_in
        self.a_phi = a_phi
        self.c = c
        self.eps = eps
        self.e0 = e0
        self.f0 = f0
        self.random_state = random_state

    def _check_params(self) -> dict:
        K = check_int("n_components", self.n_components, 1)
        n_iter, burn_in = resolve_burn_in(self.n_iter, self.burn_in)
        if self.eps is None:
            # Beta(c, 0) would be improper, so a single factor gets a symmetric prior instead.
            eps = 1.0 / K if K > 1 else 0.5
        else:
            eps = check_positive("eps", self.eps)
        if not eps < 1.0:
            raise ValueError(f"eps must lie in (0, 1); got {self.eps!r}")
        return {
            "K": K,
            "n_iter": n_iter,
            "burn_in": burn_in,
            "a_phi": check_positive("a_phi", self.a_phi),
            "c": check_positive("c", self.c),
            "eps": eps,
            "e0": check_positive("e0", self.e0),
            "f0": check_positive("f0", self.f0),
        }

    def fit(self, Y, missing_mask=None) -> PoissonFactorAnalysis:
        """Run the Gibbs sampler on `Y`.

        Parameters
        ----------
        Y : array-like or scipy.sparse matrix of shape (n_samples, n_features)
            Counts; NaN marks unobserved entries.
        missing_mask : array-like of bool of shape (n_samples, n_features), default=None
            ``True`` marks an unobserved entry (the orientation of ``np.isnan(Y)``), as in the
            estimators' ``fit``; a sparse `Y`'s zeros are observed.

        Returns
        -------
        PoissonFactorAnalysis
            The fitted estimator.
        """
        Y = data_matrix(Y, missing_mask)
        check_counts(Y, what="Poisson factor analysis")
        prm = self._check_params()
        K, n_iter, burn_in = prm["K"], prm["n_iter"], prm["burn_in"]
        rng = check_random_state(self.random_state)
        N, J = Y.shape

        observed = ~np.isnan(Y)
        Y0 = np.where(observed, Y, 0.0)
        nz_i, nz_j = np.nonzero(observed & (Y0 > 0))
        nz_y = Y0[nz_i, nz_j].astype(np.int64)
        miss_i, miss_j = np.nonzero(~observed)
        obs_i, obs_j = np.nonzero(observed)
        obs_y = Y0[obs_i, obs_j]
        log_fact = gammaln(obs_y + 1.0)

        # Start near the data scale: each row's factors share its (observed-rate) total.
        row_rate = Y0.sum(axis=1) / observed.mean(axis=1)
        theta = rng.gamma(1.0, (row_rate[:, None] + 1.0) / K, size=(N, K))
        phi = dirichlet_rows(rng, np.ones((K, J)))
        p = np.full(K, 0.5)
        r = np.ones(K)

        S = n_iter - burn_in
        theta_s = np.empty((S, N, K))
        phi_s = np.empty((S, K, J))
        p_s = np.empty((S, K))
        r_s = np.empty((S, K))
        loglik = np.empty(n_iter)
        m_ik = np.zeros((N, K), dtype=np.int64)
        n_kj = np.zeros((K, J), dtype=np.int64)

        data = (nz_i, nz_j, nz_y, miss_i, miss_j)

        for it in range(n_iter):
            theta, phi, p, r = gibbs_sweep(rng, theta, phi, r, data, prm, m_ik, n_kj)

            rate = np.einsum("tk,kt->t", theta[obs_i], phi[:, obs_j])
            log_rate = np.log(np.maximum(rate, _TINY))
            loglik[it] = np.sum(obs_y * log_rate - rate - log_fact)
            if it >= burn_in:
                s = it - burn_in
                theta_s[s], phi_s[s], p_s[s], r_s[s] = theta, phi, p, r

        self.theta_samples_ = theta_s
        self.phi_samples_ = phi_s
        self.p_samples_ = p_s
        self.r_samples_ = r_s
        self.log_likelihood_ = loglik
        self.latent_ = theta_s.mean(axis=0)
        self.components_ = phi_s.mean(axis=0)
        self.n_features_in_ = J
        self._shape = (N, J)
        return self

    def predict(self) -> np.ndarray:
        """Posterior-mean Poisson rate ``E[sum_k theta_ik phi_kj]`` of every training entry.

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            The rates, imputing the unobserved entries.
        """
        check_fitted(self, "latent_")
        return np.einsum("snk,skj->nj", self.theta_samples_, self.phi_samples_) / self.theta_samples_.shape[0]

    def _sample_rates(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        S = self.theta_samples_.shape[0]
        out = np.empty((S, rows.size))
        # One pass per kept sample; each pass is vectorised over the scored entries.
        for s in range(S):
            out[s] = np.einsum("tk,kt->t", self.theta_samples_[s][rows], self.phi_samples_[s][:, cols])
        return out

    def _sample_row_probs(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        # Each phi_k sums to one over columns, so a row's total rate is sum_k theta_ik.
        row_total = self.theta_samples_.sum(axis=2)[:, rows]
        rates = self._sample_rates(rows, cols)
        J = self._shape[1]
        return np.where(row_total > 0.0, rates / np.where(row_total > 0.0, row_total, 1.0), 1.0 / J)

    def _sample_logpmf(self, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray) -> np.ndarray:
        rates = self._sample_rates(rows, cols)
        return poisson_logpmf(vals[None, :], np.log(np.maximum(rates, _TINY)))
