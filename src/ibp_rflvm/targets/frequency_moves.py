"""Elliptical slice sampling of each frequency ``w_m`` under its mixture component's Gaussian.

The paper's frequency step proposes ``w_m* ~ N(mu_k, Sigma_k)`` (``k = zeta_m``) independently
of ``w_m`` and accepts by the likelihood ratio. It is accepted about as often as the likelihood
is flat over the component's spread, and the log-likelihood of one frequency sums over all
``N x J`` entries: beyond toy sizes almost nothing is accepted (docs/record/sampler.md,
section 12) and the kernel stays at its start.

**The move.** Given ``zeta_m = k``, ``mu_k``, ``Sigma_k`` and everything else, the conditional
of ``w_m`` is ``N(w_m; mu_k, Sigma_k) L(w_m)``, a Gaussian prior times a likelihood: the setting
of elliptical slice sampling (Murray, Adams and MacKay 2010). With ``nu ~ N(0, Sigma_k)``,
``log y = log L(w_m) + log u`` and the ellipse ``w(t) = mu_k + (w_m - mu_k) cos t + nu sin t``,
draw ``t`` uniformly on a bracket that starts as ``[t0 - 2 pi, t0]`` (``t0 ~ U(0, 2 pi)``) and
shrinks towards ``t = 0`` (the current point) after each ``w(t)`` with ``log L(w(t)) <= log y``;
the first ``w(t)`` above the slice is the new ``w_m``.

**Why it is exact.** ``(w_m - mu_k, nu)`` is a pair of independent ``N(0, Sigma_k)`` vectors, and
the rotation by ``t`` of the pair maps that Gaussian onto itself with Jacobian 1; the slice level
``y`` and the shrinking bracket are those of a slice sampler over ``t``, whose bracket procedure
is reversible (the same bracket, hence the same proposal distribution over ``t``, is reached
from either end of a move). So the move leaves ``N(mu_k, Sigma_k) L`` invariant; there is no
acceptance ratio beyond the slice condition ``log L(w(t)) > log y`` (Murray et al., section 2.2).
Every evaluation changes only the two feature columns of ``w_m``, scored by the target's own
rank-2 (factorised) or block (collapsed Gaussian) formula, as the Metropolis-Hastings step does.

Unlike the independence proposal, the move adapts its step to the likelihood's width: the
bracket shrinks until ``w(t)`` lands in the slice, so a sharp likelihood costs a few more
evaluations and still moves ``w_m`` by about its posterior spread.

A *block* holds the likelihood as one frequency changes: ``block.ll`` (the current
log-likelihood), ``block.evaluate(m, w, floor) -> (ll, pieces)`` and ``block.commit(m, w,
pieces)``, which writes ``w`` into ``W`` and makes ``ll`` current. ``floor`` is the slice level:
a block may return ``-inf`` for a point it can show is at or below it without scoring it
exactly (the factorised target's bound), which changes no decision.
"""

from __future__ import annotations

import math

import numpy as np

from ..samplers.ess import shrink

#: Shrinks of one bracket after which the search keeps ``w_m``. The bracket has then shrunk by
#: about ``2^-200`` around the current point, whose log-likelihood is above the slice (``log u
#: < 0``): only rounding of the likelihood at a point equal to ``w_m`` to the last bits can keep
#: the search going that long, and keeping ``w_m`` is where the search converges.
MAX_SHRINKS = 200


def ess_frequencies(
    rng: np.random.Generator, W: np.ndarray, zeta: np.ndarray, mu: np.ndarray, Sigma: np.ndarray, block
) -> tuple[int, int]:
    """One elliptical slice update of every frequency in turn (see the module docstring).

    Parameters
    ----------
    rng : numpy.random.Generator
        The chain's generator; per frequency it draws ``K`` normals, the slice's uniform, the
        first angle and one uniform per shrink, in that order.
    W : numpy.ndarray
        ``M x K`` frequencies, updated in place by ``block.commit``.
    zeta : numpy.ndarray
        Each frequency's mixture component.
    mu, Sigma : numpy.ndarray
        The components' means (``C x K``) and covariances (``C x K x K``).
    block : object
        The likelihood as one frequency changes (``ll``, ``evaluate``, ``commit``).

    Returns
    -------
    tuple of int
        ``(evaluations, moved)``: the likelihood evaluations made and the frequencies whose
        value changed.
    """
    M, K = W.shape
    if K == 0:
        return 0, 0
    chols = np.linalg.cholesky(Sigma)
    n_evals = moved = 0
    for m in range(M):
        k = zeta[m]
        nu = chols[k] @ rng.standard_normal(K)
        log_y = block.ll + math.log(rng.random())
        theta = rng.random() * (2.0 * math.pi)
        lo, hi = theta - 2.0 * math.pi, theta
        centred = W[m] - mu[k]
        for _ in range(MAX_SHRINKS):
            w_prop = mu[k] + centred * math.cos(theta) + nu * math.sin(theta)
            ll_new, pieces = block.evaluate(m, w_prop, log_y)
            n_evals += 1
            if ll_new > log_y:
                moved += int(not np.array_equal(w_prop, W[m]))
                block.commit(m, w_prop, pieces)
                break
            theta, lo, hi = shrink(theta, lo, hi, rng.random())
    return n_evals, moved


def ess_frequencies_prior(rng: np.random.Generator, W: np.ndarray, zeta, mu, Sigma) -> np.ndarray:
    """:func:`ess_frequencies` with no likelihood, for every frequency at once: the first point
    of each ellipse is in the slice, so ``w_m <- mu_k + (w_m - mu_k) cos t + nu sin t`` with
    ``t ~ U(0, 2 pi)``; returns the new ``W``."""
    M, K = W.shape
    if K == 0:
        return W
    chols = np.linalg.cholesky(Sigma)
    nu = np.einsum("mab,mb->ma", chols[zeta], rng.standard_normal((M, K)))
    theta = rng.random(M) * (2.0 * math.pi)
    centre = mu[zeta]
    return centre + (W - centre) * np.cos(theta)[:, None] + nu * np.sin(theta)[:, None]


__all__ = ["MAX_SHRINKS", "ess_frequencies", "ess_frequencies_prior"]
