"""Held-out scoring and new rows for the fitted estimators of :mod:`ibp_rflvm.estimator`.

Held-out entries of the training rows are scored by every kept posterior sample of every chain
(pointwise log densities, the held-out LPD and its mean per entry, and for counts the
perplexity), each sample weighted by its chain's weight (``chain_weights_``); new rows get
latent positions sampled against the final posterior sample (``transform``).
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit
from sklearn.base import TransformerMixin

from ._sparse import data_matrix, heldout_matrix
from ._validation import as_data_matrix, check_random_state
from .evaluation.metrics import heldout_entries, lpd_from_samples
from .evaluation.metrics import perplexity as perplexity_metric
from .features import feature_map
from .likelihoods.offsets import for_new_rows
from .mcmc.record import Sample


class PredictiveMixin(TransformerMixin):
    """Held-out densities, perplexity and ``transform`` of a fitted estimator.

    The estimator provides ``_check_fitted``, its ``likelihood`` parameter and the fitted
    ``spec_``, ``state_``, ``_samples`` with their ``_sample_weights``, ``_data``,
    ``n_features_in_`` and ``n_samples_fit_``.
    ``TransformerMixin`` is a base here, not only of the estimator, because scikit-learn wraps
    ``transform`` for ``set_output`` only in the class whose body defines it.
    """

    def _heldout(self, Y_heldout, missing_mask=None):
        self._check_fitted()
        Yh = as_data_matrix(
            heldout_matrix(Y_heldout, missing_mask), name="Y_heldout", min_rows=1,
            allow_empty=("rows", "columns"),
        )
        if Yh.ndim == 2 and Yh.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {Yh.shape[1]} features, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input"
            )
        expected = (self.n_samples_fit_, self.n_features_in_)
        if Yh.shape != expected:
            raise ValueError(f"Y_heldout must have the training shape {expected}; got {Yh.shape}")
        rows, cols, vals = heldout_entries(Yh)
        self.spec_.likelihood.validate(np.where(np.isnan(Yh), 0.0, Yh))
        unique_rows, row_pos = np.unique(rows, return_inverse=True)
        return unique_rows, row_pos, cols, vals

    def _sample_psi(self, smp: dict, unique_rows: np.ndarray) -> np.ndarray:
        Phi = feature_map(smp.H[unique_rows], smp.W, self.spec_.bias)
        return Phi @ smp.params["beta"]

    def pointwise_log_predictive(self, Y_heldout, missing_mask=None) -> np.ndarray:
        """``S x n_test`` log densities ``log p(y_t | theta_s)`` of the held-out entries.

        `Y_heldout` has the training shape; the entries scored are those not NaN and not
        ``True`` in `missing_mask` (as in :meth:`fit`, ``True`` = not there to score). A sparse
        `Y_heldout` without a mask scores every entry, zeros included: pass the mask of the
        entries that were not held out (see :func:`ibp_rflvm.holdout_mask`).
        """
        unique_rows, row_pos, cols, vals = self._heldout(Y_heldout, missing_mask)
        return pointwise_logpdf(self._samples, self.spec_, self._data.prep, unique_rows, row_pos, cols, vals)

    def perplexity(self, Y_heldout, missing_mask=None) -> float:
        """Held-out perplexity ``exp(-sum y log p / sum y)`` with ``p_ij`` the posterior mean of
        each row's predicted share ``mu_ij / sum_j' mu_ij'`` (SPEC section 3). Held-out entries
        as in :meth:`pointwise_log_predictive`."""
        self._check_fitted()
        if self.spec_.likelihood.kind != "counts":
            raise ValueError(
                f"perplexity is defined for count data; this model uses the {self.likelihood!r} "
                "likelihood (use score or log_predictive_density)"
            )
        return perplexity_metric(*self._heldout_shares(Y_heldout, missing_mask))

    def _heldout_shares(self, Y_heldout, missing_mask=None) -> tuple[np.ndarray, np.ndarray]:
        """The held-out counts and their predicted shares ``p_ij``, entry by entry in the order
        of :meth:`pointwise_log_predictive` (for :meth:`perplexity` and paired comparisons)."""
        unique_rows, row_pos, cols, vals = self._heldout(Y_heldout, missing_mask)
        lik = self.spec_.likelihood
        rows_kw = _rows_kw(lik, unique_rows, self._data.prep)
        p = np.zeros(vals.size)
        for smp, w in zip(self._samples, self._sample_weights, strict=True):
            if w > 0:
                mu = lik.mean(self._sample_psi(smp, unique_rows), smp.params, **rows_kw)
                p += w * (mu[row_pos, cols] / mu.sum(axis=1)[row_pos])
        return vals, p

    def transform(
        self, Y_new, n_sweeps: int = 60, burn_in: int = 20, random_state=None, missing_mask=None,
        size_factors=None,
    ) -> np.ndarray:
        """Latent positions ``X * Z`` of new rows, as their posterior mean.

        `Y_new` is dense (NaN allowed) or ``scipy.sparse``; `missing_mask` as in :meth:`fit`.
        See :meth:`_new_rows` for how they are sampled. With a count likelihood fitted with
        ``size_factors="total"`` the new rows' factors come from their own counts; one fitted
        with an array needs the new rows' `size_factors` here.
        """
        return self._new_rows(Y_new, n_sweeps, burn_in, random_state, missing_mask, size_factors)[0]

    def _new_rows(
        self, Y_new, n_sweeps: int = 60, burn_in: int = 20, random_state=None, missing_mask=None,
        size_factors=None,
    ):
        """Posterior means of new rows' latent positions and of their reconstruction.

        The new rows' ``x`` and ``z`` are sampled (elliptical slice sampling for ``x``, Gibbs
        for ``z`` under its stick prior ``Bern(pi_d)``) against the final posterior sample's
        frequencies, weights and sticks, for `n_sweeps` sweeps, and averaged after `burn_in`.
        The final sample fixes the coordinate system: columns are those of ``latent_``. Rows are
        independent given that sample (:func:`sample_new_rows`).
        """
        self._check_fitted()
        Yn, lik, prep = self._new_data(Y_new, missing_mask, size_factors)
        if not 0 <= burn_in < n_sweeps:
            raise ValueError(f"burn_in must be in [0, n_sweeps); got {burn_in} with n_sweeps={n_sweeps}")
        state = self.state_
        sample = Sample(state.H, state.W, state.params, state.pi)
        rng = check_random_state(0 if random_state is None else random_state)
        H_mean, recon, _ = sample_new_rows(
            rng, Yn, lik, prep, sample, self.spec_.ibp, self.spec_.bias, n_sweeps, burn_in
        )
        usage = np.count_nonzero(state.H, axis=0)
        order = np.argsort(-usage, kind="stable")
        return H_mean[:, order[usage[order] > 0]], recon

    def _new_data(self, Y_new, missing_mask=None, size_factors=None):
        """New rows checked against the fit, with the likelihood and constants that score them."""
        Yn = data_matrix(Y_new, missing_mask, name="Y_new", min_rows=1, allow_empty=("columns",))
        if Yn.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {Yn.shape[1]} features, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input"
            )
        lik = for_new_rows(self.spec_.likelihood, size_factors)
        lik.validate(Yn)
        return Yn, lik, lik.prepare(Yn)

    def log_predictive_density(self, Y_heldout, missing_mask=None) -> float:
        """Held-out LPD: sum over the held-out entries of ``log (1/S) sum_s p(y_ij | theta_s)``
        (entries as in :meth:`pointwise_log_predictive`)."""
        logp = self.pointwise_log_predictive(Y_heldout, missing_mask)
        return lpd_from_samples(logp, self._sample_weights)

    def score(self, Y_heldout, y=None, missing_mask=None) -> float:
        """Mean held-out log predictive density per scored entry (entries as in
        :meth:`pointwise_log_predictive`)."""
        logp = self.pointwise_log_predictive(Y_heldout, missing_mask)
        return lpd_from_samples(logp, self._sample_weights) / logp.shape[1]


def pointwise_logpdf(
    samples, spec, prep, unique_rows: np.ndarray, row_pos: np.ndarray, cols: np.ndarray, vals: np.ndarray
) -> np.ndarray:
    """``S x n`` log densities ``log p(y_t | theta_s)`` of entries `vals` of training rows
    ``unique_rows[row_pos]`` and columns `cols`, one row per sample. For the collapsed Gaussian
    each sample carries the ``(beta_j, sigma_j^2)`` drawn given its features (SPEC 2.1), so an
    entry's density is a plain normal."""
    lik = spec.likelihood
    rows_kw = _rows_kw(lik, unique_rows)
    out = np.empty((len(samples), vals.size))
    for s, smp in enumerate(samples):
        psi_u = feature_map(smp.H[unique_rows], smp.W, spec.bias) @ smp.params["beta"]
        out[s] = lik.logpdf_entries(vals, psi_u, row_pos, cols, smp.params, prep, **rows_kw)
    return out


