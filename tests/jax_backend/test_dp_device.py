"""The device DP mixture over the frequencies (jax_backend/dp_device.py) against the host's law.

Every check runs on padded arrays whose active slots are not contiguous, and compares with the
host code or closed forms on the compacted arrays:

* the predictive density equals the host's to 1e-10 (n = 0 and n > 0);
* one Gibbs pass gives the exact law over partitions, enumerated with the host's predictive;
* the components' moments are the NIW posterior's closed forms (means and variances exact, so
  the tolerances are standard errors, not estimates of them);
* adding a dimension to a prior draw gives the (K+1)-dimensional prior (Wishart moments of the
  precision, chi-square laws of the standardised mean and frequencies);
* a Geweke chain (draw the frequencies given the components, then ``dp_step``) keeps the prior:
  eta, the number of components and moments of the components and frequencies within 4
  batch-means standard errors.

The raw second moments of ``Sigma`` and ``w`` under the prior (``nu0 = K + 2``) have infinite
variance (``Sigma_ii ~ InvGamma(3/2, 1/2)``, ``w`` a t with 3 degrees of freedom), so a sample
mean has no standard error to set a tolerance from: the checks use functionals of the same laws
with finite variance instead (the precision, ``1 / Sigma_ii``, ``|w|`` and quadratic forms).

At ``Z_MAX = 4`` each check fails by chance with probability about 6e-5 (normal) to 3e-4
(batch means, t with 39 degrees of freedom); about 70 statistics in all.
"""

import math
from collections import defaultdict

import numpy as np
import pytest

pytest.importorskip("jax")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from scipy import integrate, stats  # noqa: E402

from ibp_rflvm.jax_backend import dp_device as dp  # noqa: E402
from ibp_rflvm.samplers.dp_mixture import _log_t_predictive  # noqa: E402
from ibp_rflvm.summaries.diagnostics import batch_mean_se  # noqa: E402

Z_MAX = 4.0
#: K = 3 live slots among Kw = 6, not contiguous (ranks 0, 1, 2 sit at slots 1, 3, 4).
ACTIVE = np.array([False, True, False, True, True, False])
KW = ACTIVE.size
K = int(ACTIVE.sum())


def _pad_rows(x, active=ACTIVE):
    """Compacted ``(..., K)`` rows into padded ``(..., Kw)`` rows with zeros elsewhere."""
    out = np.zeros(x.shape[:-1] + (active.size,))
    out[..., active] = x
    return out


def _pad_cov(S, active=ACTIVE):
    """Compacted ``(..., K, K)`` covariances into padded ones with identity elsewhere."""
    out = np.broadcast_to(np.eye(active.size), S.shape[:-2] + (active.size, active.size)).copy()
    idx = np.flatnonzero(active)
    out[..., idx[:, None], idx[None, :]] = S
    return out


def _canon(z):
    """A partition as labels 0, 1, ... in order of first appearance."""
    seen = {}
    return tuple(seen.setdefault(v, len(seen)) for v in z)


def _z(mean, truth, se):
    return (mean - truth) / se


# --------------------------------------------------------------------------------------------


def test_log_t_predictive_equals_host():
    rng = np.random.default_rng(3)
    lam0 = 0.7
    for n in (0, 1, 6):
        members = 1.3 * rng.standard_normal((n, K)) + 0.4
        s, outer = members.sum(axis=0), members.T @ members
        w = rng.standard_normal(K)
        host = _log_t_predictive(w, float(n), s, outer, lam0, K + 2.0)
        # Garbage on the inactive slots of w, s and outer: the mask must keep it out.
        w_p, s_p = _pad_rows(w), _pad_rows(s)
        w_p[~ACTIVE], s_p[~ACTIVE] = 5.0, -3.0
        outer_p = _pad_cov(outer)
        outer_p[~ACTIVE, :] += 2.0
        dev = float(dp.log_t_predictive(jnp.asarray(w_p), n, jnp.asarray(s_p), jnp.asarray(outer_p),
                                        jnp.asarray(ACTIVE), lam0))  # fmt: skip
        assert abs(dev - host) < 1e-10, (n, dev, host)


