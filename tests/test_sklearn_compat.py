"""scikit-learn's estimator checks, with the exceptions that follow from MCMC listed and explained."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.utils.estimator_checks import parametrize_with_checks

from ibp_rflvm import IBPRFLVM, RFLVM

MONTE_CARLO_BATCH = (
    "transform/predict of new rows is a Monte Carlo estimate drawn jointly for the rows passed "
    "together (one generator, vectorised samplers), so a row's estimate depends on its batch; "
    "it agrees across batches within Monte Carlo error, not to 1e-7"
)
FINAL_SAMPLE_VS_RESAMPLED = (
    "fit_transform returns the training rows' latent positions in the final posterior sample "
    "(latent_), while transform re-samples the rows against that sample and averages: two "
    "different Monte Carlo estimates of the same positions"
)
PREDICT_IS_A_MATRIX = (
    "predict returns the N x J posterior-mean reconstruction of the rows (an imputation), not one "
    "value per row as the sparse checks assume; fitting and predicting on every sparse format "
    "themselves work (tests/test_sparse_input.py)"
)
EXPECTED = {
    "check_methods_sample_order_invariance": MONTE_CARLO_BATCH,
    "check_methods_subset_invariance": MONTE_CARLO_BATCH,
    "check_transformer_general": FINAL_SAMPLE_VS_RESAMPLED,
    "check_transformer_data_not_an_array": FINAL_SAMPLE_VS_RESAMPLED,
    "check_estimator_sparse_array": PREDICT_IS_A_MATRIX,
    "check_estimator_sparse_matrix": PREDICT_IS_A_MATRIX,
}


def _expected_failures(estimator):
    return EXPECTED


@parametrize_with_checks(
    [IBPRFLVM(n_iter=4, n_frequencies=5, random_state=0), RFLVM(n_iter=4, n_frequencies=5, random_state=0)],
    expected_failed_checks=_expected_failures,
)
def test_sklearn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)


# Every public method and property that needs a fit, with the arguments it takes.
_NEEDS_FIT = {
    "transform": (np.ones((3, 4)),), "predict": (), "score": (np.ones((3, 4)),),
    "log_predictive_density": (np.ones((3, 4)),), "pointwise_log_predictive": (np.ones((3, 4)),),
    "perplexity": (np.ones((3, 4)),), "summary": (), "to_inference_data": (),
    "effective_dimensions": (), "effective_dims_": None, "effective_draws_": None,
    "effective_dims_posterior_": None, "reconstruction_": None, "k_plus_posterior_": None,
    "embedding_": None, "embedding_dims_": None, "embedding": (2,), "embed": (np.ones((3, 4)),),
    "view": (), "view_new_rows": (np.ones((3, 4)),), "dimensions_": None, "dimension_usage_": None,
    "dimension_effects_": None, "top_columns": (), "embedding_std_": None,
    "dimension_positions_": None, "dimension_positions_std_": None, "profile": ("d1",), "describe": (["a"],),
}


@pytest.mark.parametrize("cls", [IBPRFLVM, RFLVM])
@pytest.mark.parametrize("name", sorted(_NEEDS_FIT))
def test_unfitted_model_says_so(cls, name):
    """Before fit, each raises NotFittedError (an AttributeError from an attribute fit sets was
    what some of them raised)."""
    args = _NEEDS_FIT[name]
    with pytest.raises(NotFittedError, match="not fitted"):
        attr = getattr(cls(), name)
        if args is not None:
            attr(*args)


def test_unfitted_list_is_complete():
    """A new public method or property must be added to the list above (or to the ones that do
    not need a fit), so the check above covers it."""
    no_fit = {"fit", "fit_transform", "get_params", "get_metadata_routing"}  # and every set_*
    public = {n for n in dir(IBPRFLVM) if not n.startswith("_") and not n.startswith("set_")}
    assert public - no_fit == set(_NEEDS_FIT)