def _rows_kw(lik, unique_rows: np.ndarray, prep=None) -> dict:
    """The training-row index of each row of ``psi``, for likelihoods with per-entry constants
    (binomial trials), and with `prep` per-row ones (size factors); the collapsed Gaussian
    takes neither."""
    if lik.collapsed:
        return {}
    return {"rows": unique_rows} if prep is None else {"rows": unique_rows, "prep": prep}


def sample_new_rows(
    rng: np.random.Generator, Yn: np.ndarray, lik, prep, sample: dict, ibp: bool, bias: bool,
    n_sweeps: int, burn_in: int, block=None,
):
    """Posterior means of new rows' latent positions ``X * Z`` (in `sample`'s columns), of their
    reconstruction and, when given, of ``block(H)`` (a per-row quantity such as the embedding's).

    The rows' ``x`` and ``z`` are sampled against one posterior `sample` (its frequencies ``W``,
    likelihood ``params`` and sticks ``pi``), which stays fixed: elliptical slice sampling for
    ``x``, Gibbs for ``z`` under its stick prior ``Bern(pi_d)`` (the dense model has ``Z = 1``),
    for `n_sweeps` sweeps, averaged after `burn_in`. Rows are independent given the sample.
    """
    from .samplers.ess import elliptical_slice

    W, params = sample.W, sample.params
    beta = params["beta"]
    pi = np.clip(sample.pi, 1e-12, 1.0 - 1e-12) if ibp else np.full(W.shape[1], 0.5)
    n, K = Yn.shape[0], W.shape[1]
    rows_all = np.arange(n)
    X = rng.standard_normal((n, K))
    Z = (rng.random((n, K)) < pi).astype(np.int8) if ibp else np.ones((n, K), np.int8)

    def loglik(H_rows, rows):
        return lik.loglik_rows(feature_map(H_rows, W, bias) @ beta, rows, params, prep)

    ll = loglik(X * Z, rows_all)
    total = np.zeros((n, K))
    recon = np.zeros(Yn.shape)
    block_total = None
    log_odds_prior = np.log(pi) - np.log1p(-pi)
    for t in range(n_sweeps):
        if ibp:
            for d in range(K):
                H_alt = X * Z
                H_alt[:, d] = X[:, d] * (1 - Z[:, d])
                ll_alt = loglik(H_alt, rows_all)
                delta = np.where(Z[:, d] == 1, ll - ll_alt, ll_alt - ll)
                # expit, not 1/(1+exp(-t)): large counts give |t| in the thousands.
                p_one = expit(log_odds_prior[d] + delta)
                z_new = (rng.random(n) < p_one).astype(np.int8)
                ll = np.where(z_new != Z[:, d], ll_alt, ll)
                Z[:, d] = z_new
        X, ll, _, _ = elliptical_slice(rng, X, lambda prop, rows: loglik(prop * Z[rows], rows), ll)
        if t >= burn_in:
            H = X * Z
            total += H
            recon += lik.mean(feature_map(H, W, bias) @ beta, params, **_rows_kw(lik, rows_all, prep))
            if block is not None:
                value = block(H)
                block_total = value if block_total is None else block_total + value
    kept = n_sweeps - burn_in
    return total / kept, recon / kept, None if block_total is None else block_total / kept
