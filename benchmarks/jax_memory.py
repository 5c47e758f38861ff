"""Device memory the JAX backend's compiled programs need, per ``N x J`` entry, without the data.

Run by hand::

    PYTHONPATH=src python benchmarks/jax_memory.py --sizes 10000x2000 100000x2000 1000000x2000

Each program of one NB sweep (:mod:`ibp_rflvm.jax_backend.programs`) is compiled for abstract
arrays of the given size (nothing is allocated), with the estimator's defaults (M = 50
frequencies, a bias feature, ``max_dims`` 50), and XLA's buffer assignment is read back
(``compiled.memory_analysis()``): arguments + outputs + temporaries - aliased bytes is what the
program holds at once. The largest, over the sweep's programs, is the sweep's peak; the data
(float32 counts) are among every program's arguments. On a GPU the compiler's choices differ
somewhat; ``bench_jax.py`` reads the device's measured peak there.
"""

from __future__ import annotations

import argparse

from ibp_rflvm.jax_backend import jax, programs
from ibp_rflvm.jax_backend.likelihoods import DeviceData, NegBinomDevice

jnp = jax.numpy
M, WIDTH = 50, 56


def shapes(n: int, j: int) -> dict:
    f64 = jnp.float64
    L = 2 * M + 1

    def s(*shape, dtype=f64):
        return jax.ShapeDtypeStruct(shape, dtype)

    data = DeviceData(s(n, j, dtype=jnp.float32), s(n))
    dparams = {"beta": s(L, j), "r": s(j)}
    return {
        "n": n, "data": data, "dparams": dparams, "H": s(n, WIDTH), "W": s(M, WIDTH), "Phi": s(n, L),
        "psi": s(n, j), "ll": s(n), "const": s(n), "key": s(2, dtype=jnp.uint32), "beta": s(L, j),
        "W_prop": s(M, WIDTH), "log_u": s(M), "step": s(n), "w_col": s(M), "P": s(n, M),
    }  # fmt: skip


def analyse(n: int, j: int) -> list[tuple[str, float]]:
    a = shapes(n, j)
    state = (a["ll"], a["Phi"], a["psi"], a["P"])
    static = {"dlik": NegBinomDevice(), "bias": True, "M": M}
    calls = {
        "feature_state": (programs.feature_state, (a["H"], a["W"], a["dparams"], a["data"])),
        "column_change": (
            programs.column_change,
            (a["step"], a["w_col"], a["P"], a["beta"], a["const"], a["ll"], a["dparams"], a["data"]),
        ),
        "ess_x": (
            programs.ess_x,
            (a["key"], a["H"], a["H"], a["W"], a["beta"], a["const"], state, a["dparams"], a["data"]),
        ),
        "mh_frequencies": (
            programs.mh_frequencies,
            (a["W_prop"], a["log_u"], a["H"], a["W"], a["beta"], a["const"], state, a["dparams"], a["data"]),
        ),
        "update_params": (programs.update_params, (a["key"], a["Phi"], a["dparams"], a["data"])),
    }
    out = []
    for name, (fn, args) in calls.items():
        mem = fn.lower(*args, **static).compile().memory_analysis()
        held = (
            mem.argument_size_in_bytes + mem.output_size_in_bytes + mem.temp_size_in_bytes
            - mem.alias_size_in_bytes
        )
        out.append((name, float(held)))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", nargs="+", default=["10000x2000"])
    a = p.parse_args()
    print(f"jax {jax.__version__}, compiled for {jax.devices()[0].platform}")
    for size in a.sizes:
        n, j = (int(v) for v in size.lower().split("x"))
        rows = analyse(n, j)
        for name, held in rows:
            print(f"{size} {name}: {held / 2**30:.2f} GiB ({held / (n * j):.1f} bytes per entry)")
        name, peak = max(rows, key=lambda r: r[1])
        print(f"{size} peak: {name}, {peak / 2**30:.2f} GiB, {peak / (n * j):.1f} bytes per entry")


if __name__ == "__main__":
    main()
