"""The factorising likelihoods on the device: row log-likelihoods and the weights' Gibbs step.

Each class mirrors one of :mod:`ibp_rflvm.likelihoods` and is chosen by
:func:`ibp_rflvm.jax_backend.likelihoods_more.for_likelihood`;
the host likelihood stays the source of the model's settings, its checks of the data and its
held-out densities. A device likelihood is a frozen dataclass (hashable, so compiled functions
take it as a static argument) with pure functions of device arrays:

* :meth:`~DeviceLikelihood.device_data` uploads the data once (counts as float32 where every
  count is below ``2^24``, which float32 holds exactly; NaN marks an unobserved entry);
* :meth:`~DeviceLikelihood.row_constants` is the part of each row's log-likelihood that does
  not depend on ``psi`` (once per sweep: it depends on the likelihood's own variables);
* :meth:`~DeviceLikelihood.row_loglik` is each row's log-likelihood given ``psi = Phi beta``
  (without the rows' offsets, which it adds), summed in float64;
* :meth:`~DeviceLikelihood.update` draws the weights and the likelihood's own variables given
  ``Phi``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ..likelihoods.base import LikelihoodParams
from . import jax, linalg
from .crt import crt_column_totals
from .polya_gamma import draw_pg
from .rowsum import blocked_row_sum

if TYPE_CHECKING:
    pass

jnp = jax.numpy
lax = jax.lax

#: float32 holds every integer up to 2^24 exactly.
_F32_EXACT = 2.0**24
#: Rows per block of the precisions' accumulation: bounds the N x L(L+1)/2 row outer products.
_OUTER_ROWS = 4096


class DeviceData(NamedTuple):
    """The data on the device: counts with NaN where unobserved, and each row's offset."""

    y: jax.Array
    offset: jax.Array
    trials: jax.Array | None = None

    @property
    def n_rows(self) -> int:
        return self.y.shape[0]


def upload_counts(prep, trials: np.ndarray | None = None) -> DeviceData:
    """`prep`'s data as :class:`DeviceData`: float32 when every count (and number of trials) is
    below ``2^24``, else float64; NaN at the unobserved entries."""
    Y0, observed = prep.Y0, prep.observed
    big = float(np.max(Y0, initial=0.0)) >= _F32_EXACT
    if trials is not None:
        big = big or float(np.max(trials, initial=0.0)) >= _F32_EXACT
    dtype = np.float64 if big else np.float32
    y = np.where(observed, Y0, np.nan).astype(dtype)
    off = prep.row_offset
    off = np.zeros(Y0.shape[0]) if off is None else np.asarray(off, dtype=np.float64)
    t = None if trials is None else jnp.asarray(np.asarray(trials, dtype=dtype))
    return DeviceData(jnp.asarray(y), jnp.asarray(off), t)


# The host's type of the likelihood's variables is the device's too: a pytree whose absent
# fields (None) hold no leaves, so each likelihood's programs carry just the variables it has.
if not getattr(LikelihoodParams, "_jax_pytree", False):
    jax.tree_util.register_dataclass(
        LikelihoodParams, data_fields=[f.name for f in fields(LikelihoodParams)], meta_fields=[]
    )
    LikelihoodParams._jax_pytree = True


def device_params(params: LikelihoodParams) -> LikelihoodParams:
    """The host's variables as the device's: the same type, holding float64 device arrays."""
    return LikelihoodParams.from_arrays({k: jnp.asarray(v, jnp.float64) for k, v in params.arrays().items()})


def host_params(dparams: LikelihoodParams) -> LikelihoodParams:
    """The device's variables back on the host (the inverse of :func:`device_params`)."""
    return LikelihoodParams.from_arrays({k: np.asarray(v, np.float64) for k, v in dparams.arrays().items()})


