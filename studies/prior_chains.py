"""Four chains from 2, 5, 9 and 12 dimensions on simulated Cambridge bars (500 x 36, 20% held
out), under the IBP or the gamma-Poisson prior on ``Z`` (issue 49; docs/record/priors.md).

``PYTHONPATH=src OPENBLAS_NUM_THREADS=1 python studies/prior_chains.py {ibp,gamma-poisson} SWEEPS``
prints R-hat of ``K+`` and of the training log-likelihood over the second half, each chain's
``K+``, the effective dimensions' posterior and the stacked held-out log density per entry.
"""

import sys
import time
import warnings

import arviz as az
import numpy as np

from ibp_rflvm import IBPRFLVM, holdout_mask
from ibp_rflvm.datasets import make_cambridge

warnings.simplefilter("ignore")
prior, n_iter = sys.argv[1], int(sys.argv[2])
Y = make_cambridge(500, random_state=0)["Y"]
Ytr, Yte = holdout_mask(Y, fraction=0.2, random_state=0)
t0 = time.time()
m = IBPRFLVM(n_iter=n_iter, init_dims=12, n_chains=4, n_jobs=1, random_state=0, z_prior=prior).fit(Ytr)
k = m.traces_["n_active"][:, n_iter // 2 :]
print(prior, "seconds", round(time.time() - t0))
print("R-hat K+", round(float(az.rhat(k.astype(float))), 3))
for c in range(k.shape[0]):
    vals, cnt = np.unique(k[c], return_counts=True)
    mode = vals[cnt.argmax()]
    print(f" chain {c}: K+ mean {k[c].mean():.2f}, mode {mode}, range {k[c].min()}-{k[c].max()}")
ll = m.traces_["loglik"][:, n_iter // 2 :]
print("R-hat loglik", round(float(az.rhat(ll)), 3))
effective = {int(a): round(float(b), 3) for a, b in m.effective_dims_posterior_.items()}
print("effective dims posterior", effective)
print("held-out LPD per entry", round(float(m.score(Yte)), 4), "weights", np.round(m.chain_weights_, 3))
