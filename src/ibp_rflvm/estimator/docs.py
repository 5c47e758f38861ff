"""The estimators' docstrings, numpydoc sections assembled from one entry per parameter and fitted
attribute, so that :class:`~ibp_rflvm.IBPRFLVM` and :class:`~ibp_rflvm.RFLVM` describe what they
share in the same words. ``tests/test_docstrings.py`` validates the result with numpydoc.
"""

from __future__ import annotations

from textwrap import dedent, indent

from ..summaries.stacking import MAX_ENTRIES

#: name -> (type, description). The description is plain reStructuredText, dedented.
PARAMETERS: dict[str, tuple[str, str]] = {
    "n_components": ("int, default=2", """
        Number of latent dimensions, fixed. Every chain starts from them; stacking still weighs
        the chains' modes."""),
    "likelihood": (
        '{"gaussian", "negbinom", "poisson", "multinomial", "bernoulli", "binomial"}, default="gaussian"',
        """
        Observation model, a name from ``ibp_rflvm.likelihoods.REGISTRY``. ``"gaussian"`` is the
        collapsed Gaussian for real values (standardise the columns first); the others take
        counts or binary data. What each assumes: :doc:`/likelihoods`."""),
    "n_frequencies": ("int, default=50", """
        Number ``M`` of random Fourier frequencies; the feature map has ``2M`` features (plus
        the bias)."""),
    "n_iter": ("int, default=100", """
        MCMC sweeps per chain, burn-in included. A first real fit runs a few hundred
        (:doc:`/chains`)."""),
    "burn_in": ("int or None, default=None", """
        Sweeps discarded before samples are kept; None keeps the second half (``n_iter // 2``
        discarded). Must be smaller than `n_iter`."""),
    "init_dims": ("int, default=12", """
        Latent dimensions at the start (the IBP adds and removes them). Generous on purpose:
        the sampler prunes unneeded dimensions readily but grows new widely used ones slowly,
        and chains started from 2 stay in a poorer mode (:doc:`/sampler`, section 3). With
        ``n_chains > 1`` the chains start from numbers spread evenly between 2 and `init_dims`
        (``chain_starts_``; 4 chains from 12: 2, 5, 9, 12), because which start reaches the
        better mode differs by data set; stacking then weighs them."""),
    "random_state": ("int, numpy.random.Generator, numpy.random.SeedSequence or None, default=None", """
        Seed of the chains. The same seed gives the same chains bit for bit; with several
        chains each gets its own Generator spawned from it."""),
    "max_dims": ("int or None, default=50", """
        Cap on ``K+``, the number of dimensions any row uses (None: no cap). The prior is then
        the IBP conditioned on ``K+ <= max_dims``, which every update of ``Z`` respects exactly.
        Without it ``K+`` grows for hundreds of sweeps on wide or large-count data, and the cost
        of a sweep with it (Olivetti, 400 x 4,096: 484 dimensions after 100 sweeps). The default
        is above what the narrow data sets here use (Cambridge 4-6, cancer 13-37, mice 24-47); a
        fit whose ``K+`` sits at the cap warns with :class:`CapReachedWarning`. Measurements:
        :doc:`/sampler`, section 7."""),
    "alpha_prior": ("tuple of (float, float), default=(1.0, 1.0)", """
        ``(shape, rate)`` of the Gamma prior on the IBP concentration ``alpha``."""),
    "eta_prior": ("tuple of (float, float), default=(1.0, 1.0)", """
        ``(shape, rate)`` of the Gamma prior on the concentration ``eta`` of the Dirichlet
        process mixture over the frequencies."""),
    "lam0": ("float, default=1.0", """
        Mean-precision scale of the normal-inverse-Wishart prior of the frequency mixture's
        components."""),
    "likelihood_params": ("dict or None, default=None", """
        Hyperparameters of the likelihood, e.g. ``{"a0": 1.0, "b0": 1.0}`` for the Gaussian's
        inverse-gamma prior on the noise variances, ``{"n_trials": 10}`` for the binomial, or
        ``{"size_factors": "total"}`` to give the Poisson and negative binomial rows their own
        depth (:doc:`/likelihoods`, *Size factors*)."""),
    "bias": ("bool or None, default=None", """
        Add a constant feature. None: the likelihood's choice (off for the Gaussian, on for the
        count and binary likelihoods)."""),
    "n_chains": ("int, default=1", """
        Independent chains, each with its own Generator spawned from `random_state`, run in
        parallel processes. Predictions, scores, the reconstruction, the embedding and the
        posteriors of ``K+`` and of the effective dimensions use every chain's kept samples,
        chain ``k`` weighted by ``chain_weights_[k]`` (see `combine`). What one chain gives
        (``n_active_`` and the other single-chain traces, ``latent_``, ``latent_samples_``,
        ``state_``, :meth:`transform`) is that of the chain of largest weight, ``best_chain_``.
        :doc:`/chains`."""),
    "n_jobs": ("int or None, default=None", """
        Worker processes for the chains (None: one per chain, at most the CPU count). Under
        ``joblib.parallel_config(backend="dask")`` the chains run as tasks on that Dask cluster
        instead (:doc:`/chains`, *A Dask cluster*)."""),
    "checkpoint_path": ("str or None, default=None", """
        File where each chain (state, generator, traces, kept samples) is saved atomically every
        `checkpoint_every` sweeps, as ``.npy`` arrays and JSON in a zip, never a pickle.
        ``fit(Y, resume=True)`` continues from it, or extends a finished chain to a larger
        `n_iter`. With several chains, chain ``c`` uses ``<checkpoint_path>.chain<c>``."""),
    "checkpoint_every": ("int, default=10", """
        Sweeps between checkpoints (with `checkpoint_path`)."""),
    "verbose": ("bool, default=False", """
        Show a progress bar (sweeps per second and the current ``K+``) for a single chain."""),
    "sampler": ('{"default", "paper"}, default="default"', """
        ``"default"``: joint ``(z, x)`` flips, row transfers, absorb/emit moves between
        dimensions with aligned frequencies and singleton birth/death after every IBP step, a
        move of each dimension's scale along the direction the likelihood cannot see and, with
        ``backend="numba"``, a Hamiltonian Monte Carlo move of all latent positions and
        frequencies at once (its step adapted over the burn-in; not for the multinomial), from
        a start scaled so that ``H W^T`` has variance about 2.
        ``"paper"``: the paper's sweep and its unit-variance PCA start, kept for comparison
        (:doc:`/sampler`)."""),
    "frequency_update": ('{"ess", "mh"} or None, default=None', """
        How the random frequencies ``W`` (the learned kernel) move. ``"ess"``: elliptical slice
        sampling of each frequency under its mixture component, which moves every frequency
        every sweep at any data size; ``"mh"``: the paper's Metropolis-Hastings step with the
        component as the proposal, which almost never accepts beyond a few hundred rows and
        columns, leaving the kernel at its start. None: the sampler's own: ``"mh"`` for
        ``sampler="paper"``, else ``"ess"``, on either backend (:doc:`/sampler`, section 12)."""),
    "n_replicas": ("int, default=1", """
        Levels of replica exchange over the Gaussian noise prior (1: off). Level ``l``
        multiplies the prior scale ``b0`` by ``replica_top ** (l / (n_replicas - 1))``; adjacent
        levels swap states before every sweep and only the coldest level's chain is kept
        (``swap_rates_``). Costs `n_replicas` sweeps per sweep; its measured effect:
        :doc:`/sampler`, section 4."""),
    "replica_top": ("float, default=5.0", """
        The hottest replica's multiple of the noise prior's scale ``b0`` (at least 1)."""),
    "combine": ('{"stack", "pool"}, default="stack"', """
        How several chains are combined. ``"stack"``: stacking weights (Yao, Vehtari and Gelman
        2022) that maximise the mixture's PSIS-LOO predictive density of the observed training
        entries, each chain scored on its own kept samples (``stacking_``). ``"pool"``: every
        kept sample weighs the same. One chain always has ``chain_weights_ == [1.0]``."""),
    "stacking_max_entries": (f"int, default={MAX_ENTRIES}", """
        At most about this many observed entries are scored for stacking (those of a fixed
        random subset of rows above it; the objective is a sum over entries, so a subset
        estimates it)."""),
    "ibp_beta": ("float or None, default=1.0", """
        The sharing parameter ``beta`` of the two-parameter IBP (Ghahramani, Griffiths and
        Sollich 2007); None learns it under `ibp_beta_prior`. ``E[dims per row] = alpha``
        whatever ``beta``, while ``E[K+] = alpha sum_{i<=N} beta / (beta + i - 1)``, so a small
        ``beta`` means fewer, more widely shared dimensions. The default is the paper's
        one-parameter IBP and the only value ``sampler="paper"`` accepts. Learned, it did not
        beat ``beta = 1`` on held-out density from every start (:doc:`/sampler`, section 10)."""),
    "ibp_beta_prior": ("tuple of (float, float), default=(1.0, 1.0)", """
        ``(shape, rate)`` of the Gamma prior on ``beta`` when it is learned."""),
    "z_prior": ('{"ibp", "gamma-poisson"} or FeaturePrior, default="ibp"', """
        The prior on ``Z``, which dimensions each row uses. ``"ibp"``: the paper's Indian buffet
        process, ``z`` in {0, 1}. ``"gamma-poisson"``: the infinite gamma-Poisson feature model
        (Titsias 2007), ``z`` a count that scales the coordinate it switches on
        (``h = z x``); zero still means unused, ``E[K+] = alpha log(1 + N)`` and a row's counts
        sum to ``alpha`` on average (:doc:`/model`). It has no ``ibp_beta``, runs with
        ``sampler="default"`` and on ``backend="numba"`` only. A
        :class:`~ibp_rflvm.priors.FeaturePrior` object is used as it is, with its own
        hyperparameters (the named priors' parameters then stay at their defaults)."""),
    "z_prior_rate": ("float, default=1.0", """
        The rate ``b`` of the gamma-Poisson prior's gamma law of the dimensions' Poisson rates
        (``z_prior="gamma-poisson"`` only): ``E[K+] = alpha log(1 + N / b)`` and a row's
        counts sum to ``alpha / b`` on average."""),
    "n_threads": ("int or None, default=None", """
        Threads for each chain's sweep (None: the CPUs of the process's affinity shared among
        the chains that run at once, at least 1 each). The Polya-gamma likelihoods' row and
        column work runs on them in blocks of fixed size; the chain is the same bit for bit
        whatever `n_threads`, and a checkpoint written with one value resumes with another
        (:doc:`/scaling`)."""),
    "backend": ('{"numba", "jax"}, default="numba"', """
        Where the sweep runs: compiled CPU kernels, or JAX (the ``jax`` extra, count
        likelihoods) on a GPU where JAX sees one, else the CPU. On ``"jax"`` the whole sweep is
        one compiled device step, rows in parallel given the sticks (:doc:`/gpu`); the
        posterior and the outputs are the same, and several chains run one after another. The
        first JAX fit of a configuration in a process compiles that step during its first sweep,
        about 40 s on a CPU (the project's 2-core machine); later fits of the same shapes reuse
        it (:doc:`/gpu`, *Compilation, and fixed shapes*)."""),
    "devices": ("sequence of jax.Device, int or None, default=None", """
        ``backend="jax"`` only: the devices one chain's rows are sharded over (an int: the
        first that many of ``jax.devices()``; None: every device JAX sees), a number that
        divides ``gcd(N, 8)``; with more devices than that, the largest such number is used.
        Without the HMC move the chain is the same bit for bit whatever the number; with it
        (the default sweep) chains on different numbers agree in distribution (:doc:`/gpu`)."""),
}

