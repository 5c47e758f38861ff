"""The compiled device programs of the JAX target: features, row log-likelihoods, the elliptical
slice sampler of ``X``, the frequencies' Metropolis-Hastings step and the likelihood's update.

Every program takes the data and the state as arguments (never as closed-over constants, which
XLA would copy into the program) and the device likelihood, the bias flag and the number of
frequencies as static arguments, so one compilation serves every sweep of a fit: the latent
dimensions arrive padded to a fixed width (zero columns of ``H`` and ``W`` add exactly 0 to
``H W^T``) and row subsets padded to a few fixed sizes (:func:`bucket`).
"""

from __future__ import annotations

import math
from functools import partial

from . import jax
from .ess import elliptical_slice, select
from .likelihoods import DeviceData

jnp = jax.numpy
lax = jax.lax

_STATIC = ("dlik", "bias", "M")


def bucket(n: int, n_rows: int) -> int:
    """The padded size of a subset of `n` rows out of `n_rows`: 1, then powers of 8 from 64,
    then all rows, so that the moves' varying row subsets need a handful of programs."""
    if n >= n_rows:
        return n_rows
    if n <= 1:
        return 1
    size = 64
    while size < n:
        size *= 8
    return min(size, n_rows)


def bucket_sizes(n_rows: int) -> list[int]:
    """Every size :func:`bucket` gives for `n_rows` rows."""
    return sorted({bucket(n, n_rows) for n in [1, n_rows] + [8**k for k in range(2, 12)]})


def features(H: jax.Array, W: jax.Array, bias: bool, M: int) -> jax.Array:
    """``[cos(H W^T), sin(H W^T)] / sqrt(M)`` and, with `bias`, a constant column last (the
    layout of :func:`ibp_rflvm.features.feature_map`)."""
    return features_of(H @ W.T, bias, M)


def features_of(proj: jax.Array, bias: bool, M: int) -> jax.Array:
    """The features of the projections ``proj = H W^T``."""
    scale = 1.0 / math.sqrt(M)
    parts = [jnp.cos(proj) * scale, jnp.sin(proj) * scale]
    if bias:
        parts.append(jnp.ones((proj.shape[0], 1)))
    return jnp.concatenate(parts, axis=1)


def _scored(P, beta, rows, const, dparams, data, dlik, bias, M):
    """``(ll, Phi, psi, P)`` of the rows `rows` whose projections are `P`: the state's layout."""
    Phi = features_of(P, bias, M)
    psi = Phi @ beta
    return dlik.row_loglik(psi, rows, const, dparams, data), Phi, psi, P


@partial(jax.jit, static_argnames=_STATIC)
def rows_loglik(H, W, beta, rows, const, dparams, data: DeviceData, dlik, bias, M):
    """``(ll, Phi, psi, P)`` of the rows `rows` with latent rows `H`."""
    return _scored(H @ W.T, beta, rows, const, dparams, data, dlik, bias, M)


@partial(jax.jit, static_argnames=_STATIC)
def column_change(step, w_col, P, beta, const, ll, dparams, data: DeviceData, dlik, bias, M):
    """Every row's log-likelihood change when its latent coordinate of one dimension moves by
    ``step_i`` (that dimension's frequencies `w_col`), and the moved rows' state.

    ``H W^T`` then moves by the rank-1 ``step w_col^T``, so only `step` (``N`` numbers) and
    `w_col` (``M``) come from the host, whatever the number of dimensions.
    """
    alt = _scored(P + step[:, None] * w_col[None, :], beta, jnp.arange(P.shape[0]), const, dparams, data,
                  dlik, bias, M)  # fmt: skip
    return alt[0] - ll, alt


@partial(jax.jit, donate_argnames=("cur",))
def commit_mask(cur, alt, mask):
    """:func:`select`, writing into `cur`'s memory."""
    return select(mask, cur, alt)


@partial(jax.jit, donate_argnames=("cur",))
def commit_rows(cur, prop, dst, src):
    """Rows ``dst[k]`` of `cur` become rows ``src[k]`` of `prop`; ``dst`` entries past the rows
    (the padding) are dropped."""
    return tuple(c.at[dst].set(p[src], mode="drop") for c, p in zip(cur, prop, strict=True))


