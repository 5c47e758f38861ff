"""The chain driver: runs any kernel, keeping traces and samples, with checkpoints that resume bit for bit.

A kernel is a pair ``(init, step)`` (:func:`ibp_rflvm.model.build_sweep`, or the tempered
kernel of :mod:`.tempering`, whose state holds every level of a ladder). Its states say which
:class:`~ibp_rflvm.state.ChainState` the record keeps (``recorded``) and how they are stored
(``to_tree``/``from_tree``), so :func:`drive` treats them all alike. :func:`run_chain` drives
the sweep of one model.

A checkpoint holds what the rest of the run depends on: the kernel's state, the state of its
random generator, the traces and the kept samples so far, with a description of the data
and settings it belongs to (resuming against other data or settings is refused, naming what
differs). The file format, its atomic writes and its errors are :mod:`.checkpoint`'s.

Not stored, because the rest of the checkpoint determines them:

* the observed entries of the Gaussian's completed data ``Y`` (only the imputed entries are
  stored; the observed ones come from the data the resumed fit is given);
* any running sum over the kept samples: the reconstruction (``predict()``), ``N x J``, is
  computed from the kept samples when it is first asked for (43 MB for spam, more than the
  rest of the file at 50 kept samples), the same way for a resumed chain as for one that ran
  uninterrupted, so the two are equal bit for bit.

A chain that has finished can be extended: resuming with a larger ``n_iter`` runs the further
sweeps, and the result equals a chain run that long from the start, provided the burn-in is
the same (see :func:`run_chain`).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import fields, is_dataclass
from pathlib import Path

import numpy as np

from ..model import ChainState, Data, ModelSpec, build_sweep
from ..plumbing import blocks
from ..plumbing.checkpoint import (
    CheckpointError,
    CheckpointMismatch,
    read_tree,
    remove_stale_temporaries,
    write_tree,
)
from ..priors import LEGACY_SETTINGS
from ..targets import make_target
from .effective import effective_share, importance_and_gain
from .record import ChainRecord, ChainResult

__all__ = [
    "ChainRecord", "ChainResult", "CheckpointError", "CheckpointMismatch", "drive", "load_checkpoint",
    "remove_stale_temporaries", "run_chain",
]  # fmt: skip

#: Sweeps between refreshes of the effective number of dimensions in the progress bar.
PROGRESS_EFFECTIVE_EVERY = 10
# ------------------------------------------------------------------------------------------
# What a checkpoint belongs to


#: Bytes of the data hashed at a time for a checkpoint's digest.
_DIGEST_BLOCK_BYTES = 1 << 24


def data_description(data: Data) -> dict:
    """Shape and digest of the data (values and mask) a checkpoint was made for."""
    h = hashlib.sha256()
    # Row blocks of a C-order array hash as the whole does, without two N x J copies of it.
    step = max(1, _DIGEST_BLOCK_BYTES // max(1, 8 * data.Y.shape[1]))
    for start in range(0, data.Y.shape[0], step):
        block = np.ascontiguousarray(np.nan_to_num(data.Y[start : start + step], nan=np.pi))
        h.update(block.tobytes())
    h.update(np.ascontiguousarray(data.observed).tobytes())
    return {"shape": list(data.Y.shape), "sha256": h.hexdigest()}


def _plain(value):
    """A JSON value describing a setting: arrays beyond a few entries by shape and digest."""
    if isinstance(value, np.ndarray):
        if value.size <= 8:
            return value.tolist()
        digest = hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()[:16]
        return f"array {value.shape} {value.dtype} sha256 {digest}"
    if is_dataclass(value):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return repr(value)


def settings_description(spec: ModelSpec) -> dict:
    """The model settings a resumed chain must share, one JSON value per setting."""
    # The HMC warm-up's length is the burn-in, which a resumed chain is checked against with a
    # message of its own.
    own = ("likelihood", "z_prior", "hmc_adapt_sweeps")
    out = {f.name: _plain(getattr(spec, f.name)) for f in fields(spec) if f.name not in own}
    # The prior on Z by its own settings, under the names checkpoints have always stored.
    out["ibp"] = spec.ibp
    if spec.ibp:
        out.update({key: _plain(value) for key, value in spec.z_prior.settings().items()})
    lik = spec.likelihood
    out["likelihood"] = type(lik).__name__
    for key, value in sorted(vars(lik).items()):
        out[f"likelihood.{key}"] = _plain(value)
    return out


#: Model settings added after checkpoints were first written, with the value under which a
#: chain runs as it did before them (the one-parameter IBP).
_LATER_SETTINGS = {"backend": "numba", "frequency_update": "mh", "scale_move": False, "hmc_leapfrog": 0}
#: Settings since removed, with the value under which a chain ran as it does now: a checkpoint
#: that holds that value belongs to today's model.
#: (``frequency_update`` was retired and came back: a checkpoint that lacks it ran ``"mh"``.)
_RETIRED_SETTINGS = {"whole_move": None, "start_density": 1.0}


def _check_belongs(path: Path, saved: dict, data: Data, settings: dict, n_iter: int, burn_in: int) -> None:
    """Refuse a checkpoint made for other data or settings, naming what differs."""
    advice = "remove it or fit without resume=True"
    mine = data_description(data)
    if saved["data"] != mine:
        if saved["data"]["shape"] != mine["shape"]:
            what = f"data of shape {tuple(saved['data']['shape'])}, not {tuple(mine['shape'])}"
        else:
            what = "data of the same shape but different values or missing entries"
        raise CheckpointMismatch(f"checkpoint {path} was written for different data ({what}); {advice}")
    # Through JSON so that tuples and lists compare equal, as they are stored.
    now = json.loads(json.dumps(settings))
    was = dict(saved["settings"])
    for key, value in _LATER_SETTINGS.items():
        # A checkpoint from before a setting existed ran with the value that reproduces it.
        was.setdefault(key, value)
    for key, value in LEGACY_SETTINGS.items():
        # Settings of the prior on Z: an older checkpoint stored every prior's, and one from
        # before a setting existed ran with its neutral value.
        if key in now:
            was.setdefault(key, value)
        elif was.get(key, value) == value:
            was.pop(key, None)
    for key, value in _RETIRED_SETTINGS.items():
        if key in was and was[key] == value:
            del was[key]
    differ = [
        f"{key}: {was.get(key, '(absent)')!r} in the checkpoint, {now.get(key, '(absent)')!r} now"
        for key in sorted(set(now) | set(was))
        if was.get(key) != now.get(key)
    ]
    if differ:
        raise CheckpointMismatch(
            f"checkpoint {path} was written with different settings ({'; '.join(differ)}); {advice}"
        )
    done, saved_burn = saved["sweep"], saved["burn_in"]
    if done > n_iter:
        raise CheckpointMismatch(
            f"checkpoint {path} has already run {done} sweeps, more than n_iter={n_iter}; "
            f"fit with n_iter >= {done} to continue it, or {advice}"
        )
    # Extending is fine as long as the samples kept so far are those this burn-in keeps.
    if burn_in != saved_burn and min(burn_in, saved_burn) < done:
        raise CheckpointMismatch(
            f"checkpoint {path} keeps the samples after burn_in={saved_burn}, but this fit asks "
            f"for burn_in={burn_in} (the default is n_iter // 2); pass burn_in={saved_burn} to "
            f"continue the chain, or {advice}"
        )


# ------------------------------------------------------------------------------------------
# Reading and writing


def _write(
    path: Path, done: int, burn_in: int, data: Data, settings: dict, state, record, rng, timing: tuple
) -> None:
    write_tree(
        path,
        {
            "sweep": done,
            # Wall seconds of the last `timed_sweeps` sweeps (all of them unless an older version
            # began the chain), for `reproduce --status` to time a long cell while it runs and
            # for the cell record to count a resumed chain whole; nothing of the chain depends on them.
            "seconds": float(timing[0]),
            "timed_sweeps": int(timing[1]),
            "burn_in": burn_in,
            "data": data_description(data),
            "settings": settings,
            "rng_state": rng.bit_generator.state,
            "state": state.to_tree(data),
            "record": record.to_tree(),
        },
    )


def load_checkpoint(path: str | os.PathLike) -> dict:
    """Read checkpoint `path`: a dict with ``sweep`` (sweeps done), ``burn_in``, ``data`` and
    ``settings`` (what it belongs to), ``rng_state``, ``state`` and ``record`` (as stored: the
    state's ``Y`` holds the imputed entries only), and ``seconds`` over ``timed_sweeps``: the
    wall time of the sweeps timed so far (both 0 in checkpoints written before they existed).

    Raises :class:`~ibp_rflvm.plumbing.checkpoint.CheckpointError` naming the file when it is not a
    whole checkpoint of this format.
    """
    tree = read_tree(path)
    try:
        sweep_done = tree["sweep"]
        if not isinstance(sweep_done, int) or sweep_done < 0:
            raise TypeError(f"sweep is {sweep_done!r}")
        for key in ("burn_in", "data", "settings", "rng_state", "state", "record"):
            tree[key]  # noqa: B018 - presence check
        tree["record"] = ChainRecord.from_tree(tree["record"])
        tree["seconds"] = float(tree.get("seconds", 0.0))
        tree["timed_sweeps"] = int(tree.get("timed_sweeps", 0))
    except (KeyError, TypeError, ValueError) as err:
        raise CheckpointError(
            f"{os.fspath(path)} is not a usable ibp-rflvm checkpoint: incomplete ({err!r})"
        ) from None
    return tree


def _resume(path: Path, rng, data: Data, settings: dict, state_type, n_iter: int, burn_in: int):
    saved = load_checkpoint(path)
    _check_belongs(path, saved, data, settings, n_iter, burn_in)
    try:
        state = state_type.from_tree(saved["state"], data)
    except (KeyError, TypeError, ValueError, IndexError) as err:
        raise CheckpointError(f"{path} is not a usable ibp-rflvm checkpoint: bad state ({err!r})") from None
    try:
        rng.bit_generator.state = saved["rng_state"]
    except (KeyError, TypeError, ValueError) as err:
        raise CheckpointMismatch(
            f"checkpoint {path} holds the state of another kind of random generator than this "
            f"fit's {type(rng.bit_generator).__name__} ({err})"
        ) from None
    return state, saved["record"], saved["sweep"], (saved["seconds"], saved["timed_sweeps"])


def run_chain(
    rng: np.random.Generator,
    data: Data,
    spec: ModelSpec,
    n_iter: int,
    burn_in: int,
    checkpoint_path: str | os.PathLike | None = None,
    checkpoint_every: int = 10,
    resume: bool = False,
    progress=None,
    threads: blocks.Blocks | None = None,
) -> ChainResult:
    """Run (or continue) one chain of `spec`'s sweep for `n_iter` sweeps, keeping every sample
    after `burn_in` (see :func:`drive` for checkpoints, resuming and `threads`)."""
    kernel = build_sweep(spec, make_target(spec, data))
    state, record = drive(
        rng, kernel, ChainState, data, spec, settings_description(spec), n_iter, burn_in,
        checkpoint_path, checkpoint_every, resume, progress, threads,
    )  # fmt: skip
    return ChainResult(state=state, record=record)


def drive(
    rng: np.random.Generator,
    kernel,
    state_type: type,
    data: Data,
    spec: ModelSpec,
    settings: dict,
    n_iter: int,
    burn_in: int,
    checkpoint_path: str | os.PathLike | None = None,
    checkpoint_every: int = 10,
    resume: bool = False,
    progress=None,
    threads: blocks.Blocks | None = None,
):
    """Run (or continue) a Markov chain kernel for `n_iter` steps, with checkpoints.

    With `resume` and an existing checkpoint, the generator and the chain continue exactly where
    the checkpoint left them, so the result equals the uninterrupted chain bit for bit. The
    checkpoint must belong to the same data and settings; `n_iter` may be larger than the
    checkpoint's (extending a finished chain), and the result then equals a chain of `n_iter`
    steps run from the start with the same `burn_in`. `burn_in` must be the checkpoint's unless
    no sample has been kept yet under either value.

    Parameters
    ----------
    rng : numpy.random.Generator
        The chain's only source of randomness.
    kernel : SweepKernel
        ``init(rng) -> state`` and ``step(rng, state) -> (state, info)``, as
        :func:`ibp_rflvm.model.build_sweep` builds them.
    state_type : type
        The kernel's state class, for reading a checkpoint back.
    data : Data
        The training data as the sampler holds them.
    spec : ModelSpec
        The model; each step's ``state.recorded`` is a ``ChainState`` of it.
    settings : dict
        What a checkpoint must match besides the data.
    n_iter : int
        Steps in all, those of a resumed checkpoint included.
    burn_in : int
        Steps before the first kept sample.
    checkpoint_path : str, os.PathLike or None, default=None
        File the chain is saved to, atomically (None: no checkpoints).
    checkpoint_every : int, default=10
        Steps between checkpoints.
    resume : bool, default=False
        Continue from the checkpoint at `checkpoint_path` when there is one.
    progress : tqdm.tqdm or None, default=None
        A progress bar to advance after each step.
    threads : ibp_rflvm.plumbing.blocks.Blocks or None, default=None
        Runs each step's blocked work on that many threads (None: one). Not part of what a
        checkpoint belongs to: the chain is the same bit for bit with any thread count, so a
        chain checkpointed on 2 threads resumes on 1.

    Returns
    -------
    state : ChainState
        The final state.
    record : ibp_rflvm.mcmc.record.ChainRecord
        Each step's traces, and the samples after `burn_in`.

    Raises
    ------
    ibp_rflvm.plumbing.checkpoint.CheckpointError
        With `resume`, a checkpoint for other data or settings, or a damaged file.
    """
    with blocks.active(blocks.Blocks() if threads is None else threads):
        return _drive(
            rng, kernel, state_type, data, spec, settings, n_iter, burn_in, checkpoint_path,
            checkpoint_every, resume, progress,
        )  # fmt: skip


def _drive(
    rng, kernel, state_type, data, spec, settings, n_iter, burn_in, checkpoint_path, checkpoint_every,
    resume, progress,
):
    path = Path(checkpoint_path) if checkpoint_path is not None else None
    start = 0
    timed = (0.0, 0)  # (seconds, sweeps) timed before this call, carried over from a checkpoint
    if resume and path is not None and path.exists():
        remove_stale_temporaries(path)
        state, record, start, timed = _resume(path, rng, data, settings, state_type, n_iter, burn_in)
    else:
        state = kernel.init(rng)
        record = ChainRecord()
    if progress is not None and start:
        progress.update(start)
    k_eff: int | str = "?"  # effective dimensions shown in the progress bar, until first scored
    t0 = time.perf_counter()
    run = getattr(kernel, "run", None)
    t = start
    while t < n_iter:
        # Sweeps whose state is not kept run in one device call up to the next checkpoint or the
        # end of the burn-in (same keys, same chain); only their traces come back.
        chunk = _unkept_chunk(t, n_iter, burn_in, checkpoint_every if path is not None else None)
        if run is not None and chunk > 1:
            state, steps = run(rng, state, chunk)
            for traces, info in steps:
                record.add(traces, info, keep=False)
            t += chunk
            if progress is not None:
                progress.set_postfix(k_plus=steps[-1][1].k_plus, k_eff=k_eff, refresh=False)
                progress.update(chunk)
            if path is not None and (t % checkpoint_every == 0 or t == n_iter):
                timing = (timed[0] + time.perf_counter() - t0, timed[1] + t - start)
                _write(path, t, burn_in, data, settings, state, record, rng, timing)
            continue
        state, info = kernel.step(rng, state)
        kept = state.recorded
        record.add(kept, info, keep=t >= burn_in)
        done = t + 1
        if progress is not None:
            # Scoring K dimensions costs K likelihood evaluations, so the effective number of
            # dimensions is refreshed only every PROGRESS_EFFECTIVE_EVERY sweeps (and at the
            # last), and only when a progress bar shows it. It draws no random numbers.
            if done % PROGRESS_EFFECTIVE_EVERY == 0 or done == n_iter:
                k_eff = effective_share(*importance_and_gain(kept.H, kept.W, kept.params, data, spec))
            progress.set_postfix(k_plus=info.k_plus, k_eff=k_eff, refresh=False)
            progress.update(1)
        if path is not None and (done % checkpoint_every == 0 or done == n_iter):
            timing = (timed[0] + time.perf_counter() - t0, timed[1] + done - start)
            _write(path, done, burn_in, data, settings, state, record, rng, timing)
        t = done
    return state, record


def _unkept_chunk(t: int, n_iter: int, burn_in: int, every: int | None) -> int:
    """How many sweeps from sweep `t` on keep no sample and write no checkpoint but the last."""
    end = min(n_iter, burn_in)
    if every is not None:
        end = min(end, (t // every + 1) * every)
    return max(0, end - t)
