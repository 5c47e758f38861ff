"""The Poisson and multinomial likelihoods on the device, beside :mod:`.likelihoods`.

Neither is a Polya-gamma family of the form :class:`.likelihoods.LogisticPGDevice` handles:

* :class:`PoissonDevice` (:class:`ibp_rflvm.likelihoods.poisson.PoissonLikelihood`) draws its
  weights by elliptical slice sampling of the ``J`` columns under their ``N(0, s^2 I)`` prior,
  all columns side by side in one ``lax.while_loop``, as :func:`.programs.ess_x` does for the
  rows of ``X``;
* :class:`MultinomialDevice` (:class:`ibp_rflvm.likelihoods.multinomial.MultinomialLikelihood`)
  updates one category after another (Holmes and Held 2006), each a Polya-gamma draw over the
  rows and one Gaussian column.

Both keep the interface of :mod:`.likelihoods` (frozen dataclasses, static arguments of the
compiled programs, pure functions of device arrays).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..likelihoods.base import LikelihoodParams
from . import jax, linalg
from .ess import elliptical_slice
from .likelihoods import (
    BinomialDevice,
    DeviceData,
    LogisticPGDevice,
    NegBinomDevice,
    device_params,
    gaussian_weights,
    host_params,
    observed_counts,
    upload_counts,
)  # fmt: skip
from .polya_gamma import draw_pg
from .rowsum import row_sum, rows_dot

jnp = jax.numpy
lax = jax.lax

@dataclass(frozen=True)
class _DeviceBase:
    prior_scale: float = 1.0
    #: The rows' layout for sums over rows (:mod:`.rowsum`), as :class:`.likelihoods.LogisticPGDevice`.
    row_groups: int = 1
    replicated: Any = None

    def device_data(self, host_lik, prep) -> DeviceData:
        return upload_counts(prep)

    def initial(self, host_lik, prep, L: int, J: int) -> LikelihoodParams:
        return LikelihoodParams(beta=jnp.zeros((L, J)))

    def start(self, key, Phi: jax.Array, dparams: LikelihoodParams, data: DeviceData) -> LikelihoodParams:
        """The chain's first variables from :meth:`initial`'s: one :meth:`update`."""
        return self.update(key, Phi, dparams, data)

    def device_params(self, params: LikelihoodParams) -> LikelihoodParams:
        return device_params(params)

    def host_params(self, dparams: LikelihoodParams) -> LikelihoodParams:
        return host_params(dparams)


@dataclass(frozen=True)
class PoissonDevice(_DeviceBase):
    """``y_ij ~ Poisson(exp(psi_ij + o_i))``, ``o_i = log s_i`` the rows' size factors (zero
    without them), ``beta_j ~ N(0, s^2 I)``."""

    def start(self, key, Phi: jax.Array, dparams: LikelihoodParams, data: DeviceData) -> LikelihoodParams:
        """One :meth:`update` from a draw of the Gaussian (Laplace) approximation at
        ``psi = log(y + 1/2)``, as the host's ``init_params``."""
        key, k_start = jax.random.split(key)
        return self.update(key, Phi, LikelihoodParams(beta=self.laplace_draw(k_start, Phi, data)), data)

    def row_constants(self, dparams: LikelihoodParams, data: DeviceData) -> jax.Array:
        obs, y = observed_counts(data.y)
        return -jnp.sum(jnp.where(obs, lax.lgamma(y + 1.0), 0.0), axis=1)

    def row_loglik(
        self, psi: jax.Array, rows: jax.Array, const: jax.Array, dparams: LikelihoodParams, data: DeviceData
    ):
        obs, y = observed_counts(data.y[rows])
        x = psi + data.offset[rows][:, None]
        terms = jnp.where(obs, y * x - jnp.exp(x), 0.0)
        return const[rows] + jnp.sum(terms, axis=1)

    def laplace_draw(self, key, Phi: jax.Array, data: DeviceData) -> jax.Array:
        """Weights ``y + 1/2`` and working response ``log(y + 1/2) - o_i``: near the posterior even
        for large counts, which the prior-ellipse moves of ESS would take many sweeps to reach
        from ``beta = 0``."""
        obs, y = observed_counts(data.y)
        w = jnp.where(obs, y + 0.5, 0.0)
        target = jnp.log(y + 0.5) - data.offset[:, None]
        rhs = rows_dot(Phi, w * target, self.row_groups, self.replicated)
        return gaussian_weights(key, Phi, w, rhs, self.prior_scale**-2.0, self.row_groups, self.replicated)

    def update(self, key, Phi: jax.Array, dparams: LikelihoodParams, data: DeviceData) -> LikelihoodParams:
        """One elliptical slice update of every weight column (:func:`ibp_rflvm.samplers.ess.elliptical_slice`
        with units ``beta_j / s`` under ``N(0, I)``); a column stops at its first proposal above
        its slice level, the bracket shrinking towards the current point on each rejection."""
        beta = dparams.beta
        s = self.prior_scale
        obs, y = observed_counts(data.y)
        off = data.offset[:, None]

        def col_ll(U):
            # Without the columns' constants sum -lgamma(y + 1): only differences with the
            # slice level, computed by this same function, matter.
            x = Phi @ (s * U.T) + off
            return row_sum(jnp.where(obs, y * x - jnp.exp(x), 0.0), self.row_groups, self.replicated)

        U = beta.T / s
        U_new = elliptical_slice(key, U, lambda prop: (col_ll(prop), ()), col_ll(U))[0]
        return LikelihoodParams(beta=s * U_new.T)


