"""ArviZ export and convergence diagnostics for fitted RFLVMs.

Latent dimensions have no identity across samples or chains (their number changes, their order
and signs are arbitrary, and the dense model is rotation invariant), so convergence is judged on
quantities that do not depend on labels: the log-likelihood, ``K+``, the concentrations, and
distances between rows in the latent space.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: Rows whose pairwise latent distances are tracked (evenly spaced over the data).
N_DISTANCE_ROWS = 8


def distance_rows(n_rows: int) -> np.ndarray:
    return np.unique(np.linspace(0, n_rows - 1, min(N_DISTANCE_ROWS, n_rows)).astype(int))


def _pairwise(H: np.ndarray, rows: np.ndarray) -> np.ndarray:
    sub = H[rows]
    d = np.sqrt(np.maximum(((sub[:, None, :] - sub[None, :, :]) ** 2).sum(-1), 0.0))
    iu = np.triu_indices(len(rows), 1)
    return d[iu]


def to_inference_data(est: Any, Y_heldout: np.ndarray | None = None) -> Any:
    """An ``arviz.InferenceData`` with the chains as the ``chain`` dimension.

    Groups: ``posterior`` (kept sweeps) and ``warmup_posterior`` (burn-in) with ``k_plus``,
    ``alpha`` (IBP models), ``beta`` (the two-parameter IBP's sharing parameter, when learned),
    ``eta``, ``loglik`` (observed-data log-likelihood), ``n_components``
    and ``latent_distance`` (pairwise distances between `distance_rows`); ``latent``
    (chain, draw, row, latent_dim), padded with zeros to the largest number of dimensions any
    kept sample has, with ``latent_mask`` (chain, draw, latent_dim) true where a dimension
    exists (dimensions ordered by how many rows use them). With `Y_heldout`, the
    ``log_likelihood`` group holds the pointwise held-out log densities ``y_heldout``.
    """
    import arviz as az

    est._check_fitted()
    burn = est.n_iter - len(est._chains[0].record.samples)
    rows = distance_rows(est.n_samples_fit_)
    names = {"k_plus": "n_active", "eta": "eta", "loglik": "loglik", "n_components": "n_components"}
    if est.spec_.ibp:
        names["alpha"] = "alpha"
    if _learns_beta(est):
        names["ibp_beta"] = "ibp_beta"
    posterior = {k: est.traces_[v][:, burn:] for k, v in names.items()}
    warmup = {k: est.traces_[v][:, :burn] for k, v in names.items()}
    latents = [[_ordered(s.H) for s in res.record.samples] for res in est._chains]
    k_max = max(max((h.shape[1] for h in chain), default=0) for chain in latents)
    n_draws = len(latents[0])
    latent = np.zeros((len(latents), n_draws, est.n_samples_fit_, k_max))
    mask = np.zeros((len(latents), n_draws, k_max), dtype=bool)
    dist = np.zeros((len(latents), n_draws, len(rows) * (len(rows) - 1) // 2))
    for c, chain in enumerate(latents):
        for s, H in enumerate(chain):
            latent[c, s, :, : H.shape[1]] = H
            mask[c, s, : H.shape[1]] = True
            dist[c, s] = _pairwise(H, rows)
    posterior.update(latent=latent, latent_mask=mask, latent_distance=dist)
    dims = {
        "latent": ["row", "latent_dim"],
        "latent_mask": ["latent_dim"],
        "latent_distance": ["row_pair"],
    }
    first, second = (rows[i] for i in np.triu_indices(len(rows), 1))
    coords = {
        "row": np.arange(est.n_samples_fit_),
        "latent_dim": np.arange(k_max),
        "row_pair": [f"{a}-{b}" for a, b in zip(first, second, strict=True)],
    }
    kwargs = {}
    if Y_heldout is not None:
        logp = est.pointwise_log_predictive(Y_heldout)  # (all samples, n_test), chains stacked
        kwargs["log_likelihood"] = {"y_heldout": logp.reshape(len(latents), n_draws, -1)}
        dims["y_heldout"] = ["heldout_entry"]
    return az.from_dict(
        posterior=posterior, warmup_posterior=warmup if burn else None, dims=dims, coords=coords,
        save_warmup=bool(burn), **kwargs,
    )  # fmt: skip


def summary(est: Any, Y_heldout: np.ndarray | None = None) -> Any:
    """R-hat and bulk/tail effective sample sizes of the label-invariant quantities (a DataFrame),
    followed by one row per chain (``chain 0``, ...) with the columns of :func:`chain_table`.

    The row ``effective_dims`` is the effective number of dimensions (see
    :mod:`ibp_rflvm.effective`). It is scored on the kept draws thinned to at most
    ``EFFECTIVE_MAX_DRAWS`` per chain, which do not align with the other variables' draws, so
    its statistics come from a separate ArviZ summary of that ``chains x thinned draws`` array
    (its ESS counts thinned draws).
    """
    import arviz as az
    import pandas as pd

    idata = to_inference_data(est, Y_heldout)
    var_names = ["loglik", "k_plus", "eta", "latent_distance"]
    if est.spec_.ibp:
        var_names.insert(2, "alpha")
    if _learns_beta(est):
        var_names.insert(3, "ibp_beta")
    table = az.summary(idata, var_names=var_names, kind="all")
    effective = az.from_dict(posterior={"effective_dims": est.effective_dims_.astype(np.float64)})
    return pd.concat([table, az.summary(effective, kind="all"), chain_table(est)])


def _learns_beta(est: Any) -> bool:
    """Whether the fit learned the IBP's sharing parameter (a fixed one has a constant trace)."""
    return bool(est.spec_.ibp and est.spec_.ibp_beta is None)


def chain_table(est: Any) -> Any:
    """One row per chain: its starting dimensions (``start``), the median ``K+`` over its kept
    sweeps and of its effective dimensions over the thinned draws, its mean PSIS-LOO log density
    per scored training entry (``elpd_loo``) with standard error (``elpd_loo_se``), the shares of
    those entries whose Pareto ``k`` says the estimate is unreliable (``pareto_k_bad``, above
    ``min(1 - 1/log10 S, 0.7)`` for ``S`` draws; ``pareto_k_above_07``, above 0.7) and its
    weight in the combination (``weight``). One chain is not scored (NaN)."""
    import pandas as pd

    k_plus = est._kept_k_plus()
    stack = est.stacking_
    return pd.DataFrame(
        {
            "start": est.chain_starts_,
            "k_plus": np.median(k_plus, axis=1) if k_plus.size else np.full(len(est._chains), np.nan),
            "effective_dims": np.median(est.effective_dims_, axis=1),
            "elpd_loo": stack.elpd,
            "elpd_loo_se": stack.elpd_se,
            "pareto_k_bad": stack.pareto_k_bad,
            "pareto_k_above_07": stack.pareto_k_above_07,
            "weight": est.chain_weights_,
        },
        index=[f"chain {c}" for c in range(len(est._chains))],
    )


def _ordered(H: np.ndarray) -> np.ndarray:
    usage = np.count_nonzero(H, axis=0)
    order = np.argsort(-usage, kind="stable")
    return H[:, order[usage[order] > 0]]


#: Split R-hat above which a fit's chains are said to disagree (the usual 1.1, Gelman et al.).
RHAT_DISAGREE = 1.1


def disagreement(traces: dict[str, np.ndarray], threshold: float = RHAT_DISAGREE) -> str | None:
    """A message naming the traces whose chains disagree, or None when all agree.

    `traces` maps a name to a ``chains x kept sweeps`` array. Chains from different random
    starts that settle in different modes (docs/sampler.md) show as a split R-hat above
    `threshold`; fewer than 4 kept sweeps per chain say nothing, and constant traces agree.
    """
    import arviz as az

    bad = []
    for name, values in traces.items():
        values = np.asarray(values, dtype=np.float64)
        if values.ndim != 2 or values.shape[0] < 2 or values.shape[1] < 4:
            continue
        if np.all(values == values.flat[0]):
            continue
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
