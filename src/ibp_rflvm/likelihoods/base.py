"""The interface every observation model implements.

A likelihood is a plug-in: the IBP, ESS, MH and DP-mixture code never looks inside one. Models
whose likelihood factorises over rows given the weights (everything but the collapsed
Gaussian) only need:

* ``prepare`` — per-data constants computed once (``log c(y)``, row totals, masks), never inside
  a proposal;
* ``loglik_rows`` — the log-likelihood of each row's observed entries given ``psi = Phi beta``;
* ``init_params`` / ``update_params`` — the weights ``beta`` and any other variables
  (dispersions, Polya-gamma variables), updated once per sweep given ``Phi``;
* ``logpdf_entries`` and ``mean`` — the held-out density of single entries and the predicted
  mean, for the metrics;
* optionally ``psi_derivatives`` — each entry's first and second derivative in ``psi`` and a
  bound on its third, from which the frequency update bounds a proposal's log-likelihood change
  (:mod:`ibp_rflvm.targets.frequency_bound`) and rejects most proposals without scoring them.

Unobserved entries never enter any sum: every method works from the observed mask in ``prep``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, fields

import numpy as np


@dataclass(frozen=True, kw_only=True)
class Prepared:
    """Data-dependent constants shared by every evaluation of one likelihood on one data set.

    ``Y0`` is the data with unobserved entries set to 0 and ``observed`` the mask; the zeros in
    ``Y0`` are never read where ``observed`` is false. Each likelihood that needs more constants
    (for example ``log c(y)`` per row) subclasses this with fields of its own.

    The size factors' row offsets (:mod:`.offsets`) are here rather than in a subclass because
    code that serves every likelihood asks for them (the Polya-gamma weights, the device's
    upload): ``offset`` is ``log s_i`` per row or None without size factors (so the NumPy paths
    skip the addition); ``row_offset`` is an array whenever the likelihood takes size factors
    (zeros without them, for the compiled kernels: adding 0.0 leaves every value unchanged) and
    None for the likelihoods that take none.
    """

    Y0: np.ndarray
    observed: np.ndarray
    offset: np.ndarray | None = None
    row_offset: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class LikelihoodParams:
    """The likelihood's variables in one state of the chain.

    ``beta`` (``L x J``, the weights) always; ``sigma2`` (``J``, the noise variances) for the
    Gaussian; ``r`` (``J``, the dispersions) for the negative binomial; the fields a likelihood
    does not have are None.
    """

    beta: np.ndarray
    sigma2: np.ndarray | None = None
    r: np.ndarray | None = None

    def arrays(self) -> dict[str, np.ndarray]:
        """The variables present, by name: how checkpoints store them (the format they had as
        a dict, so older checkpoints read back) and how per-column summaries name them."""
        return {f.name: v for f in fields(self) if (v := getattr(self, f.name)) is not None}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> LikelihoodParams:
        """The inverse of :meth:`arrays`; a name that is not a field raises ``TypeError``."""
        return cls(**arrays)

    def contiguous(self) -> LikelihoodParams:
        """These variables in C order (arrays already in C order are kept, not copied)."""
        return LikelihoodParams.from_arrays({k: np.ascontiguousarray(v) for k, v in self.arrays().items()})


class Likelihood(ABC):
    """Base class of the observation models."""

    name: str = ""
    #: True only for the Gaussian, whose rows are coupled once its weights are integrated out:
    #: :func:`ibp_rflvm.targets.make_target` gives it the collapsed target.
    collapsed: bool = False
    #: Whether the chain needs :meth:`prepare`'s constants (every likelihood sampled with its
    #: weights, i.e. all but the collapsed Gaussian).
    prepares_data: bool = True
    #: Whether a constant feature is added to ``Phi`` unless the user says otherwise.
    default_bias: bool = True
    #: "real" or "counts": what kind of data the model is for (reports and metrics).
    kind: str = "counts"
    #: True when adding a constant to a row's linear predictors changes nothing (the softmax of
    #: the multinomial): summaries built from the predictors then centre each row first.
    row_shift_invariant: bool = False
    #: Whether :meth:`psi_derivatives` is implemented.
    has_psi_derivatives: bool = False
    #: Whether replica exchange can run over a ladder of this model (``tempering_scale`` and
    #: ``tempered(scale)``, as :class:`~.gaussian.GaussianLikelihood` has them).
    tempers: bool = False

    @abstractmethod
    def validate(self, Y: np.ndarray) -> None:
        """Raise ValueError naming the problem when observed entries are impossible here."""

    def prepare(self, Y: np.ndarray) -> Prepared:
        observed = ~np.isnan(Y)
        if observed.all() and Y.dtype == np.float64 and Y.flags.c_contiguous:
            # Nothing to zero: Y itself, not a second N x J copy of it (1.5 GiB at 100,000 x
            # 2,000). Read-only everywhere, like the copy.
            Y0 = Y
        else:
            Y0 = np.where(observed, Y, 0.0)
        return self._prepare(Y, Y0, observed)

    def _prepare(self, Y: np.ndarray, Y0: np.ndarray, observed: np.ndarray) -> Prepared:
        """The likelihood's constants of `Y` (`Y0` and `observed` already made from it)."""
        return Prepared(Y0=Y0, observed=observed)

    @abstractmethod
    def init_params(self, rng: np.random.Generator, Phi: np.ndarray, prep: Prepared) -> LikelihoodParams:
        """Starting values of ``beta`` (``L x J``) and the likelihood's own variables."""

    @abstractmethod
    def loglik_rows(self, psi: np.ndarray, rows, params: LikelihoodParams, prep: Prepared) -> np.ndarray:
        """Log-likelihood of each row's observed entries; `psi` holds the rows `rows` (all ``J`` columns)."""

    @abstractmethod
    def update_params(
        self, rng: np.random.Generator, Phi: np.ndarray, params: LikelihoodParams, prep: Prepared
    ) -> LikelihoodParams:
        """One Gibbs/MCMC update of ``beta`` and the other likelihood variables given ``Phi``."""

    @abstractmethod
    def logpdf_entries(
        self,
        y: np.ndarray,
        psi_u: np.ndarray,
        row_pos: np.ndarray,
        cols: np.ndarray,
        params: LikelihoodParams,
        prep: Prepared | None = None,
        rows: np.ndarray | None = None,
    ) -> np.ndarray:
        """Log density of single held-out entries ``y``.

        ``psi_u`` holds the linear predictors of the distinct rows involved (all ``J`` columns);
        entry ``t`` is at ``psi_u[row_pos[t], cols[t]]``; ``rows`` maps each row of ``psi_u`` to
        its training-row index, for likelihoods with per-entry constants (binomial trials).
        """

    @abstractmethod
    def mean(
        self,
        psi: np.ndarray,
        params: LikelihoodParams,
        rows: np.ndarray | None = None,
        prep: Prepared | None = None,
    ) -> np.ndarray:
        """Predicted mean of each entry (``psi`` is ``n x J`` for rows `rows` of the data `prep`
        was made from), the quantity perplexity normalises. `prep` carries per-row constants
        such as the size factors' offsets (:mod:`.offsets`)."""

    def unit_mean(self, psi: np.ndarray, params: LikelihoodParams) -> np.ndarray:
        """Expected value of entries with linear predictors `psi` (``n x J``) in a row with no
        offset (size factor 1) and one trial: the mean, rate, probability or proportion that a
        dimension's profile reads (:mod:`ibp_rflvm.summaries.profiles`)."""
        return self.mean(psi, params)

    def psi_derivatives(
        self, psi: np.ndarray, rows: np.ndarray, params: LikelihoodParams, prep: Prepared
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(g, h, t)``, each shaped like `psi` (the rows `rows`, all ``J`` columns): the first
        derivative of each observed entry's log-likelihood ``f`` in its linear predictor, minus
        the second, and a factor such that the Taylor remainder ``f3(xi) d^3 / 6`` is at most
        ``t |d|^3`` for every step ``d`` (``f3`` the third derivative, ``xi`` between ``psi`` and
        ``psi + d``); all 0 at unobserved entries."""
        raise NotImplementedError(f"the {self.name} likelihood has no psi_derivatives")
