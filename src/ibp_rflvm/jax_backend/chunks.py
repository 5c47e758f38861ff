"""Run an elementwise sampler over the entries a mask selects only, in chunks of fixed size.

A vectorised rejection loop costs every entry of its array each pass, so an array where few
entries need a sampler (the few large shapes or counts of a negative binomial) would pay for all
of them. :func:`over_selected` moves the selected entries to the front, those with the most work
first (a stable sort, so the order and therefore the draws are a function of the inputs), and
runs the sampler on chunks of ``max(4096, E / 16)`` entries, one chunk after another until the
selected ones are covered. A chunk's loop runs as many passes as its slowest entry needs, so
entries of like work share a chunk and the chunks of light entries finish early. Shapes stay
fixed; the number of chunks run is data-dependent, inside a while loop.
"""

from __future__ import annotations

from collections.abc import Callable

import jax.numpy as jnp
from jax import lax, random

from . import jax


def chunk_size(E: int) -> int:
    """Entries per chunk for an array of `E` entries (static)."""
    return min(E, max(4096, E // 16))


def over_selected(
    fn: Callable[..., jax.Array], key: jax.Array, mask: jax.Array, work: jax.Array, *args: jax.Array
) -> jax.Array:
    """``out[e] = fn(key_i, *[a[chunk] for a in args], live)[j]`` for selected entries, 0 elsewhere.

    `work`: a float per entry that orders the selected entries, largest first (the passes it
    needs, roughly: the number of ``PG(1)`` draws, of series terms, the count).
    Flat arrays of length ``E``. `fn` gets chunk ``i``'s key ``fold_in(key, i)``, its slices of
    `args` and a mask ``live`` of the slots holding selected entries; the other slots hold
    copies of ``args``' first entries or stand-ins and must be treated as inactive by `fn`.
    """
    E = mask.shape[0]
    if E == 0:
        return jnp.zeros(0)
    size = chunk_size(E)
    rounds = -(-E // size)
    count = jnp.sum(mask)
    order = jnp.argsort(jnp.where(mask, -work, jnp.inf), stable=True).astype(jnp.int32)
    # Padding slots point past the end, each to its own index: the writes below are then a scatter
    # of unique indices that drops them (a GPU may serialise a scatter whose indices can repeat).
    order = jnp.concatenate([order, E + 1 + jnp.arange(rounds * size - E, dtype=jnp.int32)])
    padded = [jnp.concatenate([a, a[:1]]) for a in args]

    def body(st):
        i, out = st
        idx = lax.dynamic_slice(order, (i * size,), (size,))
        live = i * size + jnp.arange(size) < count
        vals = fn(random.fold_in(key, i), *[a.at[idx].get(mode="clip") for a in padded], live)
        return i + 1, out.at[idx].set(jnp.where(live, vals, 0.0), mode="drop", unique_indices=True)

    _, out = lax.while_loop(lambda st: st[0] * size < count, body, (jnp.int32(0), jnp.zeros(E)))
    return out
