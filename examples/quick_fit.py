"""A first fit: real-valued data, scaled, part held out, scored against the dense RFLVM and PCA.

Breast cancer (569 x 30, shipped with scikit-learn). The columns are standardised first: the
Gaussian likelihood has unit-scale priors and expects centred columns of scale about 1. 40
sweeps keep this example to a few seconds; a real fit runs a few hundred (see the guide's
"How long to run").

Run: ``python examples/quick_fit.py``
"""

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.decomposition import PCA
from sklearn.preprocessing import StandardScaler

from ibp_rflvm import IBPRFLVM, RFLVM, holdout_mask

Y = StandardScaler().fit_transform(load_breast_cancer().data)
Y_train, Y_test = holdout_mask(Y, fraction=0.2, random_state=0)  # NaN marks the held-out entries

model = IBPRFLVM(n_iter=40, random_state=0).fit(Y_train)
print(f"active dimensions K+ over the last 5 sweeps: {model.n_active_[-5:]}")
print(f"effective dimensions (median over kept samples): {np.median(model.effective_dims_):.0f}")
print(f"posterior embedding: {model.embedding_.shape[1]} components")
print(f"held-out log density per entry, IBP-RFLVM: {model.score(Y_test):.3f}")

dense = RFLVM(n_components=2, n_iter=40, random_state=0).fit(Y_train)
print(f"held-out log density per entry, RFLVM (D = 2): {dense.score(Y_test):.3f}")

# PCA cannot score held-out entries; compare the 2-D maps instead, by how well each separates
# the two diagnoses (a nearest-neighbour accuracy on the labels the fit never saw).
from sklearn.model_selection import cross_val_score  # noqa: E402
from sklearn.neighbors import KNeighborsClassifier  # noqa: E402

labels = load_breast_cancer().target
pca_2 = PCA(2).fit_transform(np.nan_to_num(Y_train))
for name, coords in (("IBP-RFLVM view", model.view()), ("PCA, 2 components", pca_2)):
    accuracy = cross_val_score(KNeighborsClassifier(5), coords, labels, cv=5).mean()
    print(f"5-NN accuracy of the diagnosis, {name}: {accuracy:.3f}")
