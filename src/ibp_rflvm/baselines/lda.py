r"""Latent Dirichlet allocation by collapsed Gibbs sampling (Griffiths and Steyvers 2004).

Rows of `Y` are documents, columns are words (vocabulary size ``W = J``), and ``y_ij`` is how
often word j occurs in document i. Each token carries a topic ``z``; with ``theta_i ~ Dir(alpha)``
and ``phi_k ~ Dir(eta)`` integrated out, a token of word w in document d moves to topic k with
probability proportional to::

    (n_dk + alpha) (n_kw + eta) / (n_k + W eta)

(counts exclude the token itself). The sampler is written in numba and draws every random number
from the estimator's one ``numpy.random.Generator``; the ``lda`` package seeds its own generator
from an integer, which would break that rule, so it is only used as a cross-check in the tests.

Unobserved entries. A NaN entry is not a zero: treating it as "no tokens of word j" would push
``p_ij`` for held-out words towards zero. With unobserved entries the document length is unknown,
so we give it the usual Poisson form (``y_ij ~ Poisson(lambda_i p_ij)``, ``p_ij =
sum_k theta_ik phi_kj``, scale-invariant prior ``p(lambda_i) ∝ 1 / lambda_i``), under which the
observed words of a row are a multinomial over its observed columns only. The unobserved counts
are kept in the state as imputed tokens and refreshed once per sweep, before the collapsed pass:

1. ``theta_i ~ Dir(alpha + n_i.)`` and ``phi_k ~ Dir(eta + n_k.)`` from the completed counts
   (observed tokens plus current imputed ones);
2. ``lambda_i ~ Gamma(n_i^obs, rate sum_{j observed in i} p_ij)``, the imputed counts integrated out;
3. imputed counts of every unobserved ``(i, j)``: ``y_ij ~ Poisson(lambda_i p_ij)``, split over
   topics in proportion to ``theta_ik phi_kj``;
4. the collapsed pass over the observed tokens, with the imputed topic counts held fixed.

Steps 1-3 draw the imputed counts from their conditional given the observed tokens' topics, and
``theta``, ``phi`` and ``lambda`` are discarded afterwards (redrawn fresh in the next step 1), so the
sampler is a valid partially collapsed Gibbs sampler. With no unobserved entries it reduces to
the plain collapsed sampler. The observed tokens are never changed.

Metrics. Kept samples give ``phi^(s) = (n_kw + eta) / (n_k + W eta)``, ``theta^(s) =
(n_dk + alpha) / (n_d + K alpha)`` (completed counts) and ``p_ij^(s) = sum_k theta_ik^(s)
phi_kj^(s)``. Perplexity uses ``mean_s p_ij^(s)`` (docs/getting_started.md). The held-out log
predictive density is the per-token one, ``sum_t y_t log(mean_s p_t^(s))``: the multinomial
coefficient of a row's held-out words depends on how the held-out entries are grouped, so it is
left out, and this LPD equals ``-log(perplexity) * sum_t y_t``.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from scipy.special import gammaln

from ..plumbing.sparse import data_matrix
from ..plumbing.validation import check_counts, check_random_state
from ._common import (
    CountScoresMixin,
    check_fitted,
    check_int,
    check_positive,
    dirichlet_rows,
    heldout_for,
    resolve_burn_in,
    split_count,
)

_TINY = 1e-300


@njit(cache=True)
def _collapsed_pass(rng, doc, word, z, ndk, nwk, nk, alpha, eta, w_eta):
    """One systematic pass over the tokens; counts are updated in place."""
    K = nk.shape[0]
    cum = np.empty(K)
    for t in range(doc.shape[0]):
        d = doc[t]
        w = word[t]
        k = z[t]
        ndk[d, k] -= 1
        nwk[w, k] -= 1
        nk[k] -= 1
        total = 0.0
        for kk in range(K):
            total += (ndk[d, kk] + alpha) * (nwk[w, kk] + eta) / (nk[kk] + w_eta)
            cum[kk] = total
        u = rng.random() * total
        k = 0
        while k < K - 1 and cum[k] <= u:
            k += 1
        z[t] = k
        ndk[d, k] += 1
        nwk[w, k] += 1
        nk[k] += 1


@njit(cache=True)
def _impute(rng, theta, phi, lam, miss_i, miss_j, miss_dk, miss_wk):
    """Step 3: imputed topic counts for every unobserved entry, written into
    `miss_dk` (N x K) and `miss_wk` (J x K)."""
    K = theta.shape[1]
    miss_dk[:, :] = 0
    miss_wk[:, :] = 0
    prob = np.empty(K)
    out = np.empty(K, dtype=np.int64)
    for t in range(miss_i.shape[0]):
        i = miss_i[t]
        j = miss_j[t]
        p = 0.0
        for k in range(K):
            prob[k] = theta[i, k] * phi[k, j]
            p += prob[k]
        y = rng.poisson(lam[i] * p)
        if y == 0:
            continue
        split_count(rng, y, prob, out)
        for k in range(K):
            miss_dk[i, k] += out[k]
            miss_wk[j, k] += out[k]



def collapsed_log_joint(ndk: np.ndarray, nkw: np.ndarray, alpha: float, eta: float) -> float:
    """``log p(w, z)`` with theta and phi integrated out (the quantity the ``lda`` package
    reports as ``loglikelihood()``); `ndk` is ``N x K``, `nkw` is ``K x W``."""
    K, W = nkw.shape
    nk = nkw.sum(axis=1)
    nd = ndk.sum(axis=1)
    words = K * gammaln(W * eta) - np.sum(gammaln(nk + W * eta)) + np.sum(gammaln(nkw + eta) - gammaln(eta))
    docs = ndk.shape[0] * gammaln(K * alpha) - np.sum(gammaln(nd + K * alpha))
    docs += np.sum(gammaln(ndk + alpha) - gammaln(alpha))
    return float(words + docs)


class LDA(CountScoresMixin):
    """Latent Dirichlet allocation, collapsed Gibbs sampling, NaN-aware.

    The paper's topic-model baseline (Blei, Ng and Jordan 2003; Griffiths and Steyvers 2004).

    Parameters
    ----------
    n_components : int, default=10
        Number of topics ``K``.
    n_iter : int, default=100
        Gibbs sweeps, burn-in included.
    burn_in : int or None, default=None
        Sweeps discarded (None: the first half); every later sweep is kept.
    alpha : float, default=0.1
        Symmetric Dirichlet concentration of the document-topic distributions.
    eta : float, default=0.01
        Symmetric Dirichlet concentration of the topic-word distributions.
    random_state : int, numpy.random.Generator, numpy.random.SeedSequence or None, default=None
        Seed; one Generator drives the whole chain.

    Attributes
    ----------
    theta_samples_ : ndarray of shape (n_kept, n_samples, n_components)
        Document-topic proportions of every kept sweep.
    phi_samples_ : ndarray of shape (n_kept, n_components, n_features)
        Topic-word distributions of every kept sweep.
    latent_ : ndarray of shape (n_samples, n_components)
        Posterior mean of ``theta``.
    components_ : ndarray of shape (n_components, n_features)
        Posterior mean of ``phi``.
    topic_assignments_ : ndarray of int
        The final topic of every observed token.
    log_likelihood_ : ndarray of shape (n_iter,)
        Collapsed ``log p(w, z)`` of the completed token set after every sweep (burn-in
        included).
    """

    def __init__(
        self,
        n_components: int = 10,
        n_iter: int = 100,
        burn_in: int | None = None,
        alpha: float = 0.1,
        eta: float = 0.01,
        random_state=None,
    ) -> None:
        self.n_components = n_components
        self.n_iter = n_iter
        self.burn_in = burn_in
        self.alpha = alpha
        self.eta = eta
        self.random_state = random_state

    def fit(self, Y, missing_mask=None) -> LDA:
        """Run the collapsed Gibbs sampler on `Y`.

        Parameters
        ----------
        Y : array-like or scipy.sparse matrix of shape (n_samples, n_features)
            Word counts, one document per row; NaN marks unobserved entries.
        missing_mask : array-like of bool of shape (n_samples, n_features), default=None
            ``True`` marks an unobserved entry (the orientation of ``np.isnan(Y)``), as in the
            estimators' ``fit``; a sparse `Y`'s zeros are observed.

        Returns
        -------
        LDA
            The fitted estimator.
        """
        Y = data_matrix(Y, missing_mask)
        check_counts(Y, what="LDA")
        K = check_int("n_components", self.n_components, 1)
        n_iter, burn_in = resolve_burn_in(self.n_iter, self.burn_in)
        alpha = check_positive("alpha", self.alpha)
        eta = check_positive("eta", self.eta)
        rng = check_random_state(self.random_state)
        N, J = Y.shape

        observed = ~np.isnan(Y)
        Y0 = np.where(observed, Y, 0.0).astype(np.int64)
        if Y0.sum() == 0:
            raise ValueError("Y has no observed tokens (every observed count is zero); LDA needs words")
        rows, cols = np.nonzero(Y0)
        reps = Y0[rows, cols]
        doc = np.repeat(rows, reps).astype(np.int64)
        word = np.repeat(cols, reps).astype(np.int64)
        z = rng.integers(0, K, size=doc.size).astype(np.int64)
        ndk = np.zeros((N, K), dtype=np.int64)
        nwk = np.zeros((J, K), dtype=np.int64)
        np.add.at(ndk, (doc, z), 1)
        np.add.at(nwk, (word, z), 1)
        nk = nwk.sum(axis=0)

        miss_i, miss_j = np.nonzero(~observed)
        has_missing = miss_i.size > 0
        n_obs_tokens = Y0.sum(axis=1).astype(np.float64)
        miss_dk = np.zeros((N, K), dtype=np.int64)
        miss_wk = np.zeros((J, K), dtype=np.int64)

        S = n_iter - burn_in
        theta_s = np.empty((S, N, K))
        phi_s = np.empty((S, K, J))
        loglik = np.empty(n_iter)
        w_eta = J * eta

        for it in range(n_iter):
            if has_missing:
                theta = dirichlet_rows(rng, ndk + alpha)
                phi = dirichlet_rows(rng, (nwk + eta).T)
                ndk -= miss_dk
                nwk -= miss_wk
                # einsum rather than BLAS matmul: its summation order never depends on threads.
                p_obs = np.einsum("ik,kj,ij->i", theta, phi, observed)
                lam = rng.gamma(n_obs_tokens, 1.0) / p_obs
                _impute(rng, theta, phi, lam, miss_i, miss_j, miss_dk, miss_wk)
                ndk += miss_dk
                nwk += miss_wk
                nk = nwk.sum(axis=0)
            _collapsed_pass(rng, doc, word, z, ndk, nwk, nk, alpha, eta, w_eta)
            loglik[it] = collapsed_log_joint(ndk, nwk.T, alpha, eta)
            if it >= burn_in:
                s = it - burn_in
                theta_s[s] = (ndk + alpha) / (ndk.sum(axis=1, keepdims=True) + K * alpha)
                phi_s[s] = ((nwk + eta) / (nk + w_eta)).T

        self.theta_samples_ = theta_s
        self.phi_samples_ = phi_s
        self.latent_ = theta_s.mean(axis=0)
        self.components_ = phi_s.mean(axis=0)
        self.topic_assignments_ = z
        self.log_likelihood_ = loglik
        self.n_features_in_ = J
        self._shape = (N, J)
        self._observed = observed
        self._n_obs_tokens = n_obs_tokens
        return self

    def predict_proba(self) -> np.ndarray:
        """Posterior mean of each document's distribution over the words.

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            ``p_ij``; each row sums to one.
        """
        check_fitted(self, "latent_")
        return np.einsum("snk,skj->nj", self.theta_samples_, self.phi_samples_) / self.theta_samples_.shape[0]

    def predict(self) -> np.ndarray:
        """Posterior-mean counts ``lambda_i p_ij`` of every training entry.

        LDA does not model document length, so each row's total is estimated from its observed
        words: ``lambda_i = n_i^obs / sum_{j observed} p_ij`` (the observed count over the share
        of probability on the observed columns), which is ``n_i`` itself for a complete row.

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            The expected counts, imputing the unobserved entries.
        """
        P = self.predict_proba()
        share = np.where(self._observed, P, 0.0).sum(axis=1)
        return P * (self._n_obs_tokens / share)[:, None]

    def _sample_row_probs(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        S = self.theta_samples_.shape[0]
        out = np.empty((S, rows.size))
        # One pass per kept sample; each pass is vectorised over the scored entries.
        for s in range(S):
            out[s] = np.einsum("tk,kt->t", self.theta_samples_[s][rows], self.phi_samples_[s][:, cols])
        return out

    def log_predictive_density(self, Y_heldout, missing_mask=None) -> float:
        """Per-token held-out log predictive density.

        Parameters
        ----------
        Y_heldout : array-like or scipy.sparse matrix of shape (n_samples, n_features)
            The held-out counts of the training rows, in the training shape; NaN where
            nothing is scored.
        missing_mask : array-like of bool of shape (n_samples, n_features), default=None
            ``True`` marks an entry not to score, as in the estimators' scoring methods (for
            example ``holdout_mask(..., return_mask=True).test_missing``). A sparse
            `Y_heldout` without a mask scores every entry, zeros included.

        Returns
        -------
        float
            ``sum_t y_t log(mean_s p_t^(s))``: the log probability of the held-out tokens as
            categorical draws from each document's word distribution (LDA does not model
            document length; :mod:`ibp_rflvm.baselines.lda`).
        """
        check_fitted(self, "latent_")
        rows, cols, vals = heldout_for(Y_heldout, self._shape, counts=True, missing_mask=missing_mask)
        p = self._sample_row_probs(rows, cols).mean(axis=0)
        return float(np.sum(vals * np.log(np.maximum(p, _TINY))))