@partial(jax.jit, static_argnames=_STATIC)
def total_loglik(Phi, dparams, data: DeviceData, dlik, bias, M):
    """The row constants and the rows' log-likelihoods at ``psi = Phi beta``."""
    const = dlik.row_constants(dparams, data)
    psi = Phi @ dparams["beta"]
    ll = dlik.row_loglik(psi, jnp.arange(Phi.shape[0]), const, dparams, data)
    return const, ll, psi


@partial(jax.jit, static_argnames=_STATIC)
def update_params(key, Phi, dparams, data: DeviceData, dlik, bias, M):
    """The likelihood's Gibbs step given ``Phi``: the weights and its own variables."""
    return dlik.update(key, Phi, dparams, data)


@partial(jax.jit, static_argnames=_STATIC)
def feature_state(H, W, dparams, data: DeviceData, dlik, bias, M):
    """The row constants and the state ``(ll, Phi, psi, P)`` of a sweep's start: the rows'
    log-likelihoods, features, linear predictors and projections ``P = H W^T``."""
    P = H @ W.T
    Phi = features_of(P, bias, M)
    const, ll, psi = total_loglik(Phi, dparams, data, dlik, bias, M)
    return const, (ll, Phi, psi, P)


# The state (ll, Phi, psi, P) is donated to the programs that replace it: XLA may then write the
# new state into the old one's memory (8 bytes per entry less at the sweep's peak).
@partial(jax.jit, static_argnames=_STATIC, donate_argnames=("state",))
def ess_x(key, X, Zf, W, beta, const, state, dparams, data: DeviceData, dlik, bias, M):
    """One elliptical slice update of every row of ``X`` under its ``N(0, I)`` prior
    (:func:`.ess.elliptical_slice`), the accepted rows' state kept with them. Returns
    ``(X, state, evaluations)``."""
    rows = jnp.arange(X.shape[0])

    def loglik(prop):
        alt = _scored((prop * Zf) @ W.T, beta, rows, const, dparams, data, dlik, bias, M)
        return alt[0], alt

    X, _, state, n_evals = elliptical_slice(key, X, loglik, state[0], state)
    return X, state, n_evals


@partial(jax.jit, static_argnames=_STATIC, donate_argnames=("state",))
def mh_frequencies(W_prop, log_u, H, W, beta, const, state, dparams, data: DeviceData, dlik, bias, M):
    """Metropolis-Hastings of each frequency in turn, proposal ``W_prop[m]`` (from its mixture
    component, independent of the current value), accepted when
    ``log u < sum_i ll_i(proposal) - sum_i ll_i(current)``: an independence proposal drawn from
    the frequency's prior, so the prior and proposal densities cancel and the ratio is the
    likelihood ratio (:func:`ibp_rflvm.targets.factorised_state.update_w`). A proposal changes
    two columns of ``Phi`` and one of ``P``, so ``psi`` moves by a rank-2 product. Sums in
    float64. Returns ``(W, state, accepted)``."""
    rows = jnp.arange(H.shape[0])
    scale = 1.0 / math.sqrt(M)

    def body(m, s):
        W, (ll, Phi, psi, P), total, acc = s
        w = W_prop[m]
        proj = H @ w
        new = jnp.stack([jnp.cos(proj), jnp.sin(proj)], axis=1) * scale
        old = jnp.stack([Phi[:, m], Phi[:, m + M]], axis=1)
        B = jnp.stack([beta[m], beta[m + M]], axis=0)
        psi_p = psi + (new - old) @ B
        ll_p = dlik.row_loglik(psi_p, rows, const, dparams, data)
        total_p = jnp.sum(ll_p)

        def accept(_):
            Phi_n = Phi.at[:, m].set(new[:, 0]).at[:, m + M].set(new[:, 1])
            return W.at[m].set(w), (ll_p, Phi_n, psi_p, P.at[:, m].set(proj)), total_p, acc + 1

        return lax.cond(log_u[m] < total_p - total, accept, lambda _: s, None)

    s = (W, tuple(state), jnp.sum(state[0]), jnp.zeros((), jnp.int64))
    W, state, _, acc = lax.fori_loop(0, W_prop.shape[0], body, s)
    return W, state, acc


_PROGRAMS = (
    rows_loglik, column_change, commit_mask, commit_rows, total_loglik, update_params, feature_state,
    ess_x, mh_frequencies,
)  # fmt: skip


def compiled_count() -> int:
    """How many compiled variants the programs hold in this process (one per distinct set of
    shapes and static arguments): a fit that compiles nothing after its first sweeps keeps
    this number fixed from then on."""
    return sum(p._cache_size() for p in _PROGRAMS)