def _exact_pass_law(Wc, zeta0, eta, lam0):
    """The law over partitions after one Algorithm-3 pass, by enumerating every path with the
    host's predictive (new component in the first free label, as on the host)."""
    M, k = Wc.shape
    law = {tuple(zeta0): 1.0}
    for m in range(M):
        nxt = defaultdict(float)
        for z, p in law.items():
            others = [j for j in range(M) if j != m]
            labels = sorted({z[j] for j in others})
            opts, logw = [], []
            for c in labels:
                mem = Wc[[j for j in others if z[j] == c]]
                opts.append(c)
                logw.append(math.log(len(mem)) + _log_t_predictive(
                    Wc[m], float(len(mem)), mem.sum(axis=0), mem.T @ mem, lam0, k + 2.0))  # fmt: skip
            opts.append(min(set(range(M)) - set(labels)))
            logw.append(math.log(eta) + _log_t_predictive(Wc[m], 0.0, np.zeros(k), np.zeros((k, k)), lam0,
                                                          k + 2.0))  # fmt: skip
            q = np.exp(np.array(logw) - max(logw))
            for c, qc in zip(opts, q / q.sum(), strict=True):
                z2 = list(z)
                z2[m] = c
                nxt[tuple(z2)] += p * qc
        law = nxt
    out = defaultdict(float)
    for z, p in law.items():
        out[_canon(z)] += p
    return out


def test_gibbs_pass_has_the_exact_law_over_partitions():
    n_draws, eta, lam0 = 4000, 1.2, 0.5
    Wc = np.array([[0.3, -0.2, 0.5], [0.6, 0.1, 0.2], [-0.9, 0.8, -0.4], [-0.5, 1.1, 0.0]])
    zeta0 = np.array([3, 3, 3, 1], dtype=np.int32)
    exact = _exact_pass_law(Wc, zeta0, eta, lam0)
    assert sum(p > 0.02 for p in exact.values()) >= 6  # a law spread over many partitions
    keys = jax.random.split(jax.random.key(11), n_draws)
    run = jax.jit(jax.vmap(dp.gibbs_assignments, in_axes=(0, None, None, None, None, None)))
    z = np.asarray(run(keys, jnp.asarray(_pad_rows(Wc)), jnp.asarray(ACTIVE), jnp.asarray(zeta0), eta, lam0))
    assert z.dtype == np.int32 and z.min() >= 0 and z.max() < 4
    seen = defaultdict(int)
    for row in z:
        seen[_canon(row)] += 1
    assert set(seen) <= set(exact)
    for part, p in exact.items():
        se = math.sqrt(n_draws * p * (1.0 - p))
        assert abs(seen[part] - n_draws * p) <= Z_MAX * se + 1e-9, (part, seen[part], n_draws * p)


