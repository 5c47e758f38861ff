"""Checkpoints: a chain killed with SIGKILL and resumed equals the uninterrupted chain, bit for bit."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from ibp_rflvm import IBPRFLVM, RFLVM, holdout_mask
from ibp_rflvm.chain import load_checkpoint
from ibp_rflvm.datasets import make_cambridge

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
        np.testing.assert_array_equal(sa["H"], sb["H"])
        np.testing.assert_array_equal(sa["params"]["beta"], sb["params"]["beta"])


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

    from ibp_rflvm.chain import remove_stale_temporaries

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
    import ibp_rflvm.chain as chain_module

    Y_train, _ = _data()
    kw = {"n_components": 2, "n_frequencies": 8, "random_state": 3, "n_chains": 2, "n_jobs": 1}
    reference = RFLVM(n_iter=10, **kw).fit(Y_train)
    path = str(tmp_path / "c.ckpt")
    real_sweep = chain_module.sweep
    calls = {"n": 0}

    def interrupted_sweep(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 17:  # chain 0 done (10 sweeps), chain 1 stopped in its 7th sweep
            raise KeyboardInterrupt
        return real_sweep(*args, **kwargs)

    monkeypatch.setattr(chain_module, "sweep", interrupted_sweep)
    with pytest.raises(KeyboardInterrupt):
        RFLVM(n_iter=10, checkpoint_path=path, checkpoint_every=3, **kw).fit(Y_train)
    monkeypatch.setattr(chain_module, "sweep", real_sweep)
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
