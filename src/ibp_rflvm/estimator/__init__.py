"""scikit-learn style estimators: :class:`IBPRFLVM` (sparse, infinite) and :class:`RFLVM` (dense).

What they share (``fit``, the fitted attributes, every method read from the posterior) is in
:mod:`ibp_rflvm.estimator.fitting`; their docstrings are assembled from :mod:`ibp_rflvm.estimator.docs`,
one entry per parameter and fitted attribute.
"""

from __future__ import annotations

from ..plumbing.validation import check_int, check_positive
from ..priors import Z_PRIORS, FeaturePrior, make_prior
from ..summaries.stacking import MAX_ENTRIES
from .docs import estimator_docstring
from .fitting import (
    CAP_BINDS,
    SAMPLERS,
    CapReachedWarning,
    ChainsDisagreeWarning,
    _RFLVMBase,
)

__all__ = ["CAP_BINDS", "IBPRFLVM", "RFLVM", "SAMPLERS", "CapReachedWarning", "ChainsDisagreeWarning"]


class IBPRFLVM(_RFLVMBase):
    __doc__ = estimator_docstring(
        "Sparse, infinite random Fourier feature latent variable model (IBP-RFLVM), sampled by MCMC.",
        """
        A Gaussian process latent variable model, approximated by random Fourier features, whose
        latent space has an Indian buffet process prior: the number of latent dimensions is
        learned, and each row uses only some of them (its other coordinates are exactly zero).
        Real values, counts and binary data; NaN (or ``missing_mask``) marks unobserved
        entries, which are imputed inside the chain. ``fit`` runs the chains; predictions,
        scores and summaries are read from every chain's kept samples. :doc:`/model` describes
        the model, :doc:`/getting_started` a first session.
        """,
        [
            "likelihood", "n_frequencies", "n_iter", "burn_in", "init_dims", "random_state", "max_dims",
            "alpha_prior", "eta_prior", "lam0", "likelihood_params", "bias", "n_chains", "n_jobs",
            "checkpoint_path", "checkpoint_every", "verbose", "sampler", "n_replicas", "replica_top",
            "combine", "stacking_max_entries", "ibp_beta", "ibp_beta_prior", "n_threads", "backend",
            "devices", "z_prior", "z_prior_rate", "frequency_update",
        ],
        """
        RFLVM : The dense model: a fixed number of latent dimensions, every row using all.
        ibp_rflvm.adata.ibp_rflvm : The same fit on an AnnData object, written where scanpy
            looks.
        """,
        """
        >>> from sklearn.datasets import load_breast_cancer
        >>> from sklearn.preprocessing import StandardScaler
        >>> from ibp_rflvm import IBPRFLVM, holdout_mask
        >>> Y = StandardScaler().fit_transform(load_breast_cancer().data)    # 569 x 30
        >>> Y_train, Y_test = holdout_mask(Y, fraction=0.2, random_state=0)  # NaN = unobserved
        >>> model = IBPRFLVM(n_iter=10, random_state=0).fit(Y_train)  # a real fit: 300+ sweeps
        >>> model.n_active_.shape               # K+ after each sweep
        (10,)
        >>> model.embedding_.shape[0]           # the posterior embedding of every row
        569
        >>> bool(model.score(Y_test) < 0)       # mean held-out log density per entry
        True
        """,
    )

    _ibp = True
    # The estimator's parameters and fitted attributes name the IBP's sharing parameter.
    _prior_traces = {"ibp_beta": 1.0}

    def __init__(
        self,
        likelihood: str = "gaussian",
        n_frequencies: int = 50,
        n_iter: int = 100,
        burn_in: int | None = None,
        init_dims: int = 12,
        random_state=None,
        max_dims: int | None = 50,
        alpha_prior: tuple[float, float] = (1.0, 1.0),
        eta_prior: tuple[float, float] = (1.0, 1.0),
        lam0: float = 1.0,
        likelihood_params: dict | None = None,
        bias: bool | None = None,
        n_chains: int = 1,
        n_jobs: int | None = None,
        checkpoint_path: str | None = None,
        checkpoint_every: int = 10,
        verbose: bool = False,
        sampler: str = "default",
        n_replicas: int = 1,
        replica_top: float = 5.0,
        combine: str = "stack",
        stacking_max_entries: int = MAX_ENTRIES,
        ibp_beta: float | None = 1.0,
        ibp_beta_prior: tuple[float, float] = (1.0, 1.0),
        n_threads: int | None = None,
        backend: str = "numba",
        devices=None,
        z_prior: str = "ibp",
        frequency_update: str | None = None,
        z_prior_rate: float = 1.0,
    ):
        self.likelihood = likelihood
        self.n_frequencies = n_frequencies
        self.n_iter = n_iter
        self.burn_in = burn_in
        self.init_dims = init_dims
        self.random_state = random_state
        self.max_dims = max_dims
        self.alpha_prior = alpha_prior
        self.ibp_beta = ibp_beta
        self.ibp_beta_prior = ibp_beta_prior
        self.eta_prior = eta_prior
        self.lam0 = lam0
        self.likelihood_params = likelihood_params
        self.bias = bias
        self.n_chains = n_chains
        self.n_jobs = n_jobs
        self.checkpoint_path = checkpoint_path
        self.checkpoint_every = checkpoint_every
        self.verbose = verbose
        self.sampler = sampler
        self.n_replicas = n_replicas
        self.replica_top = replica_top
        self.combine = combine
        self.stacking_max_entries = stacking_max_entries
        self.n_threads = n_threads
        self.backend = backend
        self.devices = devices
        self.z_prior = z_prior
        self.frequency_update = frequency_update
        self.z_prior_rate = z_prior_rate

    def _n_dims(self) -> int:
        return self.init_dims

    def _z_prior(self) -> FeaturePrior:
        beta, beta_prior = self._ibp_beta()
        rate = check_positive("z_prior_rate", self.z_prior_rate)
        if not isinstance(self.z_prior, str) and callable(getattr(self.z_prior, "update_z", None)):
            # A prior object holds its own hyperparameters: the named priors' must stay unset.
            if (beta, beta_prior, rate) != (1.0, (1.0, 1.0), 1.0):
                raise ValueError(
                    f"z_prior={self.z_prior!r} holds its own hyperparameters: leave ibp_beta, "
                    "ibp_beta_prior and z_prior_rate at their defaults"
                )
            return self.z_prior
        if self.z_prior not in Z_PRIORS:
            raise ValueError(
                f"z_prior must be one of {list(Z_PRIORS)} or a FeaturePrior; got {self.z_prior!r}"
            )
        return make_prior(self.z_prior, beta, beta_prior, rate)

    def _max_dims(self) -> int | None:
        return None if self.max_dims is None else check_int("max_dims", self.max_dims, 1)

    def _ibp_beta(self) -> tuple[float | None, tuple[float, float]]:
        beta = None if self.ibp_beta is None else check_positive("ibp_beta", self.ibp_beta)
        prior = self.ibp_beta_prior
        if not isinstance(prior, tuple | list) or len(prior) != 2:
            raise ValueError(f"ibp_beta_prior must be a (shape, rate) pair; got {prior!r}")
        shape = check_positive("ibp_beta_prior[0] (shape)", prior[0])
        rate = check_positive("ibp_beta_prior[1] (rate)", prior[1])
        return beta, (shape, rate)


