"""The feature map on the device, and the compiled programs of a chain's start: the likelihood's
first update given the features, and the rows' log-likelihoods.

The programs take the data as an argument (never as a closed-over constant, which XLA would
copy into the program) and the device likelihood, the bias flag and the number of frequencies
as static arguments. The sweep itself is :mod:`.sweep`.
"""

from __future__ import annotations

import math
from functools import partial

from . import jax
from .likelihoods import DeviceData

jnp = jax.numpy
lax = jax.lax

_STATIC = ("dlik", "bias", "M")


def features(H: jax.Array, W: jax.Array, bias: bool, M: int) -> jax.Array:
    """``[cos(H W^T), sin(H W^T)] / sqrt(M)`` and, with `bias`, a constant column last (the
    layout of :func:`ibp_rflvm.features.feature_map`)."""
    return features_of(H @ W.T, bias, M)


def features_of(proj: jax.Array, bias: bool, M: int) -> jax.Array:
    """The features of the projections ``proj = H W^T``."""
    scale = 1.0 / math.sqrt(M)
    parts = [jnp.cos(proj) * scale, jnp.sin(proj) * scale]
    if bias:
        parts.append(jnp.ones((proj.shape[0], 1)))
    return jnp.concatenate(parts, axis=1)


@partial(jax.jit, static_argnames=_STATIC)
def total_loglik(Phi, dparams, data: DeviceData, dlik, bias, M):
    """The row constants and the rows' log-likelihoods at ``psi = Phi beta``."""
    const = dlik.row_constants(dparams, data)
    psi = Phi @ dparams.beta
    ll = dlik.row_loglik(psi, jnp.arange(Phi.shape[0]), const, dparams, data)
    return const, ll, psi


@partial(jax.jit, static_argnames=_STATIC)
def start_params(key, Phi, dparams, data: DeviceData, dlik, bias, M):
    """The chain's first variables of the likelihood given ``Phi`` (the likelihood's ``start``)."""
    return dlik.start(key, Phi, dparams, data)