def test_sample_components_moments_and_neutral_padding():
    n_draws, lam0 = 4000, 0.8
    rng = np.random.default_rng(5)
    labels = {2: 8, 9: 6, 4: 1}  # label slot: members
    zeta = np.concatenate([np.full(n, lab) for lab, n in labels.items()]).astype(np.int32)
    M = zeta.size
    Wc = rng.standard_normal((M, K)) @ np.array([[1.0, 0.3, 0.0], [0.0, 0.8, -0.4], [0.0, 0.0, 1.2]])
    Wc[zeta == 9] += 1.5
    keys = jax.random.split(jax.random.key(7), n_draws)
    run = jax.jit(jax.vmap(dp.sample_components, in_axes=(0, None, None, None, None)))
    args = (jnp.asarray(_pad_rows(Wc)), jnp.asarray(ACTIVE), jnp.asarray(zeta), lam0)
    mu, Sigma = (np.asarray(a) for a in run(keys, *args))
    mu2, Sigma2 = (np.asarray(a) for a in run(keys, *args))
    assert np.array_equal(mu, mu2) and np.array_equal(Sigma, Sigma2)  # same key, same draw
    # Padding exactly neutral: inactive slots of every label, and every empty label slot.
    empty = np.setdiff1d(np.arange(M), list(labels))
    assert np.all(mu[:, :, ~ACTIVE] == 0.0) and np.all(mu[:, empty] == 0.0)
    assert np.all(Sigma[:, empty] == np.eye(KW))
    assert np.all(Sigma[:, :, ~ACTIVE, :] == np.eye(KW)[~ACTIVE])
    assert np.all(Sigma[:, :, :, ~ACTIVE] == np.eye(KW)[:, ~ACTIVE])
    assert np.all(np.linalg.eigvalsh(Sigma) > 0)
    idx = np.flatnonzero(ACTIVE)
    iu = np.triu_indices(K)
    for lab, n in labels.items():
        if n < 6:  # the closed-form variance of Sigma needs nu_n - K - 3 > 0 and a light tail
            continue
        X = Wc[zeta == lab]
        lam, nu, s = lam0 + n, K + 2.0 + n, X.sum(axis=0)
        psi = np.eye(K) + X.T @ X - np.outer(s, s) / lam
        S = Sigma[:, lab][:, idx[:, None], idx[None, :]]
        # Inverse Wishart IW(psi, nu), dimension K: mean and variance of each entry.
        d = nu - K
        e_S = psi / (d - 1.0)
        dd = np.outer(np.diag(psi), np.diag(psi))
        v_S = ((d + 1.0) * psi**2 + (d - 1.0) * dd) / (d * (d - 1.0) ** 2 * (d - 3.0))
        zs = _z(S.mean(axis=0), e_S, np.sqrt(v_S / n_draws))[iu]
        # Its inverse is Wishart(psi^-1, nu): E = nu psi^-1, Var_ij = nu (P_ij^2 + P_ii P_jj).
        P0 = np.linalg.inv(psi)
        v_P = nu * (P0**2 + np.outer(np.diag(P0), np.diag(P0)))
        zp = _z(np.linalg.inv(S).mean(axis=0), nu * P0, np.sqrt(v_P / n_draws))[iu]
        # mu: E = s / lam, Var = E[Sigma] / lam.
        zm = _z(mu[:, lab, idx].mean(axis=0), s / lam, np.sqrt(np.diag(e_S) / lam / n_draws))
        # mu | Sigma ~ N(s / lam, Sigma / lam): lam (mu - s/lam)^T Sigma^-1 (mu - s/lam) ~ chi2(K).
        dev = mu[:, lab, idx] - s / lam
        q = lam * np.einsum("ra,rab,rb->r", dev, np.linalg.inv(S), dev)
        zq = _z(q.mean(), K, math.sqrt(2.0 * K / n_draws))
        z_all = np.concatenate([zs, zp, zm, [zq]])
        assert np.all(np.abs(z_all) < Z_MAX), (lab, np.round(z_all, 2))


