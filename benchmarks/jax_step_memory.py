"""Device memory of the whole-sweep device step per ``N x J`` entry, and its scatters, without data.

Run by hand (any machine; on a GPU the figures are the GPU compiler's)::

    PYTHONPATH=src python benchmarks/jax_step_memory.py --sizes 10000x2000 100000x2000 1000000x2000

For each size the sweep program (:func:`ibp_rflvm.jax_backend.kernel.device_run`, the NB
likelihood, M = 50 frequencies, a bias feature, ``max_dims`` 50) is compiled for abstract arrays
(nothing is allocated) and XLA's buffer assignment is read back (``memory_analysis()``):
arguments + outputs + temporaries - aliased bytes is what the program holds at once, the data
(float32 counts) included. Then the optimised HLO's scatters are listed: a scatter whose indices
may repeat is what a GPU under deterministic kernels may run as a serial loop, so the line
``scatters that may repeat an index`` should say 0 for the ones that grow with ``N``.
"""

from __future__ import annotations

import argparse
import re

from ibp_rflvm.jax_backend import jax
from ibp_rflvm.jax_backend.kernel import RUN_LENGTH, device_run
from ibp_rflvm.jax_backend.likelihoods import DeviceData, NegBinomDevice
from ibp_rflvm.jax_backend.rowsum import row_groups
from ibp_rflvm.jax_backend.sweep import DeviceState, SweepConfig
from ibp_rflvm.likelihoods.base import LikelihoodParams
from ibp_rflvm.samplers import ibp

jnp = jax.numpy
M, WIDTH = 50, 50


def abstract(n: int, j: int):
    f64 = jnp.float64
    L = 2 * M + 1

    def s(*shape, dtype=f64):
        return jax.ShapeDtypeStruct(shape, dtype)

    state = DeviceState(
        X=s(n, WIDTH), Z=s(n, WIDTH, dtype=bool), pi=s(WIDTH), alpha=s(), W=s(M, WIDTH),
        zeta=s(M, dtype=jnp.int32), mu=s(M, WIDTH), Sigma=s(M, WIDTH, WIDTH), eta=s(),
        Y=None, params=LikelihoodParams(beta=s(L, j), r=s(j)), loglik=s(), sweep=s(dtype=jnp.int64),
        z_state={"ibp_beta": s()},
    )  # fmt: skip
    data = DeviceData(s(n, j, dtype=jnp.float32), s(n))
    cfg = SweepConfig(
        dlik=NegBinomDevice(row_groups=row_groups(n)), bias=True, M=M, width=WIDTH, ibp=True, moves=True,
        flip_scale=0.2, transfer_min_cos=0.3, absorb_min_cos=0.3, pairs_per_dim=1.0, lam0=1.0,
        alpha_prior=(1.0, 1.0), fixed_alpha=None, eta_prior=(1.0, 1.0), sticks=1.0,
        harmonic=ibp.harmonic(n), new_rate_per_alpha=1.0 / n,
    )  # fmt: skip
    return s(RUN_LENGTH, 2, dtype=jnp.uint32), state, data, cfg


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", nargs="+", default=["10000x2000"])
    p.add_argument("--hlo", action="store_true", help="list every scatter of the optimised HLO")
    a = p.parse_args()
    print(f"jax {jax.__version__}, device {jax.devices()[0]}")
    for size in a.sizes:
        n, j = (int(v) for v in size.lower().split("x"))
        keys, state, data, cfg = abstract(n, j)
        compiled = device_run.lower(keys, 1, state, data, cfg).compile()
        mem = compiled.memory_analysis()
        held = mem.argument_size_in_bytes + mem.output_size_in_bytes + mem.temp_size_in_bytes
        held -= mem.alias_size_in_bytes
        print(f"{size}: sweep program holds {held / 2**30:.2f} GiB = {held / (n * j):.1f} bytes per entry "
              f"(arguments {mem.argument_size_in_bytes / 2**30:.2f} GiB, temporaries "
              f"{mem.temp_size_in_bytes / 2**30:.2f} GiB)")  # fmt: skip
        text = compiled.as_text()
        scatters = re.findall(r"= (\S+) scatter\((.*)", text)
        repeat = [s for s in scatters if "unique_indices=true" not in s[1]]
        print(f"{size}: scatters {len(scatters)}, scatters that may repeat an index {len(repeat)}")
        if a.hlo:
            for shape, rest in repeat:
                print(f"  {shape} scatter({rest[:160]}")


if __name__ == "__main__":
    main()