def one_column_weights(
    key, Phi: jax.Array, omega: jax.Array, rhs: jax.Array, prior_precision: float, groups: int = 1,
    replicated=None,
):
    """``beta ~ N(P^-1 rhs, P^-1)``, ``P = Phi^T diag(omega) Phi + tau I``: :func:`.gaussian_weights`
    for one column, whose precision one product gives without the rows' outer products."""
    L = Phi.shape[1]
    P = rows_dot(Phi, omega[:, None] * Phi, groups, replicated) + prior_precision * jnp.eye(L)
    R = linalg.cholesky(P)
    m = linalg.solve_triangular(R, rhs, lower=True) + jax.random.normal(key, (L,))
    return linalg.solve_triangular(R.T, m, lower=False)


def _row_totals(data: DeviceData):
    """``(observed, counts, n_i, informative_i)``: rows with fewer than two observed categories or
    no counts have likelihood 1 and carry nothing about the weights."""
    obs, y = observed_counts(data.y)
    n = jnp.sum(y, axis=1)
    informative = (jnp.sum(obs, axis=1) >= 2) & (n > 0)
    return obs, y, n, informative


@dataclass(frozen=True)
class MultinomialDevice(_DeviceBase):
    """``y_i ~ Mult(n_i, softmax(psi_i))`` over row ``i``'s OBSERVED categories, ``n_i`` their
    total, ``beta_J = 0`` the reference and ``beta_j ~ N(0, s^2 I)`` for ``j < J``. The start is
    ``beta = 0`` and one sweep of the category updates, as the host's ``init_params``."""

    def row_constants(self, dparams: LikelihoodParams, data: DeviceData) -> jax.Array:
        obs, y, n, _ = _row_totals(data)
        return lax.lgamma(n + 1.0) - jnp.sum(jnp.where(obs, lax.lgamma(y + 1.0), 0.0), axis=1)

    def row_loglik(
        self, psi: jax.Array, rows: jax.Array, const: jax.Array, dparams: LikelihoodParams, data: DeviceData
    ):
        obs, y = observed_counts(data.y[rows])
        # Offsets are zero here (and a row's shift cancels in the softmax); added for the interface.
        x = psi + data.offset[rows][:, None]
        n = jnp.sum(y, axis=1)
        m = jnp.max(jnp.where(obs, x, -jnp.inf), axis=1)
        any_obs = jnp.isfinite(m)
        m = jnp.where(any_obs, m, 0.0)
        lse = m + jnp.log(jnp.sum(jnp.where(obs, jnp.exp(x - m[:, None]), 0.0), axis=1))
        ll = const[rows] + jnp.sum(jnp.where(obs, y * x, 0.0), axis=1) - n * lse
        # A row with nothing observed has likelihood 1 (its log-sum-exp is -inf).
        return jnp.where(any_obs, ll, 0.0)

    def update(self, key, Phi: jax.Array, dparams: LikelihoodParams, data: DeviceData) -> LikelihoodParams:
        """Categories ``j = 0 .. J-2`` in turn: ``omega_ij ~ PG(n_i, psi_ij - xi_ij)``, then
        ``beta_j ~ N(V Phi^T (kappa_j + Omega_j xi_j), V)``, ``kappa_ij = y_ij - n_i / 2``,
        ``xi_ij = log sum_{j' observed, j' != j} exp(psi_ij')`` at the categories' current values.

        ``xi`` is never a difference (the host subtracts ``exp(psi_ij)`` from a running total and
        recomputes where that would cancel): it is the log-sum-exp of the updated categories
        before ``j`` (a running ``logaddexp``) and that of the not yet updated ones after ``j``
        (a reverse cumulative log-sum-exp of the sweep's starting ``psi``), so it is exact to
        float64 rounding for every row at ``O(N J)`` per sweep.
        """
        obs, y, n, informative = _row_totals(data)
        beta = dparams.beta
        J = beta.shape[1]
        psi0 = jnp.where(obs, Phi @ beta, -jnp.inf)
        tail = lax.cumlogsumexp(psi0, axis=1, reverse=True)
        after = jnp.concatenate([tail[:, 1:], jnp.full((psi0.shape[0], 1), -jnp.inf)], axis=1)
        tau = self.prior_scale**-2.0

        def category(j, st):
            beta, before = st
            k_pg, k_w = jax.random.split(jax.random.fold_in(key, j))
            obs_j = obs[:, j]
            xi = jnp.logaddexp(before, after[:, j])
            use = obs_j & informative
            b = jnp.where(use, n, 0.0)
            c = jnp.where(use, psi0[:, j] - xi, 0.0)
            kappa = jnp.where(use, y[:, j] - 0.5 * n, 0.0)
            omega = draw_pg(k_pg, b, c)
            g, rep = self.row_groups, self.replicated
            rhs = rows_dot(Phi, (kappa + omega * jnp.where(use, xi, 0.0))[:, None], g, rep)[:, 0]
            beta_j = one_column_weights(k_w, Phi, omega, rhs, tau, g, rep)
            before = jnp.logaddexp(before, jnp.where(obs_j, Phi @ beta_j, -jnp.inf))
            return beta.at[:, j].set(beta_j), before

        start = (beta, jnp.full(Phi.shape[0], -jnp.inf))
        beta, _ = lax.fori_loop(0, J - 1, category, start)
        return LikelihoodParams(beta=beta)


__all__ = ["MultinomialDevice", "PoissonDevice", "for_likelihood", "one_column_weights"]


def for_likelihood(lik) -> LogisticPGDevice | PoissonDevice | MultinomialDevice:
    """The device likelihood of the host likelihood `lik` (ValueError for one the JAX backend
    does not run)."""
    name = getattr(lik, "name", "")
    if name in ("poisson", "multinomial"):
        cls = PoissonDevice if name == "poisson" else MultinomialDevice
        return cls(prior_scale=float(lik.prior_scale))
    if name == "negbinom":
        return NegBinomDevice(prior_scale=float(lik.prior_scale), e0=float(lik.e0), f0=float(lik.f0))
    if name in ("binomial", "bernoulli"):
        return BinomialDevice(prior_scale=float(lik.prior_scale))
    raise ValueError(
        "backend='jax' runs the negative binomial, Poisson, multinomial, binomial and Bernoulli "
        f"likelihoods; {name or type(lik).__name__!r} runs on backend='numba'"
    )