def test_add_dimension_gives_the_larger_prior():
    n_reps, lam0 = 3000, 0.6
    active = np.array([False, True, False, False, True, False])  # K = 2
    slot = 2  # between the two live slots
    k = int(active.sum())
    zeta = np.array([4, 4, 1, 4, 1, 1], dtype=np.int32)
    M = zeta.size
    occ = np.array([1, 4])
    rng = np.random.default_rng(17)
    # Old components from the K-dimensional prior NIW(0, lam0, I, K + 2), frequencies from them.
    Sc = stats.invwishart(df=k + 2, scale=np.eye(k)).rvs(size=(n_reps, occ.size), random_state=rng)
    Lc = np.linalg.cholesky(Sc)
    muc = np.einsum("rcab,rcb->rca", Lc, rng.standard_normal((n_reps, occ.size, k))) / math.sqrt(lam0)
    comp = np.searchsorted(occ, zeta)
    Wc = muc[:, comp] + np.einsum("rmab,rmb->rma", Lc[:, comp], rng.standard_normal((n_reps, M, k)))
    mu = np.zeros((n_reps, M, KW))
    Sigma = np.broadcast_to(np.eye(KW), (n_reps, M, KW, KW)).copy()
    mu[:, occ] = _pad_rows(muc, active)
    Sigma[:, occ] = _pad_cov(Sc, active)
    W = _pad_rows(Wc, active)
    run = jax.jit(jax.vmap(dp.add_dimension, in_axes=(0, 0, None, None, 0, 0, None, None)))
    keys = jax.random.split(jax.random.key(23), n_reps)
    W2, mu2, S2 = (np.asarray(a) for a in run(keys, jnp.asarray(W), jnp.asarray(active), jnp.asarray(zeta),
                                               jnp.asarray(mu), jnp.asarray(Sigma), lam0, slot))  # fmt: skip
    new_active = active.copy()
    new_active[slot] = True
    # Old coordinates untouched; still-inactive slots and empty label slots exactly neutral.
    assert np.array_equal(W2[..., active], W[..., active]) and np.all(W2[..., ~new_active] == 0.0)
    assert np.array_equal(mu2[..., active], mu[..., active]) and np.all(mu2[..., ~new_active] == 0.0)
    assert np.array_equal(S2[:, :, active][..., active], Sigma[:, :, active][..., active])
    empty = np.setdiff1d(np.arange(M), occ)
    assert np.all(S2[:, empty] == np.eye(KW)) and np.all(mu2[:, empty] == 0.0)
    assert np.all(S2[:, :, ~new_active, :] == np.eye(KW)[~new_active])
    # Compacted (K+1)-dimensional arrays; the new coordinate sits at position 1 (slot 2).
    idx = np.flatnonzero(new_active)
    new = int(np.flatnonzero(idx == slot)[0])
    S = S2[:, occ][..., idx[:, None], idx[None, :]].reshape(-1, k + 1, k + 1)
    P = np.linalg.inv(S)
    m = mu2[:, occ][..., idx].reshape(-1, k + 1)
    Wn = W2[..., idx]  # (reps, M, K+1)
    d = Wn - mu2[:, zeta][..., idx]
    Pw = np.linalg.inv(S2[:, zeta][..., idx[:, None], idx[None, :]])
    n_c, n_w, nu1 = S.shape[0], n_reps * M, k + 3.0
    zs = {}
    # Precision ~ Wishart(I, K + 3): E = nu' I, Var_ij = nu' (1 + [i == j]).
    for i, j in zip(*np.triu_indices(k + 1), strict=True):
        zs[f"P{i}{j}"] = _z(P[:, i, j].mean(), nu1 * (i == j), math.sqrt(nu1 * (1.0 + (i == j)) / n_c))
    # Every diagonal: 1 / Sigma_ii ~ chi2(3) (the new one's mean E[Sigma_nn] = 1 has no variance).
    for i in range(k + 1):
        zs[f"invS{i}"] = _z((1.0 / S[:, i, i]).mean(), 3.0, math.sqrt(6.0 / n_c))
    # mu | Sigma ~ N(0, Sigma / lam0): lam0 mu^T P mu ~ chi2(K+1); the new coordinate alone chi2(1).
    zs["mu"] = _z(lam0 * np.einsum("ca,cab,cb->c", m, P, m).mean(), k + 1.0, math.sqrt(2.0 * (k + 1) / n_c))
    zs["mu_new"] = _z((lam0 * m[:, new] ** 2 / S[:, new, new]).mean(), 1.0, math.sqrt(2.0 / n_c))
    # w | mu, Sigma ~ N(mu, Sigma): (w - mu)^T P (w - mu) ~ chi2(K+1), i.i.d. over members.
    zs["w"] = _z(np.einsum("rma,rmab,rmb->rm", d, Pw, d).mean(), k + 1.0, math.sqrt(2.0 * (k + 1) / n_w))
    # The new coordinate's variance: w_new^2 / ((1 + 1/lam0) Sigma_nn) ~ chi2(1) given Sigma.
    s_nn = S2[:, zeta, slot, slot]
    # Members share mu, so the standard error comes from the per-replicate means.
    w_new = (Wn[..., new] ** 2 / ((1.0 + 1.0 / lam0) * s_nn)).mean(axis=1)
    zs["w_new"] = _z(w_new.mean(), 1.0, w_new.std(ddof=1) / math.sqrt(n_reps))
    # mu and w - mu independent given Sigma: mu^T P (w - mu) has mean 0, variance (K+1) / lam0.
    cross = np.einsum("rma,rmab,rmb->rm", mu2[:, zeta][..., idx], Pw, d).mean(axis=1)
    zs["cross"] = _z(cross.mean(), 0.0, cross.std(ddof=1) / math.sqrt(n_reps))
    bad = {key: round(v, 2) for key, v in zs.items() if abs(v) >= Z_MAX}
    assert not bad, bad


# --------------------------------------------------------------------------------------------
# Geweke: the DP step keeps the prior


def _prior_draw(rng, M, active, lam0, a, b):
    """An exact draw of (zeta, mu, Sigma, eta) from the prior, padded, labels spread over slots."""
    k = int(active.sum())
    eta = rng.gamma(a, 1.0 / b)
    tables = [0]
    for m in range(1, M):
        counts = np.bincount(tables)
        p = np.append(counts, eta) / (m + eta)
        tables.append(int(rng.choice(counts.size + 1, p=p)))
    n_tab = max(tables) + 1
    slots = rng.permutation(M)[:n_tab]  # any labels in [0, M)
    zeta = slots[np.array(tables)].astype(np.int32)
    Sc = stats.invwishart(df=k + 2, scale=np.eye(k)).rvs(size=n_tab, random_state=rng).reshape(n_tab, k, k)
    muc = np.einsum("cab,cb->ca", np.linalg.cholesky(Sc), rng.standard_normal((n_tab, k))) / math.sqrt(lam0)
    mu = np.zeros((M, active.size))
    Sigma = np.broadcast_to(np.eye(active.size), (M, active.size, active.size)).copy()
    mu[slots] = _pad_rows(muc, active)
    Sigma[slots] = _pad_cov(Sc, active)
    return zeta, mu, Sigma, eta


