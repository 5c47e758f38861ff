"""What the compiled moves ask of the prior on ``Z``: generic functions of the prior's ``hyper``.

A move that changes ``Z`` asks the prior (:class:`ibp_rflvm.priors.FeaturePrior`) through four
compiled functions, and never names it:

* ``propose(rng, z_cur, hyper)``: a new value for an entry of a dimension other rows use;
* ``log_ratio(z_cur, z_new, m_other, n, hyper)``: the prior's log ratio of that proposal, with
  the proposal's own ratio;
* ``prior_ratio(z_cur, z_new, m_other, n, hyper)``: the prior's log ratio alone, for moves that
  propose values their own way;
* ``gibbs_odds(weights, counts, d, z_cur)``: the conditional log odds of ``z_id = 1`` that the
  Gibbs pass of a binary ``Z`` uses, given the prior's weights (the slice sampler's sticks,
  :class:`ibp_rflvm.samplers.ibp.Sticks`).

Each prior's module registers its compiled functions for the type of its ``hyper``, a class
made by :func:`hyper_class`, with :func:`register` (the slice sampler's ``gibbs_odds`` is
registered for its sticks' type with ``numba.extending.overload``, selected with
:func:`is_hyper`), so a kernel compiled for one prior is cached on disk and loaded by the next
process. A compiled function handed over as an argument instead would be part of the cache's
key by its identity: the kernel would be compiled again, and its cache index would grow, in
every process. The registered versions compile with their own flags (no ``fastmath``), not the
calling kernel's, and are not inlined: the prior's arithmetic is the same in every kernel.
"""

from __future__ import annotations

import copyreg
import os
import sys
import uuid
from typing import Any

from numba.core import types
from numba.extending import overload


def propose(rng, z_cur: int, hyper) -> int:
    """The prior's proposal of a new value for an entry now `z_cur` (compiled per prior)."""
    raise TypeError(f"no compiled prior on Z for {type(hyper).__name__}")


def log_ratio(z_cur: int, z_new: int, m_other: int, n: int, hyper) -> float:
    """``log p(z_new | rest) q(z_cur | z_new) / (p(z_cur | rest) q(z_new | z_cur))`` (compiled per prior)."""
    raise TypeError(f"no compiled prior on Z for {type(hyper).__name__}")


def prior_ratio(z_cur: int, z_new: int, m_other: int, n: int, hyper) -> float:
    """``log p(z_new | rest) - log p(z_cur | rest)`` (compiled per prior)."""
    raise TypeError(f"no compiled prior on Z for {type(hyper).__name__}")


def gibbs_odds(weights, counts, d: int, z_cur: int) -> float:
    """``log P(z_id = 1) - log P(z_id = 0)`` given the prior's `weights` (compiled per prior)."""
    raise TypeError(f"no compiled prior on Z for {type(weights).__name__}")


class HyperType(type):
    """The metaclass of the classes :func:`hyper_class` makes; see there why."""


#: Stand-ins for the hyper classes a cache index names that this process has not, by (module,
#: name, stamp): the same one each time, so that an index read and written again keeps them.
_ABSENT: dict[tuple, type] = {}


def _stamp(module: str) -> tuple:
    """What identifies the source of `module` now: its file, with the modification time and
    size by which numba's cache stamps a kernel's file; a module without a file (an interactive
    session's) gets this process's stamp, so that no other process takes its classes for its own."""
    path = getattr(sys.modules.get(module), "__file__", None)
    try:
        st = os.stat(path)
    except (TypeError, OSError):
        return ("process", _PROCESS)
    return (path, st.st_mtime, st.st_size)


_PROCESS = uuid.uuid4().hex


def _find(module: str, qualname: str, stamp: tuple) -> type:
    """The hyper class a pickled cache key names, or a stand-in when this process has no such
    class or the module's source changed since the key was written (its overloads may have)."""
    obj: Any = sys.modules.get(module)
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    if isinstance(obj, HyperType) and _stamp(module) == stamp:
        return obj
    origin = (module, qualname, stamp)
    if origin not in _ABSENT:
        # A name of this module's, so that numba's pickler (cloudpickle) writes the stand-in by
        # reference, that is through _reduce, with the name of the class it stands for.
        name = f"_absent_{len(_ABSENT)}_{uuid.uuid4().hex}"
        cls = HyperType(name, (tuple,), {"__module__": __name__, "__qualname__": name, "_origin": origin})
        globals()[name] = _ABSENT[origin] = cls
    return _ABSENT[origin]


def _reduce(cls: HyperType) -> tuple:
    origin = cls.__dict__.get("_origin") or (cls.__module__, cls.__qualname__, _stamp(cls.__module__))
    return _find, origin


# A kernel's cache index pickles the types of its arguments, and with them a hyper's class. By
# reference (module and name) the index would fail to load, for every prior, in a process that
# cannot import the module of a class a test or a script defined; and a script's class of the
# same name would be taken for it, with another script's compiled overloads.
copyreg.pickle(HyperType, _reduce)


def hyper_class(cls: type) -> HyperType:
    """Class decorator for a prior's ``hyper`` (a ``typing.NamedTuple``): the same named tuple,
    whose type the compiled moves dispatch on, and which numba's cache can name safely.

    The class is pickled with its module's source stamp: a kernel compiled for it is loaded from
    the cache only by a process that has the class from unchanged source, and an index that
    names a class this process lacks still loads (its entries never match)."""
    ns = {"__module__": cls.__module__, "__qualname__": cls.__qualname__, "__doc__": cls.__doc__,
          "__slots__": ()}  # fmt: skip
    return HyperType(cls.__name__, (cls,), ns)


def is_hyper(ty, cls: type) -> bool:
    """Whether the numba type `ty` is that of an instance of `cls` (for an overload's dispatch)."""
    return isinstance(ty, types.BaseNamedTuple) and ty.instance_class is cls


def register(cls: HyperType, propose_fn, log_ratio_fn, prior_ratio_fn) -> None:
    """Make the compiled functions of a prior the answers to :func:`propose`, :func:`log_ratio`
    and :func:`prior_ratio` for a `hyper` of class `cls` (:func:`hyper_class`): `propose_fn` is
    compiled as ``propose_fn(rng, z_cur)`` (a proposal reads no parameter), the two ratios as
    ``f(z_cur, z_new, m_other, n, hyper)``. Each is called as it is, with its own flags."""

    @overload(propose)
    def _propose(rng, z_cur, hyper):
        if is_hyper(hyper, cls):
            return lambda rng, z_cur, hyper: propose_fn(rng, z_cur)

    @overload(log_ratio)
    def _log_ratio(z_cur, z_new, m_other, n, hyper):
        if is_hyper(hyper, cls):
            return lambda z_cur, z_new, m_other, n, hyper: log_ratio_fn(z_cur, z_new, m_other, n, hyper)

    @overload(prior_ratio)
    def _prior_ratio(z_cur, z_new, m_other, n, hyper):
        if is_hyper(hyper, cls):
            return lambda z_cur, z_new, m_other, n, hyper: prior_ratio_fn(z_cur, z_new, m_other, n, hyper)
