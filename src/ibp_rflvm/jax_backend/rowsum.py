"""Sums over rows that give the same bits on one device or several.

A sum over rows split between devices is, left to XLA, a partial sum on each device and then a
sum of the partials: its rounding depends on the number of devices, and so would the chain.
Here the rows are cut into a fixed number of contiguous *groups* (:func:`row_groups`: a divisor
of 8 that divides ``N``), chosen from ``N`` alone, and every sum over rows is

1. within each group, a fixed computation (one reduction, or a scan over blocks of
   :data:`BLOCK_ROWS` rows); blocked sums visit the groups one after another (``lax.map``), so
   that one block's per-entry work (Polya-gamma draws) is all a device holds at once;
2. the groups' partials made whole on every device (``replicated``: a sharding that copies the
   small partials to every device, or None on one device), then added in group order.

With the rows sharded over ``d`` devices, ``d`` dividing the number of groups, each device holds
whole groups, so step 1 needs no communication and its numbers are those one device computes;
step 2 is the same arithmetic everywhere. Sums inside a row (over its entries) never cross
devices and need none of this.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import reduce
from operator import add
from typing import Any

from . import jax

jnp = jax.numpy
lax = jax.lax

#: Rows per block of a blocked sum (bounds the memory of a block's per-entry work).
BLOCK_ROWS = 4096
#: The most row groups: the device counts that give one chain are the divisors of this.
MAX_GROUPS = 8


def row_groups(n_rows: int) -> int:
    """The number of row groups for `n_rows` rows: ``gcd(n_rows, 8)``."""
    return math.gcd(int(n_rows), MAX_GROUPS)


def _by_group(tree, replicated):
    """Pin the group axis (the first) to the rows' devices, so that each device computes whole
    groups with the shapes one device would (left to itself, XLA may split another axis)."""
    if replicated is None:
        return tree
    spec = jax.sharding.PartitionSpec("rows")
    return lax.with_sharding_constraint(tree, jax.sharding.NamedSharding(replicated.mesh, spec))


def _on_groups(fn: Callable, ins: list, replicated):
    """``fn(*ins)`` with each device running it on its own groups as a program of its own
    (``shard_map``): left to XLA's partitioner, the sorts and scatters inside a sampler may be
    split so that their rounding depends on the device count."""
    if replicated is None:
        return fn(*ins)
    spec = jax.sharding.PartitionSpec("rows")
    return jax.shard_map(fn, mesh=replicated.mesh, in_specs=(spec,) * len(ins), out_specs=spec,
                         check_vma=False)(*ins)


def _whole(partials, replicated):
    if replicated is not None:
        partials = lax.with_sharding_constraint(partials, replicated)
    return jax.tree.map(lambda p: reduce(add, [p[g] for g in range(p.shape[0])]), partials)


def grouped(a: jax.Array, groups: int) -> jax.Array:
    """`a`'s rows (first axis) as ``(groups, N / groups, ...)``."""
    return a.reshape((groups, a.shape[0] // groups) + a.shape[1:])


def pairwise_sum(a: jax.Array) -> jax.Array:
    """The sum over `a`'s second axis as a fixed binary tree of elementwise additions (the axis
    padded with zeros to a power of two). XLA's own reduction may order a sum by where the
    data lie in memory, which differs between the programs of different device counts: the
    total log-likelihood of 65-row groups differed in its last bit between 1 and 4 devices."""
    n = a.shape[1]
    size = 1 << max(0, (n - 1).bit_length())
    a = jnp.pad(a, ((0, 0), (0, size - n)) + ((0, 0),) * (a.ndim - 2))
    while a.shape[1] > 1:
        half = a.shape[1] // 2
        a = a[:, :half] + a[:, half:]
    return a[:, 0]


def row_sum(v: jax.Array, groups: int, replicated: Any = None) -> jax.Array:
    """``sum_i v[i]`` (and over any further axes' rows: ``v`` of shape ``(N, ...)`` gives ``(...)``)."""
    parts = pairwise_sum(_by_group(grouped(v, groups), replicated))
    return _whole(_by_group(parts, replicated), replicated)


def rows_dot(A: jax.Array, B: jax.Array, groups: int, replicated: Any = None) -> jax.Array:
    """``A^T B`` for ``A`` ``(N, p)``, ``B`` ``(N, q)`` (a sum over rows)."""
    A, B = _by_group((grouped(A, groups), grouped(B, groups)), replicated)
    return _whole(_by_group(jnp.einsum("gnp,gnq->gpq", A, B), replicated), replicated)


def row_matmul(A: jax.Array, B: jax.Array, groups: int, replicated: Any = None) -> jax.Array:
    """``A @ B`` for rows ``A`` ``(N, k)`` and a small replicated ``B`` (``(k,)`` or ``(k, m)``):
    a product within each row, computed one row group at a time (a loop over the groups each
    device holds), so that every device count runs the very same ``(N / groups, k)`` product.

    Left to XLA, ``A @ B`` on the rows a device holds is one product of ``N / d`` rows, and the
    CPU's matrix kernels block rows differently for different row counts (the remainder rows
    accumulate in another order): the chain on 2 devices departed from the one on 1 by an ulp.
    """

    def per_device(a, b):
        return lax.map(lambda blk: blk @ b, a)

    parts = grouped(A, groups)
    if replicated is None:
        out = per_device(parts, B)
    else:
        rows = jax.sharding.PartitionSpec("rows")
        out = jax.shard_map(per_device, mesh=replicated.mesh, in_specs=(rows, jax.sharding.PartitionSpec()),
                            out_specs=rows, check_vma=False)(parts, B)  # fmt: skip
    return out.reshape((A.shape[0],) + out.shape[2:])


def blocked_row_sum(
    fn: Callable, start, arrays: list[jax.Array], groups: int, replicated: Any = None, fill=0.0
):
    """``start + sum over blocks b of fn(b, *block_arrays)``: the rows of each array cut into
    groups, each group into blocks of at most :data:`BLOCK_ROWS` rows (the last padded with
    `fill` for floating arrays, 0 otherwise), numbered ``b`` across the groups so that a block's
    random numbers (``fold_in(key, b)``) do not depend on the devices. `fn` returns a pytree
    shaped like `start`."""
    n_group = arrays[0].shape[0] // groups
    rows = min(BLOCK_ROWS, n_group)
    n_blocks = -(-n_group // rows)
    pad = n_blocks * rows - n_group

    def cut(a):
        value = fill if jnp.issubdtype(a.dtype, jnp.floating) else 0
        a = jnp.pad(a, ((0, pad),) + ((0, 0),) * (a.ndim - 1), constant_values=value)
        return a.reshape((n_blocks, rows) + a.shape[1:])

    def one_group(g, *arrs):
        def body(acc, blk):
            part = fn(g * n_blocks + blk[0], *blk[1:])
            return jax.tree.map(add, acc, part), None

        zero = jax.tree.map(jnp.zeros_like, start)
        acc, _ = lax.scan(body, zero, (jnp.arange(n_blocks), *[cut(a) for a in arrs]))
        return acc

    ins = [jnp.arange(groups)] + [grouped(a, groups) for a in arrays]
    def groups_in_turn(ids, *arrs):
        return lax.map(lambda a: one_group(*a), (ids, *arrs))

    return jax.tree.map(add, start, _whole(_on_groups(groups_in_turn, ins, replicated), replicated))


__all__ = [
    "BLOCK_ROWS", "MAX_GROUPS", "blocked_row_sum", "grouped", "row_groups", "row_matmul", "row_sum",
    "rows_dot",
]  # fmt: skip
