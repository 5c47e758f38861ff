"""The scale move on the device: the twin of :mod:`ibp_rflvm.samplers.scale` as a pure JAX
function of the padded state (fixed shapes, no host callback), run by the sweep after the
frequencies' move and just before the Dirichlet-process step, as on the host.

The move is the host's: for each live dimension ``d`` in slot order, :data:`SCALE_STEPS`
Metropolis-Hastings proposals ``u ~ N(0, s_d^2)``, ``s_d = 2.4 / sqrt(2 n_d + M)``, on the orbit
``(x_d, w_d) -> (e^u x_d, e^{-u} w_d)`` (``x_id`` only where ``z_id != 0``), with the mixture's
component means and covariances integrated out, accepted when ``log v < log r`` with the
host's ratio (derived in :mod:`ibp_rflvm.samplers.scale`)::

    log r = (n_d - M) u - (e^{2u} - 1) A_d / 2 - sum_k (nu_k / 2) (log|Psi_k(u)| - log|Psi_k|)

``A_d = sum_{i: z_id != 0} x_id^2``, ``nu_k = K + 2 + n_k`` and ``Psi_k = I + sum_m w_m w_m^T -
s_k s_k^T / (lambda0 + n_k)`` over component ``k``'s members (``K`` the live dimensions).
Only the determinants are computed differently. Scaling column ``d`` of ``W`` by ``r = e^{-u}``
turns ``Psi_k`` into ``I + S (Psi_k - I) S`` with ``S = diag(1, .., r, .., 1)``, whose
determinant is ``|Psi_k| (r^2 + (1 - r^2) q_k)`` with ``q_k = [Psi_k^{-1}]_dd`` (the
determinant lemma on ``S (Psi_k + (r^{-2} - 1) e_d e_d^T) S``). So the ratio needs one number
per component; ``q_k`` after an accepted ``u`` is ``q_k / (r^2 + (1 - r^2) q_k)``, and after
dimension ``d`` the inverse takes its net scaling as one rank-one update (Sherman-Morrison),
rows and column ``d`` rescaled. Each sweep factorises every ``Psi_k`` once, rather than once per
proposal as the host does: on a device the ``M`` factorisations of a proposal are a sequential
step, and ``K+ x 3`` of them a sweep would be most of the move's time.

Padding: the dead slots carry identity rows in ``Psi_k`` (``W``'s column is 0 there) and are
never accepted (their draws are spent and ignored, so the stream need not match the host's);
empty label slots have ``Psi_k = I`` and weight 0. The net scaling of each dimension is applied
to ``X`` and ``W`` at the end, one factor per column: ``H W^T`` is unchanged up to rounding, so
the sweep keeps its projections.
"""

from __future__ import annotations

from collections.abc import Callable

from ..samplers.scale import SCALE_STEPS
from . import jax, linalg
from .dp_device import _label_stats

jnp = jax.numpy
lax = jax.lax


def _column_sums(v: jax.Array) -> jax.Array:
    return jnp.sum(v, axis=0)


def evidence_inverses(W, zeta, active, lam0: float) -> tuple[jax.Array, jax.Array]:
    """``(Q, half_nu)``: each label slot's ``Psi_k^{-1}`` (``M x Kw x Kw``, identity on dead
    slots) and ``nu_k / 2`` (0 for a slot without members, whose ``Psi_k`` is ``I``)."""
    counts, sums, outers = _label_stats(jnp.where(active, W, 0.0), zeta)
    G = outers - sums[:, :, None] * sums[:, None, :] / (lam0 + counts)[:, None, None]
    Q = linalg.live_inverse(jnp.eye(W.shape[1]) + G, active)
    K = jnp.sum(active).astype(jnp.float64)
    return Q, jnp.where(counts > 0.0, 0.5 * (K + 2.0 + counts), 0.0)


def log_ratio(u, n_d, A_d, M: int, q, half_nu) -> jax.Array:
    """The move's ``log r`` (module docstring) for proposal `u` on a dimension used by `n_d`
    rows with ``A_d = sum x^2`` over them, ``q = [Psi_k^{-1}]_dd`` per label slot.

    ``log(r^2 + (1 - r^2) q) = log1p((1 - q) expm1(-2u))``: exact to rounding for small `u`,
    and finite, since ``0 < q <= 1`` (``Psi_k - I`` is positive semi-definite).
    """
    evidence = -jnp.sum(half_nu * jnp.log1p((1.0 - q) * jnp.expm1(-2.0 * u)))
    return (n_d - M) * u - 0.5 * jnp.expm1(2.0 * u) * A_d + evidence


def scale_log_ratio(u, d, X, Z, W, zeta, active, lam0: float) -> jax.Array:
    """``log r`` of proposal `u` on slot `d` at the given state, from scratch (the quantity
    the host's :func:`ibp_rflvm.samplers.scale.scale_moves` compares ``log v`` with).

    Parameters
    ----------
    u : float
        The proposed log scale of ``x_d`` (``w_d`` scales by ``e^{-u}``).
    d : int
        A live slot.
    X, Z : jax.Array
        ``(N, Kw)`` positions and which rows use which slot.
    W : jax.Array
        ``(M, Kw)`` frequencies.
    zeta : jax.Array
        ``(M,)`` labels in ``[0, M)``.
    active : jax.Array
        ``(Kw,)`` bool, the live slots.
    lam0 : float
        The normal-inverse-Wishart prior's ``lambda0``.

    Returns
    -------
    jax.Array
        Scalar float64.
    """
    on = Z[:, d] != 0
    Q, half_nu = evidence_inverses(W, zeta, active, lam0)
    n_d = jnp.sum(on).astype(jnp.float64)
    A_d = jnp.sum(jnp.where(on, X[:, d] ** 2, 0.0))
    return log_ratio(u, n_d, A_d, W.shape[0], Q[:, d, d], half_nu)


