"""Table 3: k-nearest-neighbour accuracy of the stored latent spaces, and its PCA reference rows.

The table is built from small fake output folders (cell JSONs and latent files written here, no
model fitted): breast cancer cut to 60 rows (bundled with scikit-learn) and, for the count block,
a generated stand-in for congress.
"""

import csv
import json
import math
import warnings

import numpy as np
import pytest

from ibp_rflvm.evaluation import latent_report, planning
from ibp_rflvm.evaluation.cells import dataset_arrays, split_for
from ibp_rflvm.evaluation.experiments import Cell, RunConfig, cell_settings
from ibp_rflvm.evaluation.harness import make_plan, reproduce
from ibp_rflvm.evaluation.latent_report import knn_accuracy, knn_seed, pca_scores

CFG = RunConfig(n_iter=4, n_frequencies=8, max_rows=60)


def _chance_band(labels, n_rows):
    """1-NN on features independent of the labels is right with probability sum_c p_c^2; four
    binomial standard errors of that rate over `n_rows` rows."""
    p = np.unique(labels, return_counts=True)[1] / len(labels)
    rate = float(np.sum(p**2))
    return rate, 4 * math.sqrt(rate * (1 - rate) / n_rows)


# ------------------------------------------------------------------------------------------
# The measure
# ------------------------------------------------------------------------------------------


