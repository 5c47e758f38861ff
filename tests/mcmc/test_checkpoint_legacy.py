"""Checkpoints written before the prior on ``Z`` held its own settings and variables resume.

Earlier versions stored every prior's settings flat (``ibp_beta``, ``ibp_beta_prior``,
``ibp_beta_warmup``, ``z_prior``, ``z_prior_rate``, ``ibp``), the state's ``ibp_beta`` beside its
arrays and a trace ``ibp_beta`` for every chain. A checkpoint of today's run is rewritten in that
form here; resuming it must give the uninterrupted chain bit for bit.
"""

import numpy as np
import pytest

from ibp_rflvm import IBPRFLVM, RFLVM, holdout_mask
from ibp_rflvm.datasets import make_cambridge
from ibp_rflvm.plumbing.checkpoint import read_tree, write_tree

OLD_SETTINGS = {
    "z_prior": "ibp", "ibp_beta": 1.0, "ibp_beta_prior": [1.0, 1.0], "ibp_beta_warmup": 0,
    "z_prior_rate": 1.0,
}  # fmt: skip


def _as_written_before(path) -> None:
    tree = read_tree(path)
    for key, value in OLD_SETTINGS.items():
        tree["settings"].setdefault(key, value)
    state = tree["state"]
    z_state = state.pop("z_state")
    state["ibp_beta"] = float(z_state.get("ibp_beta", 1.0))
    traces = tree["record"]["traces"]
    traces.setdefault("ibp_beta", np.ones(len(traces["n_active"])))
    write_tree(path, tree)


@pytest.mark.parametrize(
    "make",
    [
        lambda **kw: IBPRFLVM(ibp_beta=None, **kw),
        lambda **kw: IBPRFLVM(z_prior="gamma-poisson", **kw),
        lambda **kw: RFLVM(n_components=2, **kw),
    ],
    ids=["ibp-beta-learned", "gamma-poisson", "dense"],
)
def test_an_older_checkpoint_resumes_bit_for_bit(tmp_path, make):
    Y = holdout_mask(make_cambridge(40, random_state=2)["Y"][:, :8], 0.2, random_state=0)[0]
    kw = {"n_frequencies": 6, "random_state": 5, "burn_in": 3}
    full = make(n_iter=6, **kw).fit(Y)
    path = tmp_path / "chain.ckpt"
    make(n_iter=4, checkpoint_path=str(path), checkpoint_every=1, **kw).fit(Y)
    _as_written_before(path)
    resumed = make(n_iter=6, checkpoint_path=str(path), checkpoint_every=1, **kw).fit(Y, resume=True)
    assert set(resumed.traces_) == set(full.traces_)
    for name, trace in full.traces_.items():
        np.testing.assert_array_equal(trace, resumed.traces_[name], err_msg=name)
    np.testing.assert_array_equal(full.ibp_beta_, resumed.ibp_beta_)
    np.testing.assert_array_equal(full.latent_, resumed.latent_)
