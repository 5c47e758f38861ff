"""Bayesian GPLVM baseline (Titsias and Lawrence 2010): parameters, optimiser and estimator.

The model, its collapsed lower bound and why that bound is not computed with GPy are explained
in :mod:`.gplvm_bound`, which computes it; this module packs the parameters into the
optimiser's vector, maximises the bound and predicts.

Parametrisation. Positive parameters (latent variances, kernel variance, lengthscales, noise
variance) are optimised on the natural-log scale; GPy uses softplus, which changes the
optimiser's path but not the bound or its optimum. What the path does within a budget, measured
on breast cancer (trial 0 of the reproduction, same start, ``max_iters=1000``): neither fit
converges; GPy stops at ELBO -12451 (held-out -0.896 per entry), ours at -12627 (-0.944), and
with softplus ours at -12665 (-0.943). Left to converge, ours reaches -12251 (-0.916) after 2048
iterations. So the budget, not the parametrisation, is what separates such fits;
``converged_`` says which ones it cut short. Initial values mirror GPy's defaults:
``sf2 = 1``, ``l_q = lambda_1 / lambda_q`` from the PCA start (GPy's ``1 / fracs``),
noise ``noise_variance``. Gradients are analytic and L-BFGS-B
(SciPy) maximises the bound.

Jitter. ``Kmm`` gets ``JITTER * sf2 = 1e-6 * sf2`` added to its diagonal (the model's ``Kmm``,
so the bound and its gradient include it). Scaling with ``sf2`` keeps the conditioning of
``Kmm`` the same whatever the kernel variance; GPy adds an absolute ``1e-8``. The bounds then
differ from GPy's by a few parts in 1e7; passing ``jitter=1e-8 / sf2`` reproduces GPy's exactly
(the tests compare that way).

Preprocessing. Columns are centred and scaled by their observed mean and standard deviation
(the zero-mean GP needs centred outputs); predictions are mapped back, so held-out densities
are in the data's own units and carry the Jacobian of the scaling.

Reproducibility. Initial values come from the estimator's Generator: latent means from a
NaN-aware PCA (deterministic), latent variances ``U(0, 0.1)``, inducing inputs a random subset of
the initial latent means. NumPy's global random state is never used.

Threads. The fit runs with single-threaded BLAS. A threaded BLAS sums in an order that depends
on the thread count, which changes the objective in its last bits and so the optimiser's path:
the same seed would give different fits on machines with different core counts.

Held-out density. For entry ``(i, j)`` the predictive is the sparse GP's posterior predictive at
the latent posterior mean ``mu_i`` treated as a fixed input (noise variance included), scored by
``gaussian_logpdf``; latent uncertainty is not propagated. This is GPy's ``model.predict(mu)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import solve_triangular
from scipy.optimize import minimize
from threadpoolctl import threadpool_limits

from ..plumbing.sparse import data_matrix
from ..plumbing.validation import check_random_state
from ..summaries.scoring import gaussian_logpdf, heldout_entries
from ._common import check_fitted, check_int, check_positive, heldout_matrix
from .gplvm_bound import (
    ObservedData,
    _inducing_posterior,
    collapsed_bound,
    kmm_gradients,
    observed_data,
    psi1_gradients,
    psi1_statistics,
    psi2_gradients,
    psi2_statistics,
    rbf,
)

JITTER = 1e-6


@dataclass(frozen=True)
class GPLVMParams:
    """Fitted hyperparameters, in the units of the standardised columns."""

    variance: float
    lengthscales: np.ndarray
    noise_variance: float
    inducing_inputs: np.ndarray


# --- the full objective over a flat parameter vector ---------------------------------------


def pack_theta(
    mu: np.ndarray,
    S: np.ndarray,
    Z: np.ndarray,
    variance: float,
    lengthscales: np.ndarray,
    noise_variance: float,
) -> np.ndarray:
    """Flat optimiser vector: ``mu, log S, Z, log sf2, log l, log noise``."""
    return np.concatenate(
        [
            mu.ravel(),
            np.log(S).ravel(),
            Z.ravel(),
            [np.log(variance)],
            np.log(lengthscales),
            [np.log(noise_variance)],
        ]
    )


# Box on the log-scale parameters. The optimum of any sensible problem is far inside it; it
# exists because an L-BFGS-B line search may try a step whose exp overflows, and a NaN objective
# ends the search abnormally instead of backtracking.
_LOG_BOUNDS = {
    "S": (-25.0, 10.0),
    "variance": (-15.0, 15.0),
    "lengthscale": (-10.0, 10.0),
    "noise": (-18.0, 10.0),
}


def theta_bounds(N: int, M: int, Q: int) -> list[tuple[float | None, float | None]]:
    """L-BFGS-B bounds in `pack_theta` order: free means and inducing inputs, boxed logs."""
    free = (None, None)
    return (
        [free] * (N * Q)
        + [_LOG_BOUNDS["S"]] * (N * Q)
        + [free] * (M * Q)
        + [_LOG_BOUNDS["variance"]]
        + [_LOG_BOUNDS["lengthscale"]] * Q
        + [_LOG_BOUNDS["noise"]]
    )


def unpack_theta(theta: np.ndarray, N: int, M: int, Q: int) -> tuple[np.ndarray, ...]:
    """Inverse of `pack_theta`: ``(mu, S, Z, sf2, l, noise)``."""
    i = 0
    mu = theta[i : i + N * Q].reshape(N, Q)
    i += N * Q
    S = np.exp(theta[i : i + N * Q]).reshape(N, Q)
    i += N * Q
    Z = theta[i : i + M * Q].reshape(M, Q)
    i += M * Q
    variance = float(np.exp(theta[i]))
    lengthscales = np.exp(theta[i + 1 : i + 1 + Q])
    noise = float(np.exp(theta[i + 1 + Q]))
    return mu, S, Z, variance, lengthscales, noise


def _kmm(Z: np.ndarray, variance: float, lengthscales: np.ndarray, jitter: float):
    Kbase = rbf(Z, Z, variance, lengthscales)
    Kmm = Kbase + jitter * variance * np.eye(Z.shape[0])
    L = np.linalg.cholesky(Kmm)
    Linv = solve_triangular(L, np.eye(Z.shape[0]), lower=True)
    return Kbase, Kmm, Linv


def elbo(theta: np.ndarray, obs: ObservedData, M: int, Q: int, jitter: float = JITTER) -> float:
    """The evidence lower bound at `theta` (no gradient)."""
    return -negative_elbo(theta, obs, M, Q, jitter)[0]


def negative_elbo(
    theta: np.ndarray, obs: ObservedData, M: int, Q: int, jitter: float = JITTER
) -> tuple[float, np.ndarray]:
    """``-ELBO`` and its gradient with respect to `theta` (the L-BFGS-B objective)."""
    N = obs.Y.shape[0]
    mu, S, Z, sf2, ell, noise = unpack_theta(theta, N, M, Q)
    beta = 1.0 / noise
    Kbase, Kmm, Linv = _kmm(Z, sf2, ell, jitter)
    Psi1 = psi1_statistics(mu, S, Z, sf2, ell)
    psi2 = psi2_statistics(mu, S, Z, sf2, ell)
    value, g = collapsed_bound(Linv, Psi1, psi2, beta, sf2, obs)

    kl = 0.5 * np.sum(mu**2 + S - np.log(S) - 1.0)
    dmu = -mu
    dS = -0.5 * (1.0 - 1.0 / S)
    dZ, dlog_sf2, dlog_l = kmm_gradients(g.dKmm, Kmm, Kbase, Z, ell)
    dlog_sf2 += g.dsf2 * sf2
    for dm, ds, dz, dv, dl in (
        psi1_gradients(g.dPsi1, Psi1, mu, S, Z, ell),
        psi2_gradients(g.dpsi2, psi2, mu, S, Z, ell),
    ):
        dmu += dm
        dS += ds
        dZ += dz
        dlog_sf2 += dv
        dlog_l += dl
    grad = np.concatenate([dmu.ravel(), (dS * S).ravel(), dZ.ravel(), [dlog_sf2], dlog_l, [-beta * g.dbeta]])
    return -(value - kl), -grad


def predictive_moments(
    X: np.ndarray, theta: np.ndarray, obs: ObservedData, M: int, Q: int, jitter: float = JITTER
) -> tuple[np.ndarray, np.ndarray]:
    """Predictive mean and variance (noise included) of every column at fixed inputs `X`.

    For column ``j`` and input ``x``: mean ``beta k' A_j^{-1} c_j``, variance
    ``sf2 - k' (Kmm^{-1} - A_j^{-1}) k + noise`` with ``k = K(Z, x)``; in whitened form
    ``w = L^{-1} k`` these are ``beta w' b_j`` and ``sf2 - w'w + w' B_j^{-1} w + noise``.
    Returns two ``len(X) x J`` arrays in standardised units.
    """
    N = obs.Y.shape[0]
    mu, S, Z, sf2, ell, noise = unpack_theta(theta, N, M, Q)
    beta = 1.0 / noise
    _, _, Linv = _kmm(Z, sf2, ell, jitter)
    post = _inducing_posterior(
        Linv, psi1_statistics(mu, S, Z, sf2, ell), psi2_statistics(mu, S, Z, sf2, ell), beta, obs
    )
    W = rbf(X, Z, sf2, ell) @ Linv.T
    mean = beta * (W @ post.b.T)
    # w' B_g^{-1} w for every (input, pattern) is one product of row outer products with the
    # flattened inverses, avoiding an input x pattern x M x M intermediate.
    quad = (W[:, :, None] * W[:, None, :]).reshape(X.shape[0], M * M) @ post.Binv.reshape(-1, M * M).T
    var = (sf2 + noise) - np.einsum("nm,nm->n", W, W)[:, None] + quad[:, obs.pattern_of]
    return mean, var


# --- estimator ------------------------------------------------------------------------------

#: Jitter multipliers tried in turn when a trial point of the optimiser breaks a Cholesky.
JITTER_STEPS = (1.0, 1e2, 1e4)


def _minimise(theta: np.ndarray, obs: ObservedData, M: int, Q: int, bounds, max_iters: int):
    """L-BFGS-B from `theta`, and the jitter it ran with.

    With many latent dimensions a line-search trial point can make ``Kmm`` so ill-conditioned
    that the whitened ``Psi2`` loses positive definiteness and ``I + beta P`` has no Cholesky
    factor (seen on breast cancer with 25 dimensions). The fit then starts again from `theta`
    with more jitter on ``Kmm``, which every later evaluation uses too; a fit that never
    fails keeps the default jitter and its result bit for bit.
    """
    for step in JITTER_STEPS:
        jitter = JITTER * step
        try:
            res = minimize(
                negative_elbo, theta, args=(obs, M, Q, jitter), method="L-BFGS-B", jac=True,
                bounds=bounds, options={"maxiter": max_iters},
            )  # fmt: skip
            return res, jitter
        except np.linalg.LinAlgError:
            last = jitter
    raise np.linalg.LinAlgError(
        f"the Bayesian GPLVM's bound lost positive definiteness even with jitter {last:g} on Kmm; "
        "try fewer latent dimensions (n_components) or inducing points (num_inducing)"
    )



def _nan_pca(Yc: np.ndarray, n_components: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Principal-component scores of centred data with NaN read as the column mean (zero),
    scaled to unit variance (padded with small noise when the data has too few directions),
    and GPy's initial ARD lengthscales for them, ``l_q = lambda_1 / lambda_q``.

    Those lengthscales are what GPy's BayesianGPLVM uses with its PCA start (``1 / fracs``,
    eigenvalues relative to the largest). They matter: with unit lengthscales in many latent
    dimensions, unit-variance inputs are so far apart that the kernel is nearly diagonal, the
    bound's easiest ascent is to shrink the kernel variance, and the fit ends at the trivial
    optimum where all of the data is noise (seen on Olivetti with 41 dimensions).
    """
    filled = np.where(np.isnan(Yc), 0.0, Yc)
    U, s, _ = np.linalg.svd(filled, full_matrices=False)
    d = min(n_components, s.size)
    X = U[:, :d] * s[:d]
    eig = s[:d] ** 2
    ell = eig[0] / np.maximum(eig, eig[0] * 1e-12) if d > 0 and eig[0] > 0 else np.ones(d)
    if d < n_components:
        X = np.hstack([X, 1e-2 * rng.standard_normal((X.shape[0], n_components - d))])
        # Directions the data does not have start as irrelevant as the least relevant one.
        ell = np.concatenate([ell, np.full(n_components - d, ell.max() if d else 1.0)])
    sd = X.std(axis=0)
    X = (X - X.mean(axis=0)) / np.where(sd > 0.0, sd, 1.0)
    # Keep the start inside the optimiser's box for log lengthscales.
    return X, np.minimum(ell, np.exp(_LOG_BOUNDS["lengthscale"][1]))


