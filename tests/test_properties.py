"""Property-based tests: inputs nobody has tried, for every likelihood and public entry point.

Every case must end in a valid fit whose outputs (``latent_``, ``transform``, ``score``, the
LPD, perplexity) are finite, or in a ValueError/TypeError whose message names the problem.
Any other exception, and any RuntimeWarning (overflow, invalid value), fails.

Each test is parametrised over the likelihood and the kind of defect injected, so every pair
is tried on every run; hypothesis varies the rest (shape, NaN pattern, values, dtype or pandas
container). The default profile keeps the file fast and deterministic; for a longer local run:

    HYPOTHESIS_PROFILE=long python -m pytest tests/test_properties.py
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ibp_rflvm import IBPRFLVM, RFLVM, UnscaledDataWarning, holdout_mask
from ibp_rflvm.plumbing.io import MISSING, read_matrix

settings.register_profile(
    "props-ci",
    max_examples=2,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
settings.register_profile(
    "long",
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
# Applied per test (not loaded globally) so that other test modules keep their own settings.
PROFILE = settings.get_profile(
    "long" if os.environ.get("HYPOTHESIS_PROFILE") == "long" else "props-ci"
)

N_TRIALS = 3
LIKELIHOODS = {
    "gaussian": {},
    "negbinom": {},
    "poisson": {},
    "bernoulli": {},
    "binomial": {"n_trials": N_TRIALS},
    "multinomial": {},
}

#: Injected defects. Those in BAD must be refused with a message holding one of the keywords
#: listed for the likelihood (or "*" for any likelihood); the others must fit.
DEFECTS = [
    "none", "one_col", "wide", "single_obs_row", "single_obs_col", "const_col", "zero_row",
    "zero_col", "unscaled", "one_row", "nan_row", "nan_col", "inf", "huge", "tiny", "negative",
    "fraction", "text",
]  # fmt: skip
COUNTS = ("negbinom", "poisson", "binomial", "multinomial")
BAD: dict[str, dict[str, tuple[str, ...]]] = {
    "one_row": {"*": ("at least 2 rows",)},
    "nan_row": {"*": ("no observed entry",)},
    "nan_col": {"*": ("no observed entry",)},
    "inf": {"*": ("infinite",)},
    "huge": {"gaussian": ("overflow",), "bernoulli": ("0 and 1",), **{k: ("2^53",) for k in COUNTS}},
    "tiny": {"bernoulli": ("0 and 1",), **{k: ("non-integer",) for k in COUNTS}},
    "negative": {"bernoulli": ("0 and 1",), **{k: ("negative",) for k in COUNTS}},
    "fraction": {"bernoulli": ("0 and 1",), **{k: ("non-integer",) for k in COUNTS}},
    "text": {"*": ("numeric",)},
    "one_col": {"multinomial": ("categories",)},
}


def expected_keywords(lik: str, defect: str) -> tuple[str, ...] | None:
    """Keywords one of which the error must contain, or None when the input must fit."""
    rule = BAD.get(defect, {})
    return rule.get(lik, rule.get("*"))


def _base_values(draw, lik: str, shape: tuple[int, int]) -> np.ndarray:
    """Valid data for `lik`: standard normals, binary, counts up to N_TRIALS, or small counts."""
    n = shape[0] * shape[1]
    if lik == "gaussian":
        vals = draw(st.lists(st.floats(-3.0, 3.0, width=32), min_size=n, max_size=n))
    elif lik == "bernoulli":
        vals = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    else:
        top = N_TRIALS if lik == "binomial" else 20
        vals = draw(st.lists(st.integers(0, top), min_size=n, max_size=n))
    return np.asarray(vals, dtype=np.float64).reshape(shape)


@st.composite
def data_cases(draw, lik: str, defect: str):
    """``(Y, Y_float)``: `Y` in some container/dtype, `Y_float` the same as a float array."""
    if defect == "one_row":
        shape = (1, draw(st.integers(2, 5)))
    elif defect == "one_col":
        shape = (draw(st.integers(2, 6)), 1)
    elif defect == "wide":
        n = draw(st.integers(2, 3))
        shape = (n, draw(st.integers(n + 1, 7)))
    else:
        shape = (draw(st.integers(2, 6)), draw(st.integers(2, 5)))
    Y = _base_values(draw, lik, shape)
    n, j = shape
    # A random NaN pattern that leaves every row and column an observed entry (emptying one
    # is a defect of its own).
    if draw(st.booleans()):
        drop = np.asarray(draw(st.lists(st.booleans(), min_size=n * j, max_size=n * j))).reshape(shape)
        keep_r = np.arange(n) % j
        drop[np.arange(n), keep_r] = False
        drop[np.arange(j) % n, np.arange(j)] = False
        Y[drop] = np.nan
    r, c = draw(st.integers(0, n - 1)), draw(st.integers(0, j - 1))
    if defect == "single_obs_row" and j > 1:
        Y[r] = np.nan
        Y[r, c] = _base_values(draw, lik, (1, 1))[0, 0]
        for cc in range(j):  # keep the other columns observed elsewhere
            if cc != c and np.isnan(Y[:, cc]).all():
                Y[(r + 1) % n, cc] = 1.0 if lik != "gaussian" else 0.5
    elif defect == "single_obs_col" and n > 1:
        Y[:, c] = np.nan
        Y[r, c] = _base_values(draw, lik, (1, 1))[0, 0]
        for rr in range(n):
            if rr != r and np.isnan(Y[rr]).all():
                Y[rr, (c + 1) % j] = 1.0 if lik != "gaussian" else 0.5
    elif defect == "const_col":
        Y[:, c] = _base_values(draw, lik, (1, 1))[0, 0]
    elif defect == "zero_row":
        Y[r] = 0.0
    elif defect == "zero_col":
        Y[:, c] = 0.0
    elif defect == "unscaled" and lik == "gaussian" and j > 1:
        Y[:, 0] *= 1e6
        Y[:, 1] *= 1e-3
    elif defect == "nan_row":
        Y[r] = np.nan
    elif defect == "nan_col":
        Y[:, c] = np.nan
    elif defect in ("inf", "huge", "tiny", "negative", "fraction"):
        value = {
            "inf": draw(st.sampled_from([np.inf, -np.inf])),
            "huge": draw(st.sampled_from([1e300, -1e300] if lik == "gaussian" else [1e300, 1e17])),
            "tiny": 1e-300,
            "negative": -1.0,
            "fraction": 0.5 if lik == "bernoulli" else 2.5,
        }[defect]
        Y[r, c] = value
    return _container(draw, Y, text=defect == "text"), Y


def _container(draw, Y: np.ndarray, text: bool):
    """`Y` as one of the types a user might pass."""
    nan = np.isnan(Y)
    integral = np.all(np.isfinite(Y)) and np.all(Y == np.round(Y)) and np.all(np.abs(Y) < 2**62)
    binary = not nan.any() and np.isin(Y, (0.0, 1.0)).all()
    kinds = ["float", "object", "str", "list", "frame_na"]
    kinds += ["int", "frame_int"] if integral else []
    kinds += ["bool"] if binary else []
    kinds += ["frame_bool"] if np.isin(Y[~nan], (0.0, 1.0)).all() else []
    kind = "str" if text else draw(st.sampled_from(kinds))
    if kind == "float":
        return Y
    if kind == "int":
        return Y.astype(np.int64)
    if kind == "bool":
        return Y.astype(bool)
    if kind == "frame_bool":  # pandas' nullable boolean, NA where unobserved
        frame = pd.DataFrame(np.where(nan, 0.0, Y).astype(bool)).astype("boolean")
        return frame.mask(pd.DataFrame(nan), pd.NA)
    if kind == "frame_int":
        return pd.DataFrame(Y.astype(np.int64)).astype("Int64")
    if kind == "list":
        return [[None if np.isnan(v) else float(v) for v in row] for row in Y]
    if kind == "object":
        out = Y.astype(object)
        out[nan] = draw(st.sampled_from([None, np.nan, pd.NA]))
        return out
    if kind == "frame_na":
        frame = pd.DataFrame(Y).astype("Float64")
        return frame.mask(pd.DataFrame(nan), pd.NA)
    out = np.array([[repr(float(v)) for v in row] for row in Y], dtype=object)
    out[nan] = "nan"
    if text:
        out[0, 0] = draw(st.sampled_from(["abc", "", "1,5", "two"]))
        if draw(st.booleans()):
            return pd.DataFrame(out)  # a text column in a frame
    return out.astype(str)


def _estimator(draw_ibp: bool, lik: str):
    common = dict(
        likelihood=lik, likelihood_params=LIKELIHOODS[lik], n_iter=2, n_frequencies=2, random_state=0
    )
    return IBPRFLVM(init_dims=2, **common) if draw_ibp else RFLVM(n_components=2, **common)


def _check_error(exc: Exception, keywords: tuple[str, ...] | None, what: str) -> None:
    assert keywords is not None, f"valid input ({what}) was refused: {type(exc).__name__}: {exc}"
    assert any(k in str(exc) for k in keywords), f"message does not name the problem {keywords}: {exc}"


def _finite(name: str, value) -> None:
    assert np.all(np.isfinite(np.asarray(value, dtype=np.float64))), f"{name} is not finite: {value}"


def _check_outputs(model, Y, Y_float: np.ndarray, lik: str) -> None:
    n, j = Y_float.shape
    _finite("latent_", model.latent_)
    _finite("reconstruction_", model.reconstruction_)
    _finite("log_likelihood_", model.log_likelihood_)
    latent = model.transform(Y, n_sweeps=2, burn_in=1)
    assert latent.shape[0] == n
    _finite("transform", latent)
    _finite("score", model.score(Y))
    _finite("predict", model.predict())
    if np.count_nonzero(~np.isnan(Y_float)) >= 2:
        _, Y_test = holdout_mask(Y_float, 0.5, random_state=0)
        if not np.isnan(Y_test).all():
            _finite("log_predictive_density", model.log_predictive_density(Y_test))
    if lik == "gaussian":
        with pytest.raises(ValueError, match="count"):
            model.perplexity(Y_float)
    elif np.nansum(Y_float) > 0:
        _finite("perplexity", model.perplexity(Y_float))


@pytest.mark.parametrize("defect", DEFECTS)
@pytest.mark.parametrize("lik", list(LIKELIHOODS))
@PROFILE
@given(data=st.data())
def test_fit_and_outputs_or_clear_error(lik, defect, data):
    Y, Y_float = data.draw(data_cases(lik, defect), label="Y")
    keywords = expected_keywords(lik, defect)
    model = _estimator(data.draw(st.booleans(), label="ibp"), lik)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # overflow / invalid value: a bug
        warnings.simplefilter("ignore", UnscaledDataWarning)  # tested on its own below
        try:
            model.fit(Y)
        except (ValueError, TypeError) as exc:
            _check_error(exc, keywords, defect)
            return
        assert keywords is None, f"{defect} was accepted by {lik}; expected an error naming {keywords}"
        _check_outputs(model, Y, Y_float, lik)


BAD_HELDOUT = {"inf": np.inf, "huge": 1e300, "negative": -1.0, "fraction": 0.5, "text": "abc", "none": None}


@pytest.mark.parametrize("defect", list(BAD_HELDOUT))
@pytest.mark.parametrize("lik", ["gaussian", "poisson", "bernoulli"])
@PROFILE
@given(data=st.data())
def test_scoring_bad_heldout_data_is_a_clear_error(lik, defect, data):
    """score / LPD on held-out data the training data would have refused."""
    _, Y_float = data.draw(data_cases(lik, "none"), label="Y")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnscaledDataWarning)  # random floats can be tiny
        model = _estimator(False, lik).fit(Y_float)
    Y_bad = Y_float.astype(object)
    if BAD_HELDOUT[defect] is not None:
        Y_bad[0, 0] = BAD_HELDOUT[defect]
    keywords = expected_keywords(lik, defect)
    if lik == "gaussian" and defect in ("negative", "fraction"):
        keywords = None
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for method in (model.score, model.log_predictive_density):
            try:
                value = method(Y_bad)
            except (ValueError, TypeError) as exc:
                _check_error(exc, keywords, defect)
            else:
                assert keywords is None, f"{method.__name__} accepted {defect}"
                _finite(method.__name__, value)


@pytest.mark.parametrize("defect", ["none", "single_obs_row", "one_row", "one_col", "nan_row", "inf", "text"])
@PROFILE
@given(data=st.data(), fraction=st.floats(0.05, 0.95))
def test_holdout_mask_partitions_the_observed_entries(defect, data, fraction):
    Y, Y_float = data.draw(data_cases("gaussian", defect), label="Y")
    try:
        train, test = holdout_mask(Y, fraction, random_state=0)
    except (ValueError, TypeError) as exc:
        assert defect in ("inf", "text"), f"holdout_mask refused {defect}: {exc}"
        assert any(k in str(exc) for k in ("infinite", "numeric")), str(exc)
        return
    # A DataFrame gives DataFrames with its index and columns (so a fit keeps the names).
    if isinstance(Y, pd.DataFrame):
        assert all(isinstance(t, pd.DataFrame) and t.columns.equals(Y.columns) for t in (train, test))
    train, test = np.asarray(train, dtype=np.float64), np.asarray(test, dtype=np.float64)
    observed = ~np.isnan(Y_float)
    in_train, in_test = ~np.isnan(train), ~np.isnan(test)
    assert train.shape == test.shape == Y_float.shape
    assert not (in_train & in_test).any()
    np.testing.assert_array_equal(in_train | in_test, observed)
    np.testing.assert_array_equal(np.where(in_train, train, test)[observed], Y_float[observed])
    # Every row and column observed in the data keeps a training entry.
    assert (in_train.any(axis=1) | ~observed.any(axis=1)).all()
    assert (in_train.any(axis=0) | ~observed.any(axis=0)).all()


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, float("nan")])
def test_holdout_mask_fraction_out_of_range(bad):
    with pytest.raises(ValueError, match="fraction"):
        holdout_mask(np.ones((3, 3)), bad)


# --- the CLI reader ----------------------------------------------------------------------------

_TOKENS = sorted(MISSING - {""})


@PROFILE
@given(
    values=st.lists(
        st.lists(st.none() | st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=4),
        min_size=1,
        max_size=5,
    ).filter(lambda rows: len({len(r) for r in rows}) == 1),
    sep=st.sampled_from([",", "\t", ";", " "]),
    header=st.booleans(),
    token=st.sampled_from(_TOKENS + [""]),
)
def test_read_matrix_round_trip(tmp_path_factory, values, sep, header, token):
    if sep == " " and token == "":
        token = "NA"  # an empty cell cannot be written with whitespace as the separator
    Y = np.array([[np.nan if v is None else v for v in row] for row in values], dtype=np.float64)
    path = tmp_path_factory.mktemp("csv") / "data.csv"
    names = [f"col{j}" for j in range(Y.shape[1])]
    lines = [sep.join(names)] if header else []
    lines += [sep.join(token if np.isnan(v) else repr(float(v)) for v in row) for row in Y]
    path.write_text("\n".join(lines) + "\n")
    if token == "" and Y.shape[1] == 1:
        # A line of one empty cell is a blank line: dropped, by design.
        Y = Y[~np.isnan(Y[:, 0])]
        assume(Y.shape[0] > 0)
    out, got_header = read_matrix(path)
    assert got_header == (names if header else None)
    np.testing.assert_array_equal(out, Y)


@pytest.mark.parametrize(
    "text, keyword",
    [
        ("a,b\n1,2\n3,x\n", "line 3"),
        ("1,2\n3\n", "cells where"),
        ("", "empty"),
        ("1;2\n3;abc\n", "not a number"),
    ],
)
def test_read_matrix_bad_files_name_the_line(tmp_path, text, keyword):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=keyword):
        read_matrix(path)


# --- Gaussian data that was not standardised ---------------------------------------------------


def _unscaled(rng: np.random.Generator) -> np.ndarray:
    Y = rng.standard_normal((12, 3))
    Y[:, 0] *= 2e6  # a column in the millions
    Y[:, 1] *= 2e-3  # beside one in the thousandths
    return Y


@pytest.mark.parametrize("cls", [IBPRFLVM, RFLVM])
def test_unscaled_gaussian_data_warns_with_the_remedy(cls):
    Y = _unscaled(np.random.default_rng(1))
    model = cls(n_iter=2, n_frequencies=2, random_state=0)
    with pytest.warns(UnscaledDataWarning, match="StandardScaler") as record:
        model.fit(Y)
    message = str(record[0].message)
    assert "column 0" in message and "column 1" in message
    _finite("latent_", model.latent_)


def test_standardised_gaussian_data_does_not_warn():
    Y = _unscaled(np.random.default_rng(1))
    Y = (Y - Y.mean(axis=0)) / Y.std(axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnscaledDataWarning)
        IBPRFLVM(n_iter=2, n_frequencies=2, random_state=0).fit(Y)


def test_count_likelihoods_never_warn_about_scale():
    Y = np.random.default_rng(2).poisson(3e4, size=(8, 3)).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnscaledDataWarning)
        IBPRFLVM(likelihood="poisson", n_iter=2, n_frequencies=2, random_state=0).fit(Y)


@pytest.mark.parametrize("lik", list(LIKELIHOODS))
def test_transform_of_sparse_new_rows(lik):
    """New rows with a single observed entry are placed; a row with none is a clear error."""
    rng = np.random.default_rng(3)
    Y = rng.integers(0, 2, size=(6, 3)).astype(float)
    model = _estimator(True, lik).fit(Y)
    one = np.array([[np.nan, 1.0, np.nan]])
    _finite("transform", model.transform(one, n_sweeps=2, burn_in=1))
    with pytest.raises(ValueError, match="no observed entry"):
        model.transform(np.array([[np.nan] * 3, [1.0, 0.0, 1.0]]), n_sweeps=2, burn_in=1)
    with pytest.raises(ValueError, match="features"):
        model.transform(np.ones((2, 4)), n_sweeps=2, burn_in=1)