#: name -> (type, description) of the fitted attributes. Properties get numpydoc's link to
#: their own documentation and the first sentence of their docstring in place of this text.
ATTRIBUTES: dict[str, tuple[str, str]] = {
    "n_active_": ("ndarray of shape (n_iter,)", """
        ``K+`` (the number of dimensions any row uses) after each sweep of the best chain. The
        dense model's is constant, its `n_components`."""),
    "latent_": ("ndarray of shape (n_samples, K+)", """
        The training rows' latent positions ``X * Z`` in the best chain's final sample, active
        dimensions only, most used first; the IBP's zeros are exact. One sample: its
        dimensions have no identity across samples or chains, so summaries use
        ``embedding_``."""),
    "latent_samples_": ("list of ndarray of shape (n_samples, K+_s)", """
        ``latent_`` of each kept sample of the best chain, in sweep order."""),
    "embedding_": ("ndarray of shape (n_samples, embedding_dims_)", """
        Posterior embedding of the training rows: kernel principal components of the
        posterior-mean kernel over every chain's kept samples (:doc:`/embedding`). That kernel
        is of the rows' function values (random features times weights), not of the latent
        positions, so its width, ``embedding_dims_``, is not the latent dimension: it is the
        components carrying 90% of the kernel's trace (never fewer than the posterior median
        of ``K+``, the dense model's `n_components`). The map from the latent positions to
        the function values is non-linear, and samples and chains that place the rows
        differently add components of their own, so ``RFLVM(n_components=5)`` can give many
        more than 5 columns. For coordinates as wide as the latent use ``latent_`` (one
        sample) or the first columns of ``embedding_`` (``embedding(n)``)."""),
    "embedding_std_": ("ndarray of shape (n_samples, embedding_dims_)", """
        Posterior standard deviation of each row's ``embedding_`` coordinates; larger for
        rows with fewer observed entries (:doc:`/latent_space`)."""),
    "embedding_dims_": ("int", """
        The width of ``embedding_``: the kernel principal components carrying 90% of the
        centred posterior kernel's trace, and at least the posterior median of ``K+``."""),
    "reconstruction_": ("ndarray of shape (n_samples, n_features)", """
        Posterior-mean reconstruction of the training matrix, unobserved entries imputed."""),
    "dimensions_": ("pandas.DataFrame", """
        One row per latent dimension the posterior is sure of, matched across samples:
        ``usage``, ``rows``, ``probability``, ``share``, ``chains`` (the share of chains that
        found it) and ``top_columns`` (:doc:`/latent_space`)."""),
    "dimension_usage_": ("pandas.DataFrame of shape (n_samples, n_dims)", """
        Posterior probability that each row uses each dimension of ``dimensions_``."""),
    "dimension_effects_": ("pandas.DataFrame of shape (n_features, n_dims)", """
        Each dimension's posterior-mean effect on each column (the change of the column's
        linear predictor with the dimension on minus off, over the rows that use it)."""),
    "dimension_positions_": ("pandas.DataFrame of shape (n_samples, n_dims)", """
        Each row's posterior-mean position on each dimension of ``dimensions_`` (0 where the row
        does not use it), the samples oriented alike."""),
    "dimension_positions_std_": ("pandas.DataFrame of shape (n_samples, n_dims)", """
        The posterior standard deviation of each row's position on each dimension."""),
    "feature_names_in_": ("ndarray of shape (n_features,)", """
        The columns' names, when `Y` was a DataFrame whose column names are all strings
        (absent otherwise); :meth:`top_columns` and ``dimension_effects_`` use them."""),
    "log_likelihood_": ("ndarray of shape (n_iter,)", """
        Observed-data log-likelihood after each sweep of the best chain."""),
    "alpha_": ("ndarray of shape (n_iter,)", """
        The IBP concentration after each sweep of the best chain (the dense model: 1.0)."""),
    "ibp_beta_": ("ndarray of shape (n_iter,)", """
        The IBP's sharing parameter after each sweep of the best chain (constant unless
        learned, ``ibp_beta=None``)."""),
    "eta_": ("ndarray of shape (n_iter,)", """
        The frequency mixture's Dirichlet process concentration after each sweep of the best
        chain."""),
    "n_mixture_components_": ("ndarray of shape (n_iter,)", """
        Occupied components of the frequency mixture after each sweep of the best chain."""),
    "traces_": ("dict of str to ndarray of shape (n_chains, n_iter)", """
        Every chain's per-sweep traces: ``"n_active"`` (``K+``), ``"loglik"``, ``"alpha"``,
        ``"eta"``, ``"n_components"`` and ``"ibp_beta"``."""),
    "chain_starts_": ("ndarray of shape (n_chains,)", """
        Each chain's starting number of dimensions."""),
    "chain_weights_": ("ndarray of shape (n_chains,)", """
        Each chain's weight in predictions, scores and the embedding (summing to one):
        stacking's, or its share of the samples with ``combine="pool"``."""),
    "best_chain_": ("int", """
        The chain of largest weight, whose final sample gives ``latent_``, ``state_`` and
        :meth:`transform` their coordinates."""),
    "stacking_": ("ibp_rflvm.summaries.stacking.ChainWeights", """
        What stacking computed: ``weights``, each chain's mean PSIS-LOO density per entry
        ``elpd`` and its standard error ``elpd_se``, the shares of entries with an unreliable
        Pareto ``k`` (``pareto_k_bad``, ``pareto_k_above_07``), ``n_entries`` scored of
        ``n_observed``, and ``combine``. One chain is not scored (NaN)."""),
    "k_plus_posterior_": ("dict of int to float", """
        Posterior of ``K+`` over every chain's kept sweeps (chain ``k``'s sharing its weight)."""),
    "effective_dims_": ("ndarray of shape (n_chains, n_draws)", """
        Effective number of dimensions (those whose removal costs the fit a real share of its
        gain) of each chain's thinned draws."""),
    "effective_draws_": ("ndarray of shape (n_draws,)", """
        Indices, among each chain's kept samples, of the draws in ``effective_dims_``."""),
    "effective_dims_posterior_": ("dict of int to float", """
        Posterior of the effective number of dimensions over every chain's thinned draws."""),
    "swap_rates_": ("ndarray of shape (n_chains, n_replicas - 1)", """
        Acceptance rate of swaps between each pair of adjacent replicas, per chain; only with
        ``n_replicas > 1``."""),
    "state_": ("ibp_rflvm.state.ChainState", """
        The best chain's final state (``X``, ``Z``, ``W``, the likelihood's ``params``, ...)."""),
    "spec_": ("ibp_rflvm.state.ModelSpec", """
        The model as fitted (likelihood, number of frequencies, priors, backend)."""),
    "posterior_": ("ibp_rflvm.summaries.posterior.Posterior", """
        Everything the chains left (kept samples, traces, weights, the data as the sampler saw
        them); every other fitted attribute is read from it."""),
    "n_samples_fit_": ("int", """
        Rows of the training data."""),
    "n_features_in_": ("int", """
        Columns of the training data."""),
}

def _entry(name: str, kind: str, text: str) -> str:
    body = indent(dedent(text).strip(), "    ") if text.strip() else ""
    return f"{name} : {kind}" + (f"\n{body}" if body else "")


def section(title: str, entries: list[str]) -> str:
    """A numpydoc section: its title, the underline, the entries."""
    return f"{title}\n{'-' * len(title)}\n" + "\n".join(entries)


def estimator_docstring(
    summary: str, extended: str, parameters: list[str], see_also: str, examples: str
) -> str:
    """A class docstring: `summary`, `extended`, then Parameters (in signature order, each from
    :data:`PARAMETERS`), Attributes (:data:`ATTRIBUTES`), See Also and Examples."""
    params = [_entry(name, *PARAMETERS[name]) for name in parameters]
    attrs = [_entry(name, kind, text) for name, (kind, text) in ATTRIBUTES.items()]
    parts = [
        summary, dedent(extended).strip(), section("Parameters", params), section("Attributes", attrs),
        section("See Also", [dedent(see_also).strip()]), section("Examples", [dedent(examples).strip()]),
    ]  # fmt: skip
    return "\n\n".join(parts) + "\n"
