"""The device's Gibbs pass of a column of ``Z`` with its stick (:func:`ibp_rflvm.jax_backend.
ibp_device.gibbs_columns`, issue 65): its exact law on a column small enough to enumerate."""

import itertools

import numpy as np
import pytest
from scipy import special, stats

pytest.importorskip("jax")

from ibp_rflvm.jax_backend import ibp_device, jax  # noqa: E402

jnp = jax.numpy

#: Each row's ``log p(y_i | z_i = 1) - log p(y_i | z_i = 0)`` in the column.
GAINS = np.array([-1.0, 0.5, 2.0, -0.3])


def _exact(beta: float) -> dict[tuple, float]:
    """The column's law with its stick integrated out: the active column's factor
    ``pi^(m - 1) (1 - pi)^(N - m + beta - 1)`` gives ``B(m, N - m + beta)``, times each row's
    likelihood, over the columns with ``m >= 1`` (an active column stays active)."""
    n = GAINS.size
    weights = {}
    for z in itertools.product((0, 1), repeat=n):
        m = sum(z)
        if m:
            weights[z] = np.exp(special.betaln(m, n - m + beta) + GAINS @ np.array(z))
    total = sum(weights.values())
    return {z: w / total for z, w in weights.items()}


def _final_columns(rounds: int, sticks: float, chains=20000, steps=25, seed=0) -> np.ndarray:
    """The column after `steps` passes from the all-on start and ``pi = 1/2``, in `chains`
    independent chains: the state's ``P`` is the column itself (``x = 1``, ``w = 1``) and a
    row's log-likelihood is its gain times it, so a flip changes it by the row's gain."""
    n = GAINS.size
    gains = jnp.asarray(GAINS)

    def score(P):
        return gains * P[:, 0]

    def chain(key):
        X = jnp.ones((n, 1))
        Z = jnp.ones((n, 1), dtype=bool)
        W = jnp.ones((1, 1))
        P = (X * Z) @ W.T
        s = ibp_device.ZState(X, Z, P, score(P), W, jnp.zeros((1, 1)), jnp.ones((1, 1, 1)))
        pi = jnp.full((1,), 0.5)
        active = jnp.ones((1,), dtype=bool)

        def body(t, c):
            s, pi = c
            k = jax.random.fold_in(key, t)
            s, _, pi = ibp_device.gibbs_columns(k, s, pi, active, score, rounds, sticks)
            return s, pi

        s, _ = jax.lax.fori_loop(0, steps, body, (s, pi))
        return s.Z[:, 0]

    keys = jax.random.split(jax.random.key(seed), chains)
    return np.asarray(jax.jit(jax.vmap(chain))(keys)).astype(int)


def _chi2_pvalue(columns: np.ndarray, beta: float) -> float:
    exact = _exact(beta)
    counts = {z: 0 for z in exact}
    for row in map(tuple, columns):
        counts[row] += 1  # an empty column would be a KeyError: the pass never empties one
    observed = np.array([counts[z] for z in exact])
    expected = np.array([exact[z] for z in exact]) * columns.shape[0]
    return float(stats.chisquare(observed, expected).pvalue)


@pytest.mark.parametrize("beta", [1.0, 2.5])
def test_the_column_with_its_stick_has_the_exact_law(beta):
    """Independent chains, so the chi-square's law is exact; 25 passes of 4 rounds from the
    all-on start and a stick of 1/2 reach the law well within the test's resolution."""
    assert _chi2_pvalue(_final_columns(4, beta), beta) > 1e-3


def test_the_law_test_sees_a_fixed_stick_and_a_wrong_stick():
    """Its power: one round never moves the stick (the column's law given ``pi = 1/2``, not
    the posterior), and the stick's conditional with the wrong ``beta`` is the wrong law."""
    assert _chi2_pvalue(_final_columns(1, 1.0), 1.0) < 1e-12
    assert _chi2_pvalue(_final_columns(4, 2.5), 1.0) < 1e-12
