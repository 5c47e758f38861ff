"""The Dirichlet-process mixture over the random frequencies on the device: the twin of
:mod:`ibp_rflvm.samplers.dp_mixture` as pure JAX functions of padded arrays, so that the whole
DP step runs inside one compiled MCMC sweep (no host callbacks, fixed shapes).

Padded layout (fixed by the rest of the sweep):

* ``Kw`` latent slots; ``active`` (bool ``(Kw,)``) says which are live dimensions, in any
  pattern, and ``K = active.sum()`` is the model's number of dimensions: it sets ``nu0 = K + 2``
  and every other dimension-dependent constant.
* ``W`` is ``(M, Kw)``; ``zeta`` (int ``(M,)``) holds labels in ``[0, M)``, any labels: a
  component is a label with members, and no relabelling is done. ``mu`` is ``(M, Kw)`` and
  ``Sigma`` ``(M, Kw, Kw)``, one row per label slot.
* Neutral values, which every function returns where nothing lives: ``W`` column 0, ``mu`` 0,
  ``Sigma`` identity row and column on inactive slots; ``mu`` 0 and ``Sigma`` identity for label
  slots without members.

The neutral values make the padding invisible: a matrix that is the identity on the inactive
slots (and 0 between them and the rest) has, on the active slots, the Cholesky factor, inverse
and determinant of its compacted active block, and a deviation that is 0 on the inactive slots
adds nothing to a Mahalanobis distance. So each function gives, on the active slots, exactly
the law the host code gives on the compacted ``K``-dimensional arrays.
"""

from __future__ import annotations

import math

from . import jax, linalg

jnp = jax.numpy
lax = jax.lax
_gammaln = jax.scipy.special.gammaln


def _pair_mask(active: jax.Array) -> jax.Array:
    """``(Kw, Kw)`` mask of the entries whose row and column are both active."""
    return active[:, None] & active[None, :]


