"""scikit-learn style estimators: :class:`IBPRFLVM` (sparse, infinite) and :class:`RFLVM` (dense).

``__init__`` stores parameters only; ``fit`` runs one MCMC chain; fitted attributes end in
``_``. ``NaN`` in the data marks unobserved entries: they are imputed by data augmentation
inside the chain, never treated as zeros.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from threadpoolctl import threadpool_limits

from ._validation import as_data_matrix, check_random_state
from .evaluation.metrics import heldout_entries, lpd_from_samples
from .evaluation.metrics import perplexity as perplexity_metric
from .features import feature_map
from .likelihoods import make_likelihood
from .model import ChainState, Data, ModelSpec, init_state, sweep


class _RFLVMBase(BaseEstimator):
    """Shared fitting and scoring; subclasses say whether the IBP is on."""

    _ibp: bool = True

    def _n_dims(self) -> int:  # pragma: no cover - overridden
        raise NotImplementedError

    def _spec(self) -> ModelSpec:
        if not isinstance(self.likelihood, str):
            raise ValueError(f"likelihood must be a name such as 'gaussian'; got {self.likelihood!r}")
        lik = make_likelihood(self.likelihood, **dict(self.likelihood_params or {}))
        for name in ("n_frequencies", "n_iter"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be a positive integer; got {value!r}")
        n_dims = self._n_dims()
        if not isinstance(n_dims, (int, np.integer)) or n_dims < (1 if not self._ibp else 0):
            raise ValueError(f"the number of latent dimensions must be a positive integer; got {n_dims!r}")
        return ModelSpec(
            n_frequencies=int(self.n_frequencies),
            ibp=self._ibp,
            n_dims=int(n_dims),
            bias=lik.default_bias if self.bias is None else bool(self.bias),
            alpha_prior=tuple(self.alpha_prior) if self._ibp else (1.0, 1.0),
            eta_prior=tuple(self.eta_prior),
            lam0=float(self.lam0),
            likelihood=lik,
        )

    def _burn_in(self) -> int:
        burn = self.n_iter // 2 if self.burn_in is None else int(self.burn_in)
        if not 0 <= burn < self.n_iter:
            raise ValueError(f"burn_in must be in [0, n_iter); got {burn} with n_iter={self.n_iter}")
        return burn

    def fit(self, Y, y=None):
        """Run the chain on `Y` (``N x J``, NaN = unobserved). `y` is ignored."""
        # The chain's matrices are small (L = 2M features) and its hot loops are compiled and
        # single-threaded: multi-threaded BLAS only oversubscribes the cores (5x slower on 2
        # cores), and parallel chains want one thread each anyway.
        with threadpool_limits(limits=1, user_api="blas"):
            return self._fit(Y)

    def _fit(self, Y):
        Yv = as_data_matrix(Y)
        spec = self._spec()
        lik = spec.likelihood
        lik.validate(Yv)
        burn = self._burn_in()
        rng = check_random_state(self.random_state)
        data = Data.from_array(Yv, lik)
        state = init_state(rng, data, spec)
        n_active, loglik, alphas, etas, n_comp = [], [], [], [], []
        self._samples: list[dict] = []
        recon = np.zeros_like(Yv)
        progress = _progress(self.n_iter, self.verbose)
        for t in range(self.n_iter):
            state, info = sweep(rng, state, data, spec)
            n_active.append(info["k_plus"])
            loglik.append(state.loglik)
            alphas.append(state.alpha)
            etas.append(state.eta)
            n_comp.append(info["n_components"])
            if t >= burn:
                Phi = state.phi(spec.bias)
                recon += lik.mean(Phi @ state.params["beta"], state.params)
                self._samples.append({"H": state.H, "W": state.W, "params": state.params})
            if progress is not None:
                progress.set_postfix(k_plus=info["k_plus"], refresh=False)
                progress.update(1)
        if progress is not None:
            progress.close()
        self.spec_ = spec
        self._data = data
        self.state_: ChainState = state
        self.n_features_in_ = Yv.shape[1]
        self.n_samples_fit_ = Yv.shape[0]
        self.n_active_ = np.asarray(n_active)
        self.log_likelihood_ = np.asarray(loglik)
        self.alpha_ = np.asarray(alphas)
        self.eta_ = np.asarray(etas)
        self.n_mixture_components_ = np.asarray(n_comp)
        self.latent_samples_ = [_ordered_latent(s["H"]) for s in self._samples]
        self.latent_ = _ordered_latent(state.H)
        self.reconstruction_ = recon / len(self._samples)
        return self

    # ----------------------------------------------------------------------------------------

    def _check_fitted(self) -> None:
        if not hasattr(self, "state_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; call fit first")

    def predict(self) -> np.ndarray:
        """Posterior-mean reconstruction of every entry of the training matrix (imputation)."""
        self._check_fitted()
        return self.reconstruction_.copy()

    def _heldout(self, Y_heldout):
        self._check_fitted()
        Yh = np.asarray(Y_heldout, dtype=np.float64)
        expected = (self.n_samples_fit_, self.n_features_in_)
        if Yh.shape != expected:
            raise ValueError(f"Y_heldout must have the training shape {expected}; got {Yh.shape}")
        rows, cols, vals = heldout_entries(Yh)
        if self.spec_.likelihood.kind == "counts":
            self.spec_.likelihood.validate(np.where(np.isnan(Yh), 0.0, Yh))
        unique_rows, row_pos = np.unique(rows, return_inverse=True)
        return unique_rows, row_pos, cols, vals

    def _sample_psi(self, smp: dict, unique_rows: np.ndarray) -> np.ndarray:
        Phi = feature_map(smp["H"][unique_rows], smp["W"], self.spec_.bias)
        return Phi @ smp["params"]["beta"]

    def pointwise_log_predictive(self, Y_heldout) -> np.ndarray:
        """``S x n_test`` log densities ``log p(y_t | theta_s)`` of the non-NaN held-out entries."""
        unique_rows, row_pos, cols, vals = self._heldout(Y_heldout)
        lik = self.spec_.likelihood
        out = np.empty((len(self._samples), vals.size))
        for s, smp in enumerate(self._samples):
            psi_u = self._sample_psi(smp, unique_rows)
            out[s] = lik.logpdf_entries(vals, psi_u, row_pos, cols, smp["params"], self._data.prep)
        return out

    def perplexity(self, Y_heldout) -> float:
        """Held-out perplexity ``exp(-sum y log p / sum y)`` with ``p_ij`` the posterior mean of
        each row's predicted share ``mu_ij / sum_j' mu_ij'`` (SPEC section 3)."""
        unique_rows, row_pos, cols, vals = self._heldout(Y_heldout)
        lik = self.spec_.likelihood
        p = np.zeros(vals.size)
        for smp in self._samples:
            mu = lik.mean(self._sample_psi(smp, unique_rows), smp["params"])
            p += mu[row_pos, cols] / mu.sum(axis=1)[row_pos]
        return perplexity_metric(vals, p / len(self._samples))

    def log_predictive_density(self, Y_heldout) -> float:
        """Held-out LPD: sum over non-NaN entries of ``log (1/S) sum_s p(y_ij | theta_s)``."""
        return lpd_from_samples(self.pointwise_log_predictive(Y_heldout))

    def score(self, Y_heldout, y=None) -> float:
        """Mean held-out log predictive density per scored entry."""
        logp = self.pointwise_log_predictive(Y_heldout)
        return lpd_from_samples(logp) / logp.shape[1]


