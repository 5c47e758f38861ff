"""Bayesian GPLVM baseline (Titsias and Lawrence 2010) through GPy.

A thin wrapper around ``GPy.models.BayesianGPLVM`` (complete data) and
``GPy.models.bayesian_gplvm_minibatch.BayesianGPLVMMiniBatch(missing_data=True)`` (any NaN), with
an ARD RBF kernel and a variational posterior ``q(x_i) = N(mu_i, diag(s_i))`` fitted by
maximising the collapsed evidence lower bound with L-BFGS-B. With missing data GPy gives each
column its own inducing-output posterior computed from that column's observed rows only, so
unobserved entries are never read as zeros.

Preprocessing. Columns are centred and scaled by their observed mean and standard deviation
(GPy's zero-mean GP needs centred outputs); predictions are mapped back, so held-out densities
are in the data's own units and carry the Jacobian of the scaling.

Reproducibility. Initial values are drawn from the estimator's Generator and passed to GPy
explicitly: latent means from a NaN-aware PCA (deterministic), latent variances
``U(0, 0.1)`` and inducing inputs a random subset of the initial latent means, mirroring GPy's own
defaults. GPy still consults NumPy's legacy global generator in places (its default
initialisers, some parameter machinery), so the whole construction and optimisation runs with the
global state seeded from the Generator, and the caller's global state is restored afterwards.
The same ``random_state`` therefore gives the same fit, and fitting leaves ``np.random`` as it
found it.

Threads. The fit runs with single-threaded BLAS. A threaded BLAS sums in an order that depends
on the thread count, which changes the objective in its last bits and so the optimiser's path:
the same seed gave different fits on machines with different core counts. GPy's work here is
mostly small (``num_inducing``-sized) matrices per column, where BLAS threads buy nothing; on a
busy two-core machine threaded BLAS made one test fit 7-40 times slower than single-threaded.

Held-out density. For entry ``(i, j)`` the predictive is GPy's posterior predictive at the latent
posterior mean ``mu_i`` (``model.predict``, Gaussian noise variance included), scored by
``gaussian_logpdf``; latent uncertainty is not propagated.
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from .._validation import as_data_matrix, check_random_state
from ..evaluation.metrics import gaussian_logpdf, heldout_entries
from ._common import check_fitted, check_int, check_positive


@contextlib.contextmanager
def _seeded_global_numpy(seed: int):
    """Seed NumPy's legacy global generator for GPy and restore the caller's state afterwards."""
    saved = np.random.get_state()  # noqa: NPY002
    np.random.seed(seed)  # noqa: NPY002 - GPy reads the legacy global generator internally
    try:
        yield
    finally:
        np.random.set_state(saved)  # noqa: NPY002


def _nan_pca(Yc: np.ndarray, n_components: int, rng: np.random.Generator) -> np.ndarray:
    """Principal-component scores of centred data with NaN read as the column mean (zero),
    scaled to unit variance; padded with small noise when the data has too few directions."""
    filled = np.where(np.isnan(Yc), 0.0, Yc)
    U, s, _ = np.linalg.svd(filled, full_matrices=False)
    d = min(n_components, s.size)
    X = U[:, :d] * s[:d]
    if d < n_components:
        X = np.hstack([X, 1e-2 * rng.standard_normal((X.shape[0], n_components - d))])
    sd = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(sd > 0.0, sd, 1.0)


class BayesianGPLVM:
    """Bayesian GPLVM (GPy), ARD RBF kernel, inducing points, NaN = unobserved.

    Parameters
    ----------
    n_components : latent dimension D.
    num_inducing : inducing inputs (capped at the number of rows).
    max_iters : L-BFGS-B iterations.
    noise_variance : initial Gaussian noise variance, in units of the standardised columns.
    random_state : int, SeedSequence, Generator or None.

    Attributes
    ----------
    latent_ : ``N x D`` posterior means of the latent positions; latent_variance_ : their
    variances; model_ : the fitted GPy model; elbo_ : final evidence lower bound (standardised
    units); predictive_mean_, predictive_variance_ : ``N x J`` predictive moments in data units.
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

    def fit(self, Y) -> BayesianGPLVM:
        """Fit the variational posterior to `Y` (``N x J`` reals, NaN = unobserved)."""
        Y = as_data_matrix(Y)
        D = check_int("n_components", self.n_components, 1)
        M = check_int("num_inducing", self.num_inducing, 1)
        max_iters = check_int("max_iters", self.max_iters, 0)
        noise = check_positive("noise_variance", self.noise_variance)
        rng = check_random_state(self.random_state)
        # GPy is an optional extra ("baselines") and slow to import: load it only when fitting.
        import GPy
        from GPy.models.bayesian_gplvm_minibatch import BayesianGPLVMMiniBatch

        N, J = Y.shape
        M = min(M, N)
        missing = bool(np.isnan(Y).any())
        center = np.nanmean(Y, axis=0)
        scale = np.nanstd(Y, axis=0)
        # A constant (or single-entry) column keeps unit scale rather than dividing by zero.
        scale = np.where(scale > 0.0, scale, 1.0)
        Yn = (Y - center) / scale

        X0 = _nan_pca(Yn, D, rng)
        S0 = rng.uniform(0.0, 0.1, size=(N, D))
        Z0 = X0[rng.choice(N, size=M, replace=False)].copy()
        seed = int(rng.integers(0, 2**32 - 1))

        with (
            _seeded_global_numpy(seed),
            threadpool_limits(limits=1, user_api="blas"),
            warnings.catch_warnings(),
        ):
            # GPy emits deprecation chatter from its own internals; it is not ours to act on.
            warnings.simplefilter("ignore", category=DeprecationWarning)
            kernel = GPy.kern.RBF(D, ARD=True)
            if missing:
                model = BayesianGPLVMMiniBatch(
                    Yn, D, X=X0, X_variance=S0, Z=Z0, num_inducing=M, kernel=kernel, missing_data=True
                )
            else:
                model = GPy.models.BayesianGPLVM(
                    Yn, D, X=X0, X_variance=S0, Z=Z0, num_inducing=M, kernel=kernel
                )
            model.likelihood.variance = noise
            if max_iters > 0:
                model.optimize(max_iters=max_iters, messages=False)
            mu = np.array(model.X.mean.values, dtype=np.float64)
            pred_mean, pred_var = model.predict(mu)

        self.model_ = model
        self.latent_ = mu
        self.latent_variance_ = np.array(model.X.variance.values, dtype=np.float64)
        self.elbo_ = float(np.asarray(model.log_likelihood()).ravel()[0])
        self.predictive_mean_ = np.asarray(pred_mean) * scale + center
        # Without missing data GPy returns one variance per row shared by all columns.
        self.predictive_variance_ = np.broadcast_to(np.asarray(pred_var), (N, J)) * scale**2
        self.n_features_in_ = J
        self._shape = (N, J)
        return self

    def predict(self) -> np.ndarray:
        """Posterior predictive mean of every entry (``N x J``, data units)."""
        check_fitted(self, "latent_")
        return self.predictive_mean_.copy()

    def _heldout(self, Y_heldout):
        check_fitted(self, "latent_")
        Yh = np.asarray(Y_heldout, dtype=np.float64)
        if Yh.shape != self._shape:
            raise ValueError(
                f"Y_heldout must have the training shape {self._shape} (NaN where nothing is "
                f"scored); got {Yh.shape}"
            )
        return heldout_entries(Yh)

    def pointwise_log_density(self, Y_heldout) -> np.ndarray:
        """Gaussian predictive log density of each non-NaN entry of `Y_heldout` (row-major)."""
        rows, cols, vals = self._heldout(Y_heldout)
        return gaussian_logpdf(vals, self.predictive_mean_[rows, cols], self.predictive_variance_[rows, cols])

    def log_predictive_density(self, Y_heldout) -> float:
        """Sum over held-out entries of the predictive log density, all constants included."""
        return float(np.sum(self.pointwise_log_density(Y_heldout)))

    def score(self, Y_heldout) -> float:
        """Held-out log predictive density per entry."""
        return float(np.mean(self.pointwise_log_density(Y_heldout)))