def _geweke_chain(key, state, active, lam0, a, b, n_steps):
    """Alternate w_m ~ N(mu_zeta_m, Sigma_zeta_m) and dp_step; record statistics after each."""
    M, kw = state[1].shape
    k = jnp.sum(active)

    def step(carry, key):
        zeta, mu, Sigma, eta = carry
        k_w, k_dp = jax.random.split(key)
        e = jnp.where(active, jax.random.normal(k_w, (M, kw)), 0.0)
        W = mu[zeta] + jnp.einsum("mab,mb->ma", jnp.linalg.cholesky(Sigma)[zeta], e)
        zeta, mu, Sigma, eta = dp.dp_step(k_dp, W, active, zeta, eta, lam0, a, b)
        occupied = jnp.any(zeta[None, :] == jnp.arange(M)[:, None], axis=1)
        n_comp = jnp.sum(occupied)
        P = jnp.linalg.inv(Sigma)  # identity on the padding
        diag_P = jnp.sum(jnp.where(active, jnp.diagonal(P, axis1=1, axis2=2), 0.0), axis=1)
        off = P * (1.0 - jnp.eye(kw))
        dev = W - mu[zeta]
        stats_ = dict(
            eta=eta,
            eta_sq=eta**2,
            n_comp=n_comp.astype(jnp.float64),
            abs_w=jnp.sum(jnp.abs(W)) / (M * k),
            # Means over the occupied components (i.i.d. NIW given the partition).
            diag_P=jnp.sum(jnp.where(occupied, diag_P, 0.0)) / (n_comp * k),
            off_P=jnp.sum(jnp.where(occupied, off.sum(axis=(1, 2)), 0.0)) / n_comp,
            mu_q=jnp.sum(jnp.where(occupied, lam0 * jnp.einsum("ka,kab,kb->k", mu, P, mu), 0.0)) / n_comp,
            w_q=jnp.mean(jnp.einsum("ma,mab,mb->m", dev, P[zeta], dev)),
            changed=jnp.mean(jnp.asarray([_canon_eq(carry[0], zeta)], jnp.float64)),
        )
        return (zeta, mu, Sigma, eta), stats_

    return jax.lax.scan(step, state, jax.random.split(key, n_steps))


#: One compiled chain serves the prior check and the K = 0 check (`active` is traced).
_run_chain = jax.jit(_geweke_chain, static_argnums=(6,))
N_STEPS = 8000


def _canon_eq(z1, z2):
    """Whether two label vectors give the same partition (same co-membership matrix)."""
    return jnp.all((z1[:, None] == z1[None, :]) == (z2[:, None] == z2[None, :]))


def test_dp_step_keeps_the_prior():
    """Started from an exact prior draw, so no burn-in. The slowest statistic, ``|w|``, has an
    autocorrelation of about 0.1 at lag 50, so 8,000 steps give batches of 200 (40 batches),
    long enough for batch means; the chain runs in about a second once compiled."""
    M, lam0, a, b = 10, 0.5, 2.0, 1.0
    active = ACTIVE
    rng = np.random.default_rng(41)
    zeta, mu, Sigma, eta = _prior_draw(rng, M, active, lam0, a, b)
    state = (jnp.asarray(zeta), jnp.asarray(mu), jnp.asarray(Sigma), jnp.asarray(eta))
    _, out = _run_chain(jax.random.key(43), state, jnp.asarray(active), lam0, a, b, N_STEPS)
    out = {key: np.asarray(v) for key, v in out.items()}
    # The chain moves: the partition changes on a good share of the steps.
    assert 0.2 < 1.0 - out["changed"].mean()
    # E[#components] under the prior: E over eta ~ Gamma(a, b) of sum_i eta / (eta + i).
    tables = integrate.quad(
        lambda e: stats.gamma.pdf(e, a, scale=1.0 / b) * np.sum(e / (e + np.arange(M))), 0.0, np.inf
    )[0]
    truth = dict(
        eta=a / b,
        eta_sq=a * (a + 1.0) / b**2,
        n_comp=tables,
        abs_w=2.0 * math.sqrt(1.0 + 1.0 / lam0) / math.pi,  # w_a ~ sqrt((1 + 1/lam0)/3) t_3
        diag_P=K + 2.0,  # Sigma^-1 ~ Wishart(I, K + 2)
        off_P=0.0,
        mu_q=float(K),  # lam0 mu^T P mu ~ chi2(K)
        w_q=float(K),  # (w - mu)^T P (w - mu) ~ chi2(K)
    )
    zs = {}
    for name, value in truth.items():
        mean, se = batch_mean_se(out[name], 40)
        zs[name] = (round(mean, 4), round((mean - value) / se, 2))
    assert all(abs(z) < Z_MAX for _, z in zs.values()), zs


