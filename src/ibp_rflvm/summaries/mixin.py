"""The estimators' names for the posterior summaries of this package: what each latent
dimension means (:mod:`.meaning`) and how sure the posterior is about each row's place
(:mod:`.uncertainty`). Each is computed on first use and kept with the posterior."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .meaning import N_TOP_NAMED, DimensionSummary, dimension_summary
from .uncertainty import embedding_std


def column_names(model, n_cols: int) -> np.ndarray:
    """The training columns' names: ``feature_names_in_`` where the fit had them (a
    DataFrame's columns, an AnnData's ``var_names``), else ``"0"``, ``"1"``, ..."""
    names = getattr(model, "feature_names_in_", None)
    if names is None or len(names) != n_cols:
        return np.array([str(j) for j in range(n_cols)], dtype=object)
    return np.asarray(names, dtype=object)


def dimensions_table(summary: DimensionSummary, names: np.ndarray) -> pd.DataFrame:
    """One row per reported dimension: ``usage``, ``rows``, ``probability``, ``share`` and
    ``top_columns`` (the names of the columns it changes most)."""
    top = summary.top(N_TOP_NAMED)
    table = pd.DataFrame(
        {
            "usage": summary.usage.mean(axis=0),
            "rows": summary.usage.sum(axis=0),
            "probability": summary.probability,
            "share": summary.share,
            "top_columns": [", ".join(str(names[j]) for j in row) for row in top],
        },
        index=pd.Index(list(summary.labels), name="dimension"),
    )
    return table


def top_columns_table(summary: DimensionSummary, names: np.ndarray, n: int) -> pd.DataFrame:
    """The `n` columns each reported dimension changes most, long format."""
    top = summary.top(n)
    n_dims, k = top.shape
    dims = np.repeat(np.arange(n_dims), k)
    cols = top.ravel()
    return pd.DataFrame(
        {
            "dimension": np.asarray(summary.labels, dtype=object)[dims] if n_dims else [],
            "rank": np.tile(np.arange(1, k + 1), n_dims),
            "column": names[cols] if n_dims else [],
            "effect": summary.effect[dims, cols],
            "lower": summary.lower[dims, cols],
            "upper": summary.upper[dims, cols],
        }
    )


class LatentSummaryMixin:
    """``dimensions_``, ``dimension_usage_``, ``dimension_effects_``, ``top_columns`` and
    ``embedding_std_`` of a fitted estimator, functions of its ``posterior_``."""

    def _dimension_summary(self) -> DimensionSummary:
        return dimension_summary(self._posterior())

    def _column_names(self) -> np.ndarray:
        return column_names(self, self._posterior().shape[1])

    @property
    def dimensions_(self) -> pd.DataFrame:
        """The latent dimensions the posterior is sure of, one row each, largest share first.

        Dimensions are matched across kept samples and chains by the rows that use them and
        what they do to the columns (:doc:`/latent_space`); a dimension is reported when it
        exists with posterior probability at least 0.5. Columns: ``usage`` (the expected share of
        rows that use it), ``rows`` (the expected number), ``probability`` (that it exists),
        ``share`` (its posterior-mean share of the fit) and ``top_columns`` (the five columns
        it changes most). The index, ``"d1"``, ``"d2"``, ..., names the dimension in
        ``dimension_usage_``, ``dimension_effects_`` and :meth:`top_columns`.
        """
        return dimensions_table(self._dimension_summary(), self._column_names())

    @property
    def dimension_usage_(self) -> pd.DataFrame:
        """Posterior probability that each row uses each reported dimension, ``n_samples x n_dims``.

        Columns follow the rows of ``dimensions_``; 0 in the samples that lack the dimension.
        """
        summary = self._dimension_summary()
        return pd.DataFrame(summary.usage.copy(), columns=pd.Index(list(summary.labels), name="dimension"))

    @property
    def dimension_effects_(self) -> pd.DataFrame:
        """Each reported dimension's posterior-mean effect on each column, ``n_features x n_dims``.

        The column's linear predictor with the dimension on minus with it switched off,
        averaged over the rows that use it (the mean for the Gaussian; the log of the mean, a
        log fold change, for counts; the log-odds for binary data), given that the dimension
        exists. Index: the column names; columns: ``dimensions_.index``.
        """
        summary = self._dimension_summary()
        return pd.DataFrame(
            summary.effect.T.copy(), index=pd.Index(self._column_names(), name="column"),
            columns=pd.Index(list(summary.labels), name="dimension"),
        )  # fmt: skip

    def top_columns(self, n: int = 10) -> pd.DataFrame:
        """The columns each reported dimension changes most, with credible intervals.

        Parameters
        ----------
        n : int, default=10
            Columns per dimension (all of them when the data have fewer).

        Returns
        -------
        pandas.DataFrame
            Columns ``dimension`` (a label of ``dimensions_.index``), ``rank`` (1 = largest
            absolute effect), ``column`` (the column's name: a DataFrame's column or an
            AnnData's ``var_names`` where the fit had them, else its position), ``effect``
            (posterior mean, as in ``dimension_effects_``), ``lower`` and ``upper`` (the 90%
            equal-tailed credible interval over the samples that have the dimension).

        Raises
        ------
        ValueError
            `n` not a positive integer.
        """
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
            raise ValueError(f"n must be a positive integer; got {n!r}")
        return top_columns_table(self._dimension_summary(), self._column_names(), int(n))

    @property
    def embedding_std_(self) -> np.ndarray:
        """Posterior standard deviation of each row's ``embedding_`` coordinates, ``n_samples x d``.

        ``d`` is ``embedding_dims_``. The spread, over the kept samples the embedding uses, of
        the row's function values about their posterior mean, projected on the components as
        each sample's loadings express them (:doc:`/latent_space`); the change of the loadings
        themselves, which moves every row together, is left out. Rows with few observed entries
        have larger ones.
        """
        return embedding_std(self._posterior(), self.embedding_dims_).copy()
