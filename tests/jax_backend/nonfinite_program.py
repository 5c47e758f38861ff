"""What the device's loops do with a NaN or infinite input: run by ``test_device_nonfinite.py``
in a subprocess under a timeout (a loop that spins would otherwise hang the suite). Prints one
JSON object of the results."""

import json
from dataclasses import replace

import numpy as np

import ibp_rflvm.jax_backend.kernel  # noqa: F401  (registers the device target)
from ibp_rflvm import IBPRFLVM, model
from ibp_rflvm.jax_backend import jax, pg_series
from ibp_rflvm.jax_backend.crt import crt_column_totals
from ibp_rflvm.jax_backend.ess import elliptical_slice, elliptical_slice_rows
from ibp_rflvm.jax_backend.polya_gamma import _exact_sum, draw_pg
from ibp_rflvm.state import Data
from ibp_rflvm.targets import make_target

jnp = jax.numpy
key = jax.random.key(0)
out = {}


def rows_ll(x):
    # A Gaussian log-likelihood per unit, NaN for unit 3 (its state cannot be scored).
    ll = -0.5 * jnp.sum((x - 1.0) ** 2, axis=1)
    return ll.at[3].set(jnp.nan)


x0 = jnp.zeros((200, 2))
x, ll, _, _ = elliptical_slice(key, x0, lambda p: (rows_ll(p), ()), rows_ll(x0))
out["ess"] = {"ll_nan": np.flatnonzero(np.isnan(np.asarray(ll))).tolist(),
              "moved": int(np.sum(np.any(np.asarray(x) != 0.0, axis=1)))}  # fmt: skip
x, ll, _, _ = elliptical_slice_rows(
    key, x0, lambda p, rows: (rows_ll(x0.at[rows].set(p))[rows], ()), rows_ll(x0)
)
out["ess_rows"] = {"ll_nan": np.flatnonzero(np.isnan(np.asarray(ll))).tolist(),
                   "moved": int(np.sum(np.any(np.asarray(x) != 0.0, axis=1)))}  # fmt: skip
b = jnp.array([20.0, 20.0, jnp.nan])
c = jnp.array([jnp.nan, 1.0, 1.0])
out["series"] = np.asarray(pg_series.series_draw(key, b, c, jnp.array([5.0, 5.0, 5.0]))).tolist()
out["exact"] = np.asarray(
    _exact_sum(
        key, jnp.array([2.0, 3.0]), jnp.array([0.5, 0.0]), jnp.array([jnp.nan, 1.0]), jnp.array([True, False])
    )
).tolist()
out["pg"] = np.asarray(draw_pg(key, jnp.array([3.0, 20.0, 5.0]), jnp.array([jnp.nan, 1.0, jnp.inf]))).tolist()
y = jnp.array([[50.0, 3.0, 7.0], [100.0, 0.0, 2.0]])
out["crt"] = np.asarray(
    crt_column_totals(key, y, jnp.ones((2, 3), bool), jnp.array([jnp.nan, 1.0, jnp.inf]))
).tolist()

# The driver: a NaN latent position (row 7), then a NaN dispersion (column 4).
Y = np.random.default_rng(0).poisson(2.0, size=(40, 6)).astype(float)
spec = IBPRFLVM(
    likelihood="negbinom", backend="jax", n_frequencies=5, max_dims=6, init_dims=3, random_state=0
)._spec()
kernel = model.build_sweep(spec, make_target(spec, Data.from_array(Y, spec.likelihood)))
rng = np.random.default_rng(1)
state, info = kernel.step(rng, kernel.init(rng))
out["counts"] = {
    k: getattr(info, k) for k in ("flips_proposed", "singletons_proposed", "singletons", "flips")
}
X = state.X.copy()
X[7, 0] = np.nan
r = state.params.r.copy()
r[4] = np.nan
for name, bad in (
    ("x_row", replace(state, X=X)),
    ("r_column", replace(state, params=replace(state.params, r=r))),
):
    try:
        kernel.step(rng, bad)
        out[name] = "no error"
    except FloatingPointError as err:
        out[name] = str(err)
print(json.dumps(out))
