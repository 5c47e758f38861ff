"""Every Cholesky factor and triangular solve of the device step goes through this module.

Why one place: on a CPU, jaxlib 0.10.0 to 0.11.0 split a *batched* Cholesky or triangular
solve of at least 200,000 flops into chunks (``jax::ParallelBatchMap``), schedule them on XLA's
intra-op thread pool and block the calling worker until they finish. XLA runs the independent
operations of one program on that same pool, so two such calls at once (the mixture's and the
weights' factorisations are independent in the sweep) can leave every worker waiting for chunks
that nobody runs, and the process stops at 0% CPU for good. A single matrix never takes that
path. So on a CPU each matrix of a batch gets its own LAPACK call, in a loop over the batch
(the same bits as the batched call, at a cost within 10% of it: ``docs/record/jax_backend.md``);
on other platforms (cuSOLVER's batched kernels) the batched call stays. The choice is made when
the program is lowered for its platform (:func:`jax.lax.platform_dependent`), so nothing depends
on the jaxlib version.

:data:`PER_MATRIX_ON_CPU` exists for the regression test and its power check only: set to
False before a program is traced, the CPU gets the batched calls again.
"""

from __future__ import annotations

from collections.abc import Callable

from . import jax

jnp = jax.numpy
lax = jax.lax

#: One LAPACK call per matrix on a CPU (see the module's docstring). Read when a program is traced.
PER_MATRIX_ON_CPU = True


def _per_matrix(fn: Callable, *args: jax.Array) -> jax.Array:
    """`fn` applied to each matrix of the arrays' common leading batch, one at a time."""
    batch = args[0].shape[:-2]
    flat = [a.reshape((-1,) + a.shape[len(batch) :]) for a in args]
    out = lax.map(lambda xs: fn(*xs), flat)
    return out.reshape(batch + out.shape[1:])


def _dispatch(fn: Callable, *args: jax.Array) -> jax.Array:
    if args[0].ndim == 2 or not PER_MATRIX_ON_CPU:
        return fn(*args)
    batch = args[0].shape[:-2]
    for a in args[1:]:
        if a.shape[:-2] != batch:
            raise ValueError(f"linalg: batch shapes differ, {args[0].shape} and {a.shape}")
    return lax.platform_dependent(*args, cpu=lambda *xs: _per_matrix(fn, *xs), default=fn)


def cholesky(a: jax.Array) -> jax.Array:
    """The lower Cholesky factor of each matrix of ``a`` (``(..., n, n)``, symmetric positive
    definite)."""
    return _dispatch(jnp.linalg.cholesky, a)


def solve_triangular(a: jax.Array, b: jax.Array, *, lower: bool) -> jax.Array:
    """``x`` with ``a x = b`` for each matrix of the triangular ``a`` (``(..., n, n)``); ``b`` is
    ``(..., n, k)`` with the same batch, or ``(n,)`` beside one matrix."""
    if b.ndim == 1:
        return solve_triangular(a, b[:, None], lower=lower)[:, 0]

    def solve(a_, b_):
        return jax.scipy.linalg.solve_triangular(a_, b_, lower=lower)

    return _dispatch(solve, a, b)


def live_inverse(a: jax.Array, live: jax.Array) -> jax.Array:
    """Each matrix of ``a`` (``(..., Kw, Kw)``, symmetric positive definite on the slots `live`)
    inverted on its live rows and columns, the identity on the others: the padded state's
    matrices read on the live slots only, whatever the dead ones hold."""
    eye = jnp.eye(a.shape[-1])
    pair = live[:, None] & live[None, :]
    L = cholesky(jnp.where(pair, a, eye))
    L_inv = solve_triangular(L, jnp.broadcast_to(eye, L.shape), lower=True)
    return jnp.swapaxes(L_inv, -1, -2) @ L_inv


__all__ = ["PER_MATRIX_ON_CPU", "cholesky", "live_inverse", "solve_triangular"]
