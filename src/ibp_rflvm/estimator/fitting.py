"""What the estimators share: ``fit``, the fitted attributes and the methods read from the posterior.

:class:`~ibp_rflvm.IBPRFLVM` and :class:`~ibp_rflvm.RFLVM` (:mod:`ibp_rflvm.estimator`) differ
only in their parameters and whether the IBP is on. ``__init__`` stores parameters only;
``fit`` runs the MCMC chains and keeps what they leave as ``posterior_``
(:class:`~ibp_rflvm.summaries.posterior.Posterior`); fitted attributes end in ``_``.
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

from ..likelihoods import make_likelihood
from ..mcmc.driver import run_chain
from ..mcmc.tempering import ladder_for, run_tempered
from ..model import ChainState, Data, ModelSpec
from ..plumbing import blocks
from ..plumbing.chain_pool import run_chains
from ..plumbing.sparse import data_matrix
from ..plumbing.validation import (
    check_int,
    check_positive,
    check_random_state,
    frame_labels,
    is_frame,
    resolve_burn_in,
    warn_if_unscaled,
)
from ..priors import FeaturePrior, default_prior
from ..state import FREQUENCY_UPDATES, has_gradient
from ..summaries.dimensions import EffectiveDimensionsMixin
from ..summaries.embedding import PosteriorEmbeddingMixin
from ..summaries.mixin import LatentSummaryMixin
from ..summaries.posterior import Posterior, ordered_latent
from ..summaries.predictive import PredictiveMixin, new_rows
from ..summaries.stacking import COMBINE, chain_weights


class ChainsDisagreeWarning(UserWarning):
    """Chains of one fit ended in different posterior modes (split R-hat above 1.1)."""


class CapReachedWarning(UserWarning):
    """``K+`` sat at ``max_dims`` for most kept sweeps: the cap, not the data, chose it."""


#: Share of kept sweeps at the cap above which a fit warns that the cap binds.
CAP_BINDS = 0.5


#: ``"default"``: the scaled start, the scale move (docs/sampler.md, section 13) and, for the
#: IBP, the dimension moves (docs/sampler.md, section 2); ``"paper"``: the paper's sweep and
#: its unit-variance PCA start (the reproduction's "as published" setting).
SAMPLERS = ("default", "paper")
#: The default sampler's frequency move (``frequency_update=None``; docs/sampler.md section 12).
DEFAULT_FREQUENCY_UPDATE = "ess"
#: Leapfrog steps of the default sweep's HMC move (docs/record/sampler.md, section 14).
DEFAULT_HMC_LEAPFROG = 10


class _RFLVMBase(
    PredictiveMixin, EffectiveDimensionsMixin, PosteriorEmbeddingMixin, LatentSummaryMixin, BaseEstimator
):
    """Shared fitting; subclasses say whether the IBP is on. A fit leaves ``posterior_`` (a
    :class:`~ibp_rflvm.summaries.posterior.Posterior`: the chains, their weights from
    :mod:`ibp_rflvm.summaries.stacking`, the data view and the spec); held-out scoring and new
    rows (:mod:`ibp_rflvm.summaries.predictive`), the number of dimensions
    (:mod:`ibp_rflvm.summaries.dimensions`), the embedding (:mod:`ibp_rflvm.summaries.embedding`)
    and the diagnostics (:mod:`ibp_rflvm.summaries.diagnostics`) are functions of it, which the
    mixins and methods here name."""

    _ibp: bool = True
    #: Fitted attributes ``<name>_`` of the prior's variables that the estimator documents
    #: whatever its prior, with the constant a fit whose prior lacks the variable reports.
    _prior_traces: dict = {}

    def _n_dims(self) -> int:  # pragma: no cover - overridden
        raise NotImplementedError

    def _max_dims(self) -> int | None:
        return None

    def _z_prior(self) -> FeaturePrior:
        """The prior on ``Z`` (used where the model has one): the default unless overridden."""
        return default_prior()

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
        z_prior = self._z_prior() if self._ibp else None
        if paper and z_prior is not None and (why := z_prior.needs_moves()) is not None:
            raise ValueError(
                f"sampler='paper' runs no dimension moves, and {why}: it needs sampler='default'"
            )
        return ModelSpec(
            n_frequencies=n_frequencies,
            n_dims=n_dims,
            bias=lik.default_bias if self.bias is None else bool(self.bias),
            alpha_prior=tuple(self.alpha_prior) if self._ibp else (1.0, 1.0),
            eta_prior=tuple(self.eta_prior),
            lam0=float(self.lam0),
            likelihood=lik,
            moves=self._ibp and not paper,
            scaled_start=not paper,
            max_dims=self._max_dims(),
            backend=self.backend,
            z_prior=z_prior,
            frequency_update=self._frequency_update(paper),
            # The paper's sweep has no scale move; the default sweep has it on either backend.
            scale_move=False if paper else None,
            hmc_leapfrog=self._hmc_leapfrog(paper, lik),
            # Over the burn-in, whose samples are not kept: the kept sweeps run one fixed kernel.
            hmc_adapt_sweeps=self._burn_in(),
        )

    def _hmc_leapfrog(self, paper: bool, lik) -> int:
        """Leapfrog steps of the continuous block's HMC move in the default sweep, on either
        backend, for a likelihood with a gradient (all but the multinomial); not in the paper's
        sweep."""
        if paper:
            return 0
        return DEFAULT_HMC_LEAPFROG if has_gradient(lik) else 0

    def _prior_attributes(self) -> None:
        """``<name>_``: the best chain's trace of each of the prior on ``Z``'s own variables."""
        best = self.best_chain_
        for name, trace in self.traces_.items():
            if name in self.posterior_.chains[best].record.z_traces:
                setattr(self, f"{name}_", trace[best])
        for name, value in self._prior_traces.items():
            if name not in self.traces_:
                setattr(self, f"{name}_", np.full(self.n_active_.shape, value))

    def _frequency_update(self, paper: bool) -> str:
        """The frequencies' move: the one asked for, else the sampler's own (the paper's step for
        ``sampler="paper"``, elliptical slice sampling on either backend otherwise)."""
        chosen = getattr(self, "frequency_update", None)
        if chosen is None:
            return "mh" if paper else DEFAULT_FREQUENCY_UPDATE
        if chosen not in FREQUENCY_UPDATES:
            raise ValueError(f"frequency_update must be one of {FREQUENCY_UPDATES} or None; got {chosen!r}")
        return chosen

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
        """Run the MCMC chains on `Y` and keep what they leave.

        Parameters
        ----------
        Y : array-like or scipy.sparse matrix of shape (n_samples, n_features)
            The data. Dense input marks unobserved entries with NaN (or ``None``, ``pd.NA``);
            a sparse matrix (CSR or CSC; other formats are converted) has observed zeros.
            Sparse and dense input with the same entries give the same chain bit for bit: the
            sampler holds the data densely (:doc:`/memory`).
        y : None
            Ignored; there for scikit-learn's API.
        resume : bool, default=False
            With a `checkpoint_path` whose checkpoint exists, continue every chain from its
            checkpoint: the result equals the uninterrupted run bit for bit. A larger `n_iter`
            than the checkpoint's extends a finished chain as long as the burn-in stays the
            same (give the checkpoint's `burn_in` explicitly: the default ``n_iter // 2``
            moves with `n_iter`).
        missing_mask : array-like of bool of shape (n_samples, n_features), default=None
            ``True`` marks an unobserved entry (the orientation of ``np.isnan(Y)``), of dense
            or sparse `Y`; with NaN as well, an entry is unobserved when either says so.
            Unobserved entries are imputed inside the chain, never treated as zeros.

        Returns
        -------
        self
            The fitted estimator.

        Raises
        ------
        ValueError
            Data the likelihood cannot take (non-numeric, infinite, a row or column with no
            observed entry, negative or non-integer counts, ...), with the first offending
            entries named; a parameter out of range.
        ibp_rflvm.plumbing.checkpoint.CheckpointError
            With `resume`, a checkpoint for other data or settings, or a damaged file (a
            ``ValueError`` naming the file and what differs).

        Warns
        -----
        UnscaledDataWarning
            Gaussian data far from unit scale (:doc:`/getting_started`, *Scaling the data*).
        ChainsDisagreeWarning
            Several chains whose split R-hat of the log-likelihood or ``K+`` is above 1.1.
        CapReachedWarning
            ``K+`` at `max_dims` for most kept sweeps.
        """
        # The chain's matrices are small (L = 2M features) and its hot loops are compiled and
        # single-threaded: multi-threaded BLAS only oversubscribes the cores (5x slower on 2
        # cores), and parallel chains want one thread each anyway.
        with threadpool_limits(limits=1, user_api="blas"), frame_labels(Y):
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
        from ..jax_backend.kernel import resolve_devices

        return resolve_devices(self.devices)

    def _n_threads(self, n_chains: int) -> int:
        return blocks.threads_per_chain(self.n_threads, n_chains, self.n_jobs)

    def _checkpoint_for(self, chain: int) -> str | None:
        if self.checkpoint_path is None:
            return None
        path = str(self.checkpoint_path)
        return path if self.n_chains == 1 else f"{path}.chain{chain}"

    def _fit(self, Y, resume: bool, missing_mask=None):
        names = _column_names(Y)
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
        if spec.backend == "jax":
            # Importing the device kernel registers its target with make_target, which sits a
            # floor below the device package and does not import it.
            from ..jax_backend import kernel  # noqa: F401
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
        # scikit-learn's convention: the names of a DataFrame's columns when all are strings.
        if names is not None:
            self.feature_names_in_ = names
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        # The rows' names, for the summaries indexed by row (dimension_positions_, ...).
        self._row_index = Y.index.copy() if is_frame(Y) else None
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
        from ..summaries.diagnostics import disagreement

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
        self._prior_attributes()
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
        """Posterior-mean reconstruction of the training matrix, ``n_samples x n_features``.

        The likelihood's mean averaged over every chain's kept samples, each chain weighted by
        ``chain_weights_``; unobserved entries are imputed. Computed on first use (a count
        model's mean costs a softmax or exponential over all ``N x J`` entries per sample),
        then kept with the posterior.
        """
        post = self._posterior()
        with threadpool_limits(limits=1, user_api="blas"):
            return post.reconstruction()

    # ----------------------------------------------------------------------------------------

    def _check_fitted(self) -> None:
        if not hasattr(self, "posterior_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; call fit first")

    def predict(self, Y=None, missing_mask=None, size_factors=None) -> np.ndarray:
        """Posterior-mean reconstruction of every entry, imputing the unobserved ones.

        Parameters
        ----------
        Y : array-like or scipy.sparse matrix of shape (n_new, n_features), default=None
            None: the training matrix, averaged over every chain's kept samples
            (``reconstruction_``). New rows: reconstructed from their latent positions, sampled
            as in :meth:`transform`.
        missing_mask : array-like of bool of shape (n_new, n_features), default=None
            ``True`` marks an unobserved entry of new rows `Y`, as in :meth:`fit`.
        size_factors : array-like of shape (n_new,), default=None
            The new rows' size factors, for a count likelihood fitted with an array of them
            (see :meth:`transform`).

        Returns
        -------
        ndarray of shape (n_samples, n_features) or (n_new, n_features)
            The likelihood's posterior mean of every entry.
        """
        self._check_fitted()
        if Y is None:
            return self.reconstruction_.copy()
        post = self._posterior()
        name = type(self).__name__
        return new_rows(post, Y, missing_mask=missing_mask, size_factors=size_factors, owner=name)[1]

    def fit_transform(self, Y, y=None, **fit_params) -> np.ndarray:
        """Fit, then return the training rows' latent positions in the best chain's final sample.

        Parameters
        ----------
        Y : array-like or scipy.sparse matrix of shape (n_samples, n_features)
            The data, as in :meth:`fit`.
        y : None
            Ignored.
        **fit_params : dict
            Further arguments of :meth:`fit` (`resume`, `missing_mask`).

        Returns
        -------
        ndarray of shape (n_samples, K+)
            ``latent_``. For a summary of every kept sample use ``embedding_``.
        """
        return self.fit(Y, y, **fit_params).latent_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # NaN marks unobserved entries
        tags.input_tags.sparse = True  # densified once; zeros are observed zeros
        tags.target_tags.required = False
        return tags

    def to_inference_data(self, Y_heldout=None):
        """The chains as an ``arviz.InferenceData``, for ArviZ's summaries and plots.

        Parameters
        ----------
        Y_heldout : array-like of shape (n_samples, n_features), default=None
            Held-out entries of the training rows (NaN elsewhere); their pointwise log
            densities then fill the ``log_likelihood`` group.

        Returns
        -------
        arviz.InferenceData
            Chains as the ``chain`` dimension. ``posterior`` (kept sweeps) and
            ``warmup_posterior`` (burn-in) hold the quantities that do not depend on how a
            sample labels its dimensions (``k_plus``, ``loglik``, ``alpha``, ``eta``, ...), so
            ``az.summary`` and ``az.plot_trace`` take it as it is; the group ``latent`` holds
            the latent positions (see :func:`ibp_rflvm.summaries.diagnostics.to_inference_data`).
        """
        from ..summaries.diagnostics import to_inference_data

        return to_inference_data(self._posterior(), Y_heldout, owner=type(self).__name__)

    def summary(self, Y_heldout=None):
        """Convergence diagnostics of the label-invariant quantities, then one row per chain.

        Parameters
        ----------
        Y_heldout : array-like of shape (n_samples, n_features), default=None
            Held-out entries, passed to :meth:`to_inference_data`.

        Returns
        -------
        pandas.DataFrame
            ArviZ's mean, sd, ``ess_bulk``, ``ess_tail`` and ``r_hat`` of ``loglik``,
            ``k_plus``, ``alpha``, ``eta``, a few latent distances and ``effective_dims``; then
            one row per chain: its ``start``, median ``k_plus`` and ``effective_dims``,
            ``elpd_loo`` with ``elpd_loo_se``, ``pareto_k_bad``, ``pareto_k_above_07``,
            ``weight`` and what its moves did over the kept sweeps (``flips_per_sweep``,
            ``transfer_rate``, ``absorb_rate``, ``births_per_sweep``, ``deaths_per_sweep``,
            ``w_accept_rate``, ``w_move_rate``, ``x_evals_per_row``, ...;
            :func:`ibp_rflvm.summaries.diagnostics.move_table`).
            With several chains ``r_hat`` is the split R-hat over all of them; with
            one, it compares the chain's two halves (:func:`ibp_rflvm.summaries.diagnostics.summary`).
            How to read it: :doc:`/chains`.
        """
        from ..summaries.diagnostics import summary

        return summary(self._posterior(), Y_heldout)


def _column_names(Y) -> np.ndarray | None:
    """A DataFrame's column names as an object array when every one is a string, else None."""
    columns = getattr(Y, "columns", None)
    if columns is None or not all(isinstance(c, str) for c in columns):
        return None
    return np.asarray(columns, dtype=object)


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
