"""Add Table 3's kNN accuracy to cell records made before records kept it (run by hand).

``python studies/backfill_knn.py results/default``

For every record under ``OUT/cells`` of a data set Table 3 shows that has no ``knn`` entry but
whose latent matrix is still there, score the latent matrix exactly as a cell now does when it
finishes and write the record back (atomically), marking the entry ``"backfilled": true``.
Records without their latent file are listed and left alone.

A one-off study (``studies/``, not maintained): its result and command are in
docs/record/reproduction.md.
"""

from __future__ import annotations

import argparse

from ibp_rflvm.evaluation.cells import _knn_record, dataset_arrays
from ibp_rflvm.evaluation.experiments import LATENT_DATASETS
from ibp_rflvm.evaluation.store import load_latent, load_records, save_record


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    args = p.parse_args()
    for rec in load_records(args.out):
        if rec.get("knn") is not None or rec["dataset"] not in LATENT_DATASETS:
            continue
        s = rec["settings"]
        try:
            latent = load_latent(args.out, rec)
        except OSError:
            print(f"{rec['cell']}: no latent file, left alone")
            continue
        labels = dataset_arrays(rec["dataset"], bool(s.get("sqrt", False)), None, s["max_rows"])[1]
        knn = _knn_record(rec["dataset"], latent, labels, s["base_seed"])
        if knn is None:
            continue
        rec["knn"] = {**knn, "backfilled": True}
        save_record(args.out, rec)
        print(f"{rec['cell']}: knn accuracy {knn['accuracy']:.4f}")


if __name__ == "__main__":
    main()
