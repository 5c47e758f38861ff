"""The estimators with ``backend="jax"`` (issue 43): the same seed gives the same chain, a
checkpoint resumes it, one compilation serves the fit, and bad choices are named."""

from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("jax")

from ibp_rflvm import IBPRFLVM, RFLVM  # noqa: E402
from ibp_rflvm.jax_backend import kernel  # noqa: E402
from ibp_rflvm.plumbing.checkpoint import CheckpointMismatch  # noqa: E402


def _counts(seed=0, n=40, j=12):
    rng = np.random.default_rng(seed)
    Y = rng.negative_binomial(2, 0.4, size=(n, j)).astype(float)
    Y[rng.random(Y.shape) < 0.1] = np.nan
    return Y


def _model(**kw):
    args = {"likelihood": "negbinom", "n_iter": 8, "n_frequencies": 8, "init_dims": 3, "max_dims": 8,
            "random_state": 3, "backend": "jax"}  # fmt: skip
    args.update(kw)
    return IBPRFLVM(**args)


def _fit(Y, **kw):
    return _model(**kw).fit(Y)


def _final(model):
    s = model.state_
    return (s.X, s.Z, s.W, s.params.beta, s.params.r)


def test_the_same_seed_gives_the_same_chain():
    Y = _counts()
    a, b = _final(_fit(Y)), _final(_fit(Y))
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
    c = _final(_fit(Y, random_state=4))
    assert not np.array_equal(a[3], c[3])


def test_a_checkpoint_resumes_the_same_chain(tmp_path):
    Y = _counts(1)
    whole = _fit(Y, n_iter=10, burn_in=5)
    path = tmp_path / "chain.zip"
    _fit(Y, n_iter=6, burn_in=5, checkpoint_path=str(path), checkpoint_every=3)
    resumed = _model(n_iter=10, burn_in=5, checkpoint_path=str(path), checkpoint_every=3).fit(Y, resume=True)
    for x, y in zip(_final(whole), _final(resumed), strict=True):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(whole.log_likelihood_, resumed.log_likelihood_)


def test_a_numba_checkpoint_is_not_resumed_on_jax(tmp_path):
    Y = _counts(2)
    path = tmp_path / "chain.zip"
    _fit(Y, n_iter=3, burn_in=2, backend="numba", checkpoint_path=str(path), checkpoint_every=3)
    with pytest.raises(CheckpointMismatch, match="backend"):
        _model(n_iter=6, burn_in=2, checkpoint_path=str(path), checkpoint_every=3).fit(Y, resume=True)


def test_a_checkpoint_of_the_old_device_sweep_is_not_resumed_by_the_default(tmp_path, monkeypatch):
    """A device chain checkpointed before issue 65 ran the paper's frequency step, no scale
    move and no HMC move, and stored those settings; today's default sweep differs, and says
    so."""
    Y = _counts(7)
    path = tmp_path / "chain.zip"
    spec_of = IBPRFLVM._spec

    def old_spec(self):
        return replace(spec_of(self), frequency_update="mh", scale_move=False, hmc_leapfrog=0)

    with monkeypatch.context() as m:
        m.setattr(IBPRFLVM, "_spec", old_spec)
        _fit(Y, n_iter=3, burn_in=2, checkpoint_path=str(path), checkpoint_every=3)
    with pytest.raises(CheckpointMismatch, match="frequency_update.*scale_move"):
        _model(n_iter=6, burn_in=2, checkpoint_path=str(path), checkpoint_every=3).fit(Y, resume=True)


def test_no_compilation_after_the_first_sweeps():
    Y = _counts(3)
    _fit(Y, n_iter=2, burn_in=1)  # compiles what these shapes need, in its first sweep
    before = kernel.compiled_count()
    model = _fit(Y, n_iter=30, random_state=11)
    assert kernel.compiled_count() == before
    assert model.n_active_.max() > 1  # K+ changed during the fit without new programs


def test_the_dense_model_runs_on_jax():
    model = RFLVM(n_components=2, likelihood="negbinom", n_iter=5, n_frequencies=8, random_state=0,
                  backend="jax").fit(_counts(4))  # fmt: skip
    assert np.all(np.isfinite(model.log_likelihood_))
    assert model.state_.Z.all()


@pytest.mark.parametrize(
    ("kw", "match"),
    [({"likelihood": "gaussian"}, "backend='numba'"), ({"backend": "cuda"}, "backend must be")],
)
def test_bad_choices_are_named(kw, match):
    Y = _counts(5)
    with pytest.raises(ValueError, match=match):
        _fit(Y, **kw)


def test_the_command_line_fits_on_jax(tmp_path):
    import json
    import zipfile

    from ibp_rflvm.cli import main

    path = tmp_path / "counts.csv"
    np.savetxt(path, np.nan_to_num(_counts(6)), delimiter=",", fmt="%d")
    out = tmp_path / "o"
    args = ["fit", str(path), "--likelihood", "negbinom", "--backend", "jax", "--n-iter", "4",
            "--n-frequencies", "8", "--max-dims", "8", "--quiet", "--checkpoint",
            "--out", str(out)]  # fmt: skip
    assert main(args) == 0
    with zipfile.ZipFile(out / "checkpoint.zip") as zf:
        meta = json.loads(zf.read("meta.json"))
    assert meta["tree"]["settings"]["backend"] == "jax"


def test_the_device_default_sweep_adapts_its_hmc_step_over_the_burn_in_only():
    """The default device sweep runs the HMC move (negative binomial: a gradient; multinomial:
    none, no move); its step factor moves in every burn-in sweep and is fixed after it."""
    from ibp_rflvm.jax_backend.hmc_device import STEP_FACTOR

    Y = _counts(11)
    assert _model()._spec().hmc_leapfrog == 10
    assert IBPRFLVM(likelihood="multinomial", backend="jax")._spec().hmc_leapfrog == 0
    # Sweeps 0-3 adapt in the first two fits; only 0-2 in the third, the same chain until then.
    burnt = _fit(Y, n_iter=5, burn_in=4).state_.tuning[STEP_FACTOR]
    longer = _fit(Y, n_iter=9, burn_in=4).state_.tuning[STEP_FACTOR]
    shorter = _fit(Y, n_iter=4, burn_in=3).state_.tuning[STEP_FACTOR]
    assert np.isfinite(burnt) and burnt != 1.0
    assert longer == burnt != shorter
