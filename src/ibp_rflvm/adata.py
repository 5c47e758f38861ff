"""Fit the model on an ``AnnData`` object, as a scanpy-style tool function.

Needs the optional extra ``pip install 'ibp-rflvm[anndata]'`` (anndata only; scanpy is not
needed, though ``sc.pl.embedding(adata, basis="ibp_rflvm")`` then plots the result)::

    from ibp_rflvm.adata import ibp_rflvm

    ibp_rflvm(adata, layer="counts", mask_var="highly_variable", n_iter=200, random_state=0)

What it writes: :func:`ibp_rflvm`'s docstring.

``adata.X`` and the layers are only read. The counts are passed on in their own format, a gene
subset is taken by column indexing (sparse stays sparse), and only the estimator densifies the
subset it samples (docs/memory.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .estimator import IBPRFLVM, _RFLVMBase
from .plumbing.neighbors import N_NEIGHBORS, check_n_neighbors, write_neighbors
from .summaries.embedding import own_dimension, posterior_embedding
from .summaries.meaning import dimension_summary
from .summaries.posterior import Posterior, ordered_latent
from .summaries.reading import dimension_reading
from .summaries.uncertainty import embedding_std
from .summaries.view import MIN_ROWS as VIEW_MIN_ROWS

if TYPE_CHECKING:  # pragma: no cover
    from anndata import AnnData

#: Per-gene likelihood parameters written to ``adata.var``: parameter name -> column suffix.
GENE_PARAMS = {"r": "dispersion", "sigma2": "noise_variance"}


def ibp_rflvm(
    adata: AnnData,
    *,
    layer: str | None = None,
    mask_var: str | np.ndarray | None = None,
    likelihood: str = "negbinom",
    model: _RFLVMBase | None = None,
    key_added: str | None = None,
    copy: bool = False,
    n_neighbors: int = N_NEIGHBORS,
    **params: Any,
) -> AnnData | None:
    """Fit an :class:`~ibp_rflvm.IBPRFLVM` to the counts of `adata` and store the results.

    A scanpy-style tool: the embedding, the final sample's sparse latent positions, a 2-D view
    and a neighbour graph are written where scanpy looks for them (see Notes), so
    ``sc.tl.umap`` and ``sc.tl.leiden`` run on the posterior's graph. Needs the ``anndata``
    extra; :doc:`/single_cell` has a worked example.

    Parameters
    ----------
    adata : anndata.AnnData
        The annotated data matrix, cells x genes. ``adata.X`` and the layers are only read.
    layer : str or None, default=None
        Fit ``adata.layers[layer]`` instead of ``adata.X`` (use the raw counts).
    mask_var : str, array-like of bool or None, default=None
        Fit a subset of genes: the name of a boolean column of ``adata.var`` (for example
        ``"highly_variable"``) or a boolean array of length ``n_vars``; None fits all.
    likelihood : str, default="negbinom"
        The observation model when `model` is not given.
    model : IBPRFLVM, RFLVM or None, default=None
        An unfitted estimator to fit in place of a new one; it is fitted in place, so the
        caller can score or transform with it afterwards.
    key_added : str or None, default=None
        Key of the results in ``obsm``, ``uns`` and prefix of the ``var`` columns; None:
        ``obsm["X_ibp_rflvm"]``, ``uns["ibp_rflvm"]``, ``var["ibp_rflvm_*"]``.
    copy : bool, default=False
        Work on a copy of `adata` and return it; otherwise write into `adata`.
    n_neighbors : int, default=15
        Neighbours per cell (itself included, as in scanpy) of the graph in ``obsp``.
    **params : dict
        Estimator parameters (``n_iter``, ``random_state``, ...) when `model` is None.

    Returns
    -------
    anndata.AnnData or None
        The annotated copy with ``copy=True``; otherwise None (`adata` is written in place).

    Raises
    ------
    TypeError
        `adata` not an ``AnnData``, or `model` not an estimator of this package.
    ValueError
        A missing `layer` or `mask_var` column, a gene mask that selects nothing, estimator
        parameters given both in `model` and as keywords, or counts the likelihood cannot take.

    See Also
    --------
    ibp_rflvm.IBPRFLVM : The estimator fitted.

    Notes
    -----
    What is written (``key`` is `key_added`, default ``"ibp_rflvm"``):

    * ``adata.obsm["X_ibp_rflvm"]`` (``adata.obsm[key]`` when `key_added` is given): the cells'
      posterior embedding (the estimator's ``embedding_``, ``n_obs x embedding_dims_``): kernel
      principal components of the posterior-mean kernel over every kept sample, which do not depend
      on how any sample labels or splits its dimensions (:mod:`ibp_rflvm.summaries.embedding`);
    * ``adata.obsm["X_ibp_rflvm_sample"]`` (``f"{obsm key}_sample"``): the final posterior sample's
      sparse latent positions ``X * Z`` (``latent_``, ``n_obs x K+``, most used dimension first),
      whose exact zeros show which cells use which dimension;
    * ``adata.obsm["X_ibp_rflvm_view"]`` (``f"{obsm key}_view"``): the estimator's 2-D ``view()``, a
      t-SNE map of the embedding that keeps each cell's neighbours, for a picture
      (``sc.pl.embedding(adata, basis="ibp_rflvm_view")``; at least 5 cells);
    * ``adata.obsp["ibp_rflvm_neighbors_distances"]`` and ``["ibp_rflvm_neighbors_connectivities"]``
      with ``adata.uns["ibp_rflvm_neighbors"]`` (``f"{key}_neighbors"``): the `n_neighbors` nearest
      cells by posterior distance (Euclidean in all the embedding's components, up to
      ``embedding.MAX_COMPONENTS``) and their UMAP connectivities, in scanpy's layout
      (:mod:`ibp_rflvm.plumbing.neighbors`), so ``sc.tl.umap(adata, neighbors_key="ibp_rflvm_neighbors")``
      and ``sc.tl.leiden(adata, neighbors_key=...)`` run without ``sc.pp.neighbors``;
    * ``adata.obsm["X_ibp_rflvm_std"]`` (``f"{obsm key}_std"``): the posterior standard deviation
      of each cell's embedding coordinates (``embedding_std_``);
    * ``adata.obsm["X_ibp_rflvm_usage"]`` (``f"{obsm key}_usage"``) and
      ``adata.varm["ibp_rflvm_effects"]`` (``f"{key}_effects"``), as scanpy's PCA writes
      ``varm["PCs"]``: the posterior probability that each cell uses each dimension of
      ``dimensions_`` (``dimension_usage_``), and each dimension's posterior-mean effect on each
      gene (``dimension_effects_``, a log fold change for counts; NaN for genes outside the
      subset); ``uns[key]["dimensions"]`` names the columns and holds each dimension's
      ``probability`` and ``share``; ``model.top_columns()`` names genes by ``var_names``;
    * ``adata.uns[key]``: ``"params"`` (likelihood, layer, gene subset, sampler settings),
      ``"dimension_usage"`` (fraction of cells using each column of the final sample's latent),
      ``"k_plus"`` and ``"log_likelihood"`` (per-sweep traces of the chain of largest weight,
      ``model.best_chain_``), ``"burn_in"``,
      ``"embedding_dims"`` and ``"chain_weights"``;
    * ``adata.var``: the per-gene parameters of the likelihood as posterior means over the kept
      samples (each chain's samples sharing its weight), ``f"{key}_dispersion"`` (negative binomial
      ``r_j``) or ``f"{key}_noise_variance"`` (Gaussian ``sigma_j^2``); NaN for genes outside the
      subset.

    The counts are passed on in their own format, a gene subset is taken by column indexing
    (sparse stays sparse), and only the estimator densifies the subset it samples
    (:doc:`/memory`).
    """
    AnnDataType = _anndata_class()
    if not isinstance(adata, AnnDataType):
        raise TypeError(f"adata must be an anndata.AnnData; got {type(adata).__name__}")
    if model is None:
        model = IBPRFLVM(likelihood=likelihood, **params)
    elif not isinstance(model, _RFLVMBase):
        raise TypeError(f"model must be an IBPRFLVM or RFLVM estimator; got {type(model).__name__}")
    elif params:
        raise ValueError(
            f"give estimator parameters either in model or as keywords, not both: {sorted(params)}"
        )
    n_neighbors = check_n_neighbors(n_neighbors)  # before the fit, not after it
    counts = _counts(adata, layer)
    genes = _gene_subset(adata, mask_var)
    if genes.size < adata.n_vars:
        counts = counts[:, genes]
    model.fit(counts)
    # The genes' names, for top_columns and dimension_effects_ as for a DataFrame's columns.
    model.feature_names_in_ = np.asarray(adata.var_names[genes], dtype=object)
    if copy:
        adata = adata.copy()
    _write(adata, model, model.posterior_, genes, layer, mask_var, key_added, n_neighbors)
    return adata if copy else None


def _anndata_class():
    try:
        from anndata import AnnData
    except ImportError as exc:  # pragma: no cover - the extra is installed in CI
        raise ImportError(
            "ibp_rflvm.adata needs the anndata package: pip install 'ibp-rflvm[anndata]'"
        ) from exc
    return AnnData


def _counts(adata: AnnData, layer: str | None):
    if layer is None:
        if adata.X is None:
            raise ValueError("adata.X is empty (None); pass layer= to fit one of adata.layers")
        return adata.X
    if not isinstance(layer, str):
        raise ValueError(f"layer must be the name of one of adata.layers; got {layer!r}")
    if layer not in adata.layers:
        raise ValueError(
            f"layer {layer!r} is not in adata.layers (available: {sorted(adata.layers.keys())})"
        )
    return adata.layers[layer]


def _gene_subset(adata: AnnData, mask_var) -> np.ndarray:
    """Indices of the genes to fit."""
    if mask_var is None:
        return np.arange(adata.n_vars)
    if isinstance(mask_var, str):
        if mask_var not in adata.var.columns:
            raise ValueError(f"mask_var {mask_var!r} is not a column of adata.var")
        mask = adata.var[mask_var].to_numpy()
        what = f"adata.var[{mask_var!r}]"
    else:
        mask = np.asarray(mask_var)
        what = "mask_var"
    if mask.dtype != np.bool_:
        raise ValueError(f"{what} must be boolean (True = fit this gene); got dtype {mask.dtype}")
    if mask.shape != (adata.n_vars,):
        raise ValueError(f"{what} has shape {mask.shape}, but adata has {adata.n_vars} genes")
    if not mask.any():
        raise ValueError(f"{what} selects no gene")
    return np.flatnonzero(mask)


def _write(
    adata: AnnData, model: _RFLVMBase, posterior: Posterior, genes: np.ndarray, layer, mask_var, key_added,
    n_neighbors: int,
) -> None:
    """Write what `posterior` (`model`'s fit) gives into `adata`; `model` supplies its settings."""
    key = "ibp_rflvm" if key_added is None else str(key_added)
    obsm_key = "X_ibp_rflvm" if key_added is None else key
    latent = ordered_latent(posterior.state.H).astype(np.float64)
    full = posterior_embedding(posterior)
    adata.obsm[obsm_key] = full.scores[:, : own_dimension(posterior)].copy()
    adata.obsm[f"{obsm_key}_sample"] = latent
    if adata.n_obs >= VIEW_MIN_ROWS:
        adata.obsm[f"{obsm_key}_view"] = model.view()
    coords = full.scores if full.n_available else np.zeros((adata.n_obs, 1))
    write_neighbors(adata, coords, f"{key}_neighbors", obsm_key, n_neighbors)
    settings = {
        "likelihood": str(model.likelihood),
        "layer": "X" if layer is None else layer,
        "n_vars_used": int(genes.size),
        "n_iter": int(model.n_iter),
        "n_frequencies": int(model.n_frequencies),
        "n_chains": int(model.n_chains),
        "sampler": str(model.sampler),
    }
    # Only what h5ad can store: a named subset by name, a seed only when it is an int.
    if isinstance(mask_var, str):
        settings["mask_var"] = mask_var
    if isinstance(model.random_state, (int, np.integer)):
        settings["random_state"] = int(model.random_state)
    adata.uns[key] = {
        "params": settings,
        "dimension_usage": np.count_nonzero(latent, axis=0) / latent.shape[0],
        "k_plus": np.asarray(posterior.traces["n_active"][posterior.best_chain], dtype=np.int64),
        "log_likelihood": np.asarray(posterior.traces["loglik"][posterior.best_chain], dtype=np.float64),
        "burn_in": int(posterior.burn_in),
        "embedding_dims": int(own_dimension(posterior)),
        "chain_weights": np.asarray(posterior.weights, dtype=np.float64),
    }
    _write_dimensions(adata, posterior, genes, key, obsm_key)
    samples = posterior.samples
    for name, suffix in GENE_PARAMS.items():
        if getattr(samples[0].params, name) is None:
            continue
        column = np.full(adata.n_vars, np.nan)
        values = [getattr(smp.params, name) for smp in samples]
        column[genes] = np.average(values, axis=0, weights=posterior.sample_weights)
        adata.var[f"{key}_{suffix}"] = column


def _write_dimensions(
    adata: AnnData, posterior: Posterior, genes: np.ndarray, key: str, obsm_key: str
) -> None:
    """The cells' embedding sd, and each dimension's usage by the cells, the cells' positions on
    it and its effect on the genes."""
    adata.obsm[f"{obsm_key}_std"] = embedding_std(posterior, own_dimension(posterior)).copy()
    summary = dimension_summary(posterior)
    adata.obsm[f"{obsm_key}_usage"] = summary.usage.copy()
    reading = dimension_reading(posterior)
    adata.obsm[f"{obsm_key}_positions"] = reading.mean.copy()
    adata.obsm[f"{obsm_key}_positions_std"] = reading.std.copy()
    effects = np.full((adata.n_vars, len(summary.labels)), np.nan)
    effects[genes] = summary.effect.T
    adata.varm[f"{key}_effects"] = effects
    adata.uns[key]["dimensions"] = {
        "names": np.asarray(summary.labels, dtype=object).astype(str),
        "probability": summary.probability.copy(),
        "share": summary.share.copy(),
    }
