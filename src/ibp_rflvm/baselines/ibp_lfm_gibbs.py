r"""The Gibbs sampler of the IBP linear-Gaussian latent factor model (Knowles and Ghahramani 2011).

The estimator around it is :class:`ibp_rflvm.baselines.ibp_lfm.IBPLinearFactorModel`.

Model (the paper's linear baseline, docs/reproducing.md), for row ``i`` of the ``N x J`` data::

    y_i | h_i, A, sigma^2 ~ N(h_i A, sigma^2 I_J),        h_i = x_i * z_i (elementwise)
    x_id ~ N(0, 1),    A_d ~ N(0, sigma_A^2 I_J)  (row d of the K x J loading matrix)
    Z ~ IBP(alpha, beta),    alpha ~ Gamma(a, b)  (shape, rate; beta = 1 by default, or learned)
    sigma^2 ~ InvGamma(a_s, b_s),    sigma_A^2 ~ InvGamma(a_A, b_A)

Unobserved entries (NaN) are handled by data augmentation: the state carries a completed data
matrix, and once per sweep every unobserved ``y_ij`` is redrawn from ``N(h_i a_j, sigma^2)``
given the current parameters. Given the completed matrix every conditional below is exact and
conjugate, and the marginal chain targets the posterior given the observed entries alone. An
unobserved entry is never read as a zero or a mean inside a likelihood (the column mean only
seeds the initial completion, which the first sweep replaces).

One sweep, each step an exact draw from the conditional named:

1. IBP slice step through the shared sampler :mod:`ibp_rflvm.samplers.ibp` (``extend``): the
   inactive dimensions are dropped, new dimensions get ``z = 0``, ``x ~ N(0, 1)`` and a loading
   row from its prior ``N(0, sigma_A^2 I)``; all dimensions are then put in ``scan_order``.
2. For each dimension ``d`` in that order, ``(z_id, x_id)`` jointly for every row: ``z_id`` with
   ``x_id`` integrated out, then ``x_id | z_id``. With ``r_i`` the residual of row ``i`` without
   dimension ``d`` and ``a = A_d``, ``P = 1 + |a|^2 / sigma^2``::

       log p(y_i | z_id = 1) - log p(y_i | z_id = 0) = (a.r_i / sigma^2)^2 / (2 P) - log(P) / 2
       x_id | z_id = 1 ~ N(a.r_i / (sigma^2 P), 1 / P),      x_id | z_id = 0 ~ N(0, 1)

   ``ibp.gibbs_column`` visits the rows in turn (``pi*`` couples them through ``m_d``) with that
   log-ratio. ``x_id`` enters only row ``i``'s likelihood, so drawing every ``z_id`` of the column
   first and all the ``x_id`` afterwards is the same as alternating row by row. Integrating
   ``x_id`` out matters for mixing: with ``x_id`` fixed at a prior draw a dimension could only
   switch on where that random value happened to fit.
3. ``ibp.update_sticks`` (``pi_d ~ Beta(m_d, N - m_d + 1)``, inactive dimensions dropped) and,
   unless ``fixed_alpha`` is given, ``ibp.update_alpha``.
4. ``x_i`` for all rows at once: ``N(P_i^-1 b_i, P_i^-1)`` with
   ``P_i = I + (z_i z_i^T) o (A A^T) / sigma^2`` and ``b_i = z_i o (A y_i^T) / sigma^2``. The
   rows and columns of ``P_i`` that belong to inactive coordinates are those of the identity, so
   those coordinates come out ``N(0, 1)`` and the active ones from their Gaussian conditional; one
   batched Cholesky serves every row whatever its pattern.
5. ``A``, all ``J`` columns at once (they share one precision because the data are completed):
   ``Lambda = H^T H / sigma^2 + I / sigma_A^2``, ``A ~ N(Lambda^-1 H^T Y / sigma^2, Lambda^-1)``
   independently per column.
6. ``sigma^2 ~ InvGamma(a_s + NJ/2, b_s + |Y - H A|^2 / 2)``,
   ``sigma_A^2 ~ InvGamma(a_A + KJ/2, b_A + |A|^2 / 2)``.
7. The unobserved entries ``y_ij ~ N(h_i a_j, sigma^2)``.

The two-parameter IBP (``ibp_beta`` other than 1; :mod:`ibp_rflvm.samplers.ibp_beta`) has no
slice step: step 1 only puts the active dimensions in a random order, step 2 uses
``ibp.exchangeable_column`` (prior odds ``m / (N - 1 + beta - m)`` for the dimensions other rows
use; a row's own dimensions are the singleton birth/death move's, whose new dimensions are
``Poisson(alpha beta / (N - 1 + beta))``), step 3 draws ``alpha ~ Gamma(a + K+, b + sum_i beta /
(beta + i - 1))`` and, when ``beta`` is learned, ``beta | Z, alpha`` by slice sampling.

With ``use_likelihood=False`` the data are switched off: the z log-ratio is zero and ``X``, ``A``
and ``sigma^2`` are drawn from their priors, so ``Z`` follows the IBP prior (a sampler check).

Mixing. With Gaussian ``x`` the likelihood cannot tell a set of sparse features from a rotation
of them; only the sparsity of ``Z`` can, and single-site Gibbs moves between rotations very
slowly. Mixed, dense solutions (e.g. the sum and the difference of two Cambridge shapes, one of
them used by every row) are local modes the chain rarely leaves, and the IBP prior makes them
fairly cheap (a feature used by every row costs little under it). The default start is
therefore independent components (``init="ica"``) rather than principal components, which are an
arbitrary rotation of the signal subspace. A second slow direction: a dimension used by a handful
of rows, whose loading row fits their noise, keeps itself alive (the loading stays fitted while
its rows stay on), so ``K+`` often exceeds the number of substantial dimensions by one or two.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.decomposition import FastICA
from sklearn.exceptions import ConvergenceWarning

from ..samplers import ibp
from ..samplers.dimension_moves import owned_alone, singleton_plan
from ..samplers.ibp_beta import update_beta
from ..summaries.scoring import LOG_2PI


@dataclass
class LFMState:
    """Mutable chain state. ``Y`` is the completed data (observed entries plus imputations)."""

    X: np.ndarray  # N x K
    Z: np.ndarray  # N x K, int8, C-contiguous (the compiled z kernel writes into it)
    A: np.ndarray  # K x J
    pi: np.ndarray  # K sticks
    alpha: float
    sigma2: float
    sigma_a2: float
    Y: np.ndarray  # N x J
    ibp_beta: float = 1.0

    @property
    def H(self) -> np.ndarray:
        return self.X * self.Z


@dataclass(frozen=True)
class LFMParams:
    """Validated hyperparameters and switches of one fit."""

    alpha_prior: tuple[float, float] = (1.0, 1.0)
    fixed_alpha: float | None = None
    sigma2_prior: tuple[float, float] = (1.0, 1.0)
    sigma_a2_prior: tuple[float, float] = (1.0, 1.0)
    use_likelihood: bool = True
    singleton_moves: bool = True
    ibp_beta: float | None = 1.0  # None: learned under ibp_beta_prior
    ibp_beta_prior: tuple[float, float] = (1.0, 1.0)

    @property
    def stick_breaking(self) -> bool:
        return self.ibp_beta == 1.0


def _inv_gamma(rng: np.random.Generator, shape: float, rate: float) -> float:
    return float(1.0 / rng.gamma(shape, 1.0 / rate))


def _standardise(S: np.ndarray) -> np.ndarray:
    return S / np.maximum(S.std(axis=0), 1e-12)


def _rank(s: np.ndarray) -> int:
    return int(np.count_nonzero(s > 1e-10 * max(float(s.max(initial=0.0)), 1e-300)))


def _pca_scores(Yc: np.ndarray, k: int) -> np.ndarray:
    U, s, _ = np.linalg.svd(Yc, full_matrices=False)
    r = min(k, _rank(s))
    return _standardise(U[:, :r] * s[:r])


def _ica_sources(Yc: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    # More components than the data's rank would make the whitening divide by zero.
    r = min(k, _rank(np.linalg.svd(Yc, compute_uv=False)))
    if r == 0:
        return np.empty((Yc.shape[0], 0))
    # FastICA's own randomness is seeded from the chain's Generator, so the seed fixes the fit.
    seed = int(rng.integers(2**31 - 1))
    ica = FastICA(n_components=r, whiten="unit-variance", max_iter=500, random_state=seed)
    with warnings.catch_warnings():
        # A slow-converging unmixing is still a usable starting point; the sampler takes over.
        warnings.simplefilter("ignore", ConvergenceWarning)
        try:
            S = ica.fit_transform(Yc)
        except (ValueError, np.linalg.LinAlgError):
            return _pca_scores(Yc, k)
    if not np.all(np.isfinite(S)):
        return _pca_scores(Yc, k)
    return _standardise(S)


def initial_positions(Y0: np.ndarray, k: int, method: str, rng: np.random.Generator) -> np.ndarray:
    """Starting latent positions (``N x k``, unit variance per dimension) from a complete matrix.

    ``"ica"``: independent components. The model is a sparse (non-Gaussian) factor model, and
    the Gibbs sampler moves between rotations of a dense solution only very slowly: from PCA
    scores, which are an arbitrary rotation of the signal subspace, it tends to stay in a mixed,
    dense-feature mode, while ICA already separates independent sparse sources.
    ``"pca"``: principal-component scores. ``"random"``: standard normal draws. Dimensions
    beyond the rank of the data are filled with standard normal draws (zero columns would start
    dimensions with no signal).
    """
    N = Y0.shape[0]
    Yc = Y0 - Y0.mean(axis=0)
    if method == "ica":
        X = _ica_sources(Yc, k, rng)
    elif method == "pca":
        X = _pca_scores(Yc, k)
    else:
        X = np.empty((N, 0))
    if X.shape[1] < k:
        X = np.hstack([X, rng.standard_normal((N, k - X.shape[1]))])
    return X


def init_state(
    rng: np.random.Generator,
    Y: np.ndarray,
    missing: tuple[np.ndarray, np.ndarray],
    k: int,
    prm: LFMParams,
    init: str = "ica",
) -> LFMState:
    """Start from :func:`initial_positions` with ``Z = 1``, then draw ``A``, the variances and
    the unobserved entries from their conditionals so the first sweep starts from a coherent
    state. The column means fill the unobserved entries only for computing the start."""
    N, J = Y.shape
    observed = ~np.isnan(Y)
    Y0 = np.where(observed, Y, np.nanmean(Y, axis=0))
    X = initial_positions(Y0, k, init, rng)
    Z = np.ones((N, k), dtype=np.int8)
    _, pi = ibp.update_sticks(rng, Z)
    a, b = prm.alpha_prior
    alpha = prm.fixed_alpha if prm.fixed_alpha is not None else a / b
    var = float(np.var(Y[observed]))
    st = LFMState(
        X=X, Z=Z, A=np.zeros((k, J)), pi=pi, alpha=float(alpha),
        sigma2=max(0.5 * var, 1e-6), sigma_a2=1.0, Y=Y0,
        ibp_beta=1.0 if prm.ibp_beta is None else float(prm.ibp_beta),
    )  # fmt: skip
    update_loadings(rng, st, prm)
    update_variances(rng, st, prm)
    impute(rng, st, missing, prm)
    return st


# --------------------------------------------------------------------------------------------
# The steps of one sweep (module docstring, steps 1-7)
# --------------------------------------------------------------------------------------------


def update_features(rng: np.random.Generator, st: LFMState, prm: LFMParams) -> dict:
    """Steps 1-3: the IBP slice step, the joint ``(z, x)`` pass per dimension, sticks, alpha
    (and beta when it is learned)."""
    N, J = st.Y.shape
    if prm.stick_breaking:
        keep, new_pi, s = ibp.extend(rng, st.Z, st.pi, st.alpha)
        pi = np.concatenate([st.pi[keep], new_pi])
        order = ibp.scan_order(pi)
    else:
        # No sticks: the active dimensions in a random order (one that does not depend on Z).
        keep, new_pi, s = np.flatnonzero(st.Z.any(axis=0)), np.empty(0), float("nan")
        pi = st.pi[keep]
        order = rng.permutation(keep.size)
    n_new = new_pi.size
    X = np.hstack([st.X[:, keep], rng.standard_normal((N, n_new))])
    Z = np.hstack([st.Z[:, keep], np.zeros((N, n_new), dtype=np.int8)])
    A = np.vstack([st.A[keep], np.sqrt(st.sigma_a2) * rng.standard_normal((n_new, J))])
    X = np.ascontiguousarray(X[:, order])
    Z = np.ascontiguousarray(Z[:, order], dtype=np.int8)
    A = np.ascontiguousarray(A[order])
    pi = np.ascontiguousarray(pi[order])
    counts = Z.sum(axis=0).astype(np.int64)
    free = ibp.room(0, None)  # the linear factor model has no cap on K+

    if prm.use_likelihood:
        s2 = st.sigma2
        E = st.Y - (X * Z) @ A
        for d in range(Z.shape[1]):
            a = A[d]
            aa = float(a @ a)
            h_old = X[:, d] * Z[:, d]
            ra = E @ a + h_old * aa  # a . (residual of each row without dimension d)
            prec = 1.0 + aa / s2
            delta_ll = 0.5 * ((ra / s2) ** 2 / prec - np.log(prec))
            _z_column(rng, Z, d, delta_ll, pi, counts, free, prm, st.ibp_beta)
            on = Z[:, d] == 1
            e = rng.standard_normal(N)
            x = np.where(on, ra / (s2 * prec) + e / np.sqrt(prec), e)
            E -= np.outer(np.where(on, x, 0.0) - h_old, a)
            X[:, d] = x
    else:
        zero = np.zeros(N)
        for d in range(Z.shape[1]):
            _z_column(rng, Z, d, zero, pi, counts, free, prm, st.ibp_beta)

    info = {"slice": s, "new_dims": int(n_new)} if prm.stick_breaking else {}
    if prm.singleton_moves:
        # With the sticks integrated out (exact: update_sticks redraws pi | Z below).
        active = np.flatnonzero(Z.any(axis=0))
        X, Z, A, moved = singleton_birth_death(rng, X[:, active], Z[:, active], A[active], st, prm)
        info.update(moved)
    keep, pi = ibp.update_sticks(rng, Z, st.ibp_beta)
    st.X = np.ascontiguousarray(X[:, keep])
    st.Z = np.ascontiguousarray(Z[:, keep])
    st.A = np.ascontiguousarray(A[keep])
    st.pi = pi
    if prm.fixed_alpha is None:
        st.alpha = ibp.update_alpha(rng, int(keep.size), N, *prm.alpha_prior, st.ibp_beta)
    if prm.ibp_beta is None:
        st.ibp_beta = update_beta(rng, st.Z.sum(axis=0), N, st.alpha, st.ibp_beta, prm.ibp_beta_prior)
    return info


def _z_column(rng, Z, d, delta_ll, pi, counts, room, prm: LFMParams, beta: float) -> None:
    """Column `d`'s z pass: the slice sampler's (one-parameter IBP) or the exchangeable one."""
    if prm.stick_breaking:
        ibp.gibbs_column(rng, Z, d, delta_ll, ibp.Sticks(pi), counts, room)
    else:
        ibp.exchangeable_column(rng, Z, d, delta_ll, counts, beta)


def _collapsed_row_gain(r: np.ndarray, B: np.ndarray, s2: float) -> tuple[float, np.ndarray, np.ndarray]:
    """``log p(r | B)`` minus ``log p(r | no dimensions)`` for ``r = x B + noise``, ``x ~ N(0, I)``
    integrated out; also the conditional mean and precision Cholesky of ``x`` given ``r``."""
    k = B.shape[0]
    P = np.eye(k) + B @ B.T / s2
    L = np.linalg.cholesky(P)
    b = B @ r / s2
    w = np.linalg.solve(L, b)
    return 0.5 * float(w @ w) - float(np.sum(np.log(np.diag(L)))), np.linalg.solve(L.T, w), L


def singleton_birth_death(
    rng: np.random.Generator, X: np.ndarray, Z: np.ndarray, A: np.ndarray, st: LFMState, prm: LFMParams
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
    """For each row, replace the dimensions it owns alone by ``k ~ Poisson(alpha beta / (N - 1 +
    beta))`` new ones (``alpha / N`` at ``beta = 1``; docs/sampler.md), with their ``x`` integrated out.

    The count and the new loading rows are proposed from their prior (``N(0, sigma_A^2 I)``), so
    the acceptance ratio is the ratio of the row's likelihoods with the new and with the old
    singletons, each with its ``x`` integrated out (a ``k``-dimensional Gaussian,
    :func:`_collapsed_row_gain`); on acceptance the new ``x`` are drawn from their conditional.
    Only the rows :func:`~ibp_rflvm.samplers.dimension_moves.singleton_plan` names are visited.
    Returns the arrays and move counts.
    """
    N, J = st.Y.shape
    k_new, counts, rows = singleton_plan(rng, Z, ibp.new_dims_rate(st.alpha, N, st.ibp_beta))
    births = deaths = 0
    for i in rows:
        old = owned_alone(Z[i], counts)
        k = int(k_new[i])
        if k == 0 and old.size == 0:
            continue
        B = np.sqrt(st.sigma_a2) * rng.standard_normal((k, J))
        log_u = np.log(rng.random())
        if prm.use_likelihood:
            others = np.setdiff1d(np.flatnonzero(Z[i] == 1), old)
            r = st.Y[i] - X[i, others] @ A[others]
            gain_new, mean, L = _collapsed_row_gain(r, B, st.sigma2) if k else (0.0, np.zeros(0), np.eye(0))
            gain_old = _collapsed_row_gain(r, A[old], st.sigma2)[0] if old.size else 0.0
        else:
            gain_new = gain_old = 0.0
            mean, L = np.zeros(k), np.eye(k)
        if log_u >= gain_new - gain_old:
            continue
        keep = np.setdiff1d(np.arange(Z.shape[1]), old)
        x_new = mean + np.linalg.solve(L.T, rng.standard_normal(k))  # N(P^-1 b, P^-1), P = L L^T
        X = np.hstack([X[:, keep], rng.standard_normal((N, k))])
        X[i, X.shape[1] - k :] = x_new
        Z = np.hstack([Z[:, keep], np.zeros((N, k), dtype=np.int8)])
        Z[i, Z.shape[1] - k :] = 1
        A = np.vstack([A[keep], B])
        counts = np.concatenate([counts[keep], np.ones(k, dtype=np.int64)])
        births += k
        deaths += old.size
    return np.ascontiguousarray(X), np.ascontiguousarray(Z), np.ascontiguousarray(A), {
        "births": births, "deaths": deaths,
    }  # fmt: skip


def update_latents(rng: np.random.Generator, st: LFMState, prm: LFMParams) -> None:
    """Step 4: every row's ``x_i`` from its Gaussian conditional, one batched solve."""
    N, K = st.X.shape
    e = rng.standard_normal((N, K))
    if not prm.use_likelihood or K == 0:
        st.X = e
        return
    Zf = st.Z.astype(np.float64)
    G = (st.A @ st.A.T) / st.sigma2
    P = Zf[:, :, None] * Zf[:, None, :] * G + np.eye(K)
    b = Zf * (st.Y @ st.A.T) / st.sigma2
    L = np.linalg.cholesky(P)
    # x = L^-T (L^-1 b + e) has mean P^-1 b and covariance L^-T L^-1 = P^-1.
    w = np.linalg.solve(L, b[..., None])[..., 0] + e
    st.X = np.linalg.solve(np.swapaxes(L, 1, 2), w[..., None])[..., 0]


