"""IBP linear-Gaussian latent factor model (Knowles and Ghahramani 2011): the estimator.

:class:`IBPLinearFactorModel` checks its settings, runs the chain of
:mod:`ibp_rflvm.baselines.ibp_lfm_gibbs` (the model and its sweep are described there) and scores
held-out entries with the shared metrics of :mod:`ibp_rflvm.summaries.scoring`.
"""

from __future__ import annotations

import numbers

import numpy as np

from ..plumbing.sparse import data_matrix
from ..plumbing.validation import check_random_state
from ..summaries.scoring import gaussian_logpdf, lpd_from_samples
from ._common import check_fitted, check_int, check_positive, heldout_for, resolve_burn_in
from .ibp_lfm_gibbs import LFMParams, init_state, observed_loglik, sweep

_INITS = ("ica", "pca", "random")


def _check_pair(name: str, value) -> tuple[float, float]:
    try:
        a, b = value
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a pair (shape, rate) of positive numbers; got {value!r}") from exc
    return check_positive(f"{name}[0]", a), check_positive(f"{name}[1]", b)


class IBPLinearFactorModel:
    """IBP linear-Gaussian latent factor model (Knowles and Ghahramani 2011), Gibbs sampled.

    The paper's linear IBP baseline, ``y_i = (x_i * z_i) A + noise``; NaN marks unobserved
    entries.

    Parameters
    ----------
    n_iter : int, default=100
        Gibbs sweeps, burn-in included.
    burn_in : int or None, default=None
        Sweeps discarded (None: the first half); every sample after it is kept for prediction
        and held-out scoring.
    init_dims : int, default=2
        Dimensions at the start (every row active in each).
    random_state : int, numpy.random.Generator, numpy.random.SeedSequence or None, default=None
        Seed; one Generator drives the whole chain.
    alpha_prior : tuple of (float, float), default=(1.0, 1.0)
        ``(shape, rate)`` of the Gamma prior on the IBP concentration ``alpha``.
    fixed_alpha : float or None, default=None
        Hold ``alpha`` at this value instead of sampling it.
    use_likelihood : bool, default=True
        False switches the data off: the chain samples the prior (a sampler check).
    sigma2_prior : tuple of (float, float), default=(1.0, 1.0)
        ``(shape, rate)`` of the inverse-gamma prior on the noise variance.
    sigma_a2_prior : tuple of (float, float), default=(1.0, 1.0)
        ``(shape, rate)`` of the inverse-gamma prior on the loading variance.
    init : {"ica", "pca", "random"}, default="ica"
        Starting latent positions (see
        :func:`~ibp_rflvm.baselines.ibp_lfm_gibbs.initial_positions`).
    sampler : {"default", "paper"}, default="default"
        ``"default"`` adds singleton birth/death with ``x`` integrated out to every sweep;
        ``"paper"`` is the published sweep alone. The joint ``(z, x)`` flips of the RFLVM are
        not needed here: that sweep already updates ``(z, x)`` jointly, with ``x`` integrated
        out exactly.
    ibp_beta : float or None, default=1.0
        The two-parameter IBP's sharing parameter, as in :class:`~ibp_rflvm.IBPRFLVM`: 1.0 is
        the one-parameter IBP of the published baseline, another number fixes it, None learns
        it under `ibp_beta_prior`. Other than 1 it needs ``sampler="default"``: the singleton
        birth/death is then the only way a dimension is born.
    ibp_beta_prior : tuple of (float, float), default=(1.0, 1.0)
        ``(shape, rate)`` of the Gamma prior on ``beta`` when it is learned.

    Attributes
    ----------
    n_active_ : ndarray of shape (n_iter,)
        ``K+`` after every sweep (burn-in included).
    mean_active_per_row_ : ndarray of shape (n_iter,)
        After every sweep, the mean over rows of the number of active dimensions.
    log_likelihood_ : ndarray of shape (n_iter,)
        Observed-data log-likelihood after every sweep.
    alpha_trace_, beta_trace_, sigma2_trace_, sigma_a2_trace_ : ndarray of shape (n_iter,)
        The hyperparameters after every sweep.
    latent_ : ndarray of shape (n_samples, K+)
        ``X * Z`` of the final sample, dimensions in decreasing order of use.
    components_ : ndarray of shape (K+, n_features)
        The matching loadings ``A``.
    active_ : ndarray of shape (n_samples, K+)
        The matching ``Z``.
    latent_samples_, components_samples_ : list of ndarray
        ``latent_`` and ``components_`` of every kept sample (``K+`` varies).
    sigma2_samples_ : ndarray of shape (n_kept,)
        The noise variance of every kept sample.
    """

    def __init__(
        self,
        n_iter: int = 100,
        burn_in: int | None = None,
        init_dims: int = 2,
        random_state=None,
        alpha_prior: tuple[float, float] = (1.0, 1.0),
        fixed_alpha: float | None = None,
        use_likelihood: bool = True,
        sigma2_prior: tuple[float, float] = (1.0, 1.0),
        sigma_a2_prior: tuple[float, float] = (1.0, 1.0),
        init: str = "ica",
        sampler: str = "default",
        ibp_beta: float | None = 1.0,
        ibp_beta_prior: tuple[float, float] = (1.0, 1.0),
    ) -> None:
        self.n_iter = n_iter
        self.burn_in = burn_in
        self.init_dims = init_dims
        self.random_state = random_state
        self.alpha_prior = alpha_prior
        self.fixed_alpha = fixed_alpha
        self.use_likelihood = use_likelihood
        self.sigma2_prior = sigma2_prior
        self.sigma_a2_prior = sigma_a2_prior
        self.init = init
        self.sampler = sampler
        self.ibp_beta = ibp_beta
        self.ibp_beta_prior = ibp_beta_prior

    def _check_params(self) -> tuple[int, int, int, LFMParams]:
        n_iter, burn_in = resolve_burn_in(self.n_iter, self.burn_in)
        init_dims = check_int("init_dims", self.init_dims, 0)
        if self.init not in _INITS:
            raise ValueError(f"init must be one of {', '.join(map(repr, _INITS))}; got {self.init!r}")
        fixed = None if self.fixed_alpha is None else check_positive("fixed_alpha", self.fixed_alpha)
        if not isinstance(self.use_likelihood, (bool, np.bool_, numbers.Integral)):
            raise ValueError(f"use_likelihood must be a bool; got {self.use_likelihood!r}")
        if self.sampler not in ("default", "paper"):
            raise ValueError(f"sampler must be 'default' or 'paper'; got {self.sampler!r}")
        beta = None if self.ibp_beta is None else check_positive("ibp_beta", self.ibp_beta)
        if beta != 1.0 and self.sampler == "paper":
            raise ValueError(
                "sampler='paper' has no singleton birth/death, which the two-parameter IBP needs to "
                f"create dimensions; use ibp_beta=1.0 or sampler='default' (got ibp_beta={self.ibp_beta!r})"
            )
        prm = LFMParams(
            ibp_beta=beta,
            ibp_beta_prior=_check_pair("ibp_beta_prior", self.ibp_beta_prior),
            singleton_moves=self.sampler == "default",
            alpha_prior=_check_pair("alpha_prior", self.alpha_prior),
            fixed_alpha=fixed,
            sigma2_prior=_check_pair("sigma2_prior", self.sigma2_prior),
            sigma_a2_prior=_check_pair("sigma_a2_prior", self.sigma_a2_prior),
            use_likelihood=bool(self.use_likelihood),
        )
        return n_iter, burn_in, init_dims, prm

    def fit(self, Y, missing_mask=None) -> IBPLinearFactorModel:
        """Run the Gibbs sampler on `Y`.

        Parameters
        ----------
        Y : array-like or scipy.sparse matrix of shape (n_samples, n_features)
            Real values; NaN marks unobserved entries.
        missing_mask : array-like of bool of shape (n_samples, n_features), default=None
            ``True`` marks an unobserved entry (the orientation of ``np.isnan(Y)``), as in the
            estimators' ``fit``; a sparse `Y`'s zeros are observed.

        Returns
        -------
        IBPLinearFactorModel
            The fitted estimator.
        """
        Y = data_matrix(Y, missing_mask)
        n_iter, burn_in, init_dims, prm = self._check_params()
        rng = check_random_state(self.random_state)
        N, J = Y.shape
        observed = ~np.isnan(Y)
        missing = np.nonzero(~observed)

        st = init_state(rng, Y, missing, init_dims, prm, self.init)
        k_plus = np.empty(n_iter, dtype=np.int64)
        per_row = np.empty(n_iter)
        loglik = np.empty(n_iter)
        alpha = np.empty(n_iter)
        beta = np.empty(n_iter)
        sigma2 = np.empty(n_iter)
        sigma_a2 = np.empty(n_iter)
        H_s: list[np.ndarray] = []
        A_s: list[np.ndarray] = []
        for it in range(n_iter):
            sweep(rng, st, missing, prm)
            k_plus[it] = st.Z.shape[1]
            per_row[it] = st.Z.sum(axis=1).mean()
            loglik[it] = observed_loglik(st, observed)
            alpha[it], sigma2[it], sigma_a2[it] = st.alpha, st.sigma2, st.sigma_a2
            beta[it] = st.ibp_beta
            if it >= burn_in:
                H_s.append(st.H)
                A_s.append(st.A.copy())

        order = np.argsort(-st.Z.sum(axis=0), kind="stable")
        self.n_active_ = k_plus
        self.mean_active_per_row_ = per_row
        self.log_likelihood_ = loglik
        self.alpha_trace_ = alpha
        self.beta_trace_ = beta
        self.sigma2_trace_ = sigma2
        self.sigma_a2_trace_ = sigma_a2
        self.latent_ = st.H[:, order]
        self.components_ = st.A[order].copy()
        self.active_ = st.Z[:, order].copy()
        self.latent_samples_ = H_s
        self.components_samples_ = A_s
        self.sigma2_samples_ = sigma2[burn_in:].copy()
        self.n_features_in_ = J
        self._shape = (N, J)
        return self

    def predict(self) -> np.ndarray:
        """Posterior-mean reconstruction ``E[H A]`` over the kept samples.

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            The reconstruction of every training entry, imputing the unobserved ones.
        """
        check_fitted(self, "latent_")
        out = np.zeros(self._shape)
        for H, A in zip(self.latent_samples_, self.components_samples_, strict=True):
            out += H @ A
        return out / len(self.latent_samples_)

    def pointwise_log_predictive(self, Y_heldout, missing_mask=None) -> np.ndarray:
        """Log density of each held-out entry under each kept sample.

        Parameters
        ----------
        Y_heldout : array-like or scipy.sparse matrix of shape (n_samples, n_features)
            The held-out entries of the training rows, in the training shape; NaN where
            nothing is scored.
        missing_mask : array-like of bool of shape (n_samples, n_features), default=None
            ``True`` marks an entry not to score, as in the estimators' scoring methods (for
            example ``holdout_mask(..., return_mask=True).test_missing``). A sparse
            `Y_heldout` without a mask scores every entry, zeros included.

        Returns
        -------
        ndarray of shape (n_kept, n_heldout)
            ``log N(y_ij | h_i a_j, sigma^2)`` of each kept sample at each non-NaN entry of
            `Y_heldout`, in row-major order of the entries.
        """
        check_fitted(self, "latent_")
        rows, cols, vals = heldout_for(Y_heldout, self._shape, counts=False, missing_mask=missing_mask)
        S = len(self.latent_samples_)
        out = np.empty((S, rows.size))
        # One pass per kept sample (S is the number of kept sweeps); each is vectorised over entries.
        for s, (H, A) in enumerate(zip(self.latent_samples_, self.components_samples_, strict=True)):
            mean = np.einsum("tk,kt->t", H[rows], A[:, cols])
            out[s] = gaussian_logpdf(vals, mean, self.sigma2_samples_[s])
        return out

    def log_predictive_density(self, Y_heldout, missing_mask=None) -> float:
        """Held-out log predictive density, summed over the held-out entries.

        Parameters
        ----------
        Y_heldout : array-like or scipy.sparse matrix of shape (n_samples, n_features)
            The held-out entries of the training rows, in the training shape; NaN where
            nothing is scored.
        missing_mask : array-like of bool of shape (n_samples, n_features), default=None
            ``True`` marks an entry not to score, as in the estimators' scoring methods (for
            example ``holdout_mask(..., return_mask=True).test_missing``). A sparse
            `Y_heldout` without a mask scores every entry, zeros included.

        Returns
        -------
        float
            ``sum_t log((1/S) sum_s p(y_t | theta_s))`` over the kept samples.
        """
        return lpd_from_samples(self.pointwise_log_predictive(Y_heldout, missing_mask))

    def score(self, Y_heldout, missing_mask=None) -> float:
        """Mean held-out log predictive density per scored entry (higher is better).

        Parameters
        ----------
        Y_heldout : array-like or scipy.sparse matrix of shape (n_samples, n_features)
            The held-out entries of the training rows, in the training shape; NaN where
            nothing is scored.
        missing_mask : array-like of bool of shape (n_samples, n_features), default=None
            ``True`` marks an entry not to score, as in the estimators' scoring methods (for
            example ``holdout_mask(..., return_mask=True).test_missing``). A sparse
            `Y_heldout` without a mask scores every entry, zeros included.

        Returns
        -------
        float
            :meth:`log_predictive_density` divided by the number of scored entries.
        """
        logp = self.pointwise_log_predictive(Y_heldout, missing_mask)
        return lpd_from_samples(logp) / logp.shape[1]
