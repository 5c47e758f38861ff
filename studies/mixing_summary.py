"""Summarise the JSON files of studies/mixing.py per start (run by hand).

``python studies/mixing_summary.py results/mixing/*.json`` prints, per file and per group of
starts, the split R-hat of K+, of the training log-likelihood and of the effective dimensions
over the second half, the range of held-out LPD per entry, and the effective dimensions'
posterior, so chains from generous starts can be judged apart from chains from K = 2.
With ``--agree`` it also prints, per group, the first sweep count from which the split R-hat
of K+ and of the log-likelihood (over the second half of the sweeps so far) stays below 1.1,
and the wall seconds of one chain to get there: the mixing-per-second figure.

A one-off study (``studies/``, not maintained): its result and command are in
docs/record/sampler.md.
"""

from __future__ import annotations

import json
import sys

import arviz as az
import numpy as np


def _rhat(rows: list) -> float:
    """Split R-hat; chains that are each constant but differ get infinity, all equal get 1."""
    a = np.asarray(rows, dtype=float)
    if a.shape[0] < 2:
        return float("nan")
    if np.all(a == a.flat[0]):
        return 1.0
    if np.all(a.std(axis=1) == 0):
        return float("inf")
    return float(az.rhat(a))


def summarise(path: str, r: dict) -> list[dict]:
    """Per group of starts, the figures the module doc lists; `r` is the file at `path`, loaded."""
    half = r["n_iter"] // 2
    starts = sorted({c["init_dims"] for c in r["chains"]})
    groups = [[s] for s in starts] + ([starts] if len(starts) > 1 else [])
    generous = [s for s in starts if s >= 6]
    if generous and len(generous) < len(starts) and len(generous) > 1:
        groups.append(generous)
    out = []
    for g in groups:
        ch = [c for c in r["chains"] if c["init_dims"] in g]
        eff = [c["effective_dims"] for c in ch]
        n_eff = min(len(e) for e in eff)
        eff_all = np.concatenate(eff)
        vals, cnt = np.unique(eff_all, return_counts=True)
        out.append({
            "file": path, "starts": g, "chains": len(ch),
            "rhat_k": _rhat([c["k_plus"][half:] for c in ch]),
            "rhat_ll": _rhat([c["loglik"][half:] for c in ch]),
            "rhat_eff": _rhat([e[-n_eff:] for e in eff]) if n_eff >= 4 else float("nan"),
            "k_median": [float(np.median(c["k_plus"][half:])) for c in ch],
            "eff_median": [float(np.median(e)) for e in eff],
            "lpd": [c["score"] for c in ch],
            "eff_posterior": dict(zip(vals.tolist(), np.round(cnt / eff_all.size, 2).tolist(), strict=True)),
            "perplexity": [c["perplexity"] for c in ch] if "perplexity" in ch[0] else None,
        })  # fmt: skip
    return out


def sweeps_to_agree(report: dict, starts: list[int], key: str = "loglik", threshold: float = 1.1) -> tuple:
    """First sweep count ``t`` (multiple of 10) from which the split R-hat of `key` over sweeps
    ``t/2 .. t`` stays below `threshold` for the chains from `starts`, and the wall seconds that
    many sweeps took (mean seconds per sweep of those chains times ``t``). `report` is one
    loaded JSON file of studies/mixing.py."""
    ch = [c for c in report["chains"] if c["init_dims"] in starts]
    n = report["n_iter"]
    ok_from = None
    for t in range(20, n + 1, 10):
        good = _rhat([c[key][t // 2 : t] for c in ch]) < threshold
        ok_from = (ok_from or t) if good else None
    if ok_from is None:
        return None, None
    per_sweep = float(np.mean([c["seconds"] / n for c in ch]))
    return ok_from, ok_from * per_sweep


def main() -> None:
    args = sys.argv[1:]
    agree = "--agree" in args
    for path in [a for a in args if a != "--agree"]:
        report = json.load(open(path))
        if agree:
            starts = sorted({c["init_dims"] for c in report["chains"]})
            for group in [[s] for s in starts] + ([starts] if len(starts) > 1 else []):
                for key in ("k_plus", "loglik"):
                    t, secs = sweeps_to_agree(report, group, key)
                    when = f"from sweep {t} ({secs:.0f} s of one chain)" if t else "never"
                    print(f"{path} starts {group}: split R-hat of {key} below 1.1 {when}")
        for s in summarise(path, report):
            lpd = s["lpd"]
            ppl = s["perplexity"]
            extra = f"; perplexity {min(ppl):.1f}-{max(ppl):.1f}" if ppl else ""
            print(f"{s['file']} starts {s['starts']} ({s['chains']} chains): R-hat K+ {s['rhat_k']:.2f}, "
                  f"loglik {s['rhat_ll']:.2f}, eff {s['rhat_eff']:.2f}; K+ medians {s['k_median']}; "
                  f"eff medians {s['eff_median']}; LPD/entry {min(lpd):.4f} to {max(lpd):.4f} "
                  f"(spread {max(lpd) - min(lpd):.4f}){extra}; "
                  f"eff posterior {s['eff_posterior']}")  # fmt: skip


if __name__ == "__main__":
    main()

