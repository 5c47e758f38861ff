"""Table 3: is the latent space useful? k-nearest-neighbour accuracy of every method's latent space.

The RFLVM literature (Gundersen et al., 2021) judges a latent space by how well a k-nearest-
neighbour classifier predicts the data set's labels from it under 5-fold cross-validation; their
code uses one neighbour. Table 3 does the same from the harness's stored cells, refitting nothing:

* the latent matrix is the cell's ``<cell>.latent.npy``: the estimator's ``latent_``, which is the
  final MCMC sample for the RFLVMs and IBP-LFM (a posterior mean of ``X`` is not defined across
  samples that differ by rotations and by which features are active) and the posterior mean for
  GPLVM (of ``q(X)``), PFA and LDA (of the factor scores / topic proportions);
* its rows are the data set's rows after the cell's ``max_rows`` subset (the hold-out mask hides
  entries, not rows), so the labels are ``dataset_arrays(...)[1]`` with the cell's settings;
* accuracy is the fraction of rows whose label is predicted correctly by a ``KNN_NEIGHBOURS``-
  nearest-neighbour classifier (Euclidean, unscaled) fitted on the other folds of a stratified
  ``KNN_FOLDS``-fold split; the split's seed is fixed per data set (:func:`knn_seed`), so every
  method and trial of a data set is scored on the same folds;
* constant columns (an IBP dimension no row uses) do not change any distance and are dropped; a
  latent space with no other column (``K+ = 0``) predicts each test fold's majority training
  label, the best a classifier without features can do;
* a PCA reference row per IBP model of the block, with ``D = max(1, K+)`` of that IBP model's cell
  in the same trial (the D its finite counterparts got): principal component scores of the cell's
  training matrix (held-out and missing entries filled with their column's observed mean; counts
  as ``log1p``).

Cells computed since the record kept it carry their accuracy (``knn``: accuracy, split seed,
neighbours, folds), scored the same way when the cell finished; the table uses it when those
settings are this table's, so it can be written from the records alone (committed results keep
the records, not the latent matrices), and reads the latent file otherwise.

Entries are mean (standard error) over the finished trials, the best model entry of each column
in bold (the PCA rows are references and never bold).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .cells import dataset_arrays, split_for
from .experiments import LATENT_TABLES, METHODS, TABLES, RunConfig, _dataset_kind
from .metrics import KNN_FOLDS, KNN_NEIGHBOURS, knn_accuracy, knn_seed
from .report import (
    DATASET_TITLES,
    Entry,
    _latex_escape,
    _mark_best,
    _summarise,
    block_closing,
    block_opening,
    cell_markup,
    write_table_files,
)
from .store import load_latent

__all__ = ["KNN_FOLDS", "KNN_NEIGHBOURS", "knn_accuracy", "knn_seed", "pca_scores", "write_latent_table"]

TITLES = {
    "table3": "Table 3: k-nearest-neighbour accuracy of the latent spaces (is the latent space useful?)"
}
BLOCK_TITLES = {
    "table1": "Gaussian models on real-valued data",
    "table2": "Count models",
}


def pca_scores(Y_train: np.ndarray, n_components: int, counts: bool) -> np.ndarray:
    """Principal component scores (rows x `n_components`) of a training matrix with NaN gaps.

    Counts are taken as ``log1p``; a NaN (held-out or missing) entry becomes its column's mean
    over the observed entries (0 for a column with none) before centring.
    """
    X = np.asarray(Y_train, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"Y_train must be a 2-D matrix; got shape {X.shape}")
    if n_components < 0:
        raise ValueError(f"n_components must be non-negative; got {n_components}")
    if counts:
        X = np.log1p(X)
    seen = ~np.isnan(X)
    n_seen = seen.sum(axis=0)
    means = np.where(seen, X, 0.0).sum(axis=0) / np.maximum(n_seen, 1)
    X = np.where(seen, X, means) - means
    U, S, _ = np.linalg.svd(X, full_matrices=False)
    d = min(int(n_components), S.size)
    return U[:, :d] * S[:d]


class _Scorer:
    """Accuracies of the cells of one output folder, with the data each needs loaded once."""

    def __init__(self, out: Path, cfg: RunConfig) -> None:
        self.out, self.cfg = out, cfg
        self._pca: dict[tuple, np.ndarray] = {}
        self.problems: list[str] = []

    def _arrays(self, rec: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        s = rec["settings"]
        Y, labels, _ = dataset_arrays(
            rec["dataset"], bool(s.get("sqrt", False)), self.cfg.data_home, s["max_rows"]
        )
        return Y, labels

    def method(self, rec: dict[str, Any]) -> float | None:
        seed = knn_seed(rec["dataset"], rec["settings"]["base_seed"])
        kept = rec.get("knn")
        if kept and (kept["seed"], kept["n_neighbors"], kept["n_folds"]) == (seed, KNN_NEIGHBOURS, KNN_FOLDS):
            return float(kept["accuracy"])
        try:
            latent = load_latent(self.out, rec)
            _, labels = self._arrays(rec)
            return knn_accuracy(latent, labels, random_state=seed)
        except (OSError, ValueError) as exc:
            self.problems.append(f"{rec['cell']}: not scored ({exc})")
            return None

    def embedding(self, rec: dict[str, Any], which: str) -> float | None:
        """The cell's posterior-embedding accuracy at `which` (``own``, ``matched``, ``2``, ``5``),
        as the cell recorded it; None for a cell computed before records kept it."""
        kept = rec.get("embedding_knn")
        seed = knn_seed(rec["dataset"], rec["settings"]["base_seed"])
        settings = (seed, KNN_NEIGHBOURS, KNN_FOLDS)
        if not kept or (kept["seed"], kept["n_neighbors"], kept["n_folds"]) != settings:
            return None
        return float(kept[which]["accuracy"])

    def pca(self, ibp: dict[str, Any], dims: int | None = None) -> float | None:
        """PCA at `dims` (default: the D the finite models of `ibp`'s trial got), on `ibp`'s
        training matrix."""
        d, s = ibp["dataset"], ibp["settings"]
        dims = max(1, int(ibp["k_plus_final"])) if dims is None else int(dims)
        try:
            Y, labels = self._arrays(ibp)
            key = (d, ibp["trial"], s["base_seed"], s["max_rows"], s.get("sqrt"))
            if key not in self._pca:
                Y_train, _, _, digest = split_for(Y, d, ibp["trial"], s["base_seed"])
                if digest != ibp["mask_digest"]:
                    raise ValueError("its hold-out mask differs from the one the cell recorded")
                self._pca[key] = pca_scores(Y_train, min(Y.shape), _dataset_kind(d) == "counts")
            return knn_accuracy(self._pca[key][:, :dims], labels, random_state=knn_seed(d, s["base_seed"]))
        except (OSError, ValueError) as exc:
            self.problems.append(f"PCA of {ibp['cell']}: not scored ({exc})")
            return None


def _pca_key(ibp: str) -> str:
    return f"pca({ibp})"


#: The posterior embedding's rows of Table 3: which record entry, and how the row says it.
EMBEDDING_ROWS = {"own": "own d", "matched": "d = D", "2": "d = 2", "5": "d = 5"}
#: Fixed dimensions of the PCA reference rows beside the embedding's.
PCA_FIXED = (2, 5)


def _row_name(key: str) -> str:
    if key.startswith("pca("):
        return f"PCA (D of {METHODS[key[4:-1]].name})"
    if key.startswith("pca@"):
        return f"PCA (d = {key[4:]})"
    if key.startswith("emb:"):
        _, method, which = key.split(":")
        return f"{METHODS[method].name}, posterior embedding ({EMBEDDING_ROWS[which]})"
    return METHODS[key].name


def latent_entries(
    out: str | Path,
    table: str,
    records: Sequence[dict[str, Any]],
    datasets: Sequence[str],
    methods: Sequence[str],
    trials: int,
    cfg: RunConfig,
) -> tuple[list[tuple[str, list[str], list[str], dict[str, dict[str, Entry]]]], list[str]]:
    """Per block ``(source, datasets, row keys, entries[dataset][row])``, and problems met."""
    scorer = _Scorer(Path(out), cfg)
    blocks = []
    for block in LATENT_TABLES[table]:
        ds = [d for d in block.datasets if d in datasets]
        ms = [m for m in TABLES[block.source].methods if m in methods]
        pcas = [p for p in block.pca_from if p in methods]
        if not ds or not (ms or pcas):
            continue
        # Embedding rows only for models with a record that kept them (older cells did not).
        embedded = [
            m
            for m in ms
            if METHODS[m].family == "rflvm"
            and any(r.get("embedding_knn") for r in records if r["method"] == m and r["dataset"] in ds)
        ]
        emb_keys = [f"emb:{m}:{w}" for m in embedded for w in EMBEDDING_ROWS]
        pca_fixed = [f"pca@{k}" for k in PCA_FIXED] if pcas and embedded else []
        rows = ms + emb_keys + [_pca_key(p) for p in pcas] + pca_fixed
        entries: dict[str, dict[str, Entry]] = {}
        for d in ds:
            mine = sorted(
                (r for r in records if r["dataset"] == d and r["trial"] < trials),
                key=lambda r: (r["method"], r["trial"]),
            )
            col = {m: _summarise([scorer.method(r) for r in mine if r["method"] == m]) for m in ms}
            for key in emb_keys:
                _, m, which = key.split(":")
                col[key] = _summarise([scorer.embedding(r, which) for r in mine if r["method"] == m])
            _mark_best(col, higher=True)
            for p in pcas:
                col[_pca_key(p)] = _summarise([scorer.pca(r) for r in mine if r["method"] == p])
            for key in pca_fixed:
                # The same training matrix whichever IBP cell of the trial provides it.
                first = [r for r in mine if r["method"] == pcas[0]]
                col[key] = _summarise([scorer.pca(r, int(key[4:])) for r in first])
            entries[d] = col
        blocks.append((block.source, ds, rows, entries))
    return blocks, scorer.problems


def _notes(trials: int, datasets: Sequence[str], cfg: RunConfig) -> list[str]:
    notes = [
        f"Mean (standard error) over the finished trials of {trials} requested of the "
        f"{KNN_NEIGHBOURS}-nearest-neighbour accuracy: the fraction of rows whose label is predicted "
        f"correctly from the other folds of a stratified {KNN_FOLDS}-fold split (Euclidean distance on "
        f"the unscaled latent; one fixed split per data set, the same for every method and trial). '-' "
        f"marks no finished trial, a dagger fewer trials than requested. Best model per column in "
        f"bold; PCA rows are references.",
        "Latent used: the stored latent matrix of each cell, the final MCMC sample for the RFLVMs and "
        "IBP-LFM, the posterior mean for GPLVM, PFA and LDA. Constant (unused) columns are dropped; a "
        "latent space with no column left predicts the majority label of the training folds.",
        "Posterior embedding (RFLVMs): kernel principal components of the posterior-mean kernel of each "
        "kept sample's noise-free predictor Phi_s beta_s (docs/embedding.md), which no relabelling, sign "
        "flip, rotation or split of the latent dimensions changes; at the fit's own d (the fewest "
        "components carrying 90% of the centred kernel's trace, or the posterior median K+ (the dense "
        "model's D) where that is more; cells made before stop 36 re-derived by "
        "studies/backfill_embedding_own.py), at d = D (the PCA row's D: the IBP "
        "model's final K+, the dense model's own D), and at 2 and 5 (all the kernel has when fewer). "
        "'-' marks cells computed before the records kept it.",
        "PCA (D of X): principal component scores of the same training matrix as X's cell in the same "
        "trial (held-out and missing entries filled with their column's observed mean; counts as log1p), "
        "with D = max(1, final K+ of X), the D of X's finite counterparts; PCA (d = 2) and (d = 5) "
        "likewise at 2 and 5 components.",
    ]
    chance = []
    for d in datasets:
        try:
            labels = dataset_arrays(d, cfg.sqrt, cfg.data_home, cfg.max_rows)[1]
        except (OSError, ValueError):
            continue
        counts = np.unique(labels, return_counts=True)[1]
        chance.append(f"{DATASET_TITLES[d]} {counts.max() / counts.sum():.3f} ({counts.size} classes)")
    if chance:
        notes.append(
            "Majority-label rate (accuracy of a classifier without features): " + "; ".join(chance) + "."
        )
    if cfg.max_rows is not None:
        notes.append(f"SUBSET: at most {cfg.max_rows} evenly spaced rows of each data set (a smoke test).")
    return notes


def write_latent_table(
    out: str | Path,
    table: str,
    records: Sequence[dict[str, Any]],
    datasets: Sequence[str],
    methods: Sequence[str],
    trials: int,
    cfg: RunConfig,
    plan_notes: Sequence[str] = (),
) -> list[Path]:
    """Write ``OUT/tables/<table>.md``, ``.csv`` and ``.tex``; return their paths."""
    folder = Path(out) / "tables"
    folder.mkdir(parents=True, exist_ok=True)
    blocks, problems = latent_entries(out, table, records, datasets, methods, trials, cfg)
    shown = [d for _, ds, _, _ in blocks for d in ds]
    notes = _notes(trials, shown, cfg) + list(plan_notes) + problems
    md = [f"# {TITLES[table]}", ""]
    tex = [f"% {TITLES[table]}; generated by ibp-rflvm reproduce", ""]
    rows_csv: list[dict[str, Any]] = []
    for source, ds, rows, entries in blocks:
        title = f"{BLOCK_TITLES[source]} (k = {KNN_NEIGHBOURS}, {KNN_FOLDS}-fold stratified CV)"
        header = ["method"] + [DATASET_TITLES[d] for d in ds]
        label = f"table:{table}-{TABLES[source].kind}"
        md_open, tex_open = block_opening(title, header, f"{title}. {notes[0]}", label, wide=False)
        md += md_open
        tex += tex_open
        for key in rows:
            name = _row_name(key)
            cells_md, cells_tex = [name], [_latex_escape(name)]
            for d in ds:
                e = entries[d][key]
                text = e.text("fixed3")
                short = 0 < e.n < trials
                md_cell, tex_cell = cell_markup(text, e.best, short)
                cells_md.append(md_cell)
                cells_tex.append(tex_cell)
                rows_csv.append(
                    {
                        "table": table,
                        "block": source,
                        "dataset": d,
                        "method": key,
                        "method_name": name,
                        "n_neighbors": KNN_NEIGHBOURS,
                        "n_folds": KNN_FOLDS,
                        "n_trials": e.n,
                        "mean": "" if e.n == 0 else repr(e.mean),
                        "se": "" if e.n < 2 else repr(e.se),
                        "best": e.best,
                    }
                )
            md.append("| " + " | ".join(cells_md) + " |")
            tex.append(" & ".join(cells_tex) + r" \\")
        md.append("")
        tex += block_closing(wide=False)
    return write_table_files(folder, table, md, tex, rows_csv, notes)
