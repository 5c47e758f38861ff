"""What in the IBP lowers the PBMC Leiden ARI? (issue 32; docs/embedding.md section 5)

The dense RFLVM on the log-normalised counts of scanpy's 700 PBMCs gives an ``embedding_`` Leiden
ARI of 0.49-0.51 (D = 20-50) and the Gaussian IBP-RFLVM 0.31-0.34 under the same likelihood,
frequencies and sweeps. This probe varies one thing of the IBP at a time and scores each fit as
``studies/pbmc_summaries.py`` does (5-fold 5-NN, Leiden ARI at resolutions 1.0 and 0.5 on a
``sc.pp.neighbors`` graph), beside the latent's shape: ``K+``, the mean number of dimensions a row
uses (non-zero entries of the final ``latent_``) and ``alpha``:

* ``--alpha-prior SHAPE RATE``: the Gamma prior of the IBP concentration; since ``E[dims per row]
  = alpha``, a prior concentrated at a large ``alpha`` makes the rows dense;
* ``--ibp-beta B``: the two-parameter IBP's sharing parameter (``0`` = learned);
* ``--init-dims K`` and ``--max-dims K``.

Run (one fit, about 340 CPU s at the defaults)::

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src .venv/bin/python studies/pbmc_ibp_side.py --seed 0 \\
        [--alpha-prior 400 20] [--ibp-beta 0.1] [--init-dims 50]

A one-off study (``studies/``, not maintained): its result and command are in
docs/record/embedding.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import single_cell as scx  # noqa: E402
from ibp_rflvm import IBPRFLVM  # noqa: E402
from ibp_rflvm.summaries.embedding import posterior_embedding  # noqa: E402
from pbmc_summaries import load_cells, score  # noqa: E402  (this folder is on the path when run as a script)


def main() -> None:
    import scanpy as sc

    fmt = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=fmt)
    parser.add_argument("--sweeps", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--alpha-prior", type=float, nargs=2, default=(1.0, 1.0))
    parser.add_argument("--ibp-beta", type=float, default=1.0, help="0 = learned")
    parser.add_argument("--init-dims", type=int, default=12)
    parser.add_argument("--max-dims", type=int, default=50)
    # gaussian: the log-normalised counts; negbinom: the counts, size factors "total" (the example's)
    parser.add_argument("--likelihood", choices=("gaussian", "negbinom"), default="gaussian")
    parser.add_argument("--save", type=Path, help="write the representations and labels (.npz)")
    args = parser.parse_args()
    sc.settings.verbosity = 0
    counts, labels, logged = load_cells()
    model = IBPRFLVM(
        n_iter=args.sweeps, random_state=args.seed, alpha_prior=tuple(args.alpha_prior),
        ibp_beta=None if args.ibp_beta == 0 else args.ibp_beta, init_dims=args.init_dims,
        max_dims=args.max_dims,
    )  # fmt: skip
    if args.likelihood == "negbinom":  # the example's model (examples/single_cell.py)
        model.set_params(likelihood="negbinom", likelihood_params={"size_factors": "total"})
    t0 = time.process_time()
    model.fit(logged if args.likelihood == "gaussian" else counts)
    cpu = time.process_time() - t0
    used = (model.latent_ != 0).sum(axis=1)
    trace = model.traces_["n_active"][0]
    kplus = f" (second-half median {np.median(trace[len(trace) // 2 :]):.0f})"
    print(f"IBP-RFLVM ({args.likelihood}), seed {args.seed}, alpha prior {tuple(args.alpha_prior)}, "
          f"beta {args.ibp_beta}, init {args.init_dims}, cap {args.max_dims}, {args.sweeps} sweeps: "
          f"fit {cpu:.0f} CPU s; "
          f"final K+ {model.latent_.shape[1]}{kplus}; alpha {model.alpha_[-1]:.2f}; dims per row "
          f"mean {used.mean():.2f} (quartiles {np.percentile(used, [25, 50, 75])}); "
          f"embedding_dims_ {model.embedding_dims_}", flush=True)  # fmt: skip
    wide = model.embedding(min(50, posterior_embedding(model.posterior_).n_available))
    if args.save is not None:
        arrays = {"embedding": model.embedding_, "wide": wide, "latent": model.latent_, "labels": labels}
        np.savez_compressed(args.save, alpha=model.alpha_, n_active=model.traces_["n_active"][0], **arrays)
    score(model.embedding_, labels, "embedding_")
    score(wide, labels, "embedding(50)")
    predicted = model.predict() if args.likelihood == "gaussian" else scx.log_normalised(model.predict())
    score(scx.pca(predicted, 50), labels, "PCA of predict()")
    score(model.latent_, labels, "final sample latent_")


if __name__ == "__main__":
    main()