def update_loadings(rng: np.random.Generator, st: LFMState, prm: LFMParams) -> None:
    """Step 5: all columns of ``A`` at once from their shared-precision Gaussian conditional."""
    K, J = st.A.shape
    e = rng.standard_normal((K, J))
    if not prm.use_likelihood or K == 0:
        st.A = np.sqrt(st.sigma_a2) * e
        return
    H = st.H
    Lam = H.T @ H / st.sigma2 + np.eye(K) / st.sigma_a2
    L = np.linalg.cholesky(Lam)
    c = H.T @ st.Y / st.sigma2
    # A = L^-T (L^-1 c + e): mean Lambda^-1 c, covariance Lambda^-1 for every column. NumPy's
    # general solve is used on the triangular factors because SciPy's triangular solve cost
    # milliseconds per call on these tiny systems (a threading overhead of its bundled BLAS).
    st.A = np.linalg.solve(L.T, np.linalg.solve(L, c) + e)


def update_variances(rng: np.random.Generator, st: LFMState, prm: LFMParams) -> None:
    """Step 6: the conjugate inverse-gamma updates of ``sigma^2`` and ``sigma_A^2``."""
    a_s, b_s = prm.sigma2_prior
    if prm.use_likelihood:
        R = st.Y - st.H @ st.A
        st.sigma2 = _inv_gamma(rng, a_s + 0.5 * R.size, b_s + 0.5 * float(np.sum(R * R)))
    else:
        st.sigma2 = _inv_gamma(rng, a_s, b_s)
    a_a, b_a = prm.sigma_a2_prior
    st.sigma_a2 = _inv_gamma(rng, a_a + 0.5 * st.A.size, b_a + 0.5 * float(np.sum(st.A * st.A)))


