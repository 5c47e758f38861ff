"""Several chains, combined by stacking, and how to read their convergence diagnostics.

Two chains on the standardised breast cancer data, started from 2 and 12 dimensions. Chains
from different starts often settle in different modes; ``fit`` then warns
(``ChainsDisagreeWarning``) and stacking weighs each chain by how well it predicts left-out
training entries. ``summary()`` has R-hat and effective sample sizes of the label-invariant
quantities and one row per chain (start, K+, PSIS-LOO score, Pareto k shares, weight).

Run: ``python examples/several_chains.py``
"""

import warnings

import pandas as pd
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler

from ibp_rflvm import IBPRFLVM, ChainsDisagreeWarning, holdout_mask

Y = StandardScaler().fit_transform(load_breast_cancer().data)
Y_train, Y_test = holdout_mask(Y, fraction=0.2, random_state=0)

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always", ChainsDisagreeWarning)
    model = IBPRFLVM(n_chains=2, n_iter=40, random_state=0).fit(Y_train)
for warning in caught:
    if issubclass(warning.category, ChainsDisagreeWarning):
        print("ChainsDisagreeWarning:", str(warning.message)[:160], "...")

print("chain starts:", model.chain_starts_, "weights:", model.chain_weights_.round(3))
summary = model.summary()
pd.set_option("display.width", 120)
print(summary.loc[["loglik", "k_plus", "effective_dims"], ["mean", "r_hat", "ess_bulk"]])
chain_rows = [name for name in summary.index if name.startswith("chain")]
print(summary.loc[chain_rows, ["start", "k_plus", "elpd_loo", "pareto_k_above_07", "weight"]])
print(f"held-out log density per entry, stacked: {model.score(Y_test):.3f}")
print("posterior of K+ (stacked):", {k: round(p, 3) for k, p in model.k_plus_posterior_.items()})