def test_separable_latent_scores_one_and_random_latent_scores_chance():
    rng = np.random.default_rng(0)
    n = 900
    labels = rng.permutation(np.repeat([0, 1, 2], n // 3))
    separable = labels[:, None] * 10.0 + rng.normal(scale=0.5, size=(n, 2))
    assert knn_accuracy(separable, labels) == 1.0
    rate, band = _chance_band(labels, n)
    random = rng.normal(size=(n, 3))
    assert abs(knn_accuracy(random, labels, random_state=1) - rate) < band
    # More neighbours do not make features without information informative.
    assert abs(knn_accuracy(random, labels, n_neighbors=5) - rate) < band


def test_unused_dimensions_are_harmless_and_an_empty_latent_predicts_the_majority():
    rng = np.random.default_rng(1)
    labels = np.array([0] * 70 + [1] * 30)
    X = labels[:, None] + rng.normal(scale=0.8, size=(100, 2))
    with_unused = np.hstack([X, np.zeros((100, 3))])
    assert knn_accuracy(with_unused, labels, random_state=3) == knn_accuracy(X, labels, random_state=3)
    # K+ = 0 (no column) and only unused columns both score the majority label's share, since
    # stratified folds keep the 70/30 split in every training part.
    assert knn_accuracy(np.zeros((100, 0)), labels) == pytest.approx(0.7)
    assert knn_accuracy(np.zeros((100, 4)), labels) == pytest.approx(0.7)


def test_a_class_smaller_than_the_folds_and_bad_input():
    labels = np.array([0] * 30 + [1] * 28 + [2] * 2)  # like congress's two independents
    X = labels[:, None] * 5.0
    # Stratified folds put the two in different folds, so each finds the other: no error, and
    # no warning about the small class either (it is expected here).
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert knn_accuracy(X, labels) == 1.0
    with pytest.raises(ValueError, match="non-finite"):
        knn_accuracy(np.full((60, 2), np.nan), labels)
    with pytest.raises(ValueError, match="one label per latent row"):
        knn_accuracy(X, labels[:-1])
    with pytest.raises(ValueError, match="2-D"):
        knn_accuracy(X.ravel(), labels)


def test_pca_scores_fill_gaps_with_column_means_and_take_log1p_of_counts():
    from sklearn.decomposition import PCA

    rng = np.random.default_rng(2)
    Y = rng.poisson(3.0, size=(40, 6)).astype(float)
    Y[rng.random(Y.shape) < 0.2] = np.nan
    filled = np.log1p(Y)
    filled = np.where(np.isnan(filled), np.nanmean(filled, axis=0), filled)
    got = pca_scores(Y, 3, counts=True)
    want = PCA(3, svd_solver="full").fit_transform(filled)
    assert got.shape == (40, 3)
    assert np.allclose(np.abs(got), np.abs(want))  # equal up to each component's sign
    assert pca_scores(Y, 10, counts=False).shape == (40, 6)  # no more components than columns


# ------------------------------------------------------------------------------------------
# The table, from a fake output folder
# ------------------------------------------------------------------------------------------


def _cell(out, dataset, method, trial, latent, Y, *, k_plus=None, D=None):
    cell = Cell(dataset, method, trial)
    record = {
        "cell": cell.id,
        "dataset": dataset,
        "method": method,
        "trial": trial,
        "settings": cell_settings(cell, CFG),
        "mask_digest": split_for(Y, dataset, trial, CFG.seed)[3],
        "D": D,
        "k_plus_final": latent.shape[1] if k_plus is None else k_plus,
        "seconds": 1.0,
        "shape": list(Y.shape),
        "latent_file": f"{cell.id}.latent.npy",
    }
    (out / "cells").mkdir(parents=True, exist_ok=True)
    np.save(out / "cells" / record["latent_file"], latent)
    (out / "cells" / f"{cell.id}.json").write_text(json.dumps(record))


def _rows(out):
    with open(out / "tables" / "table3.csv") as f:
        return {(r["dataset"], r["method"]): r for r in csv.DictReader(f)}


def test_table3_from_cell_files_rows_columns_pca_and_extremes(tmp_path):
    out = tmp_path / "out"
    Y, labels, _ = dataset_arrays("cancer", False, None, 60)
    rng = np.random.default_rng(3)
    separable = labels[:, None] * 4.0 + rng.normal(scale=0.1, size=(60, 2))
    random0 = rng.normal(size=(60, 2))
    for t in range(2):
        _cell(out, "cancer", "rflvm", t, separable, Y, D=2)
        _cell(out, "cancer", "gplvm", t, rng.normal(size=(60, 2)), Y, D=2)
    # IBP-RFLVM: a 2-D latent in trial 0, none at all (K+ = 0) in trial 1; IBP-LFM in trial 0 only.
    _cell(out, "cancer", "ibp-rflvm", 0, random0, Y)
    _cell(out, "cancer", "ibp-rflvm", 1, np.zeros((60, 0)), Y)
    _cell(out, "cancer", "ibp-lfm", 0, rng.normal(size=(60, 3)), Y)
    summary = reproduce(
        "table3", out, trials=2, config=CFG, datasets="cancer", n_jobs=1, progress=False,
        echo=lambda s: None, report_only=True,
    )  # fmt: skip
    assert summary.computed == []
    for ext in ("md", "csv", "tex"):
        assert (out / "tables" / f"table3.{ext}").stat().st_size > 0
    rows = _rows(out)
    methods = ["ibp-rflvm", "rflvm", "gplvm", "ibp-lfm", "pca(ibp-rflvm)"]
    assert sorted(rows) == sorted(("cancer", m) for m in methods)  # no count block: none selected
    assert float(rows[("cancer", "rflvm")]["mean"]) == 1.0 and rows[("cancer", "rflvm")]["best"] == "True"
    assert [r["best"] for r in rows.values()].count("True") == 1
    rate, band = _chance_band(labels, 60 * 2)
    assert abs(float(rows[("cancer", "gplvm")]["mean"]) - rate) < band
    assert rows[("cancer", "ibp-lfm")]["n_trials"] == "1" and rows[("cancer", "ibp-lfm")]["se"] == ""
    # The empty latent of trial 1 scores the majority label's share.
    seed = knn_seed("cancer", CFG.seed)
    majority = np.unique(labels, return_counts=True)[1].max() / 60
    want = (knn_accuracy(random0, labels, random_state=seed) + majority) / 2
    assert float(rows[("cancer", "ibp-rflvm")]["mean"]) == pytest.approx(want)
    # PCA at D = max(1, K+) of IBP-RFLVM: 2 in trial 0, 1 in trial 1, on each trial's training
    # matrix (held-out entries filled with column means), checked against scikit-learn's PCA.
    from sklearn.decomposition import PCA

    accs = []
    for t, d in ((0, 2), (1, 1)):
        Y_train = split_for(Y, "cancer", t, CFG.seed)[0]
        filled = np.where(np.isnan(Y_train), np.nanmean(Y_train, axis=0), Y_train)
        accs.append(knn_accuracy(PCA(d).fit_transform(filled), labels, random_state=seed))
    pca = rows[("cancer", "pca(ibp-rflvm)")]
    assert pca["n_trials"] == "2" and pca["best"] == "False"
    assert float(pca["mean"]) == pytest.approx(np.mean(accs))
    md = (out / "tables" / "table3.md").read_text()
    assert "| PCA (D of IBP-RFLVM) |" in md and "| **1.000 (0.000)** |" in md
    assert "IBP-LFM | " in md and "†" in md  # one trial of two
    assert "final MCMC sample" in md and "k = 1, 5-fold stratified CV" in md
    tex = (out / "tables" / "table3.tex").read_text()
    assert r"\textbf{1.000 (0.000)}" in tex and "PCA (D of IBP-RFLVM)" in tex


def test_count_block_has_a_pca_row_per_ibp_count_model(tmp_path, monkeypatch):
    rng = np.random.default_rng(4)
    labels = np.repeat([0, 1, 2], 20)
    Y = rng.poisson(np.exp(labels[:, None] * 0.8 + rng.normal(size=(1, 15)))).astype(float)

    def fake(name, sqrt, data_home, max_rows):
        assert name == "congress"
        return Y, labels, ["a", "b", "c"]

    monkeypatch.setattr(planning, "dataset_available", lambda name, cfg: None)
    monkeypatch.setattr(latent_report, "dataset_arrays", fake)
    out = tmp_path / "out"
    for t in range(2):
        _cell(out, "congress", "nb-ibp-rflvm", t, rng.normal(size=(60, 2)), Y)
        _cell(out, "congress", "pfa", t, labels[:, None] + 0.01 * rng.random((60, 2)), Y, D=2)
    reproduce(
        "table3", out, trials=2, config=CFG, datasets="congress", n_jobs=1, progress=False,
        echo=lambda s: None, report_only=True,
    )  # fmt: skip
    rows = _rows(out)
    assert len(rows) == 8 + 3 and all(d == "congress" for d, _ in rows)
    assert float(rows[("congress", "pfa")]["mean"]) == 1.0
    assert rows[("congress", "lda")]["n_trials"] == "0" and rows[("congress", "lda")]["mean"] == ""
    assert rows[("congress", "pca(nb-ibp-rflvm)")]["n_trials"] == "2"
    assert rows[("congress", "pca(poisson-ibp-rflvm)")]["n_trials"] == "0"
    # The PCA of log1p counts separates these rows far better than chance (1/3).
    assert float(rows[("congress", "pca(nb-ibp-rflvm)")]["mean"]) > 0.8
    md = (out / "tables" / "table3.md").read_text()
    assert "## Count models" in md and "Gaussian models" not in md


def test_table3_reads_the_cells_of_tables_1_and_2_and_adds_none(monkeypatch):
    monkeypatch.setattr(planning, "dataset_available", lambda name, cfg: None)
    t3 = make_plan("table3", 2, CFG)
    both = set(make_plan("table1", 2, CFG).cells) | set(make_plan("table2", 2, CFG).cells)
    assert set(t3.cells) <= both
    assert {c.dataset for c in t3.cells} == {"cancer", "mice", "olivetti", "congress", "spam", "newsgroups"}
    assert not any(c.dataset == "congress" and c.method == "gplvm" for c in t3.cells)
    everything = make_plan("all", 2, CFG)
    assert "table3" in everything.tables and set(everything.cells) == both


def test_table3_reads_the_accuracy_a_record_keeps_when_its_latent_file_is_gone(tmp_path):
    """Committed results keep the cell records, not the latent matrices: a record's own kNN
    accuracy (written when the cell is computed) stands in for its latent file, and one made
    under other kNN settings does not."""
    out = tmp_path / "out"
    Y, labels, _ = dataset_arrays("cancer", False, None, 60)
    rng = np.random.default_rng(5)
    latent = rng.normal(size=(60, 2))
    _cell(out, "cancer", "rflvm", 0, latent, Y, D=2)
    path = out / "cells" / "cancer__rflvm__t0.json"
    record = json.loads(path.read_text())
    seed = knn_seed("cancer", CFG.seed)
    record["knn"] = {"accuracy": 0.125, "seed": seed, "n_neighbors": 1, "n_folds": 5}
    path.write_text(json.dumps(record))
    (out / "cells" / record["latent_file"]).unlink()
    kw = {"trials": 1, "config": CFG, "datasets": "cancer", "methods": "rflvm", "n_jobs": 1}
    reproduce("table3", out, progress=False, echo=lambda s: None, report_only=True, **kw)
    assert float(_rows(out)[("cancer", "rflvm")]["mean"]) == 0.125
    # Kept under another split's seed: not this table's score, and with no latent file, none.
    record["knn"]["seed"] = seed + 1
    path.write_text(json.dumps(record))
    reproduce("table3", out, progress=False, echo=lambda s: None, report_only=True, **kw)
    assert _rows(out)[("cancer", "rflvm")]["n_trials"] == "0"
    assert "cancer__rflvm__t0: not scored" in (out / "tables" / "table3.md").read_text()


def test_table3_adds_posterior_embedding_rows_and_fixed_d_pca_from_the_records(tmp_path):
    """Cells that kept their posterior embedding's accuracies (cells.py) get four rows per model
    (own d, d = D, 2, 5), and PCA gets rows at 2 and 5 components beside its D row."""
    out = tmp_path / "out"
    Y, labels, _ = dataset_arrays("cancer", False, None, 60)
    rng = np.random.default_rng(6)
    seed = knn_seed("cancer", CFG.seed)
    for t, base in ((0, 0.5), (1, 0.7)):
        _cell(out, "cancer", "ibp-rflvm", t, rng.normal(size=(60, 3)), Y)
        path = out / "cells" / f"cancer__ibp-rflvm__t{t}.json"
        record = json.loads(path.read_text())
        record["embedding_knn"] = {"seed": seed, "n_neighbors": 1, "n_folds": 5} | {
            w: {"d": 2, "accuracy": base + 0.01 * i} for i, w in enumerate(("own", "matched", "2", "5"))
        }
        path.write_text(json.dumps(record))
    _cell(out, "cancer", "rflvm", 0, rng.normal(size=(60, 3)), Y, D=3)  # no embedding kept: no rows
    kw = {"trials": 2, "config": CFG, "datasets": "cancer", "n_jobs": 1}
    reproduce("table3", out, progress=False, echo=lambda s: None, report_only=True, **kw)
    rows = _rows(out)
    emb = [f"emb:ibp-rflvm:{w}" for w in ("own", "matched", "2", "5")]
    assert all(("cancer", k) in rows for k in emb) and ("cancer", "emb:rflvm:own") not in rows
    for i, key in enumerate(emb):
        assert float(rows[("cancer", key)]["mean"]) == pytest.approx(0.6 + 0.01 * i)
        assert rows[("cancer", key)]["n_trials"] == "2"
    from sklearn.decomposition import PCA

    for d in (2, 5):
        accs = []
        for t in range(2):
            Y_train = split_for(Y, "cancer", t, CFG.seed)[0]
            filled = np.where(np.isnan(Y_train), np.nanmean(Y_train, axis=0), Y_train)
            accs.append(knn_accuracy(PCA(d).fit_transform(filled), labels, random_state=seed))
        assert float(rows[("cancer", f"pca@{d}")]["mean"]) == pytest.approx(np.mean(accs))
    md = (out / "tables" / "table3.md").read_text()
    assert "| IBP-RFLVM, posterior embedding (d = 5) |" in md and "| PCA (d = 2) |" in md
