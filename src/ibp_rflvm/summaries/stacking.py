"""Weights of a fit's chains: stacking of their PSIS leave-one-entry-out predictive densities.

Chains started from different numbers of dimensions settle in different posterior modes
(docs/sampler.md section 5), and which mode predicts best differs by data set. Pooling their
samples with equal weights lets a poor mode dilute a good one; stacking (Yao, Vehtari and Gelman
2022, "Stacking for non-mixing Bayesian computations") weighs each chain by how well the mixture
predicts data it has not seen. Here the unit left out is one observed training entry ``y_ij``:
each chain's kept samples give the pointwise log-likelihoods ``log p(y_ij | theta_s)``, PSIS-LOO
(:func:`psis_loo`) turns them into ``log p_k(y_ij | y_-ij)`` with a Pareto ``k`` diagnostic per
entry, and the weights maximise ``sum_ij log sum_k w_k p_k(y_ij | y_-ij)``. A row's latent
position depends on all its entries, so leaving one entry out moves the posterior little and the
importance ratios stay usable; leaving out whole rows would not (docs/embedding.md, section 2).

On large data the observed entries of a random subset of rows, about ``max_entries`` of them,
are scored (a fixed seed, so the weights are a deterministic function of the fit): the objective
is a sum over entries, so the subset estimates it without bias, with the standard error reported
per chain. Whole rows keep the cost proportional to the entries scored, since a sample's
predictors are then needed for those rows only.

The arithmetic is plain numpy and knows nothing of the model (:func:`psis_loo`,
:func:`stacking_weights`; :func:`chain_weights` applies it to a fit). Refitting a chain
once per entry is out of the question, so Pareto-smoothed importance sampling (PSIS; Vehtari, Gelman
and Gabry 2017; Vehtari et al. 2024, JMLR 25(72)) reweights the chain's own draws by the ratios
``1 / p(y_i | theta_s)``, which turns the full posterior into an estimate of the posterior without
``y_i``; the largest ratios are replaced by the expected order statistics of a generalized Pareto
distribution fitted to them, which tames their variance. The shape estimate ``k`` of that fit says
how heavy the tail of the ratios is: above about 0.7 (less for few draws) the estimate for that entry
is unreliable, because the posterior without it differs too much from the one that was sampled.

:func:`psis_loo` follows ArviZ's ``az.loo`` / ``az.psislw`` conventions (tail length, Zhang and
Stephens (2009) profile estimator with ArviZ's prior on ``k``, quantiles ``(i - 1/2) / M``,
truncation at the largest raw ratio) and agrees with it to rounding (tests/test_stacking.py), but is
vectorised over observations. Speed: 50 draws x 400,000 observations take 1.4 s on one core (numpy
2.4, x86-64, measured with ``taskset -c 0``). Memory is a few times ``8 * draws * block`` bytes, where
a block is at most ``chunk`` observations and at most `MAX_BLOCK_VALUES` values.

:func:`stacking_weights` chooses the weights of K predictive distributions (models, or chains that
do not mix) that maximise the summed log density of the mixture at each left-out observation (Yao,
Vehtari, Simpson and Gelman 2018; Yao, Vehtari and Gelman 2022).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from scipy.special import logsumexp

from .scoring import pointwise_logpdf

#: Fewest draws accepted. Below 21 draws no tail of 5 ratios exists, so every ``k`` is inf and the
#: estimate is plain (unsmoothed) importance sampling.
MIN_DRAWS = 2
#: Shortest tail the generalized Pareto distribution is fitted to (shorter tails give ``k = inf``).
MIN_TAIL = 5
#: ArviZ's weakly informative prior on ``k``: ``M`` tail points are pooled with this many pseudo
#: points at ``_PRIOR_K_MEAN``, which keeps small-tail estimates from swinging wildly.
_PRIOR_K_POINTS = 10
_PRIOR_K_MEAN = 0.5
#: Scale of the Zhang-Stephens grid relative to the tail's first quartile.
_GRID_SCALE = 3.0
_LOG_TINY = float(np.log(np.finfo(np.float64).tiny))
_EPS = float(np.finfo(np.float64).eps)
#: Largest number of log-likelihood values processed at once (bounds memory when draws are many).
MAX_BLOCK_VALUES = 1 << 24
#: Threshold of ``k`` below which an estimate is called good whatever the number of draws.
K_GOOD = 0.5
#: Stacking weights below this are set to 0 (the softmax parameterisation never reaches 0 exactly).
WEIGHT_FLOOR = 1e-10
#: Tolerance on the optimality condition of the stacking weights (gradient of the mean objective).
_KKT_TOL = 1e-8


def tail_length(n_draws: int, reff: float = 1.0) -> int:
    """Number ``M`` of largest ratios smoothed: ``ceil(min(S / 5, 3 sqrt(S / reff)))``."""
    return int(np.ceil(min(n_draws / 5.0, 3 * (n_draws / reff) ** 0.5)))


def k_threshold(n_draws: int | None = None) -> float:
    """``k`` above which PSIS is unreliable: ``min(1 - 1/log10(S), 0.7)`` as in ArviZ >= 0.18
    (0.7 when ``S`` is unknown). With 100 draws it is 0.5; with fewer it is lower still."""
    if n_draws is None:
        return 0.7
    if n_draws < MIN_DRAWS:
        raise ValueError(f"n_draws must be at least {MIN_DRAWS}; got {n_draws}")
    return float(min(1 - 1 / np.log10(n_draws), 0.7))


def _gpd_fit(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Zhang-Stephens posterior-mean ``(k, sigma)`` for each row of ``z`` (positive, ascending).

    The ``b = -k / sigma`` grid is shared in shape but scaled per row by the row's quartile and maximum,
    so the profile log-likelihood is an ``(r, m)`` array built with a loop over the ``m`` grid points
    (memory ``r * M`` per step rather than ``r * m * M``)."""
    r, n = z.shape
    m = 30 + int(n**0.5)
    grid = 1.0 - np.sqrt(m / (np.arange(1, m + 1, dtype=np.float64) - 0.5))
    quartile = z[:, int(n / 4 + 0.5) - 1]
    b = grid / (_GRID_SCALE * quartile[:, None]) + 1.0 / z[:, -1:]
    k = np.empty((r, m))
    for j in range(m):
        k[:, j] = np.log1p(-b[:, j : j + 1] * z).mean(axis=1)
    profile = n * (np.log(-(b / k)) - k - 1.0)
    w = np.exp(profile - profile.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    # ArviZ drops grid points of negligible weight before averaging; done too, though only rounding moves.
    w[w < 10 * _EPS] = 0.0
    b_mean = (b * w).sum(axis=1) / w.sum(axis=1)
    k_hat = np.log1p(-b_mean[:, None] * z).mean(axis=1)
    sigma = -k_hat / b_mean
    k_hat = (n * k_hat + _PRIOR_K_POINTS * _PRIOR_K_MEAN) / (n + _PRIOR_K_POINTS)
    return k_hat, sigma


def _gpd_quantile(p: np.ndarray, k: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """Quantiles ``p`` (in (0, 1)) of the GPD with shape ``k`` and scale ``sigma``, one row per fit."""
    lp = np.log1p(-p)
    tiny_k = np.abs(k) < _EPS
    kk = np.where(tiny_k, 1.0, k)[:, None]
    return np.where(tiny_k[:, None], -lp, np.expm1(-kk * lp) / kk) * sigma[:, None]


def _psis_block(ll: np.ndarray, m_tail: int) -> tuple[np.ndarray, np.ndarray]:
    """PSIS-LOO for ``ll`` of shape ``(observations, draws)``, all finite."""
    c, s = ll.shape
    x = -ll
    # Shift so the largest raw log ratio is 0: truncating at it is then min(x, 0).
    x -= x.max(axis=1, keepdims=True)
    top = np.argpartition(x, s - m_tail - 1, axis=1)[:, s - m_tail - 1 :]
    top_x = np.take_along_axis(x, top, axis=1)
    order = np.argsort(top_x, axis=1)
    top = np.take_along_axis(top, order, axis=1)
    top_x = np.take_along_axis(top_x, order, axis=1)
    cutoff = np.maximum(top_x[:, 0], _LOG_TINY)
    # Ties at the cutoff shorten the tail, so tail lengths vary; fits are batched per length.
    n_tail = (top_x[:, 1:] > cutoff[:, None]).sum(axis=1)
    k = np.full(c, np.inf)
    for n in np.unique(n_tail[n_tail >= MIN_TAIL]):
        rows = np.flatnonzero(n_tail == n)
        exp_cut = np.exp(cutoff[rows])[:, None]
        k_r, sigma = _gpd_fit(np.exp(top_x[rows, -n:]) - exp_cut)
        # A failed fit (a numerically flat tail makes the quartile 0) leaves the ratios unsmoothed;
        # ArviZ returns NaN densities there, a k of inf says the same without poisoning sums.
        ok = np.isfinite(k_r) & np.isfinite(sigma) & (sigma > 0)
        k[rows] = np.where(ok, k_r, np.inf)
        if not ok.any():
            continue
        rows = rows[ok]
        probs = (np.arange(n, dtype=np.float64) + 0.5) / n
        smooth = np.log(_gpd_quantile(probs, k_r[ok], sigma[ok]) + exp_cut[ok])
        x[rows[:, None], top[rows, -n:]] = smooth
    np.minimum(x, 0.0, out=x)
    x -= logsumexp(x, axis=1, keepdims=True)
    x += ll
    return logsumexp(x, axis=1), k


def _validated_log_lik(log_lik: np.ndarray) -> np.ndarray:
    arr = np.asarray(log_lik)
    if arr.ndim != 2:
        raise ValueError(f"log_lik must be 2-D (draws x observations); got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.number) or np.iscomplexobj(arr):
        raise ValueError(f"log_lik must hold real numbers; got dtype {arr.dtype}")
    if arr.shape[0] < MIN_DRAWS:
        raise ValueError(f"log_lik needs at least {MIN_DRAWS} draws (rows); got {arr.shape[0]}")
    arr = arr.astype(np.float64, copy=False)
    bad = np.isnan(arr) | np.isposinf(arr)
    if bad.any():
        s, i = np.argwhere(bad)[0]
        raise ValueError(
            f"log_lik has {int(bad.sum())} NaN or +inf values (first at draw {s}, observation {i}); "
            "a log density must be finite or -inf"
        )
    return arr


def psis_loo(
    log_lik: np.ndarray, chunk: int = 20000, *, reff: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """Pointwise PSIS-LOO log predictive densities and Pareto ``k`` of ``log_lik`` (draws x observations).

    Returns ``(elpd_i, pareto_k)``, each of length ``n``: ``log p(y_i | y_-i)`` as estimated from the
    draws, and the shape of the generalized Pareto distribution fitted to the largest ``M =
    tail_length(S, reff)`` importance ratios (``inf`` when fewer than `MIN_TAIL` ratios lie strictly above
    the cutoff, e.g. a constant row, or when the fit fails; those ratios are then not smoothed).
    ``reff`` is the relative efficiency ``ESS / S`` of the draws; as in ArviZ it only lengthens the tail.
    An observation with a ``-inf`` log density at some draw has an infinite ratio there, so its estimate
    is ``-inf`` with ``k = inf``. At most `chunk` observations are processed at a time, to bound memory;
    the results do not depend on it.
    """
    arr = _validated_log_lik(log_lik)
    if not (isinstance(chunk, int | np.integer) and chunk >= 1):
        raise ValueError(f"chunk must be a positive integer; got {chunk!r}")
    if not (np.isfinite(reff) and reff > 0):
        raise ValueError(f"reff must be a positive finite number; got {reff!r}")
    s, n = arr.shape
    m_tail = tail_length(s, reff)
    step = min(chunk, max(1, MAX_BLOCK_VALUES // s))
    elpd = np.empty(n)
    k = np.empty(n)
    for start in range(0, n, step):
        stop = min(start + step, n)
        block = np.ascontiguousarray(arr[:, start:stop].T)
        neg_inf = np.isneginf(block).any(axis=1)
        if neg_inf.any():
            block[neg_inf] = 0.0
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            elpd[start:stop], k[start:stop] = _psis_block(block, m_tail)
        elpd[start:stop][neg_inf] = -np.inf
        k[start:stop][neg_inf] = np.inf
    return elpd, k


def pareto_k_summary(k: np.ndarray, n_draws: int | None = None) -> dict[str, float]:
    """Shares of observations by Pareto ``k``: ``good`` (``k <= min(0.5, threshold)``), ``ok`` (up to
    ``threshold``) and ``bad`` (above it, or NaN), summing to one, with ``very_bad`` (``k > 1``, part
    of ``bad``), the ``threshold`` (`k_threshold` of `n_draws`) and the count ``n``."""
    k = np.asarray(k, dtype=np.float64).ravel()
    thr = k_threshold(n_draws)
    n = k.size
    if n == 0:
        return {"good": np.nan, "ok": np.nan, "bad": np.nan, "very_bad": np.nan, "threshold": thr, "n": 0}
    good = int(np.sum(k <= min(K_GOOD, thr)))
    ok = int(np.sum(k <= thr)) - good
    return {
        "good": good / n,
        "ok": ok / n,
        "bad": (n - good - ok) / n,
        "very_bad": float(np.mean(~(k <= 1.0))),
        "threshold": thr,
        "n": n,
    }


def _validated_elpd(elpd: np.ndarray) -> np.ndarray:
    arr = np.asarray(elpd, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(f"elpd must be 2-D (observations x models); got shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"elpd needs at least one observation and one model; got shape {arr.shape}")
    if (np.isnan(arr) | np.isposinf(arr)).any():
        raise ValueError("elpd has NaN or +inf values; pointwise log densities must be finite or -inf")
    dead = ~np.isfinite(arr).any(axis=1)
    if dead.any():
        raise ValueError(
            f"elpd is -inf for every model at {int(dead.sum())} observations "
            f"(first: {int(np.argmax(dead))}); the stacking objective is -inf whatever the weights"
        )
    return arr


def stacking_objective(elpd: np.ndarray, weights: np.ndarray) -> float:
    """``sum_i log sum_k w_k exp(elpd_ik)``, computed with each row's maximum factored out."""
    arr = _validated_elpd(elpd)
    top = arr.max(axis=1)
    with np.errstate(divide="ignore"):
        return float(np.sum(top + np.log(np.exp(arr - top[:, None]) @ np.asarray(weights, np.float64))))


def _softmax(logits: np.ndarray) -> np.ndarray:
    e = np.exp(logits - logits.max())
    return e / e.sum()


def _lbfgs_on_logits(dens: np.ndarray, w0: np.ndarray, ref: int) -> np.ndarray:
    """Maximise the mean log mixture density from `w0` over the logits, model `ref`'s pinned at 0."""
    free = np.arange(dens.shape[1]) != ref
    with np.errstate(divide="ignore"):
        z0 = np.log(w0[free]) - np.log(w0[ref])

    def negative_mean(z: np.ndarray) -> tuple[float, np.ndarray]:
        logits = np.zeros(dens.shape[1])
        logits[free] = z
        w = _softmax(logits)
        mix = np.maximum(dens @ w, np.finfo(np.float64).tiny)
        grad_w = (dens / mix[:, None]).mean(axis=0)
        # Chain rule through the softmax: d w_j / d z_l = w_j (delta_jl - w_l).
        return -float(np.mean(np.log(mix))), -(w[free] * (grad_w[free] - w @ grad_w))

    opts = {"maxiter": 10000, "ftol": 1e-15, "gtol": 1e-12}
    res = minimize(negative_mean, np.maximum(z0, -700.0), jac=True, method="L-BFGS-B", options=opts)
    logits = np.zeros(dens.shape[1])
    logits[free] = res.x
    return _softmax(logits)


def stacking_weights(elpd: np.ndarray) -> np.ndarray:
    """Stacking weights of ``K`` predictive distributions from their ``n x K`` pointwise LOO log
    densities: non-negative, summing to one, maximising `stacking_objective`.

    The objective is concave in the weights. It is optimised by L-BFGS over ``K - 1`` free logits
    (one pinned at 0) from equal weights, so the result is deterministic; models whose weight stalls
    near 0 while the optimality condition says it should grow are revived and the search restarted
    (at most ``K`` times). Weights below `WEIGHT_FLOOR` are set to 0 and the rest renormalised."""
    arr = _validated_elpd(elpd)
    n_models = arr.shape[1]
    if n_models == 1:
        return np.ones(1)
    # Each row's best model has density 1, so the mixture density never underflows for positive w.
    dens = np.exp(arr - arr.max(axis=1, keepdims=True))
    w = np.full(n_models, 1.0 / n_models)
    # The pinned model should keep a positive weight, or every other logit runs off to +inf: first
    # the one with the best total elpd, then the heaviest so far.
    ref = int(np.argmax(arr.sum(axis=0)))
    for _ in range(n_models):
        w = _lbfgs_on_logits(dens, w / w.sum(), ref)
        ref = int(np.argmax(w))
        # Optimality on the simplex: d(mean objective)/d w_k <= 1 for every k (== 1 where w_k > 0).
        # A logit driven far negative has almost no gradient and can stall at a weight that should
        # be positive; such models are given weight again and the search restarted.
        grad_w = (dens / np.maximum(dens @ w, np.finfo(np.float64).tiny)[:, None]).mean(axis=0)
        stalled = grad_w > 1.0 + _KKT_TOL
        if not stalled.any():
            break
        w = np.where(stalled, np.maximum(w, 0.1 / n_models), w)
    w[w < WEIGHT_FLOOR] = 0.0
    return w / w.sum()


#: Observed entries scored by default (a random subset above it).
MAX_ENTRIES = 100_000
#: Ways of combining chains.
COMBINE = ("stack", "pool")
#: Seed of the entry subset: not the chains' generators, which must stay untouched.
SUBSET_SEED = 20221


@dataclass(frozen=True)
class ChainWeights:
    """What stacking computed: ``weights`` (one per chain, summing to one), each chain's mean
    PSIS-LOO density per entry ``elpd`` with its standard error ``elpd_se`` over the scored
    entries, ``pareto_k_bad`` (share of entries whose ``k`` is above the reliability threshold
    for the chain's number of draws, ``min(1 - 1/log10 S, 0.7)``: 0.41 at 50 draws, 0.54 at 150)
    and ``pareto_k_above_07`` (above the classic 0.7), ``n_entries`` scored of ``n_observed``,
    and ``combine``."""

    weights: np.ndarray
    elpd: np.ndarray
    elpd_se: np.ndarray
    pareto_k_bad: np.ndarray
    pareto_k_above_07: np.ndarray
    n_entries: int
    n_observed: int
    combine: str


def scored_entries(observed: np.ndarray, max_entries: int = MAX_ENTRIES) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices of the observed entries to score: all of them, or all those of a
    fixed random subset of rows holding about `max_entries` (whole rows, so that each sample's
    predictors are computed for those rows only: the cost is that of the entries scored, not of
    the ``N x J`` matrix)."""
    rows, cols = np.nonzero(observed)
    if rows.size <= max_entries:
        return rows, cols
    per_row = observed.sum(axis=1)
    order = np.random.default_rng(SUBSET_SEED).permutation(observed.shape[0])
    # The first rows of the permutation whose entries reach max_entries (at least one row).
    n_rows = max(1, int(np.searchsorted(np.cumsum(per_row[order]), max_entries)))
    keep = np.zeros(observed.shape[0], dtype=bool)
    keep[order[:n_rows]] = True
    pick = keep[rows]
    return rows[pick], cols[pick]


def pointwise_loglik(samples: Sequence[dict], data, spec, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``S x n`` log-likelihoods ``log p(y_ij | theta_s)`` of the training entries ``(rows,
    cols)``, computed as held-out entries are scored
    (:func:`~ibp_rflvm.summaries.scoring.pointwise_logpdf`)."""
    unique_rows, row_pos = np.unique(rows, return_inverse=True)
    return pointwise_logpdf(samples, spec, data.prep, unique_rows, row_pos, cols, data.Y[rows, cols])


def chain_weights(
    chains: Sequence[Sequence[dict]], data, spec, combine: str = "stack", max_entries: int = MAX_ENTRIES
) -> ChainWeights:
    """Weights of `chains` (each a list of kept samples): stacking or equal pooling.

    With one chain the weight is 1 and nothing is scored. With equal pooling each chain weighs
    its share of the kept samples, and the LOO scores are still computed for the summary.
    """
    if combine not in COMBINE:
        raise ValueError(f"combine must be one of {list(COMBINE)}; got {combine!r}")
    n_chains = len(chains)
    n_observed = int(data.observed.sum())
    if n_chains == 1:
        nan = np.full(1, np.nan)
        return ChainWeights(np.ones(1), nan, nan, nan, nan, 0, n_observed, combine)
    rows, cols = scored_entries(data.observed, max_entries)
    elpd_i = np.empty((rows.size, n_chains))
    bad, above = np.empty(n_chains), np.empty(n_chains)
    for k, samples in enumerate(chains):
        elpd_i[:, k], pareto_k = psis_loo(pointwise_loglik(samples, data, spec, rows, cols))
        bad[k] = pareto_k_summary(pareto_k, len(samples))["bad"]
        above[k] = float(np.mean(~(pareto_k <= 0.7)))
    if combine == "stack":
        weights = stacking_weights(elpd_i)
    else:
        sizes = np.array([len(c) for c in chains], dtype=np.float64)
        weights = sizes / sizes.sum()
    n = rows.size
    elpd = elpd_i.mean(axis=0)
    se = elpd_i.std(axis=0, ddof=1) / np.sqrt(n) if n > 1 else np.full(n_chains, np.nan)
    return ChainWeights(weights, elpd, se, bad, above, n, n_observed, combine)


def sample_weights(chain_sizes: Sequence[int], weights: np.ndarray) -> np.ndarray:
    """Weight of every kept sample, chains in order: chain ``k``'s weight spread evenly over its
    samples, so a weighted sum over samples is the stacked mixture of the chains' posteriors."""
    return np.concatenate([np.full(n, w / n) for n, w in zip(chain_sizes, weights, strict=True) if n > 0])