def _ordered_latent(H: np.ndarray) -> np.ndarray:
    """Active dimensions of ``X * Z``, most used first."""
    usage = np.count_nonzero(H, axis=0)
    order = np.argsort(-usage, kind="stable")
    order = order[usage[order] > 0]
    return H[:, order]


def _progress(total: int, verbose: bool):
    if not verbose:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="sweep", desc="MCMC")


class IBPRFLVM(_RFLVMBase):
    """Sparse, infinite random Fourier feature latent variable model (IBP-RFLVM).

    Parameters
    ----------
    likelihood : observation model, a name from ``ibp_rflvm.likelihoods.REGISTRY``
        (``"gaussian"`` is the collapsed Gaussian).
    n_frequencies : number ``M`` of random Fourier frequencies (``2M`` features).
    n_iter : MCMC sweeps.
    burn_in : sweeps discarded before samples are kept; default ``n_iter // 2``.
    init_dims : latent dimensions at the start (the IBP adds and removes them).
    random_state : seed or ``numpy.random.Generator``; the same seed gives the same chain.
    alpha_prior : ``(shape, rate)`` of the Gamma prior on the IBP concentration.
    eta_prior : ``(shape, rate)`` of the Gamma prior on the DP concentration.
    lam0 : NIW mean-precision scale of the frequency mixture.
    likelihood_params : hyperparameters of the likelihood, e.g. ``{"a0": 1.0, "b0": 1.0}`` for
        the Gaussian's inverse-gamma prior on the noise variances.
    bias : add a constant feature; default: the likelihood's choice (off for the Gaussian).
    verbose : show a progress bar.
    """

    _ibp = True

    def __init__(
        self,
        likelihood: str = "gaussian",
        n_frequencies: int = 50,
        n_iter: int = 100,
        burn_in: int | None = None,
        init_dims: int = 2,
        random_state=None,
        alpha_prior: tuple[float, float] = (1.0, 1.0),
        eta_prior: tuple[float, float] = (1.0, 1.0),
        lam0: float = 1.0,
        likelihood_params: dict | None = None,
        bias: bool | None = None,
        verbose: bool = False,
    ):
        self.likelihood = likelihood
        self.n_frequencies = n_frequencies
        self.n_iter = n_iter
        self.burn_in = burn_in
        self.init_dims = init_dims
        self.random_state = random_state
        self.alpha_prior = alpha_prior
        self.eta_prior = eta_prior
        self.lam0 = lam0
        self.likelihood_params = likelihood_params
        self.bias = bias
        self.verbose = verbose

    def _n_dims(self) -> int:
        return self.init_dims


class RFLVM(_RFLVMBase):
    """Dense random Fourier feature latent variable model: the IBP switched off (``Z = 1``).

    Same parameters as :class:`IBPRFLVM`, with `n_components` fixed latent dimensions in place
    of `init_dims`.
    """

    _ibp = False

    def __init__(
        self,
        n_components: int = 2,
        likelihood: str = "gaussian",
        n_frequencies: int = 50,
        n_iter: int = 100,
        burn_in: int | None = None,
        random_state=None,
        eta_prior: tuple[float, float] = (1.0, 1.0),
        lam0: float = 1.0,
        likelihood_params: dict | None = None,
        bias: bool | None = None,
        verbose: bool = False,
    ):
        self.n_components = n_components
        self.likelihood = likelihood
        self.n_frequencies = n_frequencies
        self.n_iter = n_iter
        self.burn_in = burn_in
        self.random_state = random_state
        self.eta_prior = eta_prior
        self.lam0 = lam0
        self.likelihood_params = likelihood_params
        self.bias = bias
        self.verbose = verbose

    def _n_dims(self) -> int:
        return self.n_components
