"""The device sweep for a user's own loop: :func:`sweep_kernel` (BlackJAX's shape).

It reads an estimator's parameters, so it sits with the estimators, a floor above the device
package; ``ibp_rflvm.jax_backend.sweep_kernel`` reaches it by name.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from ..jax_backend.kernel import DeviceSweepTarget, to_device
from ..jax_backend.sweep import DeviceState, SweepConfig, sweep_step
from ..model import build_sweep
from ..plumbing.sparse import data_matrix
from ..state import Data
from . import IBPRFLVM


def sweep_kernel(Y, **estimator_params: Any):
    """The sweep of ``IBPRFLVM(**estimator_params, backend="jax")`` on `Y` as a pure JAX kernel.

    Parameters
    ----------
    Y : array-like of shape (n_samples, n_features)
        Counts, NaN where unobserved (the likelihood's checks apply).
    **estimator_params
        Any parameters of :class:`ibp_rflvm.IBPRFLVM` (``likelihood``, ``n_frequencies``,
        ``init_dims``, ``max_dims``, ``random_state`` for the start, ...).

    Returns
    -------
    state : DeviceState
        The chain's start on the default device (a pytree of arrays).
    step : callable
        ``step(key, state) -> (state, info)``: one sweep, a pure function of JAX arrays with the
        data bound as an argument (not a constant), so ``jax.jit(step)`` compiles once and
        ``jax.lax.scan`` over a sequence of keys runs many sweeps in one call.

    Examples
    --------
    >>> import jax
    >>> state, step = sweep_kernel(Y, likelihood="negbinom", max_dims=20)  # doctest: +SKIP
    >>> step = jax.jit(step)                                              # doctest: +SKIP
    >>> for key in jax.random.split(jax.random.key(0), 100):             # doctest: +SKIP
    ...     state, info = step(key, state)
    """
    est = IBPRFLVM(**{**estimator_params, "backend": "jax"})
    spec = est._spec()
    Yv = data_matrix(Y, None)
    spec.likelihood.validate(Yv)
    data = Data.from_array(Yv, spec.likelihood)
    target = DeviceSweepTarget(spec.likelihood, data, spec)
    rng = est._chain_generators()[0]
    state = to_device(build_sweep(spec, target).init(rng), target.cfg, target.dlik)
    # The HMC move's step adapts over the estimator's burn-in, as in a fit.
    step = partial(_user_step, data=target.data, cfg=target.cfg, adapt_sweeps=spec.hmc_adapt_sweeps)
    return state, step


def _user_step(key, state: DeviceState, data, cfg: SweepConfig, adapt_sweeps: int):
    return sweep_step(key, state, data, cfg, adapt_sweeps)



__all__ = ["sweep_kernel"]
