"""ArviZ export and convergence diagnostics of a fit's :class:`~ibp_rflvm.summaries.posterior.Posterior`.

Latent dimensions have no identity across samples or chains (their number changes, their order
and signs are arbitrary, and the dense model is rotation invariant), so convergence is judged on
quantities that do not depend on labels: the log-likelihood, ``K+``, the concentrations, and
distances between rows in the latent space.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from .dimensions import effective_dimensions
from .posterior import Posterior, ordered_latent
from .predictive import pointwise_log_predictive

#: Rows whose pairwise latent distances are tracked (evenly spaced over the data).
N_DISTANCE_ROWS = 8


def distance_rows(n_rows: int) -> np.ndarray:
    return np.unique(np.linspace(0, n_rows - 1, min(N_DISTANCE_ROWS, n_rows)).astype(int))


def _pairwise(H: np.ndarray, rows: np.ndarray) -> np.ndarray:
    sub = H[rows]
    d = np.sqrt(np.maximum(((sub[:, None, :] - sub[None, :, :]) ** 2).sum(-1), 0.0))
    iu = np.triu_indices(len(rows), 1)
    return d[iu]


def to_inference_data(
    posterior: Posterior, Y_heldout: np.ndarray | None = None, owner: str = "the fit"
) -> Any:
    """An ``arviz.InferenceData`` of a fit's :class:`~ibp_rflvm.summaries.posterior.Posterior`, with the
    chains as the ``chain`` dimension, that ``az.summary`` and ``az.plot_trace`` take as it is.

    Groups: ``posterior`` (kept sweeps) and ``warmup_posterior`` (burn-in) hold the quantities that
    do not depend on how a sample labels its dimensions, so that their R-hat across chains means
    something: ``k_plus``, ``alpha`` (IBP models), ``ibp_beta`` (the two-parameter IBP's sharing
    parameter, when learned), ``eta``, ``loglik`` (observed-data log-likelihood),
    ``n_components`` and ``latent_distance`` (pairwise distances between `distance_rows`). The
    group ``latent`` holds the latent positions themselves, which have no identity across draws
    or chains (so no R-hat): ``latent`` (chain, draw, row, latent_dim), padded with zeros to the
    largest number of dimensions any kept sample has, with ``latent_mask`` (chain, draw,
    latent_dim) true where a dimension exists (dimensions ordered by how many rows use them).
    With `Y_heldout`, the ``log_likelihood`` group holds the pointwise held-out log densities
    ``y_heldout``.
    """
    import arviz as az

    burn = posterior.n_iter - posterior.n_kept
    n_rows = posterior.shape[0]
    rows = distance_rows(n_rows)
    names = {"k_plus": "n_active", "eta": "eta", "loglik": "loglik", "n_components": "n_components"}
    if posterior.spec.ibp:
        names["alpha"] = "alpha"
    for name in _learned(posterior):
        names[name] = name
    traces = posterior.traces
    draws = {k: traces[v][:, burn:] for k, v in names.items()}
    warmup = {k: traces[v][:, :burn] for k, v in names.items()}
    latents = [[ordered_latent(s.H) for s in posterior.chain_samples(c)] for c in range(posterior.n_chains)]
    k_max = max(max((h.shape[1] for h in chain), default=0) for chain in latents)
    n_draws = posterior.n_kept
    latent = np.zeros((posterior.n_chains, n_draws, n_rows, k_max))
    mask = np.zeros((posterior.n_chains, n_draws, k_max), dtype=bool)
    dist = np.zeros((posterior.n_chains, n_draws, len(rows) * (len(rows) - 1) // 2))
    for c, chain in enumerate(latents):
        for s, H in enumerate(chain):
            latent[c, s, :, : H.shape[1]] = H
            mask[c, s, : H.shape[1]] = True
            dist[c, s] = _pairwise(H, rows)
    draws["latent_distance"] = dist
    first, second = (rows[i] for i in np.triu_indices(len(rows), 1))
    coords = {
        "row": np.arange(n_rows),
        "latent_dim": np.arange(k_max),
        "row_pair": [f"{a}-{b}" for a, b in zip(first, second, strict=True)],
    }
    dims = {"latent_distance": ["row_pair"]}
    kwargs = {}
    if Y_heldout is not None:
        logp = pointwise_log_predictive(posterior, Y_heldout, owner=owner)  # all samples, chains in order
        kwargs["log_likelihood"] = {"y_heldout": logp.reshape(posterior.n_chains, n_draws, -1)}
        dims["y_heldout"] = ["heldout_entry"]
    with _arviz_quiet():  # a short run has more chains than draws, and that is its shape
        idata = az.from_dict(
            posterior=draws, warmup_posterior=warmup if burn else None, dims=dims, coords=coords,
            save_warmup=bool(burn), **kwargs,
        )  # fmt: skip
        group = az.dict_to_dataset(
            {"latent": latent, "latent_mask": mask}, coords=coords,
            dims={"latent": ["row", "latent_dim"], "latent_mask": ["latent_dim"]},
        )  # fmt: skip
    idata.add_groups(latent=group)
    return idata


def summary(posterior: Posterior, Y_heldout: np.ndarray | None = None) -> Any:
    """R-hat and bulk/tail effective sample sizes of the label-invariant quantities (a DataFrame),
    followed by one row per chain (``chain 0``, ...) with the columns of :func:`chain_table`.

    With several chains, ``r_hat`` is ArviZ's rank-normalised split R-hat over all of them.
    With one chain, the diagnostics (MCSE, effective sizes, ``r_hat``) are those of the first
    and second halves of its kept draws summarised as two chains (:func:`halves_as_chains`), so
    that ``r_hat`` compares them (ArviZ would give NaN for one chain): the split R-hat of one
    chain. ArviZ's rank-normalised R-hat splits each of the two again. The mean, sd and HDI are
    those of all the chain's draws.

    The row ``effective_dims`` is the effective number of dimensions (see
    :mod:`ibp_rflvm.mcmc.effective`). It is scored on the kept draws thinned to at most
    ``EFFECTIVE_MAX_DRAWS`` per chain, which do not align with the other variables' draws, so
    its statistics come from a separate ArviZ summary of that ``chains x thinned draws`` array
    (its ESS counts thinned draws).

    Where R-hat and the effective sizes are not defined, the diagnostic columns (MCSE, ESS,
    ``r_hat``) are NaN and the column ``note`` (the last) says why: fewer than 4 draws per chain
    compared (8 kept draws for one chain), a constant trace (``k_plus`` of the dense model), or
    chains (one chain's halves) each constant at a different value, which is an infinite R-hat:
    they disagree (:func:`diagnostic_notes`). No RuntimeWarning comes out of ArviZ on these.

    The column ``counts`` says in one sentence what each of the three numbers called
    "dimensions" counts, on the rows ``k_plus``, ``effective_dims`` and ``embedding_dims`` (the
    last with the embedding's width as its mean); where ``K+`` never left its start a
    :class:`~ibp_rflvm.summaries.counts.KPlusStuckWarning` says so
    (:func:`ibp_rflvm.summaries.counts.dimension_counts`). The embedding's width needs the
    posterior embedding, computed here on first use and kept (``embedding_`` then costs
    nothing).
    """
    import pandas as pd

    from .counts import dimension_counts

    idata = to_inference_data(posterior, Y_heldout)
    var_names = ["loglik", "k_plus", "eta", "latent_distance"]
    if posterior.spec.ibp:
        var_names.insert(2, "alpha")
    for i, name in enumerate(_learned(posterior)):
        var_names.insert(3 + i, name)
    draws = {name: idata.posterior[name].values for name in var_names}
    dims = {"latent_distance": ["row_pair"]}
    coords = {"row_pair": idata.posterior["row_pair"].values}
    table = _arviz_summary(draws, dims, coords)
    effective = {"effective_dims": effective_dimensions(posterior).astype(np.float64)}
    counts = dimension_counts(posterior)
    width = pd.DataFrame({"mean": [float(counts.loc["embedding_dims", "median"])]}, index=["embedding_dims"])
    out = pd.concat([table, _arviz_summary(effective, {}, {}), width, chain_table(posterior)])
    out["counts"] = pd.Series(counts["counts"]).reindex(out.index)
    out["note"] = out.pop("note")  # last: why a row's R-hat and ESS are NaN
    return out


#: ArviZ's shortest chain for R-hat and the effective sizes (below it they are NaN, with a log line).
MIN_DIAGNOSTIC_DRAWS = 4

#: The columns of ArviZ's ``kind="diagnostics"`` summary.
DIAGNOSTIC_COLUMNS = ("mcse_mean", "mcse_sd", "ess_bulk", "ess_tail", "r_hat")


@contextmanager
def _arviz_quiet() -> Iterator[None]:
    """ArviZ on arrays this module shaped itself: no numpy RuntimeWarning from its divisions by a
    zero variance (the traces they come from are NaN with a note, :func:`diagnostic_notes`), and
    no "More chains than draws" (the arrays are ``chains x draws`` by construction)."""
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.filterwarnings("ignore", message="More chains", category=UserWarning)
        yield


def diagnostic_notes(draws: np.ndarray) -> np.ndarray:
    """Why R-hat and the effective sizes of ``chains x draws (x ...)`` `draws` are not defined,
    per quantity (flattened as ArviZ lists them): ``""`` where they are.

    The diagnostics compare the chains, or one chain's halves (:func:`halves_as_chains`), and
    ArviZ splits each of those again into its first and last ``draws // 2`` (pieces). Three
    cases have none: fewer than :data:`MIN_DIAGNOSTIC_DRAWS` draws in each chain compared; a
    constant trace (no variation: ArviZ divides zero by zero); and pieces each constant but not
    all at one value (no variation within a piece: R-hat is infinite in theory, ArviZ gives inf
    or a meaningless number like 9.2e7, and the effective sizes mean nothing), which says the
    chains disagree.
    """
    draws = np.asarray(draws, dtype=np.float64)
    one_chain = draws.shape[0] == 1
    n_kept = draws.shape[1]
    compared = halves_as_chains(draws) if one_chain else draws
    n_chains, n_draws = compared.shape[:2]
    flat = compared.reshape(n_chains, n_draws, int(np.prod(compared.shape[2:])))  # n_draws may be 0
    notes = np.full(flat.shape[2], "", dtype=object)
    if n_draws < MIN_DIAGNOSTIC_DRAWS:
        need = (
            f"{n_kept} kept draws, {2 * MIN_DIAGNOSTIC_DRAWS} needed (one chain's halves are compared)"
            if one_chain
            else f"{n_draws} kept draws per chain, {MIN_DIAGNOSTIC_DRAWS} needed"
        )
        notes[:] = f"too short for R-hat and ESS: {need}"
        return notes
    constant = np.all(flat == flat[:1, :1], axis=(0, 1))
    half = n_draws // 2
    pieces = np.concatenate([flat[:, :half], flat[:, n_draws - half :]], axis=0)
    stuck = np.all(pieces == pieces[:, :1], axis=1).all(axis=0) & ~constant
    notes[constant] = "constant trace: no R-hat or ESS"
    notes[stuck] = (
        ("each quarter of the chain is" if one_chain else "each half of each chain is")
        + " constant, at different values: R-hat undefined (infinite), ESS meaningless; "
        + ("the chain's halves disagree" if one_chain else "the chains disagree")
    )
    return notes


def _arviz_summary(draws: dict[str, np.ndarray], dims: dict, coords: dict) -> Any:
    """ArviZ's summary (``kind="all"``) of ``chains x draws (x ...)`` arrays. One chain: the
    statistics (mean, sd, HDI) of all its draws, the diagnostics (MCSE, ESS, R-hat) of its
    halves as two chains. Where those are not defined (:func:`diagnostic_notes`) they are NaN and
    the column ``note`` says why."""
    import arviz as az
    import pandas as pd

    def summary(values: dict[str, np.ndarray], kind: str):
        with _arviz_quiet():
            return az.summary(az.from_dict(posterior=values, dims=dims, coords=coords), kind=kind)

    one_chain = next(iter(draws.values())).shape[0] == 1
    compared = {name: halves_as_chains(v) if one_chain else np.asarray(v) for name, v in draws.items()}
    notes = np.concatenate([diagnostic_notes(values) for values in draws.values()])
    if next(iter(compared.values())).shape[1] < MIN_DIAGNOSTIC_DRAWS:
        table = summary(draws, "stats")  # ArviZ would log a shape warning and give NaN
        for column in DIAGNOSTIC_COLUMNS:
            table[column] = np.nan
    elif one_chain:
        table = pd.concat([summary(draws, "stats"), summary(compared, "diagnostics")], axis=1)
    else:
        table = summary(draws, "all")
    if len(notes) != len(table):
        raise RuntimeError(f"{len(notes)} notes for {len(table)} summary rows")
    undefined = notes != ""
    table.loc[undefined, [c for c in DIAGNOSTIC_COLUMNS if c in table.columns]] = np.nan
    table["note"] = np.where(undefined, notes, None)
    return table


def halves_as_chains(draws: np.ndarray) -> np.ndarray:
    """One chain's draws (``1 x n x ...``) as two chains, its first and second halves
    (``2 x n // 2 x ...``; with an odd ``n`` the middle draw is left out), so that R-hat
    compares the halves (the split R-hat of one chain) instead of being undefined."""
    draws = np.asarray(draws)
    if draws.shape[0] != 1:
        raise ValueError(f"expected the draws of one chain; got {draws.shape[0]} chains")
    half = draws.shape[1] // 2
    return np.stack([draws[0, :half], draws[0, draws.shape[1] - half :]])


def _learned(posterior: Posterior) -> tuple[str, ...]:
    """The prior on ``Z``'s variables the fit learned (a fixed one has a constant trace)."""
    return posterior.spec.z_prior.learned_traces if posterior.spec.ibp else ()


def chain_table(posterior: Posterior) -> Any:
    """One row per chain: its starting dimensions (``start``), the median ``K+`` over its kept
    sweeps and of its effective dimensions over the thinned draws, its mean PSIS-LOO log density
    per scored training entry (``elpd_loo``) with standard error (``elpd_loo_se``), the shares of
    those entries whose Pareto ``k`` says the estimate is unreliable (``pareto_k_bad``, above
    ``min(1 - 1/log10 S, 0.7)`` for ``S`` draws; ``pareto_k_above_07``, above 0.7), its
    weight in the combination (``weight``), then the move rates of :func:`move_table`. One
    chain is not scored (NaN)."""
    import pandas as pd

    k_plus = posterior.kept("n_active")
    stack = posterior.stacking
    n = posterior.n_chains
    return pd.DataFrame(
        {
            "start": posterior.chain_starts,
            "k_plus": np.median(k_plus, axis=1) if k_plus.size else np.full(n, np.nan),
            "effective_dims": np.median(effective_dimensions(posterior), axis=1),
            "elpd_loo": stack.elpd,
            "elpd_loo_se": stack.elpd_se,
            "pareto_k_bad": stack.pareto_k_bad,
            "pareto_k_above_07": stack.pareto_k_above_07,
            "weight": posterior.weights,
            **move_rates(posterior),
        },
        index=[f"chain {c}" for c in range(n)],
    )


def move_rates(posterior: Posterior) -> dict[str, np.ndarray]:
    """Each chain's move rates over its kept sweeps, by column name of :func:`move_table`."""
    moves = posterior.moves
    n_kept = posterior.n_kept

    def kept(counts: np.ndarray) -> np.ndarray:
        return counts[:, counts.shape[1] - n_kept :]

    # A checkpoint written before the counts were kept has -1 for its sweeps: left out of every
    # sum, so a resumed chain's rates are those of the sweeps it counted.
    counted = kept(moves.flips) >= 0
    n_sweeps = counted.sum(axis=1)

    def total(counts: np.ndarray) -> np.ndarray:
        return np.where(counted, kept(counts), 0).sum(axis=1)

    def ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
        return np.where(den > 0, num / np.maximum(den, 1), np.nan)

    n_rows = posterior.shape[0]
    n_freq = posterior.spec.n_frequencies
    return {
        "z_flips_per_sweep": ratio(total(moves.z_flips), n_sweeps),
        "flips_per_sweep": ratio(total(moves.flips), n_sweeps),
        "flip_rate": ratio(total(moves.flips), total(moves.flips_proposed)),
        "transfer_rate": ratio(total(moves.transfers), total(moves.transfers_proposed)),
        "absorb_rate": ratio(total(moves.absorbs), total(moves.absorbs_proposed)),
        "births_per_sweep": ratio(total(moves.births), n_sweeps),
        "deaths_per_sweep": ratio(total(moves.deaths), n_sweeps),
        "singleton_rate": ratio(total(moves.singletons), total(moves.singletons_proposed)),
        # One Metropolis-Hastings proposal (or one elliptical slice search) per frequency per sweep.
        "w_accept_rate": ratio(total(moves.w_accepted), n_freq * n_sweeps),
        # Counted since issue 56: a checkpoint's earlier sweeps have -1 here alone.
        "w_move_rate": ratio(np.where(kept(moves.w_moved) >= 0, kept(moves.w_moved), 0).sum(axis=1),
                             n_freq * (kept(moves.w_moved) >= 0).sum(axis=1)),  # fmt: skip
        "x_evals_per_row": ratio(total(moves.x_evals), n_rows * n_sweeps),
    }


def move_table(posterior: Posterior) -> Any:
    """What the sweep's moves did in each chain over its kept sweeps: one row per chain.

    Parameters
    ----------
    posterior : Posterior
        A fit's chains (an estimator's ``posterior_``).

    Returns
    -------
    pandas.DataFrame
        Rows ``chain 0``, ...; columns ``z_flips_per_sweep`` (entries of ``Z`` the slice step's
        Gibbs pass changed), ``flips_per_sweep`` (accepted joint ``(z, x)`` flips),
        ``flip_rate``, ``transfer_rate`` and ``absorb_rate`` (accepted over proposed joint flips,
        row transfers and absorb/emit moves), ``births_per_sweep`` and ``deaths_per_sweep``
        (singleton dimensions), ``singleton_rate`` (accepted over proposed singleton
        births/deaths, one proposal a row), ``w_accept_rate`` (accepted frequencies over
        ``n_frequencies`` per sweep: 1 for elliptical slice sampling, whose every search ends
        on a point), ``w_move_rate`` (frequencies whose value changed over ``n_frequencies``
        per sweep: near 0 means the kernel is frozen at its start, docs/chains.md) and
        ``x_evals_per_row`` (likelihood evaluations of the
        elliptical slice sampler of ``X`` per row per sweep). NaN where nothing was proposed or
        no kept sweep was counted; the moves a sweep does not run (the dense model's, the
        paper's sampler's) count 0.
    """
    import pandas as pd

    return pd.DataFrame(move_rates(posterior), index=[f"chain {c}" for c in range(posterior.n_chains)])


#: Split R-hat above which a fit's chains are said to disagree (the usual 1.1, Gelman et al.).
RHAT_DISAGREE = 1.1


def disagreement(traces: dict[str, np.ndarray], threshold: float = RHAT_DISAGREE) -> str | None:
    """A message naming the traces whose chains disagree, or None when all agree.

    `traces` maps a name to a ``chains x kept sweeps`` array. Chains from different random
    starts that settle in different modes (docs/sampler.md) show as a split R-hat above
    `threshold`; fewer than 4 kept sweeps per chain say nothing, and constant traces agree.
    Chains whose halves are each constant at different values disagree (their R-hat is
    infinite; ArviZ gives inf or a number like 9.2e7), said in words.
    """
    import arviz as az

    bad = []
    for name, values in traces.items():
        values = np.asarray(values, dtype=np.float64)
        if values.ndim != 2 or values.shape[0] < 2 or values.shape[1] < MIN_DIAGNOSTIC_DRAWS:
            continue
        note = diagnostic_notes(values)[0]
        if note.startswith("constant trace"):
            continue
        if note:
            bad.append(f"{name} (constant over each half of each chain, at different values)")
            continue
        with _arviz_quiet():
            r = float(az.rhat(values))
        if not np.isfinite(r) or r > threshold:
            bad.append(f"{name} (R-hat {r:.2f})")
    if not bad:
        return None
    return (
        "the chains disagree on " + ", ".join(bad) + ": they have not reached the same posterior "
        "mode (docs/sampler.md section 5)"
    )


def batch_mean_se(x: np.ndarray, n_batches: int = 40) -> tuple[float, float]:
    """A trace's mean and its Monte Carlo standard error by batch means.

    The means of `n_batches` consecutive batches are nearly independent once a batch is much
    longer than the trace's autocorrelation, so their spread gives a standard error that
    allows for it. The last ``len(x) % n_batches`` draws are left out of the batches (not of
    the mean).
    """
    x = np.asarray(x, dtype=np.float64)
    if n_batches < 2 or x.size < n_batches:
        raise ValueError(
            f"batch means need at least 2 batches of one draw; got {x.size} draws, {n_batches} batches"
        )
    usable = x.size - x.size % n_batches
    means = x[:usable].reshape(n_batches, -1).mean(axis=1)
    return float(x.mean()), float(means.std(ddof=1) / np.sqrt(n_batches))
