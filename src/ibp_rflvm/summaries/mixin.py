"""The estimators' names for the posterior summaries of this package: what each latent
dimension means (:mod:`.meaning`), where rows sit on it and how columns change along it
(:mod:`.reading`), and how sure the posterior is about each row's place (:mod:`.uncertainty`).
Each is computed on first use and kept with the posterior."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .meaning import N_TOP_NAMED, DimensionSummary, dimension_summary
from .reading import PROFILE_POINTS, column_variation, dimension_reading, groups_table, profile_table
from .reading import ranked_columns as _ranked_columns
from .reproducibility import chain_share
from .uncertainty import embedding_std

#: The ranking of the columns each dimension changes most, by default (docs/record/latent_space.md).
DEFAULT_RANKING = "variation"


def column_names(model, n_cols: int) -> np.ndarray:
    """The training columns' names: ``feature_names_in_`` where the fit had them (a
    DataFrame's columns, an AnnData's ``var_names``), else ``"0"``, ``"1"``, ..."""
    names = getattr(model, "feature_names_in_", None)
    if names is None or len(names) != n_cols:
        return np.array([str(j) for j in range(n_cols)], dtype=object)
    return np.asarray(names, dtype=object)


def dimensions_table(
    summary: DimensionSummary, names: np.ndarray, top: np.ndarray, chains: np.ndarray
) -> pd.DataFrame:
    """One row per reported dimension: ``usage``, ``rows``, ``probability``, ``share``,
    ``chains`` (the share of chains that found it) and ``top_columns`` (the names of the columns
    `top` ranks first, ``n_dims x k`` indices)."""
    return pd.DataFrame(
        {
            "usage": summary.usage.mean(axis=0),
            "rows": summary.usage.sum(axis=0),
            "probability": summary.probability,
            "share": summary.share,
            "chains": chains,
            "top_columns": [", ".join(str(names[j]) for j in row) for row in top],
        },
        index=pd.Index(list(summary.labels), name="dimension"),
    )


def top_columns_table(
    summary: DimensionSummary, names: np.ndarray, top: np.ndarray, variation: np.ndarray
) -> pd.DataFrame:
    """The columns `top` ranks first for each reported dimension (``n_dims x k`` indices),
    long format, with their effects and variation."""
    n_dims, k = top.shape
    dims = np.repeat(np.arange(n_dims), k)
    cols = top.ravel()
    return pd.DataFrame(
        {
            "dimension": np.asarray(summary.labels, dtype=object)[dims] if n_dims else [],
            "rank": np.tile(np.arange(1, k + 1), n_dims),
            "column": names[cols] if n_dims else [],
            "variation": variation[dims, cols],
            "effect": summary.effect[dims, cols],
            "lower": summary.lower[dims, cols],
            "upper": summary.upper[dims, cols],
        }
    )


class LatentSummaryMixin:
    """``dimensions_``, ``dimension_usage_``, ``dimension_effects_``, ``dimension_positions_``,
    ``top_columns``, ``profile``, ``describe`` and ``embedding_std_`` of a fitted estimator,
    functions of its ``posterior_``."""

    def _dimension_summary(self) -> DimensionSummary:
        return dimension_summary(self._posterior())

    def _column_names(self) -> np.ndarray:
        return column_names(self, self._posterior().shape[1])

    def _row_names(self) -> pd.Index:
        """The training rows' names: a DataFrame's index where the fit had one, else 0, 1, ..."""
        index = getattr(self, "_row_index", None)
        n_rows = self._posterior().shape[0]
        return index if index is not None and len(index) == n_rows else pd.RangeIndex(n_rows)

    @property
    def dimensions_(self) -> pd.DataFrame:
        """The latent dimensions the posterior is sure of, one row each, largest share first.

        Dimensions are matched across kept samples and chains by the rows that use them and
        what they do to the columns (:doc:`/latent_space`); a dimension is reported when it
        exists with posterior probability at least 0.5. Columns: ``usage`` (the expected share of
        rows that use it), ``rows`` (the expected number), ``probability`` (that it exists),
        ``share`` (its posterior-mean share of the fit), ``chains`` (the share of the chains,
        each counted alike whatever its stacking weight, in which it appears: a chain summarised
        on its own has a dimension whose effects have cosine at least 0.8 with it; NaN for a fit
        of one chain) and ``top_columns`` (the five columns :meth:`top_columns` ranks first). The
        index, ``"d1"``, ``"d2"``, ..., names the dimension in ``dimension_usage_``,
        ``dimension_effects_``, ``dimension_positions_``, :meth:`top_columns` and :meth:`profile`.
        """
        post = self._posterior()
        summary = self._dimension_summary()
        top = _ranked_columns(post, N_TOP_NAMED, DEFAULT_RANKING)
        return dimensions_table(summary, self._column_names(), top, chain_share(post, summary))

    @property
    def dimension_usage_(self) -> pd.DataFrame:
        """Posterior probability that each row uses each reported dimension, ``n_samples x n_dims``.

        Columns follow the rows of ``dimensions_``; 0 in the samples that lack the dimension.
        """
        summary = self._dimension_summary()
        return pd.DataFrame(summary.usage.copy(), index=self._row_names(),
                            columns=pd.Index(list(summary.labels), name="dimension"))  # fmt: skip

    @property
    def dimension_effects_(self) -> pd.DataFrame:
        """Each reported dimension's posterior-mean effect on each column, ``n_features x n_dims``.

        The column's linear predictor with the dimension on minus with it switched off,
        averaged over the rows that use it (the mean for the Gaussian; the log of the mean, a
        log fold change, for counts; the log-odds for binary data), given that the dimension
        exists. Index: the column names; columns: ``dimensions_.index``. A linear reading: a
        dimension that raises a column at one end and lowers it at the other has a small
        effect on it; :meth:`profile` shows the whole curve.
        """
        summary = self._dimension_summary()
        return pd.DataFrame(
            summary.effect.T.copy(), index=pd.Index(self._column_names(), name="column"),
            columns=pd.Index(list(summary.labels), name="dimension"),
        )  # fmt: skip

    @property
    def dimension_positions_(self) -> pd.DataFrame:
        """Each row's posterior-mean position on each reported dimension, ``n_samples x n_dims``.

        A row's coordinate on the dimension in each sample that has the dimension (0 where the
        row does not use it, as in the model), averaged over those samples. The dimension's
        sign is not identified, so each sample is oriented to agree with the others before
        averaging; by convention the rows that use a dimension sit on its positive side on
        average (:doc:`/latent_space`). Index: the rows' names (a DataFrame's index where the
        fit had one, else 0, 1, ...); columns: ``dimensions_.index``.
        """
        r = dimension_reading(self._posterior())
        return pd.DataFrame(r.mean.copy(), index=self._row_names(),
                            columns=pd.Index(list(r.summary.labels), name="dimension"))  # fmt: skip

    @property
    def dimension_positions_std_(self) -> pd.DataFrame:
        """Posterior standard deviation of each row's position on each reported dimension.

        Over the same samples as ``dimension_positions_``, with their orientation; a row that
        uses the dimension in some samples and not in others has a large one.
        """
        r = dimension_reading(self._posterior())
        return pd.DataFrame(r.std.copy(), index=self._row_names(),
                            columns=pd.Index(list(r.summary.labels), name="dimension"))  # fmt: skip

    def top_columns(self, n: int = 10, by: str = DEFAULT_RANKING) -> pd.DataFrame:
        """The columns each reported dimension changes most, with credible intervals.

        Parameters
        ----------
        n : int, default=10
            Columns per dimension (all of them when the data have fewer).
        by : {"variation", "effect"}, default="variation"
            ``"variation"``: how much the column's profile (:meth:`profile`) varies along the
            dimension, which sees a column that rises at one end and falls at the other;
            ``"effect"``: the absolute on-minus-off effect, a linear reading. On simulated
            bumps ``"variation"`` recovered the columns each coordinate drives better
            (:doc:`/latent_space`).

        Returns
        -------
        pandas.DataFrame
            Columns ``dimension`` (a label of ``dimensions_.index``), ``rank`` (1 = first by
            `by`), ``column`` (the column's name: a DataFrame's column or an AnnData's
            ``var_names`` where the fit had them, else its position), ``variation`` (the range
            of the column's posterior-mean profile on the linear predictor's scale), ``effect``
            (posterior mean, as in ``dimension_effects_``), ``lower`` and ``upper`` (the 90%
            equal-tailed credible interval of the effect over the samples that have the
            dimension).

        Raises
        ------
        ValueError
            `n` not a positive integer; `by` not a ranking.
        """
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
            raise ValueError(f"n must be a positive integer; got {n!r}")
        post = self._posterior()
        top = _ranked_columns(post, int(n), by)
        return top_columns_table(self._dimension_summary(), self._column_names(), top, column_variation(post))

    def profile(self, dimension: str, columns=None, n_points: int = PROFILE_POINTS) -> pd.DataFrame:
        """How each column's expected value changes as a row moves along one dimension.

        Over a grid from the lowest to the highest posterior-mean position of the rows that
        use the dimension, in each sample that has it: the dimension's coordinate of each of
        its rows is set to the grid value, the rows' other coordinates kept (partial dependence
        over the rows that use it), and the columns' linear predictors averaged over those
        rows; the expected value is read at that predictor for a row with no offset and one
        trial (the mean for the Gaussian, where this is exactly the partial dependence; the rate
        for counts; the probability for binary data; the proportion for the multinomial). The
        table gives its posterior mean and a 90% equal-tailed band over the samples.

        Parameters
        ----------
        dimension : str
            A name of ``dimensions_.index`` (``"d1"``, ...).
        columns : sequence of str or int, or None, default=None
            The columns, by name (as in ``feature_names_in_``) or position; None: every column.
        n_points : int, default=50
            Grid points.

        Returns
        -------
        pandas.DataFrame
            Long format, each column's profile in grid order: ``dimension``, ``position`` (in
            ``dimension_positions_``'s coordinates), ``column``, ``mean``, ``lower``, ``upper``.

        Raises
        ------
        ValueError
            An unknown dimension or column; `n_points` below 2.
        """
        n_points = check_points(n_points)
        names = self._column_names()
        cols = column_indices(columns, names)
        return profile_table(self._posterior(), dimension, cols, names, n_points)

    def describe(self, labels) -> pd.DataFrame:
        """Where each group of rows sits on each reported dimension, and how much it uses it.

        Parameters
        ----------
        labels : array-like of shape (n_samples,)
            A group for each training row (a cell type, a class; any values).

        Returns
        -------
        pandas.DataFrame
            One row per dimension and group: ``dimension``, ``group``, ``rows`` (the group's
            size), ``usage`` (the group's mean probability of using the dimension), ``position``
            (posterior mean of the group's mean position among its rows that use the dimension,
            in ``dimension_positions_``'s coordinates) and ``lower``, ``upper`` (its 90%
            equal-tailed interval; NaN where no row of the group uses the dimension).

        Raises
        ------
        ValueError
            `labels` not one per training row.
        """
        return groups_table(self._posterior(), labels)

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


def check_points(n_points) -> int:
    """`n_points` as an int of at least 2, or a ValueError naming it."""
    if isinstance(n_points, bool) or not isinstance(n_points, int | np.integer) or n_points < 2:
        raise ValueError(f"n_points must be an integer of at least 2; got {n_points!r}")
    return int(n_points)


def column_indices(columns, names: np.ndarray) -> np.ndarray:
    """Indices of `columns` (names or positions; None: all) among the columns `names`."""
    if columns is None:
        return np.arange(names.size)
    if isinstance(columns, str | int | np.integer):
        columns = [columns]
    lookup = {str(name): j for j, name in enumerate(names)}
    out = []
    for c in columns:
        if isinstance(c, str) and c in lookup:
            out.append(lookup[c])
        elif isinstance(c, int | np.integer) and not isinstance(c, bool) and 0 <= c < names.size:
            out.append(int(c))
        else:
            last = names.size - 1
            raise ValueError(f"no column {c!r}: give names of feature_names_in_ or positions 0..{last}")
    if not out:
        raise ValueError("columns is empty: give at least one column, or None for all")
    return np.asarray(out, dtype=np.int64)
