"""scikit-learn's estimator checks, with the exceptions that follow from MCMC listed and explained."""

import warnings

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
