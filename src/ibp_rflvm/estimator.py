"""scikit-learn style estimators: :class:`IBPRFLVM` (sparse, infinite) and :class:`RFLVM` (dense).

``__init__`` stores parameters only; ``fit`` runs the MCMC chains and keeps what they leave
as ``posterior_`` (:class:`~ibp_rflvm.posterior.Posterior`); fitted attributes end in ``_``.
``NaN`` in the data, or ``True`` in the ``missing_mask`` keyword, marks unobserved entries:
they are imputed by data augmentation inside the chain, never treated as zeros.
Data may be dense or ``scipy.sparse``; a sparse matrix's zeros are observed zeros.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
from sklearn.base import BaseEstimator
from threadpoolctl import threadpool_limits

from . import blocks
from ._sparse import data_matrix
from ._validation import (
    check_int,
    check_positive,
    check_random_state,
    resolve_burn_in,
    warn_if_unscaled,
)
from .chain_pool import run_chains
from .dimensions import EffectiveDimensionsMixin
from .embedding import PosteriorEmbeddingMixin
from .likelihoods import make_likelihood
from .mcmc.driver import run_chain
from .mcmc.tempering import ladder_for, run_tempered
from .model import ChainState, Data, ModelSpec
from .posterior import Posterior, ordered_latent
from .predictive import PredictiveMixin, new_rows
from .stacking import COMBINE, MAX_ENTRIES, chain_weights


class ChainsDisagreeWarning(UserWarning):
    """Chains of one fit ended in different posterior modes (split R-hat above 1.1)."""


class CapReachedWarning(UserWarning):
    """``K+`` sat at ``max_dims`` for most kept sweeps: the cap, not the data, chose it."""


#: Share of kept sweeps at the cap above which a fit warns that the cap binds.
CAP_BINDS = 0.5


#: ``"default"``: the scaled start and, for the IBP, the dimension moves of SPEC 2.2;
#: ``"paper"``: the paper's sweep and its unit-variance PCA start (the reproduction's
#: "as published" setting).
SAMPLERS = ("default", "paper")


class _RFLVMBase(PredictiveMixin, EffectiveDimensionsMixin, PosteriorEmbeddingMixin, BaseEstimator):
    """Shared fitting; subclasses say whether the IBP is on. A fit leaves ``posterior_`` (a
    :class:`~ibp_rflvm.posterior.Posterior`: the chains, their weights from
    :mod:`ibp_rflvm.stacking`, the data view and the spec); held-out scoring and new rows
    (:mod:`ibp_rflvm.predictive`), the number of dimensions (:mod:`ibp_rflvm.dimensions`), the
    embedding (:mod:`ibp_rflvm.embedding`) and the diagnostics (:mod:`ibp_rflvm.diagnostics`)
    are functions of it, which the mixins and methods here name."""

    _ibp: bool = True

    def _n_dims(self) -> int:  # pragma: no cover - overridden
        raise NotImplementedError

    def _max_dims(self) -> int | None:
        return None

    def _ibp_beta(self) -> tuple[float | None, tuple[float, float]]:
        """``(ibp_beta, its prior)`` for the spec: the one-parameter IBP unless overridden."""
        return 1.0, (1.0, 1.0)

    def _spec(self) -> ModelSpec:
        if not isinstance(self.likelihood, str):
            raise ValueError(f"likelihood must be a name such as 'gaussian'; got {self.likelihood!r}")
        lik = make_likelihood(self.likelihood, **dict(self.likelihood_params or {}))
        n_frequencies = check_int("n_frequencies", self.n_frequencies, 1)
        check_int("n_iter", self.n_iter, 1)
        name, minimum = ("init_dims", 0) if self._ibp else ("n_components", 1)
        n_dims = check_int(name, self._n_dims(), minimum)
        if self.sampler not in SAMPLERS:
            raise ValueError(f"sampler must be one of {sorted(SAMPLERS)}; got {self.sampler!r}")
        paper = self.sampler == "paper"
        ibp_beta, ibp_beta_prior = self._ibp_beta()
        if paper and ibp_beta != 1.0:
            raise ValueError(
                "sampler='paper' is the stick-breaking slice sampler of the one-parameter IBP: "
                f"it needs ibp_beta=1.0; got {ibp_beta!r}"
            )
        return ModelSpec(
            n_frequencies=n_frequencies,
            ibp=self._ibp,
            n_dims=n_dims,
            bias=lik.default_bias if self.bias is None else bool(self.bias),
            alpha_prior=tuple(self.alpha_prior) if self._ibp else (1.0, 1.0),
            eta_prior=tuple(self.eta_prior),
            lam0=float(self.lam0),
            likelihood=lik,
            moves=self._ibp and not paper,
            scaled_start=not paper,
            max_dims=self._max_dims(),
            ibp_beta=ibp_beta,
            ibp_beta_prior=ibp_beta_prior,
            backend=self.backend,
        )

    def _chain_starts(self, spec: ModelSpec, n_chains: int) -> list[int]:
        """Each chain's starting number of dimensions. The IBP's chains are spread evenly between
        2 and `init_dims` (rounded), so that chains from different starts can find the different
        modes the posterior has (docs/sampler.md section 5) and stacking can weigh them; the
        dense model's `n_components` is fixed."""
        if not self._ibp or n_chains == 1 or spec.n_dims <= 2:
            return [spec.n_dims] * n_chains
        return [int(v) for v in np.round(np.linspace(2, spec.n_dims, n_chains))]

    def _burn_in(self) -> int:
        return resolve_burn_in(self.n_iter, self.burn_in)[1]

    def fit(self, Y, y=None, resume: bool = False, missing_mask=None):
        """Run the chain(s) on `Y` (``N x J``, NaN = unobserved). `y` is ignored.

        `Y` may be a dense array or a ``scipy.sparse`` matrix (CSR or CSC; other formats are
        converted), whose zeros are observed zeros. `missing_mask` (boolean, ``N x J``, ``True``
        = unobserved, the orientation of ``np.isnan(Y)``) marks unobserved entries of either;
        with NaN as well, an entry is unobserved when either says so. Sparse and dense input with
        the same entries give the same chain bit for bit: the sampler holds the data densely
        (docs/memory.md).

        With ``resume=True`` and a `checkpoint_path` whose checkpoint exists, every chain continues
        from its checkpoint; the result equals the uninterrupted run bit for bit. A larger
        `n_iter` than the checkpoint's extends a finished chain (the result equals a run that
        long from the start) as long as the burn-in stays the same: give the checkpoint's
        `burn_in` explicitly, since the default ``n_iter // 2`` moves with `n_iter`. A
        checkpoint for other data or settings, or a damaged file, raises
        :class:`~ibp_rflvm.checkpoint.CheckpointError` (a ``ValueError``) naming the file and
        what is wrong.
        """
        # The chain's matrices are small (L = 2M features) and its hot loops are compiled and
        # single-threaded: multi-threaded BLAS only oversubscribes the cores (5x slower on 2
        # cores), and parallel chains want one thread each anyway.
        with threadpool_limits(limits=1, user_api="blas"):
            return self._fit(Y, resume, missing_mask)

    def _chain_generators(self) -> list[np.random.Generator]:
        n_chains = check_int("n_chains", self.n_chains, 1)
        rng = check_random_state(self.random_state)
        # One chain uses the Generator itself, so a single chain is the same whatever n_chains
        # code path; several chains get independent children of it.
        return [rng] if n_chains == 1 else rng.spawn(n_chains)

    def _devices(self, spec: ModelSpec) -> tuple | None:
        """The devices of a JAX fit (None: every device JAX sees)."""
        if self.devices is None:
            return None
        if spec.backend != "jax":
            raise ValueError(f"devices is for backend='jax'; this fit's backend is {spec.backend!r}")
        from .jax_backend.kernel import resolve_devices

        return resolve_devices(self.devices)

    def _n_threads(self, n_chains: int) -> int:
        return blocks.threads_per_chain(self.n_threads, n_chains, self.n_jobs)

    def _checkpoint_for(self, chain: int) -> str | None:
        if self.checkpoint_path is None:
            return None
        path = str(self.checkpoint_path)
        return path if self.n_chains == 1 else f"{path}.chain{chain}"

    def _fit(self, Y, resume: bool, missing_mask=None):
        Yv = data_matrix(Y, missing_mask)
        spec = self._spec()
        lik = spec.likelihood
        lik.validate(Yv)
        if lik.kind == "real":
            warn_if_unscaled(Yv)
        burn = self._burn_in()
        every = check_int("checkpoint_every", self.checkpoint_every, 1)
        if self.combine not in COMBINE:
            raise ValueError(f"combine must be one of {list(COMBINE)}; got {self.combine!r}")
        max_entries = check_int("stacking_max_entries", self.stacking_max_entries, 1)
        rngs = self._chain_generators()
        threads = blocks.Blocks(n_threads=self._n_threads(len(rngs)), devices=self._devices(spec))
        data = Data.from_array(Yv, lik)
        ladder = self._ladder(spec)
        starts = self._chain_starts(spec, len(rngs))
        jobs = [
            (rng, data, replace(spec, n_dims=start), int(self.n_iter), burn, self._checkpoint_for(c),
             every, resume, ladder, threads)
            for c, (rng, start) in enumerate(zip(rngs, starts, strict=True))
        ]  # fmt: skip
        if len(jobs) == 1:
            results = [_run_one(*jobs[0], verbose=self.verbose)]
        elif spec.backend == "jax":
            # One process holds the device: its chains run one after another there.
            results = [_run_one(*job, verbose=False) for job in jobs]
        else:
            # Chains from more dimensions cost more per sweep, so their starts order the dispatch.
            results = run_chains(_run_one, [(*job, False) for job in jobs], starts, self.n_jobs, shared=1)
        if ladder is not None:
            self.swap_rates_ = np.array([res[1] for res in results])
            results = [res[0] for res in results]
        with threadpool_limits(limits=1, user_api="blas"):
            kept = [res.record.samples for res in results]
            stacking = chain_weights(kept, data, spec, self.combine, max_entries)
        self._set_posterior(
            Posterior(tuple(results), data, spec, np.array(starts, dtype=np.int64), stacking, burn)
        )
        if len(results) > 1:
            self._warn_if_chains_disagree(burn)
        self._warn_if_cap_binds(burn)
        return self

    def _warn_if_cap_binds(self, burn: int) -> None:
        cap = self.spec_.max_dims
        if cap is None:
            return
        kept = self.traces_["n_active"][:, burn:]
        share = float(np.mean(kept >= cap)) if kept.size else 0.0
        if share > CAP_BINDS:
            message = (
                f"K+ was at max_dims={cap} in {share:.0%} of the kept sweeps: the posterior may want "
                "more dimensions than the cap allows (raise max_dims, or keep it to bound the cost)"
            )
            warnings.warn(message, CapReachedWarning, stacklevel=3)

    def _ladder(self, spec: ModelSpec):
        n = check_int("n_replicas", self.n_replicas, 1)
        if n == 1:
            return None
        top = check_positive("replica_top", self.replica_top)
        if top < 1.0:
            raise ValueError(f"replica_top must be at least 1; got {top}")
        return ladder_for(spec, n, top)

    def _warn_if_chains_disagree(self, burn: int) -> None:
        from .diagnostics import disagreement

        kept = {"the training log-likelihood": self.traces_["loglik"][:, burn:]}
        if self.spec_.ibp:
            kept["K+"] = self.traces_["n_active"][:, burn:]
        message = disagreement(kept)
        if message is not None:
            weights = ", ".join(f"{w:.2f}" for w in self.chain_weights_)
            starts = ", ".join(str(v) for v in self.chain_starts_)
            starts = "" if len(set(self.chain_starts_)) == 1 else f" (started from {starts} dimensions)"
            if self.stacking_.combine == "stack":
                message += (
                    f". Stacking weighed the chains{starts} by their "
                    f"leave-one-entry-out predictive densities: weights {weights}; predictions, "
                    "scores and the embedding use that mixture (summary() has each chain's figures)"
                )
            else:
                message += f". combine='pool' gives every chain its share of the samples ({weights})"
            warnings.warn(message, ChainsDisagreeWarning, stacklevel=3)

    def _set_posterior(self, post: Posterior) -> None:
        """The fitted attributes, all read from `post`. With several chains, what one chain
        gives (the final state, ``latent_``, the ``*_`` traces) is that of the chain of largest
        weight, ``best_chain_``."""
        self.posterior_ = post
        self.spec_ = post.spec
        self.chain_starts_ = post.chain_starts
        self.stacking_ = post.stacking
        self.chain_weights_ = post.weights
        self.best_chain_ = post.best_chain
        best = post.chains[self.best_chain_]
        self.state_: ChainState = best.state
        self.n_samples_fit_, self.n_features_in_ = post.shape
        self.traces_ = dict(post.traces)
        self.n_active_ = self.traces_["n_active"][self.best_chain_]
        self.log_likelihood_ = self.traces_["loglik"][self.best_chain_]
        self.alpha_ = self.traces_["alpha"][self.best_chain_]
        self.eta_ = self.traces_["eta"][self.best_chain_]
        self.ibp_beta_ = self.traces_["ibp_beta"][self.best_chain_]
        self.n_mixture_components_ = self.traces_["n_components"][self.best_chain_]
        self.latent_samples_ = [ordered_latent(smp.H) for smp in best.record.samples]
        self.latent_ = ordered_latent(best.state.H)

    def _posterior(self) -> Posterior:
        self._check_fitted()
        return self.posterior_

    # The sampler's tests (checkpoints, offsets, recovery) still read the kept samples by this
    # earlier name; ``posterior_.samples`` is the one to use.
    @property
    def _samples(self) -> tuple:
        return self._posterior().samples

    @property
    def reconstruction_(self) -> np.ndarray:
        """Posterior-mean reconstruction of the training matrix: the likelihood's mean averaged
        over every chain's kept samples, each chain weighted by ``chain_weights_``. Computed on
        first use (a count model's mean costs a softmax or exponential over all ``N x J``
        entries per sample), then kept with the posterior."""
        post = self._posterior()
        with threadpool_limits(limits=1, user_api="blas"):
            return post.reconstruction()

    # ----------------------------------------------------------------------------------------

    def _check_fitted(self) -> None:
        if not hasattr(self, "posterior_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; call fit first")

    def predict(self, Y=None, missing_mask=None, size_factors=None) -> np.ndarray:
        """Posterior-mean reconstruction of every entry (imputation of the unobserved ones).

        Without an argument: of the training matrix, averaged over all kept samples. With new
        rows `Y` (dense or sparse; NaN or `missing_mask` for unobserved entries): from their
        latent positions sampled as in :meth:`transform` (`size_factors` as there).
        """
        self._check_fitted()
        if Y is None:
            return self.reconstruction_.copy()
        post = self._posterior()
        name = type(self).__name__
        return new_rows(post, Y, missing_mask=missing_mask, size_factors=size_factors, owner=name)[1]

    def fit_transform(self, Y, y=None, **fit_params) -> np.ndarray:
        """Fit, then return ``latent_`` (the training rows' latent positions in the final sample)."""
        return self.fit(Y, y, **fit_params).latent_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # NaN marks unobserved entries
        tags.input_tags.sparse = True  # densified once; zeros are observed zeros
        tags.target_tags.required = False
        return tags

    def to_inference_data(self, Y_heldout=None):
        """The chains as an ``arviz.InferenceData`` that ``az.summary`` and ``az.plot_trace`` take
        as it is (see :func:`ibp_rflvm.diagnostics.to_inference_data`)."""
        from .diagnostics import to_inference_data

        return to_inference_data(self._posterior(), Y_heldout, owner=type(self).__name__)

    def summary(self, Y_heldout=None):
        """R-hat and bulk/tail ESS of label-invariant quantities, then one row per chain (its start,
        K+, effective dimensions, PSIS-LOO score and weight), as a pandas DataFrame."""
        from .diagnostics import summary

        return summary(self._posterior(), Y_heldout)


