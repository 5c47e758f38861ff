"""One place for "how many dimensions": the three numbers a fit reports, and what each counts.

* ``K+``: the dimensions some row uses in a posterior sample. The IBP's own count; it includes
  dimensions so small that the fit would not miss them, and the sampler changes it slowly, so
  it can stay near where a chain started.
* Effective dimensions: those whose removal from a sample costs the fit a real share of its gain
  over no latent dimensions (:mod:`ibp_rflvm.mcmc.effective`): the dimensions the data would miss.
* Embedding dimensions: the kernel principal components of the posterior embedding carrying 90%
  of its kernel's trace, never fewer than the median ``K+`` (:mod:`ibp_rflvm.summaries.embedding`). They
  describe where the rows lie over the whole posterior, a mixture of samples and chains, and
  can exceed both.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from .dimensions import effective_dims_posterior, k_plus_posterior, posterior_median
from .embedding import own_dimension
from .posterior import Posterior

#: One sentence per count: what it counts.
MEANINGS = {
    "k_plus": "latent dimensions some row uses in a posterior sample (the IBP's K+)",
    "effective_dims": "dimensions whose removal costs a sample at least 5% of its fit's gain over none",
    "embedding_dims": "posterior-embedding components carrying 90% of its kernel's trace, at least median K+",
}


class KPlusStuckWarning(UserWarning):
    """``K+`` stayed within one of its start in every sweep of every chain: the sampler, not the
    data, may have chosen it."""


def _interval(posterior: dict[int, float], level: float = 0.9) -> tuple[int, int]:
    values = np.fromiter(posterior.keys(), dtype=np.int64)
    cdf = np.cumsum(np.fromiter(posterior.values(), dtype=np.float64))
    tail = (1.0 - level) / 2
    lo = values[min(np.searchsorted(cdf, tail - 1e-12), values.size - 1)]
    hi = values[min(np.searchsorted(cdf, 1.0 - tail - 1e-12), values.size - 1)]
    return int(lo), int(hi)


def k_plus_stuck(posterior: Posterior) -> bool:
    """Whether ``K+`` stayed within one of each chain's start in all its sweeps (IBP fits only)."""
    if not posterior.spec.ibp:
        return False
    trace = posterior.traces["n_active"]
    return bool(np.all(np.abs(trace - posterior.chain_starts[:, None]) <= 1))


def dimension_counts(posterior: Posterior, warn: bool = True) -> pd.DataFrame:
    """``K+``, the effective dimensions and the embedding's side by side.

    Parameters
    ----------
    posterior : Posterior
        A fit's posterior.
    warn : bool, default=True
        Warn (:class:`KPlusStuckWarning`) where ``K+`` never left its start.

    Returns
    -------
    pandas.DataFrame
        Rows ``k_plus``, ``effective_dims``, ``embedding_dims``; columns ``median``, ``low``
        and ``high`` (a 90% posterior interval; the embedding's is its one value) and
        ``counts`` (one sentence on what the number counts).
    """
    rows = {}
    for name, post in (("k_plus", k_plus_posterior(posterior)),
                       ("effective_dims", effective_dims_posterior(posterior))):  # fmt: skip
        rows[name] = (posterior_median(post), *_interval(post))
    own = own_dimension(posterior)
    rows["embedding_dims"] = (own, own, own)
    table = pd.DataFrame.from_dict(rows, orient="index", columns=["median", "low", "high"])
    table["counts"] = [MEANINGS[name] for name in table.index]
    if warn and k_plus_stuck(posterior):
        starts = ", ".join(str(int(s)) for s in posterior.chain_starts)
        warnings.warn(
            f"K+ stayed within one of its start ({starts}) in every sweep: the start, not the data, may "
            "have set it; compare chains from other init_dims, run longer, or read the effective "
            "dimensions instead",
            KPlusStuckWarning,
            stacklevel=3,
        )
    return table
