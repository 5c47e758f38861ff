"""Running one chain: traces, kept samples, and checkpoints that resume bit for bit.

A checkpoint holds everything the rest of the run depends on: the chain state, the state of
its random generator, the traces and kept samples so far, and a fingerprint of the data and
settings (resuming against different data is refused). It is written to a temporary file in
the same folder and renamed over the old one, so a process killed mid-write leaves the
previous checkpoint intact; a killed run loses at most `checkpoint_every` sweeps.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import re
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from .effective import dimension_importance, effective_dimensions
from .model import ChainState, Data, ModelSpec, init_state, sweep

CHECKPOINT_VERSION = 1
#: Sweeps between refreshes of the effective number of dimensions in the progress bar.
PROGRESS_EFFECTIVE_EVERY = 10


class CheckpointMismatch(ValueError):
    """A checkpoint that belongs to other data or settings than the run asked to resume."""


@dataclass
class ChainRecord:
    """What a run keeps: per-sweep traces and the samples after burn-in."""

    n_active: list = field(default_factory=list)
    loglik: list = field(default_factory=list)
    alpha: list = field(default_factory=list)
    eta: list = field(default_factory=list)
    n_components: list = field(default_factory=list)
    samples: list = field(default_factory=list)
    reconstruction_sum: np.ndarray | None = None

    def add(self, state: ChainState, info: dict, keep: bool, spec: ModelSpec, prep=None) -> None:
        self.n_active.append(info["k_plus"])
        self.loglik.append(state.loglik)
        self.alpha.append(state.alpha)
        self.eta.append(state.eta)
        self.n_components.append(info["n_components"])
        if keep:
            lik = spec.likelihood
            psi = state.phi(spec.bias) @ state.params["beta"]
            # Count likelihoods may need the training-row index and per-row constants (binomial
            # trials per entry, size factors).
            kw = {} if lik.collapsed else {"rows": np.arange(psi.shape[0]), "prep": prep}
            mean = lik.mean(psi, state.params, **kw)
            if self.reconstruction_sum is None:
                self.reconstruction_sum = np.zeros_like(mean)
            self.reconstruction_sum += mean
            self.samples.append({"H": state.H, "W": state.W, "params": state.params, "pi": state.pi})


@dataclass
class ChainResult:
    state: ChainState
    record: ChainRecord


def fingerprint(data: Data, spec: ModelSpec, n_iter: int, burn_in: int) -> str:
    """A digest of the data (values and mask) and the settings a resumed run must share."""
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(np.nan_to_num(data.Y, nan=np.pi)).tobytes())
    h.update(np.ascontiguousarray(data.observed).tobytes())
    # The likelihood object's default repr carries a memory address; describe it by its class
    # and hyperparameters instead, so a checkpoint resumes in any process.
    lik = spec.likelihood
    hyper = sorted((k, _describe(v)) for k, v in vars(lik).items())
    h.update(repr((replace(spec, likelihood=None), type(lik).__name__, hyper)).encode())
    h.update(repr((n_iter, burn_in)).encode())
    return h.hexdigest()


def _describe(value):
    """`value` itself, or for a long array a digest of its bytes: numpy abbreviates the repr of
    long arrays (per-row size factors, per-entry trials), which would hide differences."""
    if isinstance(value, np.ndarray) and value.size > 1000:
        return hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()
    return value


def remove_stale_temporaries(path: Path) -> list[Path]:
    """Delete the temporary files a killed writer of checkpoint `path` left behind.

    A process killed while writing leaves ``<name>.<random>.tmp`` beside an intact checkpoint.
    Only names with exactly one random part between ``<name>.`` and ``.tmp`` are this
    checkpoint's: the checkpoints of other chains (``<name>.chain<c>``) have longer names, and
    their writers may be running.
    """
    pattern = re.compile(re.escape(path.name) + r"\.[^.]+\.tmp")
    if not path.parent.is_dir():
        return []
    stale = [p for p in path.parent.iterdir() if pattern.fullmatch(p.name)]
    for p in stale:
        p.unlink(missing_ok=True)
    return stale


def _write_atomic(path: Path, payload: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            pickle.dump(payload, f, protocol=pickle.HIGHEST_PROTOCOL)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load_checkpoint(path: str | os.PathLike) -> dict:
    with open(path, "rb") as f:
        payload = pickle.load(f)
    if payload.get("version") != CHECKPOINT_VERSION:
        raise ValueError(f"{path} is not a checkpoint this version of ibp-rflvm can read")
    return payload


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
) -> ChainResult:
    """Run (or continue) one chain of `n_iter` sweeps, keeping every sample after `burn_in`.

    With `resume` and an existing checkpoint, the generator and the chain continue exactly where
    the checkpoint left them, so the result equals the uninterrupted chain bit for bit.
    """
    digest = fingerprint(data, spec, n_iter, burn_in)
    path = Path(checkpoint_path) if checkpoint_path is not None else None
    start = 0
    if resume and path is not None and path.exists():
        remove_stale_temporaries(path)
        payload = load_checkpoint(path)
        if payload["fingerprint"] != digest:
            raise CheckpointMismatch(
                f"checkpoint {path} was written for different data or settings; "
                "remove it or fit without resume=True"
            )
        state, record, start = payload["state"], payload["record"], payload["sweep"]
        rng.bit_generator.state = payload["rng_state"]
    else:
        state = init_state(rng, data, spec)
        record = ChainRecord()
    if progress is not None and start:
        progress.update(start)
    k_eff: int | str = "?"  # effective dimensions shown in the progress bar, until first scored
    for t in range(start, n_iter):
        state, info = sweep(rng, state, data, spec)
        record.add(state, info, keep=t >= burn_in, spec=spec, prep=data.prep)
        done = t + 1
        if progress is not None:
            # Scoring K dimensions costs K likelihood evaluations, so the effective number of
            # dimensions is refreshed only every PROGRESS_EFFECTIVE_EVERY sweeps (and at the
            # last), and only when a progress bar shows it. It draws no random numbers.
            if done % PROGRESS_EFFECTIVE_EVERY == 0 or done == n_iter:
                importance = dimension_importance(state.H, state.W, state.params, data, spec)
                k_eff = effective_dimensions(importance, int(data.observed.sum()))
            progress.set_postfix(k_plus=info["k_plus"], k_eff=k_eff, refresh=False)
            progress.update(1)
        if path is not None and (done % checkpoint_every == 0 or done == n_iter):
            _write_atomic(
                path,
                {
                    "version": CHECKPOINT_VERSION,
                    "fingerprint": digest,
                    "sweep": done,
                    "state": state,
                    "record": record,
                    "rng_state": rng.bit_generator.state,
                },
            )
    return ChainResult(state=state, record=record)