def _run_one(rng, data, spec, n_iter, burn, checkpoint, every, resume, ladder, threads, verbose: bool):
    progress = _progress(n_iter, verbose)
    # Worker processes start with default BLAS threading; one BLAS thread per chain is what we
    # want (the chain's own threads, `threads`, share its cores out by blocks instead).
    with threadpool_limits(limits=1, user_api="blas"):
        if ladder is None:
            result = run_chain(rng, data, spec, n_iter, burn, checkpoint, every, resume, progress, threads)
        else:
            result = run_tempered(
                rng, data, spec, n_iter, burn, ladder, progress, checkpoint, every, resume, threads
            )
    if progress is not None:
        progress.close()
    return result


def _progress(total: int, verbose: bool):
    if not verbose:
        return None
    from tqdm.auto import tqdm

    # tqdm reports sweeps per second; the chain adds the current K+ and, every few sweeps, the
    # effective number of dimensions as a postfix.
    return tqdm(total=total, unit="sweep", desc="MCMC", dynamic_ncols=True)


class IBPRFLVM(_RFLVMBase):
    """Sparse, infinite random Fourier feature latent variable model (IBP-RFLVM).

    Parameters
    ----------
    likelihood : observation model, a name from ``ibp_rflvm.likelihoods.REGISTRY``
        (``"gaussian"`` is the collapsed Gaussian).
    n_frequencies : number ``M`` of random Fourier frequencies (``2M`` features).
    n_iter : MCMC sweeps.
    burn_in : sweeps discarded before samples are kept; default ``n_iter // 2``.
    init_dims : latent dimensions at the start (the IBP adds and removes them). The default, 12,
        is generous on purpose: the sampler prunes unneeded dimensions readily but grows new
        widely used ones slowly, and chains started from 2 stay in a poorer mode
        (docs/sampler.md). With ``n_chains > 1`` the chains start from numbers spread evenly
        between 2 and `init_dims` (``chain_starts_``; 4 chains from 12: 2, 5, 9, 12), because
        which start reaches the better mode differs by data set; stacking then weighs them.
    random_state : seed or ``numpy.random.Generator``; the same seed gives the same chain.
    max_dims : cap on ``K+``, the number of dimensions in use (None: no cap). The prior is then
        the IBP conditioned on ``K+ <= max_dims``, which every update of ``Z`` respects exactly.
        On wide or large-count data ``K+`` otherwise grows for hundreds of sweeps, and the cost
        of a sweep with it: on Olivetti (400 x 4,096) 484 dimensions after 100 sweeps at about
        a minute per sweep. The default, 50, is above the dimensions any narrow data set here
        uses (Cambridge 4-6, cancer 13-37, mice 24-47); a fit whose ``K+`` sits at the cap
        warns (``CapReachedWarning``). docs/sampler.md section 7 has the measurements.
    alpha_prior : ``(shape, rate)`` of the Gamma prior on the IBP concentration.
    ibp_beta : the sharing parameter ``beta`` of the two-parameter IBP (Ghahramani, Griffiths and
        Sollich 2007): a number fixes it, None learns it under `ibp_beta_prior`.
        ``E[dims per row] = alpha`` whatever ``beta``, while ``E[K+] = alpha sum_{i<=N}
        beta / (beta + i - 1)``, so a small ``beta`` means fewer, more widely shared dimensions.
        The default, 1.0, is the one-parameter IBP of the paper, and the only value that keeps
        the paper's stick-breaking slice step (``sampler="paper"`` uses it, and refuses another
        number); otherwise ``Z`` is updated by the exchangeable moves alone. ``ibp_beta_`` and
        ``traces_["ibp_beta"]`` hold its trace. Learned, it did not beat ``beta = 1`` on held-out
        density from every start (docs/sampler.md section 10), hence the default.
    ibp_beta_prior : ``(shape, rate)`` of the Gamma prior on ``beta`` when it is learned.
    eta_prior : ``(shape, rate)`` of the Gamma prior on the DP concentration.
    lam0 : NIW mean-precision scale of the frequency mixture.
    likelihood_params : hyperparameters of the likelihood, e.g. ``{"a0": 1.0, "b0": 1.0}`` for
        the Gaussian's inverse-gamma prior on the noise variances; ``{"size_factors": "total"}``
        gives the Poisson and negative binomial rows their own depth (``ibp_rflvm.likelihoods.offsets``).
    bias : add a constant feature; default: the likelihood's choice (off for the Gaussian).
    n_chains : independent chains, run in parallel processes (joblib), each with its own
        Generator spawned from `random_state`; predictions, scores, the reconstruction, the
        embedding and the posteriors of ``K+`` and of the effective dimensions use all chains'
        kept samples, chain ``k`` weighted by ``chain_weights_[k]`` (see `combine`);
        ``traces_`` holds every chain's traces. What one chain gives is that of the chain of
        largest weight, ``best_chain_``: the traces ``n_active_``, ``log_likelihood_``,
        ``alpha_``, ``eta_``, ``ibp_beta_`` and ``n_mixture_components_``, ``latent_samples_``,
        and the final sample that ``latent_``, ``state_`` and ``transform`` use.
    n_jobs : worker processes for the chains (default: one per chain, at most the CPU count).
        Under ``joblib.parallel_config(backend="dask")`` the chains run as tasks on that Dask
        cluster instead, which bounds them by its threads (:mod:`ibp_rflvm.chain_pool`;
        docs/chains.md).
    n_threads : threads for each chain's sweep (default None: the available CPUs, from the
        process's affinity, shared among the chains that run at once, at least 1 each). The
        Polya-gamma likelihoods' row and column work (Polya-gamma draws, ``Phi beta``, row
        log-likelihoods, weight precisions and their Cholesky draws, CRT totals) runs on them by
        blocks of fixed size (the Poisson's and multinomial's ``Phi beta`` and row
        log-likelihoods; not yet the collapsed Gaussian); the chain is the same bit for bit
        whatever `n_threads`, and a checkpoint written with one value resumes with another
        (docs/scaling.md).
    backend : ``"numba"`` (default) or ``"jax"``: where the count likelihoods' sweep does its
        ``N x J`` work (:mod:`ibp_rflvm.jax_backend`, the ``[jax]`` extra; a GPU where JAX sees one,
        else the CPU). The posterior and outputs are the same; on ``"jax"`` the whole sweep is
        one compiled device step (rows in parallel; docs/gpu.md) and chains run one after another.
    devices : ``backend="jax"`` only: the JAX devices whose rows-mesh one chain's rows are
        sharded over (a sequence of ``jax.Device``, or an int for the first that many; default
        None: every device JAX sees). The chain is the same bit for bit on any number of them
        that divides ``gcd(N, 8)``; with more, the largest such number is used.
    checkpoint_path : file where the chain (state, generator, traces, kept samples) is saved
        atomically every `checkpoint_every` sweeps, as ``.npy`` arrays and JSON in a zip, never
        a pickle; ``fit(Y, resume=True)`` continues from it, or extends a finished chain to a
        larger `n_iter`. With several chains, chain ``c`` uses ``<checkpoint_path>.chain<c>``.
    verbose : show a progress bar (sweeps per second and current K+).
    sampler : ``"default"`` (joint ``(z, x)`` flips, row transfers and absorb/emit moves
        between dimensions with aligned frequencies, and singleton birth/death after every IBP
        step, and a start scaled so that ``H W^T`` has variance about 2; docs/sampler.md) or
        ``"paper"`` (the paper's sweep and start, kept for comparison).
    n_replicas : levels of replica exchange over the Gaussian noise prior (1 = off). Level
        ``l`` multiplies the prior scale ``b0`` by ``replica_top ** (l / (n_replicas - 1))``;
        adjacent levels swap states before every sweep and only the coldest level's chain is
        kept (``swap_rates_`` gives each pair's acceptance rate). Costs `n_replicas` sweeps per
        sweep; docs/sampler.md section 4 gives its measured effect.
    replica_top : the hottest level's multiple of ``b0``.
    combine : how several chains are combined. ``"stack"`` (default): stacking weights
        (Yao, Vehtari and Gelman 2022) that maximise the mixture's PSIS-LOO predictive density of
        the observed training entries, each chain scored on its own kept samples
        (:mod:`ibp_rflvm.stacking`; ``stacking_`` has each chain's score, its standard
        error and the share of entries with an unreliable Pareto ``k``). ``"pool"``: every
        kept sample weighs the same. One chain always has ``chain_weights_ == [1.0]``.
    stacking_max_entries : at most this many observed entries are scored for stacking (a fixed
        random subset above it; the objective is a sum over entries, so a subset estimates it).
    """

    _ibp = True

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

    def _n_dims(self) -> int:
        return self.init_dims

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
    """Dense random Fourier feature latent variable model: the IBP switched off (``Z = 1``).

    Same parameters as :class:`IBPRFLVM`, with `n_components` fixed latent dimensions in place
    of `init_dims` (every chain starts from them; stacking still weighs the chains' modes).
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

    def _n_dims(self) -> int:
        return self.n_components