class RFLVM(_RFLVMBase):
    __doc__ = estimator_docstring(
        "Dense random Fourier feature latent variable model (RFLVM), sampled by MCMC.",
        """
        The model of :class:`IBPRFLVM` with the Indian buffet process switched off (``Z = 1``):
        `n_components` latent dimensions, every row using all of them. Choose it when you know
        the dimension you want, or care about clusters more than sparse programmes.
        ``n_active_`` is then constant and ``alpha_`` and ``ibp_beta_`` are 1.
        """,
        [
            "n_components", "likelihood", "n_frequencies", "n_iter", "burn_in", "random_state",
            "eta_prior", "lam0", "likelihood_params", "bias", "n_chains", "n_jobs", "checkpoint_path",
            "checkpoint_every", "verbose", "sampler", "n_replicas", "replica_top", "combine",
            "stacking_max_entries", "n_threads", "backend", "devices", "frequency_update",
        ],
        """
        IBPRFLVM : The sparse model, which learns the number of dimensions.
        """,
        """
        >>> from sklearn.datasets import load_breast_cancer
        >>> from sklearn.preprocessing import StandardScaler
        >>> from ibp_rflvm import RFLVM
        >>> Y = StandardScaler().fit_transform(load_breast_cancer().data)
        >>> model = RFLVM(n_components=3, n_iter=10, random_state=0).fit(Y)
        >>> model.latent_.shape                 # every row uses the 3 dimensions
        (569, 3)
        """,
    )

    _ibp = False
    _prior_traces = {"ibp_beta": 1.0}

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
        n_chains: int = 1,
        n_jobs: int | None = None,
        checkpoint_path: str | None = None,
        checkpoint_every: int = 10,
        verbose: bool = False,
        sampler: str = "default",
        n_replicas: int = 1,
        replica_top: float = 5.0,
        combine: str = "stack",
        stacking_max_entries: int = MAX_ENTRIES,
        n_threads: int | None = None,
        backend: str = "numba",
        devices=None,
        frequency_update: str | None = None,
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
        self.n_chains = n_chains
        self.n_jobs = n_jobs
        self.checkpoint_path = checkpoint_path
        self.checkpoint_every = checkpoint_every
        self.verbose = verbose
        self.sampler = sampler
        self.n_replicas = n_replicas
        self.replica_top = replica_top
        self.combine = combine
        self.stacking_max_entries = stacking_max_entries
        self.n_threads = n_threads
        self.backend = backend
        self.devices = devices
        self.frequency_update = frequency_update

    def _n_dims(self) -> int:
        return self.n_components
