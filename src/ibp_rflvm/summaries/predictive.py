"""Held-out scoring and new rows: functions of a fit's :class:`~ibp_rflvm.summaries.posterior.Posterior`.

Held-out entries of the training rows are scored by every kept posterior sample of every chain
(pointwise log densities, the held-out LPD and its mean per entry, and for counts the
perplexity), each sample weighted by its chain's weight; new rows get latent positions sampled
against the best chain's final sample (``transform``). :class:`PredictiveMixin` gives the
estimators these as methods of their ``posterior_``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit
from sklearn.base import TransformerMixin

from ..features import feature_map
from ..likelihoods.offsets import for_new_rows
from ..mcmc.record import Sample
from ..plumbing.sparse import data_matrix, heldout_matrix
from ..plumbing.validation import as_data_matrix, check_random_state
from ..samplers.ess import elliptical_slice
from .posterior import Posterior
from .scoring import heldout_entries, lpd_from_samples, pointwise_logpdf, rows_kw
from .scoring import perplexity as perplexity_metric

#: How the messages about a wrong number of columns name the fit when no estimator is given.
_FIT = "the fit"


def _check_width(posterior: Posterior, width: int, owner: str) -> None:
    n_features = posterior.shape[1]
    if width != n_features:
        # scikit-learn's wording, which its estimator checks look for.
        raise ValueError(f"X has {width} features, but {owner} is expecting {n_features} features as input")


def heldout(posterior: Posterior, Y_heldout, missing_mask=None, owner: str = _FIT):
    """The entries of `Y_heldout` (the training shape; NaN or ``True`` in `missing_mask` = not
    scored) as ``(unique_rows, row_pos, cols, vals)``, checked against the fit."""
    Yh = as_data_matrix(
        heldout_matrix(Y_heldout, missing_mask), name="Y_heldout", min_rows=1,
        allow_empty=("rows", "columns"),
    )  # fmt: skip
    if Yh.ndim == 2:
        _check_width(posterior, Yh.shape[1], owner)
    if Yh.shape != posterior.shape:
        raise ValueError(f"Y_heldout must have the training shape {posterior.shape}; got {Yh.shape}")
    rows, cols, vals = heldout_entries(Yh)
    posterior.spec.likelihood.validate(np.where(np.isnan(Yh), 0.0, Yh))
    unique_rows, row_pos = np.unique(rows, return_inverse=True)
    return unique_rows, row_pos, cols, vals


def pointwise_log_predictive(
    posterior: Posterior, Y_heldout, missing_mask=None, owner: str = _FIT
) -> np.ndarray:
    """``S x n_test`` log densities ``log p(y_t | theta_s)`` of the held-out entries, one row per
    kept sample (:attr:`Posterior.samples`, chains in order)."""
    unique_rows, row_pos, cols, vals = heldout(posterior, Y_heldout, missing_mask, owner)
    spec, prep = posterior.spec, posterior.data.prep
    return pointwise_logpdf(posterior.samples, spec, prep, unique_rows, row_pos, cols, vals)


def log_predictive_density(posterior: Posterior, Y_heldout, missing_mask=None, owner: str = _FIT) -> float:
    """Held-out LPD: sum over the held-out entries of the log of the chains' weighted mixture of
    ``p(y_ij | theta_s)`` over the kept samples."""
    logp = pointwise_log_predictive(posterior, Y_heldout, missing_mask, owner)
    return lpd_from_samples(logp, posterior.sample_weights)


def heldout_shares(posterior: Posterior, Y_heldout, missing_mask=None, owner: str = _FIT):
    """The held-out counts and their predicted shares ``p_ij`` (the posterior mean of each row's
    ``mu_ij / sum_j' mu_ij'``), entry by entry in the order of :func:`pointwise_log_predictive`."""
    unique_rows, row_pos, cols, vals = heldout(posterior, Y_heldout, missing_mask, owner)
    lik = posterior.spec.likelihood
    kw = rows_kw(lik, unique_rows, posterior.data.prep)
    p = np.zeros(vals.size)
    for smp, w in zip(posterior.samples, posterior.sample_weights, strict=True):
        if w > 0:
            psi = feature_map(smp.H[unique_rows], smp.W, posterior.spec.bias) @ smp.params.beta
            mu = lik.mean(psi, smp.params, **kw)
            p += w * (mu[row_pos, cols] / mu.sum(axis=1)[row_pos])
    return vals, p


def perplexity(posterior: Posterior, Y_heldout, missing_mask=None, owner: str = _FIT) -> float:
    """Held-out perplexity ``exp(-sum y log p / sum y)`` with ``p`` of :func:`heldout_shares`
    (:doc:`/getting_started`, *Held-out scores*); count likelihoods only."""
    lik = posterior.spec.likelihood
    if lik.kind != "counts":
        raise ValueError(
            f"perplexity is defined for count data; this model uses the {type(lik).__name__} "
            "(use score or log_predictive_density)"
        )
    return perplexity_metric(*heldout_shares(posterior, Y_heldout, missing_mask, owner))


def new_data(posterior: Posterior, Y_new, missing_mask=None, size_factors=None, owner: str = _FIT):
    """New rows checked against the fit, with the likelihood and constants that score them."""
    Yn = data_matrix(Y_new, missing_mask, name="Y_new", min_rows=1, allow_empty=("columns",))
    _check_width(posterior, Yn.shape[1], owner)
    lik = for_new_rows(posterior.spec.likelihood, size_factors)
    lik.validate(Yn)
    return Yn, lik, lik.prepare(Yn)


def new_rows(
    posterior: Posterior, Y_new, n_sweeps: int = 60, burn_in: int = 20, random_state=None,
    missing_mask=None, size_factors=None, owner: str = _FIT,
) -> tuple[np.ndarray, np.ndarray]:
    """Posterior means of new rows' latent positions and of their reconstruction.

    The new rows' ``x`` and ``z`` are sampled (elliptical slice sampling for ``x``, the prior's
    moves for ``z`` given its weights, for the IBP Gibbs under ``Bern(pi_d)``) against the best
    chain's final sample (its frequencies, weights and the prior's weights), for `n_sweeps`
    sweeps, and averaged after `burn_in`. That
    sample fixes the coordinate system: columns are those of ``latent_``. Rows are independent
    given it (:func:`sample_new_rows`).
    """
    Yn, lik, prep = new_data(posterior, Y_new, missing_mask, size_factors, owner)
    if not 0 <= burn_in < n_sweeps:
        raise ValueError(f"burn_in must be in [0, n_sweeps); got {burn_in} with n_sweeps={n_sweeps}")
    state, spec = posterior.state, posterior.spec
    rng = check_random_state(0 if random_state is None else random_state)
    prior = spec.z_prior.at(state.z_state) if spec.ibp else None
    H_mean, recon, _ = sample_new_rows(rng, Yn, lik, prep, state, prior, spec.bias, n_sweeps, burn_in)
    usage = np.count_nonzero(state.H, axis=0)
    order = np.argsort(-usage, kind="stable")
    return H_mean[:, order[usage[order] > 0]], recon


class PredictiveMixin(TransformerMixin):
    """Held-out densities, perplexity and ``transform`` of a fitted estimator: the functions
    above applied to its ``posterior_``.

    ``TransformerMixin`` is a base here, not only of the estimator, because scikit-learn wraps
    ``transform`` for ``set_output`` only in the class whose body defines it.
    """

    def pointwise_log_predictive(self, Y_heldout, missing_mask=None) -> np.ndarray:
        """Log density of each held-out entry under each kept sample.

        Parameters
        ----------
        Y_heldout : array-like or scipy.sparse matrix of shape (n_samples, n_features)
            The held-out entries of the training rows, in the training shape; the entries
            scored are those not NaN and not ``True`` in `missing_mask`. A sparse `Y_heldout`
            without a mask scores every entry, zeros included: pass the mask of the entries
            that were not held out (see :func:`ibp_rflvm.holdout_mask`).
        missing_mask : array-like of bool of shape (n_samples, n_features), default=None
            ``True`` marks an entry not to score (as in :meth:`fit`, ``True`` = not there).

        Returns
        -------
        ndarray of shape (n_kept_samples, n_heldout)
            ``log p(y_t | theta_s)``, one row per kept sample of every chain (chains in order),
            one column per scored entry (row-major order); the matrix behind :meth:`score`,
            :meth:`log_predictive_density` and ArviZ's ``log_likelihood`` group.
        """
        return pointwise_log_predictive(self._posterior(), Y_heldout, missing_mask, type(self).__name__)

    def perplexity(self, Y_heldout, missing_mask=None) -> float:
        """Held-out perplexity of count data (lower is better).

        Parameters
        ----------
        Y_heldout : array-like or scipy.sparse matrix of shape (n_samples, n_features)
            The held-out entries of the training rows, in the training shape; the entries
            scored are those not NaN and not ``True`` in `missing_mask`. A sparse `Y_heldout`
            without a mask scores every entry, zeros included: pass the mask of the entries
            that were not held out (see :func:`ibp_rflvm.holdout_mask`).
        missing_mask : array-like of bool of shape (n_samples, n_features), default=None
            ``True`` marks an entry not to score (as in :meth:`fit`, ``True`` = not there).

        Returns
        -------
        float
            ``exp(-sum y log p / sum y)`` over the held-out counts ``y``, with ``p_ij`` the
            posterior mean of row ``i``'s predicted share ``mu_ij / sum_j' mu_ij'``
            (:doc:`/getting_started`, *Held-out scores*).

        Raises
        ------
        ValueError
            For a likelihood that is not for counts (use :meth:`score`).
        """
        post = self._posterior()
        if post.spec.likelihood.kind != "counts":
            raise ValueError(
                f"perplexity is defined for count data; this model uses the {self.likelihood!r} "
                "likelihood (use score or log_predictive_density)"
            )
        return perplexity(post, Y_heldout, missing_mask, type(self).__name__)

    def transform(
        self, Y_new, n_sweeps: int = 60, burn_in: int = 20, random_state=None, missing_mask=None,
        size_factors=None,
    ) -> np.ndarray:
        """Latent positions ``X * Z`` of new rows, as their posterior mean.

        The new rows' ``x`` and ``z`` are sampled against the best chain's final sample (its
        frequencies, weights and sticks), which fixes the coordinate system: the columns are
        those of ``latent_``. For coordinates that summarise every kept sample use
        :meth:`embed`.

        Parameters
        ----------
        Y_new : array-like or scipy.sparse matrix of shape (n_new, n_features)
            New rows; NaN (dense) or `missing_mask` marks unobserved entries.
        n_sweeps : int, default=60
            Sweeps of the new rows' sampler (elliptical slice sampling for ``x``, Gibbs for
            ``z``).
        burn_in : int, default=20
            Sweeps discarded before averaging; must be smaller than `n_sweeps`.
        random_state : int, numpy.random.Generator or None, default=None
            Seed of the new rows' sampler (None: 0, so that the result is repeatable).
        missing_mask : array-like of bool of shape (n_new, n_features), default=None
            ``True`` marks an unobserved entry, as in :meth:`fit`.
        size_factors : array-like of shape (n_new,), default=None
            The new rows' size factors, for a count likelihood fitted with an array of them;
            one fitted with ``size_factors="total"`` takes them from the new rows' own counts.

        Returns
        -------
        ndarray of shape (n_new, K+)
            The posterior mean of each new row's latent position.

        Raises
        ------
        ValueError
            New rows with another number of columns than the training data, or data the
            likelihood cannot take.
        """
        post = self._posterior()
        name = type(self).__name__
        return new_rows(post, Y_new, n_sweeps, burn_in, random_state, missing_mask, size_factors, name)[0]

    def log_predictive_density(self, Y_heldout, missing_mask=None) -> float:
        """Held-out log predictive density, summed over the held-out entries.

        Parameters
        ----------
        Y_heldout : array-like or scipy.sparse matrix of shape (n_samples, n_features)
            The held-out entries of the training rows, in the training shape; the entries
            scored are those not NaN and not ``True`` in `missing_mask`. A sparse `Y_heldout`
            without a mask scores every entry, zeros included: pass the mask of the entries
            that were not held out (see :func:`ibp_rflvm.holdout_mask`).
        missing_mask : array-like of bool of shape (n_samples, n_features), default=None
            ``True`` marks an entry not to score (as in :meth:`fit`, ``True`` = not there).

        Returns
        -------
        float
            ``sum_t log sum_s w_s p(y_t | theta_s)``: each entry's density averaged over the
            kept samples, sample ``s`` weighted by its chain's weight spread over the chain's
            samples (``1/S`` each for one chain).
        """
        return log_predictive_density(self._posterior(), Y_heldout, missing_mask, type(self).__name__)

    def score(self, Y_heldout, y=None, missing_mask=None) -> float:
        """Mean held-out log predictive density per scored entry (higher is better).

        Parameters
        ----------
        Y_heldout : array-like or scipy.sparse matrix of shape (n_samples, n_features)
            The held-out entries of the training rows, in the training shape; the entries
            scored are those not NaN and not ``True`` in `missing_mask`. A sparse `Y_heldout`
            without a mask scores every entry, zeros included: pass the mask of the entries
            that were not held out (see :func:`ibp_rflvm.holdout_mask`).
        y : None
            Ignored; there for scikit-learn's API.
        missing_mask : array-like of bool of shape (n_samples, n_features), default=None
            ``True`` marks an entry not to score (as in :meth:`fit`, ``True`` = not there).

        Returns
        -------
        float
            :meth:`log_predictive_density` divided by the number of scored entries.
        """
        logp = self.pointwise_log_predictive(Y_heldout, missing_mask)
        return lpd_from_samples(logp, self._posterior().sample_weights) / logp.shape[1]


def sample_new_rows(
    rng: np.random.Generator, Yn: np.ndarray, lik, prep, sample: Sample, prior, bias: bool,
    n_sweeps: int, burn_in: int, block=None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Posterior means of new rows' latent positions ``X * Z`` (in `sample`'s columns), of their
    reconstruction and, when given, of ``block(H)`` (a per-row quantity such as the embedding's).

    The rows' ``x`` and ``z`` are sampled against one posterior `sample` (its frequencies ``W``,
    likelihood ``params`` and the prior's weights ``pi``: the IBP's sticks, the gamma-Poisson's
    rates), which stays fixed: elliptical slice sampling for ``x``, and for each ``z_id`` the
    proposal of `prior` (:class:`ibp_rflvm.priors.FeaturePrior`; the IBP's flip) accepted with
    Barker's probability ``r / (1 + r)``, ``r`` the prior ratio given the weights times the
    likelihood ratio, which for a flip is the Gibbs conditional under ``Bern(pi_d)``. `prior`
    None is the dense model (``Z = 1``). `n_sweeps` sweeps, averaged after `burn_in`. Rows are
    independent given the sample.
    """
    W, params = sample.W, sample.params
    beta = params.beta
    n, K = Yn.shape[0], W.shape[1]
    rows_all = np.arange(n)
    X = rng.standard_normal((n, K))
    Z = prior.new_rows(rng, n, sample.pi) if prior is not None else np.ones((n, K), np.int8)

    def loglik(H_rows, rows):
        return lik.loglik_rows(feature_map(H_rows, W, bias) @ beta, rows, params, prep)

    ll = loglik(X * Z, rows_all)
    total = np.zeros((n, K))
    recon = np.zeros(Yn.shape)
    block_total = None
    for t in range(n_sweeps):
        if prior is not None:
            for d in range(K):
                z_prop = prior.propose_column(rng, Z[:, d])
                H_alt = X * Z
                H_alt[:, d] = X[:, d] * z_prop
                ll_alt = loglik(H_alt, rows_all)
                log_r = prior.row_log_ratio(Z[:, d], z_prop, sample.pi[d]) + ll_alt - ll
                # expit, not 1/(1+exp(-t)): large counts give |t| in the thousands.
                move = rng.random(n) < expit(log_r)
                ll = np.where(move, ll_alt, ll)
                Z[:, d] = np.where(move, z_prop, Z[:, d])
        X, ll, _, _ = elliptical_slice(rng, X, lambda prop, rows: loglik(prop * Z[rows], rows), ll)
        if t >= burn_in:
            H = X * Z
            total += H
            recon += lik.mean(feature_map(H, W, bias) @ beta, params, **rows_kw(lik, rows_all, prep))
            if block is not None:
                value = block(H)
                block_total = value if block_total is None else block_total + value
    kept = n_sweeps - burn_in
    return total / kept, recon / kept, None if block_total is None else block_total / kept