def proposal_draws(key, width: int, steps: int = SCALE_STEPS) -> tuple[jax.Array, jax.Array]:
    """The move's standard normals and uniforms, ``(width, steps)`` each: proposal ``j`` of
    slot ``d`` is ``u = s_d e[d, j]``, accepted when ``v[d, j] < r``."""
    k_e, k_v = jax.random.split(key)
    e = jax.random.normal(k_e, (width, steps), dtype=jnp.float64)
    v = jax.random.uniform(k_v, (width, steps), dtype=jnp.float64)
    return e, v


def log_scales(
    key,
    X,
    Z,
    W,
    zeta,
    active,
    lam0: float,
    steps: int = SCALE_STEPS,
    column_sums: Callable[[jax.Array], jax.Array] = _column_sums,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The move's accepted proposals, before they are applied: ``(U, Q, accepted)``, each
    slot's net log scale (``x_d`` times ``e^{U_d}``, ``w_d`` times ``e^{-U_d}``; 0 on dead
    slots), the evidence inverses of :func:`evidence_inverses` at the moved frequencies, tracked
    by the rank-one updates, and the number of proposals accepted. Arguments as
    :func:`scale_moves`."""
    M, Kw = W.shape
    on = Z != 0
    n = column_sums(on.astype(jnp.float64))
    A = column_sums(jnp.where(on, X * X, 0.0))
    Q, half_nu = evidence_inverses(W, zeta, active, lam0)
    e, v = proposal_draws(key, Kw, steps)
    log_v = jnp.log(v)
    slots = jnp.arange(Kw)

    def dimension(d, c):
        Q, U, accepted = c
        q0 = Q[:, d, d]
        s = 2.4 / jnp.sqrt(2.0 * n[d] + M)

        def proposal(j, p):
            q, A_d, u_d, accepted = p
            u = s * e[d, j]
            take = active[d] & (log_v[d, j] < log_ratio(u, n[d], A_d, M, q, half_nu))
            q = jnp.where(take, q / (1.0 + (1.0 - q) * jnp.expm1(-2.0 * u)), q)
            A_d = jnp.where(take, A_d * jnp.exp(2.0 * u), A_d)
            return q, A_d, jnp.where(take, u_d + u, u_d), accepted + take

        zero = jnp.zeros((), jnp.float64)
        _, _, u_d, accepted = lax.fori_loop(0, steps, proposal, (q0, A[d], zero, accepted))
        # The dimension's net scaling r^2 = e^{-2 u_d} in one rank-one update of every Psi_k^{-1}:
        # (Psi + c e e^T)^{-1} with c = r^{-2} - 1, then row and column d over r. With u_d = 0
        # (nothing accepted, or a dead slot) the coefficient is 0 and the factor 1: Q is kept.
        t = jnp.expm1(-2.0 * u_d)
        coef = -t / (1.0 + (1.0 - q0) * t)
        col = Q[:, :, d]
        Q = Q - coef[:, None, None] * col[:, :, None] * col[:, None, :]
        f = jnp.where(slots == d, jnp.exp(u_d), 1.0)
        Q = Q * f[None, :, None] * f[None, None, :]
        return Q, U.at[d].set(u_d), accepted

    start = (Q, jnp.zeros(Kw), jnp.zeros((), jnp.int64))
    Q, U, accepted = lax.fori_loop(0, Kw, dimension, start)
    return U, Q, accepted


def scale_moves(
    key,
    X,
    Z,
    W,
    zeta,
    active,
    lam0: float,
    steps: int = SCALE_STEPS,
    column_sums: Callable[[jax.Array], jax.Array] = _column_sums,
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """`steps` scale proposals for each live slot in turn (module docstring).

    Parameters
    ----------
    key : jax.Array
        PRNG key.
    X : jax.Array
        ``(N, Kw)`` positions; ``x_id`` moves only where ``z_id`` is on.
    Z : jax.Array
        ``(N, Kw)`` which rows use which slot.
    W : jax.Array
        ``(M, Kw)`` frequencies.
    zeta : jax.Array
        ``(M,)`` labels in ``[0, M)``, any labels.
    active : jax.Array
        ``(Kw,)`` bool, the live slots; the others are left exactly as they are.
    lam0 : float
        The normal-inverse-Wishart prior's ``lambda0``.
    steps : int, default=3
        Proposals per live slot.
    column_sums : callable, default=sum over axis 0
        ``(N, Kw) -> (Kw,)`` sums over rows (the sweep passes its fixed-order row sums, so that
        the chain is the same on any number of devices).

    Returns
    -------
    X, W : jax.Array
        The moved positions and frequencies.
    proposed, accepted : jax.Array
        Int64 scalars.
    """
    U, _, accepted = log_scales(key, X, Z, W, zeta, active, lam0, steps, column_sums)
    X = jnp.where(Z != 0, X * jnp.exp(U)[None, :], X)
    W = W * jnp.exp(-U)[None, :]
    proposed = (jnp.sum(active) * steps).astype(jnp.int64)
    return X, W, proposed, accepted


__all__ = [
    "SCALE_STEPS", "evidence_inverses", "log_ratio", "log_scales", "proposal_draws", "scale_log_ratio",
    "scale_moves",
]  # fmt: skip
