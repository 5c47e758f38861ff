"""The prior on the sparsity indicators ``Z``, as a component the moves ask (:mod:`.base`).

* ``"ibp"`` (:class:`~.indian_buffet.IndianBuffet`): the Indian buffet process, one- or
  two-parameter, binary ``Z``; the paper's model and the default.
* ``"gamma-poisson"`` (:class:`~.gamma_poisson.GammaPoisson`): the infinite gamma-Poisson
  feature model of Titsias (2007), counts in ``Z`` that scale the coordinates they switch on.
"""

from __future__ import annotations

from .base import FeaturePrior
from .gamma_poisson import GammaPoisson
from .indian_buffet import IndianBuffet

#: The names ``z_prior`` takes.
Z_PRIORS = ("ibp", "gamma-poisson")


#: Settings checkpoints of earlier versions stored for every prior, with the value under which
#: a prior other than their own runs as it does now (a checkpoint that holds it belongs to a
#: prior without that setting); and, for a checkpoint written before the setting existed, the
#: value its chain ran with.
LEGACY_SETTINGS = {
    "z_prior": "ibp", "ibp_beta": 1.0, "ibp_beta_prior": [1.0, 1.0], "ibp_beta_warmup": 0,
    "z_prior_rate": 1.0,
}  # fmt: skip
#: A chain state's variables that earlier versions stored outside ``z_state``, and traces
#: stored under another name (old: new).
LEGACY_STATE = ("ibp_beta",)
RENAMED_TRACES = {"beta": "ibp_beta"}


def make_prior(
    name: str,
    ibp_beta: float | None = 1.0,
    ibp_beta_prior: tuple[float, float] = (1.0, 1.0),
    rate: float = 1.0,
) -> FeaturePrior:
    """The prior on ``Z`` called `name`, from the estimators' parameters: the IBP's `ibp_beta`
    and `ibp_beta_prior`, the gamma-Poisson's `rate`.

    Parameters
    ----------
    name : str
        One of :data:`Z_PRIORS`.
    ibp_beta : float or None
        The IBP's sharing parameter (1: one-parameter; None: learned). Another prior needs 1.
    ibp_beta_prior : tuple of (float, float)
        The gamma prior of a learned `ibp_beta`.
    rate : float
        The gamma-Poisson's rate ``b``.

    Returns
    -------
    FeaturePrior
        The prior.

    Raises
    ------
    ValueError
        For a name not in :data:`Z_PRIORS`, or a parameter of one prior set for another.
    """
    if name == "ibp":
        if rate != 1.0:
            raise ValueError(
                f"z_prior_rate is the gamma-Poisson prior's; z_prior='ibp' needs it at 1.0, got {rate!r}"
            )
        return IndianBuffet(ibp_beta, ibp_beta_prior)
    if name == "gamma-poisson":
        if ibp_beta != 1.0:
            raise ValueError(
                f"z_prior={name!r} has no ibp_beta (the IBP's): it needs ibp_beta=1.0; got {ibp_beta!r}"
            )
        return GammaPoisson(rate)
    raise ValueError(f"z_prior must be one of {list(Z_PRIORS)}; got {name!r}")


def default_prior() -> FeaturePrior:
    """The model's prior on ``Z`` unless one is chosen: the paper's one-parameter IBP."""
    return IndianBuffet()


def legacy_state(tree: dict) -> dict:
    """A chain state's checkpoint tree with the prior's variables that an earlier version stored
    beside the state's arrays moved into ``z_state``."""
    tree = dict(tree)
    z_state = dict(tree.get("z_state") or {})
    for name in LEGACY_STATE:
        if name in tree:
            z_state[name] = tree.pop(name)
    tree["z_state"] = z_state
    return tree


__all__ = [
    "FeaturePrior", "GammaPoisson", "IndianBuffet", "LEGACY_SETTINGS", "RENAMED_TRACES", "Z_PRIORS",
    "default_prior", "legacy_state", "make_prior",
]  # fmt: skip
