"""Checkpoints: a chain killed with SIGKILL and resumed equals the uninterrupted chain, bit for bit."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from ibp_rflvm import IBPRFLVM, RFLVM, holdout_mask
from ibp_rflvm.datasets import make_cambridge
from ibp_rflvm.mcmc.driver import load_checkpoint

N_ITER = 24
SCRIPT = """
import sys
from ibp_rflvm import IBPRFLVM, holdout_mask
from ibp_rflvm.datasets import make_cambridge
Y = holdout_mask(make_cambridge(80, random_state=2)["Y"][:, :15], 0.2, random_state=0)[0]
IBPRFLVM(n_iter={n_iter}, n_frequencies=12, random_state=7, checkpoint_path=sys.argv[1],
         checkpoint_every=2).fit(Y)
"""


def _data():
    return holdout_mask(make_cambridge(80, random_state=2)["Y"][:, :15], 0.2, random_state=0)


def _assert_same_chain(a, b):
    for name, trace in a.traces_.items():
        np.testing.assert_array_equal(trace, b.traces_[name], err_msg=name)
    np.testing.assert_array_equal(a.latent_, b.latent_)
    np.testing.assert_array_equal(a.predict(), b.predict())
    assert len(a._samples) == len(b._samples)
    for sa, sb in zip(a._samples, b._samples, strict=True):
        np.testing.assert_array_equal(sa.H, sb.H)
        np.testing.assert_array_equal(sa.params.beta, sb.params.beta)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_resume_after_sigkill_equals_uninterrupted(tmp_path):
    Y_train, _ = _data()
    reference = IBPRFLVM(n_iter=N_ITER, n_frequencies=12, random_state=7).fit(Y_train)

    kill_after = int(np.random.default_rng(2024).integers(4, N_ITER - 4))  # a random sweep
    path = tmp_path / "chain.ckpt"
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT.format(n_iter=N_ITER), str(path)])
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if path.exists():
                try:
                    if load_checkpoint(path)["sweep"] >= kill_after:
                        break
                except Exception:  # the file is replaced atomically; a read can race a rename
                    pass
            if proc.poll() is not None:
                break
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    # A kill that lands mid-write may leave that write's temporary file; the checkpoint itself
    # must still be whole.
    saved = load_checkpoint(path)["sweep"]
    assert saved < N_ITER, "the process finished before it could be killed"

    resumed = IBPRFLVM(n_iter=N_ITER, n_frequencies=12, random_state=7, checkpoint_path=str(path),
                       checkpoint_every=2).fit(Y_train, resume=True)  # fmt: skip
    _assert_same_chain(reference, resumed)
    assert not list(tmp_path.glob("*.tmp")), "resuming removes the killed writer's temporary file"


def test_stale_temporaries_of_one_checkpoint_only_are_removed(tmp_path):
    from pathlib import Path

    from ibp_rflvm.mcmc.driver import remove_stale_temporaries

    path = Path(tmp_path / "run.ckpt")
    mine = [tmp_path / "run.ckpt.ab12_xy9.tmp", tmp_path / "run.ckpt.Q7.tmp"]
    others = [
        tmp_path / "run.ckpt.chain0.ab12_xy9.tmp",  # another chain's writer, maybe still running
        tmp_path / "run.ckpt",
        tmp_path / "other.ckpt.ab.tmp",
    ]
    for p in mine + others:
        p.write_bytes(b"x")
    removed = remove_stale_temporaries(path)
    assert sorted(removed) == sorted(mine)
    assert all(p.exists() for p in others) and not any(p.exists() for p in mine)


def test_interrupted_chains_resume_exactly(tmp_path, monkeypatch):
    """Ctrl-C in the middle of the second of two chains; both chains resume from their files."""
    import ibp_rflvm.model as chain_module

    Y_train, _ = _data()
    kw = {"n_components": 2, "n_frequencies": 8, "random_state": 3, "n_chains": 2, "n_jobs": 1}
    reference = RFLVM(n_iter=10, **kw).fit(Y_train)
    path = str(tmp_path / "c.ckpt")
    real_sweep = chain_module._step
    calls = {"n": 0}

    def interrupted_sweep(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 17:  # chain 0 done (10 sweeps), chain 1 stopped in its 7th sweep
            raise KeyboardInterrupt
        return real_sweep(*args, **kwargs)

    monkeypatch.setattr(chain_module, "_step", interrupted_sweep)
    with pytest.raises(KeyboardInterrupt):
        RFLVM(n_iter=10, checkpoint_path=path, checkpoint_every=3, **kw).fit(Y_train)
    monkeypatch.setattr(chain_module, "_step", real_sweep)
    assert load_checkpoint(f"{path}.chain0")["sweep"] == 10
    assert load_checkpoint(f"{path}.chain1")["sweep"] == 6
    resumed = RFLVM(n_iter=10, checkpoint_path=path, checkpoint_every=3, **kw).fit(Y_train, resume=True)
    _assert_same_chain(reference, resumed)


def test_resume_refuses_a_checkpoint_for_other_data(tmp_path):
    Y_train, _ = _data()
    path = str(tmp_path / "c.ckpt")
    IBPRFLVM(n_iter=4, n_frequencies=8, random_state=0, checkpoint_path=path).fit(Y_train)
    with pytest.raises(ValueError, match="different data"):
        IBPRFLVM(n_iter=4, n_frequencies=8, random_state=0, checkpoint_path=path).fit(
            Y_train + 1.0, resume=True
        )


# ------------------------------------------------------------------------------------------
# The file format: every likelihood, extension, damaged and foreign files, no pickle.


def _small(likelihood: str):
    """A 30 x 8 training matrix for `likelihood`, 20% held out, and its likelihood_params."""
    rng = np.random.default_rng(5)
    params = None
    if likelihood == "gaussian":
        Y = make_cambridge(30, random_state=1)["Y"][:, :8]
    elif likelihood == "bernoulli":
        Y = (rng.random((30, 8)) < 0.4).astype(float)
    elif likelihood == "binomial":
        trials = rng.integers(3, 7, (30, 8)).astype(float)  # an N x J array of trials
        Y = rng.binomial(trials.astype(int), 0.3).astype(float)
        params = {"n_trials": trials}
    else:
        Y = rng.poisson(2.0, (30, 8)).astype(float)
    Y_train, Y_test = holdout_mask(Y, 0.2, random_state=0)
    return Y_train, Y_test, params


LIKELIHOODS = ("gaussian", "negbinom", "poisson", "bernoulli", "binomial", "multinomial")


@pytest.mark.parametrize(
    "model, likelihood",
    [(IBPRFLVM, lik) for lik in LIKELIHOODS] + [(RFLVM, "gaussian"), (RFLVM, "poisson")],
)
def test_extended_chain_equals_the_long_chain_for_every_likelihood(tmp_path, model, likelihood):
    """Three sweeps to a checkpoint, then resumed to five: the five-sweep chain, bit for bit,
    with the kept samples straddling the checkpoint (burn-in 1)."""
    Y_train, Y_test, params = _small(likelihood)
    kw = {"likelihood": likelihood, "likelihood_params": params, "n_frequencies": 5, "random_state": 4}
    if model is RFLVM:
        kw["n_components"] = 2
    reference = model(n_iter=5, burn_in=1, **kw).fit(Y_train)
    path = tmp_path / "c.ckpt"
    model(n_iter=3, burn_in=1, checkpoint_path=str(path), **kw).fit(Y_train)
    assert load_checkpoint(path)["sweep"] == 3
    resumed = model(n_iter=5, burn_in=1, checkpoint_path=str(path), **kw).fit(Y_train, resume=True)
    _assert_same_chain(reference, resumed)
    for sa, sb in zip(reference._samples, resumed._samples, strict=True):
        for key, value in sa.params.arrays().items():
            np.testing.assert_array_equal(value, sb.params.arrays()[key], err_msg=key)
    np.testing.assert_array_equal(
        reference.pointwise_log_predictive(Y_test), resumed.pointwise_log_predictive(Y_test)
    )
    assert load_checkpoint(path)["sweep"] == 5


def test_generators_with_array_states_resume_exactly(tmp_path):
    """MT19937 and Philox keep arrays in their state; the checkpoint stores them exactly."""
    Y_train, _, _ = _small("gaussian")
    for bits in (np.random.MT19937, np.random.Philox):
        kw = {"n_frequencies": 5, "burn_in": 1}
        reference = IBPRFLVM(n_iter=4, random_state=np.random.Generator(bits(3)), **kw).fit(Y_train)
        path = str(tmp_path / f"{bits.__name__}.ckpt")
        IBPRFLVM(n_iter=2, random_state=np.random.Generator(bits(3)), checkpoint_path=path, **kw).fit(Y_train)
        resumed = IBPRFLVM(n_iter=4, random_state=np.random.Generator(bits(3)), checkpoint_path=path, **kw)
        _assert_same_chain(reference, resumed.fit(Y_train, resume=True))


def test_extension_keeps_the_checkpoints_burn_in(tmp_path):
    """The default burn-in (n_iter // 2) moves with n_iter, which would change the kept samples:
    that extension is refused with the burn-in to pass, which then gives the long chain."""
    Y_train, _ = _data()
    kw = {"n_frequencies": 6, "random_state": 1}
    path = str(tmp_path / "c.ckpt")
    IBPRFLVM(n_iter=4, checkpoint_path=path, **kw).fit(Y_train)  # burn-in 2
    with pytest.raises(ValueError, match=r"after burn_in=2, .*for burn_in=4 .*pass burn_in=2 to continue"):
        IBPRFLVM(n_iter=8, checkpoint_path=path, **kw).fit(Y_train, resume=True)
    with pytest.raises(ValueError, match="already run 4 sweeps, more than n_iter=3"):
        IBPRFLVM(n_iter=3, burn_in=2, checkpoint_path=path, **kw).fit(Y_train, resume=True)
    resumed = IBPRFLVM(n_iter=8, burn_in=2, checkpoint_path=path, **kw).fit(Y_train, resume=True)
    _assert_same_chain(IBPRFLVM(n_iter=8, burn_in=2, **kw).fit(Y_train), resumed)


def test_checkpoint_for_other_data_or_settings_is_refused_naming_the_difference(tmp_path):
    from ibp_rflvm.plumbing.checkpoint import CheckpointMismatch

    Y_train, _ = _data()
    path = str(tmp_path / "c.ckpt")
    kw = {"n_iter": 3, "n_frequencies": 6, "random_state": 0, "checkpoint_path": path}
    IBPRFLVM(**kw).fit(Y_train)
    cases = [
        ({"n_frequencies": 7}, Y_train, r"different settings \(n_frequencies: 6 in the checkpoint, 7 now\)"),
        ({"likelihood_params": {"a0": 2.0}}, Y_train, r"likelihood\.prior: .*'a0': 1\.0.*'a0': 2\.0"),
        ({"sampler": "paper"}, Y_train, r"moves: True in the checkpoint, False now"),
        ({}, Y_train[:, :-1], r"different data \(data of shape \(80, 15\), not \(80, 14\)\)"),
        ({}, Y_train + 1.0, r"different data \(data of the same shape but different values"),
    ]
    for change, Y, message in cases:
        with pytest.raises(CheckpointMismatch, match=message):
            IBPRFLVM(**{**kw, **change}).fit(Y, resume=True)


def _damaged_files(good: bytes) -> dict[str, bytes]:
    import io
    import pickle
    import zipfile

    foreign_zip = io.BytesIO()
    with zipfile.ZipFile(foreign_zip, "w") as zf:
        zf.writestr("hello.txt", "not a checkpoint")
    npz = io.BytesIO()
    np.savez(npz, a=np.arange(3))
    other_version = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(good)) as src, zipfile.ZipFile(other_version, "w") as dst:
        for name in src.namelist():
            text = src.read(name)
            if name == "meta.json":
                text = text.replace(b'"version":2', b'"version":99', 1)
            dst.writestr(name, text)
    flipped = bytearray(good)
    flipped[len(good) // 2] ^= 0xFF  # inside some array member: its CRC no longer matches
    return {
        "truncated": good[: len(good) // 2],
        "empty": b"",
        "random bytes": np.random.default_rng(0).bytes(5000),
        "a zip that is no checkpoint": foreign_zip.getvalue(),
        "an npz that is no checkpoint": npz.getvalue(),
        "a pickle": pickle.dumps({"version": 1, "sweep": 3}),
        "one flipped byte": bytes(flipped),
        "format version 99": other_version.getvalue(),
    }


def test_damaged_or_foreign_files_give_a_clear_error_naming_the_file(tmp_path):
    from ibp_rflvm.plumbing.checkpoint import CheckpointError

    Y_train, _ = _data()
    kw = {"n_iter": 3, "n_frequencies": 6, "random_state": 0}
    good_path = tmp_path / "good.ckpt"
    IBPRFLVM(checkpoint_path=str(good_path), **kw).fit(Y_train)
    for what, content in _damaged_files(good_path.read_bytes()).items():
        path = tmp_path / f"{what.replace(' ', '_')}.ckpt"
        path.write_bytes(content)
        with pytest.raises(CheckpointError, match=f"{path}.* not a usable ibp-rflvm checkpoint") as err:
            load_checkpoint(path)
        assert isinstance(err.value, ValueError), what
        if what == "format version 99":
            assert "format version 99, but this version of ibp-rflvm reads version 2" in str(err.value)
        with pytest.raises(CheckpointError, match=str(path)):
            IBPRFLVM(checkpoint_path=str(path), **kw).fit(Y_train, resume=True)


def test_loading_never_unpickles(tmp_path, monkeypatch):
    """A checkpoint is read without pickle; an object array planted in one is refused."""
    import pickle
    import zipfile

    from ibp_rflvm.plumbing.checkpoint import CheckpointError

    Y_train, _ = _data()
    path = tmp_path / "c.ckpt"
    kw = {"n_iter": 4, "burn_in": 2, "n_frequencies": 6, "random_state": 0}
    IBPRFLVM(checkpoint_path=str(path), **{**kw, "n_iter": 3}).fit(Y_train)  # one sample kept

    def refuse(*args, **kwargs):
        raise AssertionError("pickle was called while loading a checkpoint")

    with monkeypatch.context() as m:
        for name in ("load", "loads", "Unpickler"):
            m.setattr(pickle, name, refuse)
        resumed = IBPRFLVM(checkpoint_path=str(path), **kw).fit(Y_train, resume=True)
    _assert_same_chain(IBPRFLVM(**kw).fit(Y_train), resumed)

    # Replace one array member by an object array (only loadable through pickle).
    planted = tmp_path / "planted.ckpt"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(planted, "w") as dst:
        target = next(n for n in src.namelist() if n.endswith("state/X.npy"))
        for name in src.namelist():
            if name == target:
                with dst.open(name, "w") as member:
                    np.lib.format.write_array(member, np.array([print], dtype=object), allow_pickle=True)
            else:
                dst.writestr(name, src.read(name))
    with pytest.raises(CheckpointError, match=f"{planted}.*Object arrays cannot be loaded"):
        load_checkpoint(planted)


def test_checkpoints_time_their_sweeps_across_a_resume(tmp_path):
    """The wall seconds a checkpoint records (for `reproduce --status`) cover every sweep run so
    far, across a resume; a checkpoint written before they existed is timed from its resume."""
    from ibp_rflvm.plumbing.checkpoint import read_tree, write_tree

    Y_train, _ = _data()
    path = tmp_path / "c.ckpt"
    kw = {"n_frequencies": 8, "random_state": 3, "checkpoint_path": str(path), "burn_in": 2}
    IBPRFLVM(n_iter=4, **kw).fit(Y_train)
    first = load_checkpoint(path)
    assert first["timed_sweeps"] == 4 and first["seconds"] > 0.0
    IBPRFLVM(n_iter=6, **kw).fit(Y_train, resume=True)
    second = load_checkpoint(path)
    assert second["timed_sweeps"] == 6 and second["seconds"] > first["seconds"]
    # The same checkpoint without the two fields, as an older version wrote it.
    tree = read_tree(path)
    del tree["seconds"], tree["timed_sweeps"]
    write_tree(path, tree)
    assert (load_checkpoint(path)["seconds"], load_checkpoint(path)["timed_sweeps"]) == (0.0, 0)
    IBPRFLVM(n_iter=7, **kw).fit(Y_train, resume=True)
    assert load_checkpoint(path)["timed_sweeps"] == 1


def test_data_digest_in_row_blocks_equals_the_whole(monkeypatch):
    """The digest is hashed in row blocks to spare two N x J copies; a checkpoint written before
    (one hash of the whole array) must still match."""
    import hashlib

    import ibp_rflvm.mcmc.driver as chain_module
    from ibp_rflvm.model import Data

    Y = np.random.default_rng(0).poisson(2.0, (37, 5)).astype(float)
    Y[3, 1] = Y[20, 4] = np.nan
    data = Data.from_array(Y)
    whole = hashlib.sha256(np.nan_to_num(Y, nan=np.pi).tobytes())
    whole.update(data.observed.tobytes())
    monkeypatch.setattr(chain_module, "_DIGEST_BLOCK_BYTES", 8 * 5 * 4)  # 4 rows a block
    assert chain_module.data_description(data)["sha256"] == whole.hexdigest()