def observed_counts(y: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(observed mask, counts as float64 with 0 where unobserved)``."""
    obs = ~jnp.isnan(y)
    return obs, jnp.where(obs, y, 0.0).astype(jnp.float64)


def precisions(Phi_block: jax.Array, omega_block: jax.Array) -> jax.Array:
    """``Phi^T diag(omega_j) Phi`` for every column ``j`` over one block of rows (``J x L x L``):
    one product of ``omega^T`` with the rows' outer products ``phi_i phi_i^T``."""
    rows, L = Phi_block.shape
    outer = (Phi_block[:, :, None] * Phi_block[:, None, :]).reshape(rows, L * L)
    return (omega_block.T @ outer).reshape(omega_block.shape[1], L, L)


def gaussian_draw(key, P: jax.Array, rhs: jax.Array) -> jax.Array:
    """Every column ``beta_j ~ N(P_j^-1 rhs_j, P_j^-1)`` (`P` is ``J x L x L``, `rhs` ``L x J``):
    one batched Cholesky ``P = R R^T`` and two batched triangular solves,
    ``u = R^-T (R^-1 rhs + eps)``, whose mean is ``P^-1 rhs`` and covariance ``P^-1``."""
    J, L, _ = P.shape
    R = linalg.cholesky(P)
    eps = jax.random.normal(key, (J, L, 1))
    m = linalg.solve_triangular(R, rhs.T[:, :, None], lower=True) + eps
    u = linalg.solve_triangular(jnp.swapaxes(R, 1, 2), m, lower=False)
    return u[:, :, 0].T


def gaussian_weights(
    key, Phi: jax.Array, omega: jax.Array, rhs: jax.Array, prior_precision: float, groups: int = 1,
    replicated=None,
) -> jax.Array:
    """Every column ``beta_j ~ N(P_j^-1 rhs_j, P_j^-1)``, ``P_j = Phi^T diag(omega_j) Phi + tau I``,
    the precisions summed over blocks of rows (:func:`.rowsum.blocked_row_sum`) so that no
    ``N x L^2`` array is ever held."""
    L = Phi.shape[1]
    J = omega.shape[1]
    # Padded rows have omega = 0: they add nothing to any precision.
    P = blocked_row_sum(lambda b, ph, om: precisions(ph, om), jnp.zeros((J, L, L)), [Phi, omega], groups,
                        replicated)  # fmt: skip
    return gaussian_draw(key, P + prior_precision * jnp.eye(L), rhs)


def softplus(x: jax.Array) -> jax.Array:
    """``log(1 + e^x)`` without overflow."""
    return jnp.logaddexp(0.0, x)


@dataclass(frozen=True)
class LogisticPGDevice:
    """``c(y) exp(x)^y / (1 + exp(x))^b`` with ``beta_j ~ N(0, s^2 I)``: the Polya-gamma family
    (:class:`ibp_rflvm.likelihoods.polya_gamma.LogisticPG`). ``x = psi + offset``."""

    prior_scale: float = 1.0
    #: The rows' layout for sums over rows (:mod:`.rowsum`): the number of row groups, and the
    #: sharding that copies a small array to every device (None on one device).
    row_groups: int = 1
    replicated: Any = None

    # the shape b and log c(y), per entry (subclasses) ---------------------------------------
    def _b(
        self, y: jax.Array, obs: jax.Array, params: LikelihoodParams, trials: jax.Array | None
    ) -> jax.Array:
        """The shape ``b`` of each entry (`trials`: the same rows' numbers of trials, or None)."""
        raise NotImplementedError

    def _log_c(self, y: jax.Array, obs: jax.Array, params: LikelihoodParams, data: DeviceData) -> jax.Array:
        raise NotImplementedError

    # the interface ---------------------------------------------------------------------------
    def device_data(self, host_lik, prep) -> DeviceData:
        return upload_counts(prep)

    def initial(self, host_lik, prep, L: int, J: int) -> LikelihoodParams:
        """The start of the likelihood's variables, from which :meth:`start` draws the first
        weights (as the numba backend's ``init_params``)."""
        return self.device_params(LikelihoodParams(beta=np.zeros((L, J))))

    def start(self, key, Phi: jax.Array, dparams: LikelihoodParams, data: DeviceData) -> LikelihoodParams:
        """The chain's first variables from :meth:`initial`'s: one :meth:`update`."""
        return self.update(key, Phi, dparams, data)

    def device_params(self, params: LikelihoodParams) -> LikelihoodParams:
        return device_params(params)

    def host_params(self, dparams: LikelihoodParams) -> LikelihoodParams:
        return host_params(dparams)

    def row_constants(self, dparams: LikelihoodParams, data: DeviceData) -> jax.Array:
        obs, y = observed_counts(data.y)
        return jnp.sum(jnp.where(obs, self._log_c(y, obs, dparams, data), 0.0), axis=1)

    def row_loglik(
        self, psi: jax.Array, rows: jax.Array, const: jax.Array, dparams: LikelihoodParams, data: DeviceData
    ):
        obs, y = observed_counts(data.y[rows])
        x = psi + data.offset[rows][:, None]
        b = self._b(y, obs, dparams, None if data.trials is None else data.trials[rows])
        terms = jnp.where(obs, y * x - b * softplus(x), 0.0)
        return const[rows] + jnp.sum(terms, axis=1)

    def draw_beta(self, key, Phi: jax.Array, dparams: LikelihoodParams, data: DeviceData) -> jax.Array:
        """``omega ~ PG(b, x)``, then ``beta_j ~ N(V Phi^T (kappa_j - Omega_j o), V)``.

        By blocks of rows: each block's ``omega`` is drawn (from the key folded with the block's
        number) and added to the precisions and ``Phi^T kappa`` at once, so the Polya-gamma
        draws never hold more than one block: the update's memory does not grow with ``N x J``
        beyond the data and ``Phi``.
        """
        k_pg, k_w = jax.random.split(key)
        L, J = dparams.beta.shape
        arrays = [Phi, data.y, data.offset] + ([] if data.trials is None else [data.trials])

        def block(i, ph, yb, ob, *trials):
            # NaN counts mark padded rows unobserved; their Phi rows are NaN too, so they are zeroed.
            ph, ob = jnp.nan_to_num(ph), jnp.nan_to_num(ob)
            obs, y = observed_counts(yb)
            x = ph @ dparams.beta + ob[:, None]
            b = jnp.where(obs, self._b(y, obs, dparams, trials[0] if trials else None), 0.0)
            omega = draw_pg(jax.random.fold_in(k_pg, i), b, x)
            kappa = jnp.where(obs, y - 0.5 * b, 0.0) - omega * ob[:, None]
            return precisions(ph, omega), ph.T @ kappa

        start = (jnp.zeros((J, L, L)), jnp.zeros((L, J)))
        P, rhs = blocked_row_sum(block, start, arrays, self.row_groups, self.replicated, fill=jnp.nan)
        return gaussian_draw(k_w, P + self.prior_scale**-2.0 * jnp.eye(L), rhs)

    def update(self, key, Phi: jax.Array, dparams: LikelihoodParams, data: DeviceData) -> LikelihoodParams:
        return replace(dparams, beta=self.draw_beta(key, Phi, dparams, data))


@dataclass(frozen=True)
class NegBinomDevice(LogisticPGDevice):
    """:class:`ibp_rflvm.likelihoods.negbinom.NegBinomLikelihood`: ``b = y + r_j``; the
    dispersions by their CRT augmentation, ``r_j ~ Gamma(e0 + L_j, f0 + sum_i softplus(x_ij))``."""

    e0: float = 1.0
    f0: float = 1.0

    def initial(self, host_lik, prep, L, J):
        return self.device_params(LikelihoodParams(beta=np.zeros((L, J)), r=np.full(J, self.e0 / self.f0)))

    def _b(self, y, obs, params, trials):
        return y + params.r[None, :]

    def _log_c(self, y, obs, params, data):
        r = params.r[None, :]
        return lax.lgamma(y + r) - lax.lgamma(r) - lax.lgamma(y + 1.0)

    def update(self, key, Phi, dparams, data):
        k_beta, k_crt, k_r = jax.random.split(key, 3)
        beta = self.draw_beta(k_beta, Phi, dparams, data)

        # The CRT tables (with the current r) and the rate's softplus sums (with the new beta),
        # by blocks of rows as the weights' update.
        def block(i, ph, yb, ob):
            obs = ~jnp.isnan(yb)
            x = jnp.nan_to_num(ph) @ beta + jnp.nan_to_num(ob)[:, None]
            tables = crt_column_totals(jax.random.fold_in(k_crt, i), yb, obs, dparams.r)
            return tables, jnp.sum(jnp.where(obs, softplus(x), 0.0), axis=0)

        J = beta.shape[1]
        tables, soft = blocked_row_sum(block, (jnp.zeros(J), jnp.zeros(J)), [Phi, data.y, data.offset],
                                       self.row_groups, self.replicated, fill=jnp.nan)  # fmt: skip
        r = jax.random.gamma(k_r, self.e0 + tables) / (self.f0 + soft)
        return LikelihoodParams(beta=beta, r=jnp.maximum(r, 1e-300))


@dataclass(frozen=True)
class BinomialDevice(LogisticPGDevice):
    """:class:`ibp_rflvm.likelihoods.binomial.BinomialLikelihood`: ``b = n_ij`` trials
    (Bernoulli: one), ``log c = log C(n, y)``."""

    def device_data(self, host_lik, prep) -> DeviceData:
        return upload_counts(prep, prep.trials)

    def _b(self, y, obs, params, trials):
        return jnp.nan_to_num(trials.astype(jnp.float64))

    def _log_c(self, y, obs, params, data):
        n = data.trials.astype(jnp.float64)
        return lax.lgamma(n + 1.0) - lax.lgamma(y + 1.0) - lax.lgamma(n - y + 1.0)


__all__ = [
    "BinomialDevice", "DeviceData", "LogisticPGDevice", "NegBinomDevice",
    "gaussian_weights", "upload_counts",
]  # fmt: skip
