"""Re-derive the "own d" entry of Table 3's embedding records under the current rule (run by hand).

``python studies/backfill_embedding_own.py results/embedding [--write]``

Stop 36 raised the posterior embedding's own dimension from "the fewest components carrying 90%
of the kernel's trace" to that number or the latent's width, whichever is more (the posterior
median of ``K+`` over the kept sweeps; the dense model's ``D``; docs/embedding.md section 1). A
record keeps the kNN accuracy at the old own ``d``, at the matched ``D``, at 2 and at 5, so where
the new ``d`` is one of those the new entry is already measured: it is copied, marked
``"rule": "max(90% trace, median K+)"`` and ``"from": <the entry it came from>``. Records whose
new ``d`` is none of them are listed ("rerun") and left alone; rerun those cells instead.
Without ``--write`` nothing is written.

A one-off study (``studies/``, not maintained): its result and command are in
docs/record/embedding.md.
"""

from __future__ import annotations

import argparse

import numpy as np

from ibp_rflvm.evaluation.store import load_records, save_record
from ibp_rflvm.summaries.dimensions import posterior_median, weighted_posterior

RULE = "max(90% trace, median K+)"


def latent_width(rec: dict) -> int:
    """The rule's floor: the lower median of ``K+`` over the kept sweeps (the default burn-in,
    half the sweeps), or the dense model's ``D``."""
    trace = rec.get("k_plus_trace")
    if trace is None:
        return int(rec["D"])
    kept = np.asarray(trace[len(trace) // 2 :])
    return posterior_median(weighted_posterior(kept[None, :], np.ones(1)))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--write", action="store_true")
    args = p.parse_args()
    for rec in load_records(args.out):
        emb = rec.get("embedding_knn")
        if not emb or emb["own"].get("rule") == RULE:
            continue
        old = emb["own"]["d"]
        width = latent_width(rec)
        new_d = max(old, width)
        # The old own d was capped by the components available; so is every stored entry.
        source = next((k for k in ("own", "matched", "2", "5") if emb[k]["d"] == new_d), None)
        if source is None:
            print(f"{rec['cell']}: own d {old} -> {new_d} (width {width}): not stored, rerun")
            continue
        print(f"{rec['cell']}: own d {old} -> {new_d} (width {width}) from {source}: "
              f"{emb['own']['accuracy']:.4f} -> {emb[source]['accuracy']:.4f}")
        if args.write:
            emb["own"] = {**emb[source], "rule": RULE, "from": source, "previous_d": old}
            save_record(args.out, rec)


if __name__ == "__main__":
    main()
