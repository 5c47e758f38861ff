"""A prior on ``Z`` written entirely here, through the protocol, runs in every layer.

:class:`GridBetaIBP` is the two-parameter IBP with ``beta`` uniform on a grid (its
hyperparameter) and drawn, every sweep, from its discrete conditional given ``Z`` and ``alpha``
(its own step; its variable ``grid_beta``). Nothing outside this file knows it: the sweep, the
record, the estimator's fitted attributes, the diagnostics and checkpoints read it through
:class:`ibp_rflvm.priors.FeaturePrior`.
"""

from typing import NamedTuple

import numpy as np
import pytest

from ibp_rflvm import IBPRFLVM, model
from ibp_rflvm.datasets import make_cambridge
from ibp_rflvm.priors import IndianBuffet
from ibp_rflvm.priors.indian_buffet import propose_flip, share_log_ratio
from ibp_rflvm.samplers import z_prior
from ibp_rflvm.samplers.ibp_beta import log_z_prior
from ibp_rflvm.summaries.diagnostics import batch_mean_se

GRID = (0.25, 1.0, 4.0)


@z_prior.hyper_class
class GridHyper(NamedTuple):
    """What the compiled moves read of the prior: the chain's current ``beta``."""

    beta: float


# The moves' compiled questions for this prior's hyper: the IBP's at the current beta.
z_prior.register(GridHyper, propose_flip, share_log_ratio, share_log_ratio)


class GridBetaIBP:
    """The IBP with ``beta ~ Uniform(grid)``; the conditionals of ``Z`` are the IBP's at the
    chain's current ``beta``."""

    name = "grid-beta-ibp"
    max_value = 1
    learned_traces = ("grid_beta",)

    def __init__(self, grid=GRID, beta=None):
        self.grid = tuple(float(g) for g in grid)
        self.beta = self.grid[0] if beta is None else float(beta)
        self._ibp = IndianBuffet(self.beta)
        self.hyper = GridHyper(self.beta)

    def __getattr__(self, name):
        # The rest of the protocol (weights, singletons, alpha, new rows) is the IBP's at this beta.
        if name.startswith("__") or name == "_ibp":
            raise AttributeError(name)
        return getattr(self._ibp, name)

    def __repr__(self):
        return f"GridBetaIBP({self.grid!r})"

    def settings(self):
        return {"z_prior": self.name, "grid": list(self.grid)}

    def start_state(self):
        return {"grid_beta": self.beta}

    def at(self, state):
        return GridBetaIBP(self.grid, state["grid_beta"])

    def needs_moves(self):
        return f"z_prior={self.name!r} updates Z by the dimension moves (it has no slice step)"

    def update_z(self, rng, w, sweep, view_of, lam0, max_dims, moves):
        return None, moves, float("nan")

    def update_state(self, rng, w, sweep):
        counts = w.Z.sum(axis=0)
        logp = np.array([log_z_prior(counts, w.Z.shape[0], w.alpha, b) for b in self.grid])
        p = np.exp(logp - logp.max())
        return {"grid_beta": self.grid[int(rng.choice(len(self.grid), p=p / p.sum()))]}

    def on_device(self, n_rows):
        raise ValueError(f"backend='jax' runs the IBP's moves only; z_prior={self.name!r} runs on numba")


def _data():
    return make_cambridge(40, random_state=0)["Y"][:, :8]


def test_a_prior_defined_here_fits_records_and_resumes(tmp_path):
    kw = {"n_frequencies": 6, "random_state": 3, "burn_in": 4}
    est = IBPRFLVM(n_iter=10, z_prior=GridBetaIBP(), **kw).fit(_data())
    assert est.spec_.z_prior.name == "grid-beta-ibp"
    assert est.traces_["grid_beta"].shape == (1, 10) and set(est.grid_beta_) <= set(GRID)
    assert "ibp_beta" not in est.traces_ and np.all(est.ibp_beta_ == 1.0)
    assert est.to_inference_data().posterior["grid_beta"].shape == (1, 6)
    assert np.all(est.posterior_.moves.new_dims == 0)  # no slice step
    path = tmp_path / "chain.ckpt"
    first = IBPRFLVM(n_iter=6, z_prior=GridBetaIBP(), checkpoint_path=str(path), checkpoint_every=1, **kw)
    first.fit(_data())
    resumed = IBPRFLVM(n_iter=10, z_prior=GridBetaIBP(), checkpoint_path=str(path), **kw)
    resumed.fit(_data(), resume=True)
    np.testing.assert_array_equal(resumed.grid_beta_, est.grid_beta_)
    np.testing.assert_array_equal(resumed.log_likelihood_, est.log_likelihood_)
    with pytest.raises(ValueError, match="different settings"):
        IBPRFLVM(n_iter=12, z_prior=GridBetaIBP((1.0, 2.0)), checkpoint_path=str(path), **kw).fit(
            _data(), resume=True
        )
    with pytest.raises(ValueError, match="its own hyperparameters"):
        IBPRFLVM(n_iter=2, z_prior=GridBetaIBP(), ibp_beta=2.0).fit(_data())
    with pytest.raises(ValueError, match="no slice step"):
        IBPRFLVM(n_iter=2, z_prior=GridBetaIBP(), sampler="paper").fit(_data())


def test_the_new_priors_step_leaves_its_prior_in_place():
    """Without data the chain samples the prior: ``beta`` uniform on the grid, and ``K+`` the
    two-parameter IBP's mixture over it."""
    n, alpha, burn, n_sweeps = 10, 2.0, 100, 2500
    rng = np.random.default_rng(0)
    data = model.Data.from_array(np.zeros((n, 1)))
    spec = model.ModelSpec(n_frequencies=3, fixed_alpha=alpha, use_likelihood=False, z_prior=GridBetaIBP())
    state = model.init_state(rng, data, spec)
    betas, k_plus = [], []
    for t in range(n_sweeps):
        state, _ = model.sweep(rng, state, data, spec)
        if t >= burn:
            betas.append(state.z_state["grid_beta"])
            k_plus.append(state.k_plus)
    betas, k_plus = np.asarray(betas), np.asarray(k_plus, dtype=float)
    for b in GRID:
        mean, se = batch_mean_se((betas == b).astype(float))
        assert abs(mean - 1 / len(GRID)) < 4 * se + 0.02, (b, mean, se)
    expected = np.mean([alpha * sum(b / (b + i) for i in range(n)) for b in GRID])
    mean, se = batch_mean_se(k_plus)
    assert abs(mean - expected) < 4 * se + 0.05 * expected, (mean, se, expected)