def impute(
    rng: np.random.Generator, st: LFMState, missing: tuple[np.ndarray, np.ndarray], prm: LFMParams
) -> None:
    """Step 7: redraw the unobserved entries from the model (the data augmentation)."""
    mi, mj = missing
    if mi.size == 0 or not prm.use_likelihood:
        return
    mean = np.einsum("tk,kt->t", st.H[mi], st.A[:, mj])
    st.Y[mi, mj] = mean + np.sqrt(st.sigma2) * rng.standard_normal(mi.size)


def sweep(
    rng: np.random.Generator, st: LFMState, missing: tuple[np.ndarray, np.ndarray], prm: LFMParams
) -> dict:
    """One Gibbs sweep (steps 1-7), updating `st` in place."""
    info = update_features(rng, st, prm)
    update_latents(rng, st, prm)
    update_loadings(rng, st, prm)
    update_variances(rng, st, prm)
    impute(rng, st, missing, prm)
    return info


def observed_loglik(st: LFMState, observed: np.ndarray) -> float:
    """``sum over observed (i, j) of log N(y_ij | h_i a_j, sigma^2)``."""
    R = (st.Y - st.H @ st.A)[observed]
    return float(-0.5 * (R.size * (LOG_2PI + np.log(st.sigma2)) + np.sum(R * R) / st.sigma2))