def _label_stats(W: jax.Array, zeta: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Member counts, sums and sums of outer products per label slot (``M`` slots).

    One-hot products rather than scatters: fixed shapes, and deterministic sums on a GPU.
    """
    M = W.shape[0]
    onehot = (zeta[None, :] == jnp.arange(M, dtype=zeta.dtype)[:, None]).astype(W.dtype)
    counts = onehot.sum(axis=1)
    sums = onehot @ W
    outers = jnp.einsum("km,ma,mb->kab", onehot, W, W)
    return counts, sums, outers


# --------------------------------------------------------------------------------------------
# Collapsed Gibbs for the assignments (Neal 2000, Algorithm 3)
# --------------------------------------------------------------------------------------------


def log_t_predictive(
    w: jax.Array,
    n: jax.Array | float,
    s: jax.Array,
    outer: jax.Array,
    active: jax.Array,
    lam0: float,
) -> jax.Array:
    """NIW posterior-predictive multivariate t log density of `w` over the active slots.

    The host's ``_log_t_predictive`` with ``nu0 = K + 2``: ``lambda_n = lambda0 + n``,
    ``nu_n = nu0 + n``, ``Psi_n = I + outer - s s^T / lambda_n``, predictive
    ``t_{nu_n - K + 1}(s / lambda_n, Psi_n (lambda_n + 1) / (lambda_n (nu_n - K + 1)))``. The
    inactive slots enter as an identity block with a zero deviation, so they add nothing to
    the log-determinant or the Mahalanobis distance. `n`, `s` and `outer` may carry a leading
    batch of components (every label slot at once); the factorisations go through :mod:`.linalg`.

    Parameters
    ----------
    w : jax.Array
        ``(Kw,)`` the frequency scored.
    n : jax.Array or float
        The component's number of members (without `w`), ``()`` or ``(C,)``; 0 gives the prior
        predictive.
    s : jax.Array
        ``(Kw,)`` or ``(C, Kw)``: sum of the members.
    outer : jax.Array
        ``(Kw, Kw)`` or ``(C, Kw, Kw)``: sum of the members' outer products.
    active : jax.Array
        ``(Kw,)`` bool, the live slots.
    lam0 : float
        The NIW prior's ``lambda0``.

    Returns
    -------
    jax.Array
        Float64 log density, one per component (``()`` or ``(C,)``).
    """
    pair = _pair_mask(active)
    K = jnp.sum(active).astype(jnp.float64)
    n = jnp.asarray(n, jnp.float64)
    lam = lam0 + n
    df = (K + 2.0 + n) - K + 1.0
    scale = (lam + 1.0) / (lam * df)
    s = jnp.where(active, s, 0.0)
    lam_, scale_ = lam[..., None, None], scale[..., None, None]
    cov = jnp.where(pair, (outer - s[..., :, None] * s[..., None, :] / lam_) * scale_, 0.0)
    cov = cov + jnp.where(jnp.eye(active.shape[0], dtype=bool), jnp.where(active, scale_, 1.0), 0.0)
    L = linalg.cholesky(cov)
    dev = jnp.where(active, w - s / lam[..., None], 0.0)
    y = linalg.solve_triangular(L, dev[..., :, None], lower=True)[..., 0]
    maha = jnp.sum(y * y, axis=-1)
    logdet = jnp.sum(jnp.log(jnp.diagonal(L, axis1=-2, axis2=-1)), axis=-1)
    return (
        _gammaln(0.5 * (df + K))
        - _gammaln(0.5 * df)
        - 0.5 * K * jnp.log(df * math.pi)
        - logdet
        - 0.5 * (df + K) * jnp.log1p(maha / df)
    )


def gibbs_assignments(
    key: jax.Array,
    W: jax.Array,
    active: jax.Array,
    zeta: jax.Array,
    eta: jax.Array | float,
    lam0: float,
) -> jax.Array:
    """One Algorithm-3 pass over ``m = 0..M-1`` in order; returns the new labels.

    Each frequency leaves its label slot, then picks an occupied slot ``c`` with weight
    ``n_c^{-m}`` times the slot's posterior predictive, or a new component with weight `eta`
    times the prior predictive. The new component takes the first empty label slot: with ``M``
    slots and at most ``M - 1`` other members one is always free, and which free slot is used
    does not change the law over partitions. Every slot is scored at each step (fixed shapes);
    the empty ones are masked out. A slot that empties has its statistics reset to exact zeros
    (the host keeps their rounding residue, which it never reads).

    Parameters
    ----------
    key : jax.Array
        PRNG key; step ``m`` uses ``fold_in(key, m)``.
    W : jax.Array
        ``(M, Kw)`` frequencies.
    active : jax.Array
        ``(Kw,)`` bool, the live slots.
    zeta : jax.Array
        ``(M,)`` int labels in ``[0, M)``.
    eta : jax.Array or float
        The DP concentration.
    lam0 : float
        The NIW prior's ``lambda0``.

    Returns
    -------
    jax.Array
        ``(M,)`` new labels, the dtype of `zeta`.
    """
    M, Kw = W.shape
    W = jnp.where(active, W, 0.0)
    counts, sums, outers = _label_stats(W, zeta)
    zero_s = jnp.zeros(Kw)
    zero_o = jnp.zeros((Kw, Kw))
    log_eta = jnp.log(jnp.asarray(eta, jnp.float64))

    def body(m, carry):
        zeta, counts, sums, outers = carry
        w = W[m]
        ww = w[:, None] * w[None, :]
        k = zeta[m]
        counts = counts.at[k].add(-1.0)
        emptied = counts[k] == 0.0
        sums = sums.at[k].set(jnp.where(emptied, 0.0, sums[k] - w))
        outers = outers.at[k].set(jnp.where(emptied, 0.0, outers[k] - ww))
        occupied = counts > 0.0
        logt = log_t_predictive(w, counts, sums, outers, active, lam0)
        logits = jnp.where(occupied, jnp.log(jnp.where(occupied, counts, 1.0)) + logt, -jnp.inf)
        free = jnp.argmin(occupied)  # the first empty label slot
        prior = log_t_predictive(w, 0.0, zero_s, zero_o, active, lam0)
        logits = logits.at[free].set(log_eta + prior)
        k = jax.random.categorical(jax.random.fold_in(key, m), logits).astype(zeta.dtype)
        zeta = zeta.at[m].set(k)
        counts = counts.at[k].add(1.0)
        sums = sums.at[k].add(w)
        outers = outers.at[k].add(ww)
        return zeta, counts, sums, outers

    zeta, *_ = lax.fori_loop(0, M, body, (zeta, counts, sums, outers))
    return zeta


# --------------------------------------------------------------------------------------------
# Component parameters and concentration
# --------------------------------------------------------------------------------------------


def sample_components(
    key: jax.Array, W: jax.Array, active: jax.Array, zeta: jax.Array, lam0: float
) -> tuple[jax.Array, jax.Array]:
    """``(mu_k, Sigma_k)`` from the NIW posterior for every label slot with members.

    ``Sigma ~ IW(Psi_n, nu_n)`` by Bartlett's decomposition: ``A`` lower triangular with
    ``A_ii^2 ~ chi2(nu_n - r_i)``, ``r_i`` slot ``i``'s rank among the active slots, and
    standard normals below the diagonal between active slots. The host writes
    ``Sigma^-1 = L A A^T L^T`` with ``L = chol(Psi_n^-1)``; any ``L`` with ``L L^T = Psi_n^-1``
    gives the same Wishart law, and ``L = U^-T`` with ``U = chol(Psi_n)`` makes
    ``Sigma = B B^T``, ``B = U A^-T``, with one triangular solve and no inverse. Then
    ``mu = s / lambda_n + B e / sqrt(lambda_n)`` (covariance ``Sigma / lambda_n``). Inactive
    slots carry identity rows in ``U`` and ``A``, so they come out neutral; empty label slots
    are set neutral.

    Parameters
    ----------
    key : jax.Array
        PRNG key.
    W : jax.Array
        ``(M, Kw)`` frequencies.
    active : jax.Array
        ``(Kw,)`` bool, the live slots.
    zeta : jax.Array
        ``(M,)`` int labels in ``[0, M)``.
    lam0 : float
        The NIW prior's ``lambda0``.

    Returns
    -------
    mu : jax.Array
        ``(M, Kw)`` component means.
    Sigma : jax.Array
        ``(M, Kw, Kw)`` component covariances.
    """
    M, Kw = W.shape
    W = jnp.where(active, W, 0.0)
    pair = _pair_mask(active)
    eye = jnp.eye(Kw)
    K = jnp.sum(active).astype(jnp.float64)
    counts, sums, outers = _label_stats(W, zeta)
    lam = lam0 + counts
    nu = K + 2.0 + counts
    psi = jnp.where(pair, eye + outers - sums[:, :, None] * sums[:, None, :] / lam[:, None, None], eye)
    U = linalg.cholesky(psi)
    rank = (jnp.cumsum(active) - 1).astype(jnp.float64)
    k_chi, k_low, k_mu = jax.random.split(key, 3)
    dof = jnp.where(active, nu[:, None] - rank[None, :], 1.0)
    diag = jnp.where(active, jnp.sqrt(2.0 * jax.random.gamma(k_chi, 0.5 * dof)), 1.0)
    lower = jnp.tril(jnp.ones((Kw, Kw), dtype=bool), -1) & pair
    A = jnp.where(lower, jax.random.normal(k_low, (M, Kw, Kw)), 0.0) + diag[:, :, None] * eye
    # B = U A^-T, i.e. A B^T = U^T.
    Bt = linalg.solve_triangular(A, jnp.swapaxes(U, -1, -2), lower=True)
    B = jnp.swapaxes(Bt, -1, -2)
    Sigma = B @ Bt
    Sigma = 0.5 * (Sigma + jnp.swapaxes(Sigma, -1, -2))
    e = jnp.where(active, jax.random.normal(k_mu, (M, Kw)), 0.0)
    mu = sums / lam[:, None] + jnp.einsum("kab,kb->ka", B, e) / jnp.sqrt(lam)[:, None]
    occupied = counts > 0.0
    mu = jnp.where(occupied[:, None] & active[None, :], mu, 0.0)
    Sigma = jnp.where(occupied[:, None, None] & pair[None], Sigma, eye)
    return mu, Sigma


def sample_eta(
    key: jax.Array,
    eta: jax.Array | float,
    n_comp: jax.Array | int,
    M: jax.Array | int,
    a: float,
    b: float,
) -> jax.Array:
    """Escobar and West (1995) with ``n = M``: ``rho ~ Beta(eta + 1, M)``, then ONE Gamma draw.

    The shape is ``a + n_comp`` with probability ``odds / (1 + odds)``,
    ``odds = (a + n_comp - 1) / (M (b - log rho))``, else ``a + n_comp - 1``; the rate is
    ``b - log rho``. One draw from the two-part mixture, never an average of two draws (which
    would not be a draw from the conditional).

    Parameters
    ----------
    key : jax.Array
        PRNG key.
    eta : jax.Array or float
        The current concentration.
    n_comp : jax.Array or int
        Number of components (label slots with members).
    M : jax.Array or int
        Number of frequencies.
    a, b : float
        Shape and rate of the Gamma prior on `eta`.

    Returns
    -------
    jax.Array
        Scalar float64, the new concentration.
    """
    k_rho, k_pick, k_gamma = jax.random.split(key, 3)
    eta = jnp.asarray(eta, jnp.float64)
    n_comp = jnp.asarray(n_comp, jnp.float64)
    M = jnp.asarray(M, jnp.float64)
    rho = jax.random.beta(k_rho, eta + 1.0, M, dtype=jnp.float64)
    rate = b - jnp.log(rho)
    odds = (a + n_comp - 1.0) / (M * rate)
    pick = jax.random.uniform(k_pick, dtype=jnp.float64) < odds / (1.0 + odds)
    shape = jnp.where(pick, a + n_comp, a + n_comp - 1.0)
    return jax.random.gamma(k_gamma, shape, dtype=jnp.float64) / rate


def dp_step(
    key: jax.Array,
    W: jax.Array,
    active: jax.Array,
    zeta: jax.Array,
    eta: jax.Array | float,
    lam0: float,
    a_eta: float,
    b_eta: float,
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """Assignments, then component parameters, then concentration (SPEC section 2, step 4).

    With no active slot every predictive is 1 and the host leaves the assignments alone; so
    does this (a ``lax.cond``), so the two chains agree in law at ``K = 0`` too.

    Parameters
    ----------
    key : jax.Array
        PRNG key.
    W : jax.Array
        ``(M, Kw)`` frequencies.
    active : jax.Array
        ``(Kw,)`` bool, the live slots.
    zeta : jax.Array
        ``(M,)`` int labels in ``[0, M)``.
    eta : jax.Array or float
        The DP concentration.
    lam0 : float
        The NIW prior's ``lambda0``.
    a_eta, b_eta : float
        Shape and rate of the Gamma prior on `eta`.

    Returns
    -------
    zeta : jax.Array
        ``(M,)`` new labels.
    mu : jax.Array
        ``(M, Kw)`` component means.
    Sigma : jax.Array
        ``(M, Kw, Kw)`` component covariances.
    eta : jax.Array
        Scalar, the new concentration.
    """
    M = W.shape[0]
    k_z, k_c, k_e = jax.random.split(key, 3)
    zeta = lax.cond(
        jnp.any(active),
        lambda z: gibbs_assignments(k_z, W, active, z, eta, lam0),
        lambda z: z,
        zeta,
    )
    mu, Sigma = sample_components(k_c, W, active, zeta, lam0)
    occupied = jnp.any(zeta[None, :] == jnp.arange(M, dtype=zeta.dtype)[:, None], axis=1)
    eta = sample_eta(k_e, eta, jnp.sum(occupied), M, a_eta, b_eta)
    return zeta, mu, Sigma, eta


# --------------------------------------------------------------------------------------------
# Adding and removing latent dimensions
# --------------------------------------------------------------------------------------------


def add_dimension(
    key: jax.Array,
    W: jax.Array,
    active: jax.Array,
    zeta: jax.Array,
    mu: jax.Array,
    Sigma: jax.Array,
    lam0: float,
    slot: jax.Array | int,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Give the inactive slot `slot` a coordinate drawn from its exact conditional.

    With ``Psi0 = I`` and ``nu0 = K + 2`` the ``K``-dimensional prior is a block marginal of the
    ``(K+1)``-dimensional one, so for each component (``nu' = K + 3``):
    ``c ~ InvGamma(nu'/2, scale 1/2)``, ``b ~ N(0, c I_K)`` over the active slots; ``Sigma``
    grows by ``[Sigma b; c + b^T Sigma b]``, ``mu_new = b^T mu + sqrt(c / lambda0) e``, and each
    member frequency ``w_new = mu_new + b^T (w - mu) + sqrt(c) e_m``. The caller then marks
    `slot` active. Label slots without members stay neutral (``mu`` 0, ``Sigma`` identity),
    which is also neutral once `slot` is active.

    Parameters
    ----------
    key : jax.Array
        PRNG key.
    W : jax.Array
        ``(M, Kw)`` frequencies (column `slot` neutral).
    active : jax.Array
        ``(Kw,)`` bool, the live slots before the addition (`slot` not among them).
    zeta : jax.Array
        ``(M,)`` int labels in ``[0, M)``.
    mu : jax.Array
        ``(M, Kw)`` component means.
    Sigma : jax.Array
        ``(M, Kw, Kw)`` component covariances.
    lam0 : float
        The NIW prior's ``lambda0``.
    slot : jax.Array or int
        The slot to fill (may be traced).

    Returns
    -------
    W : jax.Array
        ``(M, Kw)`` with column `slot` filled.
    mu : jax.Array
        ``(M, Kw)`` with column `slot` filled.
    Sigma : jax.Array
        ``(M, Kw, Kw)`` with row and column `slot` filled.
    """
    M, Kw = W.shape
    K = jnp.sum(active).astype(jnp.float64)
    k_c, k_b, k_mu, k_w = jax.random.split(key, 4)
    c = 0.5 / jax.random.gamma(k_c, 0.5 * (K + 3.0), (M,), dtype=jnp.float64)
    b = jnp.where(active, jnp.sqrt(c)[:, None] * jax.random.normal(k_b, (M, Kw)), 0.0)
    mu_a = jnp.where(active, mu, 0.0)
    Sb = jnp.where(active, jnp.einsum("kab,kb->ka", Sigma, b), 0.0)
    new_var = c + jnp.sum(b * Sb, axis=1)
    mu_new = jnp.sum(b * mu_a, axis=1) + jnp.sqrt(c / lam0) * jax.random.normal(k_mu, (M,))
    occupied = jnp.any(zeta[None, :] == jnp.arange(M, dtype=zeta.dtype)[:, None], axis=1)
    is_slot = jnp.arange(Kw) == slot
    col = jnp.where(is_slot[None, :], new_var[:, None], Sb)
    col = jnp.where(occupied[:, None], col, is_slot[None, :].astype(jnp.float64))
    Sigma = Sigma.at[:, slot, :].set(col).at[:, :, slot].set(col)
    mu = mu.at[:, slot].set(jnp.where(occupied, mu_new, 0.0))
    dev = jnp.where(active, W, 0.0) - mu_a[zeta]
    w_new = mu_new[zeta] + jnp.sum(b[zeta] * dev, axis=1) + jnp.sqrt(c[zeta]) * jax.random.normal(k_w, (M,))
    W = W.at[:, slot].set(w_new)
    return W, mu, Sigma


def drop_dimension(
    W: jax.Array, mu: jax.Array, Sigma: jax.Array, slot: jax.Array | int
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Reset slot `slot` to neutral: exact marginalisation of a Gaussian / inverse Wishart.

    Deleting a coordinate of ``N(mu, Sigma)`` and a row and column of an inverse Wishart gives
    their marginals, which is what the ``K - 1``-dimensional prior and conditional are; the
    caller marks `slot` inactive.

    Parameters
    ----------
    W : jax.Array
        ``(M, Kw)`` frequencies.
    mu : jax.Array
        ``(M, Kw)`` component means.
    Sigma : jax.Array
        ``(M, Kw, Kw)`` component covariances.
    slot : jax.Array or int
        The slot to drop (may be traced).

    Returns
    -------
    W, mu, Sigma : jax.Array
        The arrays with `slot` neutral.
    """
    W = W.at[:, slot].set(0.0)
    mu = mu.at[:, slot].set(0.0)
    Sigma = Sigma.at[:, slot, :].set(0.0).at[:, :, slot].set(0.0).at[:, slot, slot].set(1.0)
    return W, mu, Sigma