def standardise(Y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(Yn, center, scale)`` with columns centred and scaled by their observed moments."""
    center = np.nanmean(Y, axis=0)
    scale = np.nanstd(Y, axis=0)
    # A constant (or single-entry) column keeps unit scale rather than dividing by zero.
    scale = np.where(scale > 0.0, scale, 1.0)
    return (Y - center) / scale, center, scale


class BayesianGPLVM:
    """Bayesian GPLVM with an ARD RBF kernel and inducing points (Titsias and Lawrence 2010).

    The paper's Gaussian baseline, fitted by maximising the variational evidence lower bound
    with L-BFGS-B on standardised columns; NaN marks unobserved entries.

    Parameters
    ----------
    n_components : int, default=2
        Latent dimension ``D``.
    num_inducing : int, default=50
        Inducing inputs (capped at the number of rows).
    max_iters : int, default=1000
        L-BFGS-B iterations at most.
    noise_variance : float, default=0.1
        Initial Gaussian noise variance, in units of the standardised columns.
    random_state : int, numpy.random.Generator, numpy.random.SeedSequence or None, default=None
        Seed of the start.

    Attributes
    ----------
    latent_ : ndarray of shape (n_samples, n_components)
        Posterior means of the latent positions.
    latent_variance_ : ndarray of shape (n_samples, n_components)
        Their posterior variances.
    params_ : GPLVMParams
        Fitted kernel variance, lengthscales, noise variance and inducing inputs (standardised
        units).
    elbo_ : float
        Final evidence lower bound (standardised units).
    n_iter_ : int
        L-BFGS-B iterations used.
    converged_ : bool
        Whether L-BFGS-B stopped on a convergence test rather than at `max_iters`.
    predictive_mean_, predictive_variance_ : ndarray of shape (n_samples, n_features)
        Predictive moments of every entry, in data units.
    """

    def __init__(
        self,
        n_components: int = 2,
        num_inducing: int = 50,
        max_iters: int = 1000,
        noise_variance: float = 0.1,
        random_state=None,
    ) -> None:
        self.n_components = n_components
        self.num_inducing = num_inducing
        self.max_iters = max_iters
        self.noise_variance = noise_variance
        self.random_state = random_state

    def fit(self, Y, missing_mask=None) -> BayesianGPLVM:
        """Fit the variational posterior to `Y`.

        Parameters
        ----------
        Y : array-like or scipy.sparse matrix of shape (n_samples, n_features)
            Real values; NaN marks unobserved entries.
        missing_mask : array-like of bool of shape (n_samples, n_features), default=None
            ``True`` marks an unobserved entry (the orientation of ``np.isnan(Y)``), as in the
            estimators' ``fit``; a sparse `Y`'s zeros are observed.

        Returns
        -------
        BayesianGPLVM
            The fitted estimator.
        """
        Y = data_matrix(Y, missing_mask)
        D = check_int("n_components", self.n_components, 1)
        M = check_int("num_inducing", self.num_inducing, 1)
        max_iters = check_int("max_iters", self.max_iters, 0)
        noise = check_positive("noise_variance", self.noise_variance)
        rng = check_random_state(self.random_state)

        N, J = Y.shape
        M = min(M, N)
        Yn, center, scale = standardise(Y)
        X0, ell0 = _nan_pca(Yn, D, rng)
        S0 = rng.uniform(0.0, 0.1, size=(N, D))
        Z0 = X0[rng.choice(N, size=M, replace=False)].copy()
        theta = pack_theta(X0, S0, Z0, 1.0, ell0, noise)
        obs = observed_data(Yn)

        # One BLAS thread: a threaded BLAS sums in a thread-count-dependent order, which moves
        # the objective in its last bits and hence the optimiser's path, so the same seed would
        # give different fits on machines with different core counts.
        with threadpool_limits(limits=1, user_api="blas"):
            jitter = JITTER
            if max_iters > 0:
                res, jitter = _minimise(theta, obs, M, D, theta_bounds(N, M, D), max_iters)
                theta, n_iter = res.x, int(res.nit)
                # L-BFGS-B status 0: a convergence test passed; 1: the iteration budget ran out.
                converged = res.status == 0
            else:
                n_iter, converged = 0, False
            value = elbo(theta, obs, M, D, jitter)
            mu, S, Z, sf2, ell, noise_fit = unpack_theta(theta, N, M, D)
            mean, var = predictive_moments(mu, theta, obs, M, D, jitter)

        self.latent_ = mu.copy()
        self.latent_variance_ = S.copy()
        self.params_ = GPLVMParams(
            variance=sf2, lengthscales=ell.copy(), noise_variance=noise_fit, inducing_inputs=Z.copy()
        )
        self.elbo_ = value
        self.jitter_ = jitter
        self.n_iter_ = n_iter
        self.converged_ = converged
        self.predictive_mean_ = mean * scale + center
        self.predictive_variance_ = var * scale**2
        self.n_features_in_ = J
        self._shape = (N, J)
        return self

    def predict(self) -> np.ndarray:
        """Posterior predictive mean of every training entry, imputing the unobserved ones.

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            The predictive means, in data units.
        """
        check_fitted(self, "latent_")
        return self.predictive_mean_.copy()

    def _heldout(self, Y_heldout, missing_mask=None):
        check_fitted(self, "latent_")
        return heldout_entries(heldout_matrix(Y_heldout, self._shape, missing_mask))

    def pointwise_log_density(self, Y_heldout, missing_mask=None) -> np.ndarray:
        """Gaussian predictive log density of each held-out entry.

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
        ndarray of shape (n_heldout,)
            One log density per non-NaN entry of `Y_heldout`, in row-major order.
        """
        rows, cols, vals = self._heldout(Y_heldout, missing_mask)
        return gaussian_logpdf(vals, self.predictive_mean_[rows, cols], self.predictive_variance_[rows, cols])

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
            The sum of :meth:`pointwise_log_density`, all constants included.
        """
        return float(np.sum(self.pointwise_log_density(Y_heldout, missing_mask)))

    def score(self, Y_heldout, missing_mask=None) -> float:
        """Mean held-out log predictive density per entry (higher is better).

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
            The mean of :meth:`pointwise_log_density`.
        """
        return float(np.mean(self.pointwise_log_density(Y_heldout, missing_mask)))