# --------------------------------------------------------------------------------------------
# Structure: pure device programs


def _example(active):
    rng = np.random.default_rng(2)
    M = 8
    W = jnp.asarray(_pad_rows(rng.standard_normal((M, int(active.sum()))), active))
    zeta = jnp.asarray(np.array([0, 0, 3, 3, 3, 5, 0, 3], dtype=np.int32))
    return W, jnp.asarray(active), zeta


def test_programs_hold_no_callback_and_drop_is_neutral():
    W, active, zeta = _example(ACTIVE)
    rng = np.random.default_rng(8)
    A = rng.standard_normal((8, K, K))
    mu = jnp.asarray(_pad_rows(rng.standard_normal((8, K))))
    Sigma = jnp.asarray(_pad_cov(A @ np.swapaxes(A, 1, 2) + np.eye(K)))
    texts = [
        jax.make_jaxpr(dp.dp_step)(jax.random.key(0), W, active, zeta, 1.0, 1.0, 2.0, 1.0),
        jax.make_jaxpr(dp.add_dimension)(jax.random.key(0), W, active, zeta, mu, Sigma, 1.0, jnp.int32(2)),
        jax.make_jaxpr(dp.drop_dimension)(W, mu, Sigma, jnp.int32(3)),
    ]
    for jaxpr in texts:
        text = str(jaxpr)
        assert "callback" not in text.lower()
    # The pass is one loop, not M unrolled copies.
    assert "while" in str(texts[0]) or "scan" in str(texts[0])
    W2, mu2, S2 = jax.jit(dp.drop_dimension)(W, mu, Sigma, 3)
    assert np.all(np.asarray(W2)[:, 3] == 0.0) and np.all(np.asarray(mu2)[:, 3] == 0.0)
    assert np.all(np.asarray(S2)[:, 3] == np.eye(KW)[3]) and np.all(np.asarray(S2)[:, :, 3] == np.eye(KW)[3])
    keep = np.array([True, True, True, False, True, True])
    assert np.array_equal(np.asarray(S2)[:, keep][:, :, keep], np.asarray(Sigma)[:, keep][:, :, keep])


def test_dp_step_with_no_active_slot_keeps_the_assignments():
    """At K = 0 the host leaves the assignments alone; so must the device (through the chain's
    compiled program, whose frequencies are all zero then)."""
    M = 10
    zeta = jnp.asarray(np.array([0, 0, 3, 3, 3, 5, 0, 3, 9, 9], dtype=np.int32))
    state = (zeta, jnp.zeros((M, KW)), jnp.broadcast_to(jnp.eye(KW), (M, KW, KW)), jnp.asarray(1.3))
    none = jnp.zeros(KW, dtype=bool)
    (z, mu, Sigma, eta), out = _run_chain(jax.random.key(5), state, none, 0.5, 2.0, 1.0, N_STEPS)
    assert np.array_equal(np.asarray(z), np.asarray(zeta)) and np.all(np.asarray(out["changed"]) == 1.0)
    assert np.all(np.asarray(mu) == 0.0) and np.all(np.asarray(Sigma) == np.eye(KW))
    # eta still moves, given the 4 components: E[eta | 4 of 10] under Gamma(2, 1) is not 1.3.
    assert np.unique(np.asarray(out["eta"])).size > N_STEPS // 2
    # Same key, same chain.
    (_, _, _, eta2), _ = _run_chain(jax.random.key(5), state, none, 0.5, 2.0, 1.0, N_STEPS)
    assert float(eta2) == float(eta)
