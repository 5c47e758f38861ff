"""`ibp-rflvm reproduce`: cell files, tables, figures, resuming, shared masks, and Dask.

Everything runs on breast cancer (bundled with scikit-learn) and the generated Cambridge data, cut
to 60 rows, with 4 sweeps and 8 frequencies, so no data file is needed and the module stays fast.
"""

import csv
import json
import math
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from ibp_rflvm.cli import main
from ibp_rflvm.datasets import holdout_mask
from ibp_rflvm.evaluation import cells, harness, planning, scheduling
from ibp_rflvm.evaluation.harness import (
    METHODS,
    ReproduceError,
    RunConfig,
    load_records,
    make_plan,
    mask_digest,
    method_key,
    reproduce,
    split_for,
)

SMALL = ["--n-iter", "4", "--n-frequencies", "8", "--max-rows", "60", "--quiet"]
CFG = RunConfig(n_iter=4, n_frequencies=8, max_rows=60)


def _by_id(out):
    return {r["cell"]: r for r in load_records(out)}


def _mtimes(out):
    return {p.name: p.stat().st_mtime_ns for p in (out / "cells").iterdir()}


@pytest.fixture(scope="module")
def e2e(tmp_path_factory):
    """One small run through the CLI with two local worker processes (the default backend)."""
    out = tmp_path_factory.mktemp("reproduce") / "out"
    code = main(
        [
            "reproduce",
            "all",
            "--datasets",
            "cancer,cambridge",
            "--methods",
            "IBP-RFLVM,RFLVM",
            "--trials",
            "2",
            "--n-jobs",
            "2",
            "--out",
            str(out),
            *SMALL,
        ]
    )
    assert code == 0
    return out


def test_cell_files_hold_metrics_dims_traces_and_latents(e2e):
    records = _by_id(e2e)
    expected = {
        f"{d}__{m}__t{k}" for d in ("cancer", "cambridge") for m in ("ibp-rflvm", "rflvm") for k in (0, 1)
    }
    assert set(records) == expected
    for cid, r in records.items():
        m = r["metrics"]
        assert math.isfinite(m["lpd_sum"]) and m["lpd_sum"] < 0
        assert m["lpd_per_entry"] == pytest.approx(m["lpd_sum"] / r["n_test"])
        assert r["n_test"] == round(0.2 * 60 * r["shape"][1])
        assert r["seconds"] > 0 and r["settings"]["n_iter"] == 4 and r["settings"]["max_rows"] == 60
        latent = np.load(e2e / "cells" / r["latent_file"])
        assert list(latent.shape) == r["latent_shape"] and latent.shape[0] == 60
        if r["method"] == "ibp-rflvm":
            assert r["D"] is None and len(r["k_plus_trace"]) == 4
            assert r["k_plus_final"] == r["k_plus_trace"][-1]
        else:
            # The dense model's D is its IBP counterpart's final K+ in the same trial.
            parent = records[cid.replace("__rflvm__", "__ibp-rflvm__")]
            assert r["D_from"] == parent["cell"]
            assert r["D"] == max(1, parent["k_plus_final"])
        # Table 3's score, kept for the data sets it shows (cancer, not Cambridge bars).
        if r["dataset"] == "cancer":
            from ibp_rflvm.evaluation.metrics import knn_accuracy, knn_seed

            labels = harness.dataset_arrays("cancer", False, None, 60)[1]
            seed = knn_seed("cancer", r["settings"]["base_seed"])
            assert r["knn"] == {"accuracy": knn_accuracy(latent, labels, random_state=seed),
                                "seed": seed, "n_neighbors": 1, "n_folds": 5}  # fmt: skip
        else:
            assert r["knn"] is None
    log = (e2e / "reproduce.log").read_text()
    assert all(cid in log for cid in expected)
    assert not list((e2e / "cells").glob(".*.tmp"))  # atomic writes leave no temporary files
    assert not list((e2e / "partial").glob("*"))  # each chain's checkpoint goes with its cell


def test_cells_name_the_commit_of_the_code_that_made_them(e2e):
    import subprocess

    src = os.path.dirname(harness.__file__)
    head = subprocess.run(["git", "-C", src, "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        pytest.skip("the package is not running from a git checkout")
    for r in load_records(e2e):
        assert r["versions"]["commit"].split("+")[0] == head.stdout.strip()


def test_tables_markdown_csv_latex_with_bold_best_and_paper_figures(e2e):
    tables = e2e / "tables"
    for ext in ("md", "csv", "tex"):
        assert (tables / f"table1.{ext}").stat().st_size > 0
    assert not (tables / "table2.md").exists()  # no count data set was selected
    # `all` also writes Table 3 (kNN accuracy of the latent spaces) for the labelled cancer.
    assert "| PCA (D of IBP-RFLVM) |" in (tables / "table3.md").read_text()
    with open(tables / "table1.csv") as f:
        rows = list(csv.DictReader(f))
    # Best per column: the highest mean LPD of each (metric, data set, source) is flagged.
    groups = {}
    for r in rows:
        groups.setdefault((r["metric"], r["dataset"], r["source"]), []).append(r)
    assert {k[2] for k in groups} == {"ours", "paper"}
    for group in groups.values():
        best = max(group, key=lambda r: float(r["mean"]))
        assert [r["best"] for r in group].count("True") == 1 and best["best"] == "True"
    ours = {(r["metric"], r["dataset"], r["method"]): r for r in rows if r["source"] == "ours"}
    assert ours[("lpd_sum", "cancer", "ibp-rflvm")]["n_trials"] == "2"

    md = (tables / "table1.md").read_text()
    assert "6.68e+03 (114.16)" in md and "9.91e+03 (896.54)" in md  # the paper's own figures
    assert "not held-out densities" in md
    # In the Markdown, the bold entry of our Cancer column is the flagged one.
    block = md.split("## ")[1].splitlines()
    body = {line.split("|")[1].strip(): line.split("|")[2].strip() for line in block if line.startswith("| ")}
    best_method = next(
        r["method_name"]
        for r in rows
        if r["metric"] == "lpd_sum"
        and r["dataset"] == "cancer"
        and r["source"] == "ours"
        and r["best"] == "True"
    )
    assert body[best_method].startswith("**")
    assert sum(v.startswith("**") for k, v in body.items() if k != "method") == 1
    tex = (tables / "table1.tex").read_text()
    assert r"\textbf{" in tex and r"\begin{tabular}" in tex and "6.68e+03 (114.16)" in tex
    assert "not held-out densities" in tex


def test_figure_png_from_trial_zero_latents(e2e):
    png = e2e / "figures" / "fig1_cancer_latent.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size > 5000
    assert not (e2e / "figures" / "fig2_congress_latent.png").exists()
    # The RFLVM cells of the figure's trial keep the 2-D posterior embedding it draws; other
    # trials and data sets no figure shows keep none.
    records = {r["cell"]: r for r in load_records(e2e)}
    for cell in ("cancer__ibp-rflvm__t0", "cancer__rflvm__t0"):
        coords = np.asarray(records[cell]["embedding_2d"])
        assert coords.shape == (records[cell]["shape"][0], 2) and np.isfinite(coords).all()
    assert records["cancer__ibp-rflvm__t1"]["embedding_2d"] is None
    assert records["cambridge__ibp-rflvm__t0"]["embedding_2d"] is None


def test_figures_follow_the_data_sets_chosen_and_skip_missing_latent_files(e2e, tmp_path):
    from ibp_rflvm.evaluation import report

    # Each figure draws one data set: a part without it plans no figure (it used to draw
    # Figure 1 from whatever cancer cells the folder held, and fail without their matrices).
    assert make_plan("all", 1, CFG, datasets="cambridge").figures == []
    assert make_plan("all", 1, CFG, datasets="cancer,cambridge").figures == ["fig1"]
    out = tmp_path / "out"
    shutil.copytree(e2e, out)
    records = load_records(out)
    panel = next(r for r in records if r["cell"] == "cancer__rflvm__t0")
    (out / "cells" / panel["latent_file"]).unlink()
    problems: list[str] = []
    png = report.write_figure(out, "fig1", records, CFG, problems=problems)
    assert png is not None and png.exists()
    assert len(problems) == 1 and "cancer__rflvm__t0" in problems[0]
    (out / "cells" / "cancer__ibp-rflvm__t0.latent.npy").unlink()
    assert report.write_figure(out, "fig1", records, CFG, problems=problems) is None
    assert len(problems) == 3


def test_rerun_skips_finished_cells_and_adds_only_new_ones(e2e, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(e2e, out)
    before = _mtimes(out)
    kw = {
        "config": CFG,
        "datasets": "cancer,cambridge",
        "methods": "ibp-rflvm,rflvm",
        "n_jobs": 1,
        "progress": False,
        "echo": lambda s: None,
    }
    again = reproduce("table1", out, trials=2, **kw)
    assert again.computed == [] and len(again.skipped) == 8
    assert _mtimes(out) == before
    more = reproduce("table1", out, trials=3, **{**kw, "datasets": "cambridge"})
    assert sorted(more.computed) == ["cambridge__ibp-rflvm__t2", "cambridge__rflvm__t2"]
    after = _mtimes(out)
    assert {k: after[k] for k in before} == before


def test_other_settings_in_the_same_folder_are_refused(e2e, tmp_path, capsys):
    out = tmp_path / "out"
    shutil.copytree(e2e, out)
    code = main(
        [
            "reproduce",
            "table1",
            "--datasets",
            "cancer",
            "--methods",
            "ibp-rflvm",
            "--trials",
            "1",
            "--out",
            str(out),
            "--n-jobs",
            "1",
            *SMALL[:-1],
            "--n-iter",
            "6",
        ]
    )
    assert code == 2
    assert "other settings" in capsys.readouterr().err


@pytest.mark.parametrize("failure", [RuntimeError, KeyboardInterrupt])
def test_failed_or_interrupted_run_resumes_without_recomputing(tmp_path, monkeypatch, failure):
    out = tmp_path / "out"
    real = scheduling.compute_cell
    bad = "cambridge__rflvm__t0"

    def flaky(task):
        if task.cell.id == bad:
            raise failure("injected")
        return real(task)

    kw = {
        "config": CFG,
        "datasets": "cambridge",
        "methods": "ibp-rflvm,rflvm",
        "n_jobs": 1,
        "progress": False,
        "echo": lambda s: None,
    }
    monkeypatch.setattr(scheduling, "compute_cell", flaky)
    first = reproduce("table1", out, trials=2, **kw)
    if failure is KeyboardInterrupt:
        # The run stops at the interrupted cell; what finished before it is kept.
        assert first.interrupted and first.computed and bad not in first.computed
        assert len(first.computed) < 4 and not first.failed
    else:
        assert first.failed == [bad] and len(first.computed) == 3
        assert "injected" in (out / "errors" / f"{bad}.txt").read_text()
    finished = _mtimes(out)
    monkeypatch.setattr(scheduling, "compute_cell", real)
    second = reproduce("table1", out, trials=2, **kw)
    assert bad in second.computed
    assert not set(second.computed) & set(first.computed)
    assert set(second.skipped) == set(first.computed)
    after = _mtimes(out)
    assert {k: after[k] for k in finished} == finished
    assert len(load_records(out)) == 4 and not (out / "errors" / f"{bad}.txt").exists()


def _one_chain(n_iter: int) -> dict:
    """`reproduce` arguments for one small IBP-RFLVM cell computed in this process."""
    return {
        "config": RunConfig(n_iter=n_iter, n_frequencies=8, max_rows=60),
        "datasets": "cambridge",
        "methods": "ibp-rflvm",
        "n_jobs": 1,
        "progress": False,
        "echo": lambda s: None,
    }


def test_interrupted_chain_resumes_from_its_checkpoint_bit_for_bit(tmp_path, monkeypatch):
    from ibp_rflvm import model
    from ibp_rflvm.mcmc import driver

    kw = _one_chain(n_iter=8)
    cell = "cambridge__ibp-rflvm__t0"
    reference = reproduce("table1", tmp_path / "ref", trials=1, **kw)
    assert reference.computed == [cell]

    monkeypatch.setattr(cells, "CHECKPOINT_EVERY", 3)
    real_sweep, calls = model._step, []

    def dies_at_seventh(*args, **kwargs):
        calls.append(1)
        if len(calls) == 7:
            raise KeyboardInterrupt
        return real_sweep(*args, **kwargs)

    out = tmp_path / "out"
    monkeypatch.setattr(model, "_step", dies_at_seventh)
    first = reproduce("table1", out, trials=1, **kw)
    ckpt = out / "partial" / f"{cell}.ckpt"
    assert first.interrupted and not first.computed
    assert driver.load_checkpoint(ckpt)["sweep"] == 6  # the last multiple of 3 before sweep 7
    table = harness.status("table1", out, 1, kw["config"], "cambridge", "ibp-rflvm")
    assert "| cambridge | 0/1, t0 at sweep 6 |" in table and "0 of 1 cells done, 1 in flight" in table
    # No cell is done, but the checkpoint timed its 6 sweeps: 2 of the 8 are left.
    saved = driver.load_checkpoint(ckpt)
    assert saved["timed_sweeps"] == 6 and saved["seconds"] > 0.0
    assert f"({saved['seconds'] / 6 * 2:.0f} worker-seconds over" in table

    def counted(*args, **kwargs):
        calls.append(1)
        return real_sweep(*args, **kwargs)

    calls.clear()
    monkeypatch.setattr(model, "_step", counted)
    second = reproduce("table1", out, trials=1, **kw)
    assert second.computed == [cell] and not ckpt.exists()
    assert len(calls) == 8 - 6  # only the sweeps after the checkpoint were run again
    got, want = _by_id(out)[cell], _by_id(tmp_path / "ref")[cell]
    assert got["resumed_from_sweep"] == 6 and want["resumed_from_sweep"] == 0
    # The six sweeps of the first run count in the cell's worker time, as their checkpoint timed them.
    assert got["seconds_before_resume"] == saved["seconds"] and want["seconds_before_resume"] == 0.0
    assert harness.worker_seconds(got) == (pytest.approx(got["seconds"] + saved["seconds"]), True)
    assert "| cambridge | 1/1 |" in harness.status("table1", out, 1, kw["config"], "cambridge", "ibp-rflvm")
    # The run that began the chain was this same code (its commit, or None outside git).
    assert got["resumed_from_commit"] == (got["versions"].get("commit") or "unknown")
    assert want["resumed_from_commit"] is None and not list((out / "partial").iterdir())
    for key in ("metrics", "k_plus_trace", "log_likelihood_final", "mask_digest"):
        assert got[key] == want[key], key
    np.testing.assert_array_equal(
        np.load(out / "cells" / got["latent_file"]), np.load(tmp_path / "ref" / "cells" / want["latent_file"])
    )


def test_unreadable_or_foreign_checkpoint_is_discarded(tmp_path):
    kw = _one_chain(n_iter=4)
    cell = "cambridge__ibp-rflvm__t0"
    reference = _by_id(reproduce("table1", tmp_path / "ref", trials=1, **kw).out)[cell]
    # A truncated file, then a valid checkpoint of a chain on other data (trial 1's mask).
    foreign = tmp_path / "foreign.ckpt"
    from ibp_rflvm.estimator import IBPRFLVM

    Y = harness.split_for(harness.dataset_arrays("cambridge", False, None, 60)[0], "cambridge", 1)[0]
    IBPRFLVM(n_iter=4, n_frequencies=8, random_state=1, checkpoint_path=str(foreign)).fit(Y)
    for bad in (b"not a pickle", foreign.read_bytes()):
        out = tmp_path / f"out{len(bad)}"
        (out / "partial").mkdir(parents=True)
        (out / "partial" / f"{cell}.ckpt").write_bytes(bad)
        got = _by_id(reproduce("table1", out, trials=1, **kw).out)[cell]
        assert got["resumed_from_sweep"] == 0
        assert got["metrics"] == reference["metrics"]
        assert not (out / "partial" / f"{cell}.ckpt").exists()


def test_status_from_cli_counts_cells_and_writes_nothing(e2e, capsys):
    before = sorted(p.relative_to(e2e) for p in e2e.rglob("*"))
    args = ["reproduce", "table1", "--datasets", "cancer,cambridge", "--methods", "ibp-rflvm,rflvm"]
    assert main([*args, "--trials", "3", "--out", str(e2e), "--status", *SMALL]) == 0
    shown = capsys.readouterr().out
    assert "| cancer | 2/3 | 2/3 |" in shown and "8 of 12 cells done, 0 in flight" in shown
    assert sorted(p.relative_to(e2e) for p in e2e.rglob("*")) == before
    assert main([*args, "--out", str(e2e), "--status", "--report-only", *SMALL]) == 2


def test_interrupt_exit_code_from_cli(tmp_path, monkeypatch):
    def interrupted(task):
        raise KeyboardInterrupt

    monkeypatch.setattr(scheduling, "compute_cell", interrupted)
    code = main(
        [
            "reproduce",
            "table1",
            "--datasets",
            "cancer",
            "--methods",
            "ibp-rflvm",
            "--trials",
            "1",
            "--n-jobs",
            "1",
            "--out",
            str(tmp_path),
            *SMALL,
        ]
    )
    assert code == 130


def test_one_mask_per_dataset_and_trial_shared_by_methods_and_reruns(e2e):
    records = _by_id(e2e)
    Y = harness.dataset_arrays("cancer", False, None, 60)[0]
    for d in ("cancer", "cambridge"):
        for k in (0, 1):
            a, b = records[f"{d}__ibp-rflvm__t{k}"], records[f"{d}__rflvm__t{k}"]
            assert a["mask_seed"] == b["mask_seed"] and a["mask_digest"] == b["mask_digest"]
            assert a["model_seed"] != b["model_seed"]
        assert records[f"{d}__ibp-rflvm__t0"]["mask_digest"] != records[f"{d}__ibp-rflvm__t1"]["mask_digest"]
    first = split_for(Y, "cancer", 1)
    again = split_for(Y.copy(), "cancer", 1)
    assert first[3] == again[3] == records["cancer__rflvm__t1"]["mask_digest"]
    np.testing.assert_array_equal(first[1], again[1])
    direct = holdout_mask(Y, 0.2, random_state=records["cancer__rflvm__t1"]["mask_seed"])[1]
    assert mask_digest(direct) == first[3]
    # Entries missing in the data are never held out.
    Z = Y.copy()
    Z[::7, 3] = np.nan
    _, Z_test, _, _ = split_for(Z, "cancer", 0)
    assert np.all(np.isnan(Z_test[np.isnan(Z)]))


def test_methods_pairings_and_skips():
    assert method_key("IBP-RFLVM") == "ibp-rflvm" and method_key("nb ibp rflvm") == "nb-ibp-rflvm"
    assert method_key("Multinomial RFLVM") == "multinomial-rflvm" and method_key("GPLVM") == "gplvm"
    with pytest.raises(ReproduceError):
        method_key("svd")
    parents = {k: m.parent for k, m in METHODS.items() if m.parent}
    assert parents == {
        "rflvm": "ibp-rflvm",
        "gplvm": "ibp-rflvm",
        "nb-rflvm": "nb-ibp-rflvm",
        "poisson-rflvm": "poisson-ibp-rflvm",
        "multinomial-rflvm": "multinomial-ibp-rflvm",
        "pfa": "poisson-ibp-rflvm",
        "lda": "multinomial-ibp-rflvm",
    }
    # Asking for a finite model alone brings in the IBP cells that set its D.
    plan = make_plan("table1", 2, CFG, datasets="cancer", methods="rflvm")
    assert {c.method for c in plan.cells} == {"rflvm", "ibp-rflvm"} and len(plan.cells) == 4
    assert any("IBP-RFLVM: added" in n for n in plan.notes)
    with pytest.raises(ReproduceError):
        make_plan("table1", 1, CFG, datasets="congress")


def test_unregistered_count_likelihood_skips_its_cells(monkeypatch):
    from ibp_rflvm import likelihoods

    registry = {k: v for k, v in likelihoods.REGISTRY.items() if k != "negbinom"}
    monkeypatch.setattr(likelihoods, "REGISTRY", registry)
    assert harness.method_available("nb-ibp-rflvm") is not None
    assert "negbinom" in harness.method_available("nb-rflvm")
    # Only the methods matter here: stub the data check so no count file is needed.
    monkeypatch.setattr(planning, "dataset_available", lambda name, cfg: None)
    plan = make_plan("table2", 1, CFG, datasets="montreal")
    methods = {c.method for c in plan.cells}
    assert "nb-ibp-rflvm" not in methods and "nb-rflvm" not in methods
    assert {"poisson-ibp-rflvm", "pfa", "lda", "multinomial-ibp-rflvm"} <= methods
    assert sum("skipped" in n and "negbinom" in n for n in plan.notes) == 2


def test_absent_ovarian_file_is_a_note_not_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("IBP_RFLVM_DATA", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    harness.dataset_arrays.cache_clear()
    plan = make_plan("table1", 1, CFG, datasets="ovarian,cancer", methods="ibp-lfm")
    assert [c.dataset for c in plan.cells] == ["cancer"]
    assert any(n.startswith("ovarian: skipped, data file absent") for n in plan.notes)


def test_dask_local_cluster_gives_the_same_cells(e2e, tmp_path):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        summary = reproduce(
            "table1",
            tmp_path / "out",
            trials=1,
            config=CFG,
            datasets="cambridge",
            methods="ibp-rflvm,rflvm",
            scheduler=cluster.scheduler_address,
            progress=False,
            echo=lambda s: None,
        )
    assert sorted(summary.computed) == ["cambridge__ibp-rflvm__t0", "cambridge__rflvm__t0"]
    ours, local = _by_id(tmp_path / "out"), _by_id(e2e)
    for cid, r in ours.items():
        assert int(r["worker"].rsplit(":", 1)[1]) != os.getpid()
        # Same seeds, same settings: the cluster reproduces the local processes' numbers exactly.
        assert r["metrics"] == local[cid]["metrics"] and r["mask_digest"] == local[cid]["mask_digest"]
    assert (tmp_path / "out" / "tables" / "table1.md").exists()


def test_cell_json_is_plain_json(e2e):
    for p in (e2e / "cells").glob("*.json"):
        json.loads(p.read_text())  # allow_nan=False on writing: strict JSON


def test_gplvm_cells_record_whether_the_optimiser_converged(tmp_path):
    out = tmp_path / "out"
    args = ["reproduce", "table1", "--datasets", "cancer", "--methods", "gplvm", "--trials", "1"]
    assert main([*args, "--gplvm-iters", "3", "--n-jobs", "1", "--out", str(out), *SMALL]) == 0
    records = _by_id(out)
    gplvm = records["cancer__gplvm__t0"]
    # Three iterations cannot converge: the budget, not a convergence test, ended the fit.
    assert gplvm["optimizer"]["iterations"] == 3 and gplvm["optimizer"]["converged"] is False
    assert math.isfinite(gplvm["optimizer"]["elbo"])
    assert gplvm["optimizer"]["jitter"] == pytest.approx(1e-6)  # the default: no restart
    assert records["cancer__ibp-rflvm__t0"]["optimizer"] is None
    table = (out / "tables" / "table1.md").read_text()
    assert "convergence test within the iteration budget: Cancer 0 of 1 (iterations 3-3)" in table


def test_report_only_writes_whole_tables_from_cells_present_and_computes_nothing(e2e, tmp_path, capsys):
    out = tmp_path / "out"
    shutil.copytree(e2e, out)
    # A part run over one data set leaves a table of that data set only...
    part = reproduce(
        "table1",
        out,
        trials=2,
        config=CFG,
        datasets="cambridge",
        methods="ibp-rflvm,rflvm",
        n_jobs=1,
        progress=False,
        echo=lambda s: None,
    )
    assert part.computed == [] and "Cancer" not in (out / "tables" / "table1.md").read_text()
    before = _mtimes(out)
    # ...and the report-only call over the whole target restores every column, with cells of
    # methods never run shown as missing, without computing anything.
    args = ["reproduce", "table1", "--trials", "2", "--report-only", "--out", str(out), *SMALL]
    assert main([*args, "--datasets", "cancer,cambridge", "--methods", "ibp-rflvm,rflvm,ibp-lfm"]) == 0
    text = (out / "tables" / "table1.md").read_text()
    assert "Cancer" in text and "Cambridge" in text and "IBP-LFM" in text
    after = _mtimes(out)
    assert {k: after[k] for k in before} == before
    assert not any(name.startswith(("cancer__ibp-lfm", "cambridge__ibp-lfm")) for name in after)
    assert "4 of 12 planned cells are not computed yet" in capsys.readouterr().out
    # Settings other than the cells' are refused, as for a run.
    assert main([*args, "--n-iter", "6", "--datasets", "cancer"]) == 2
    assert "other settings" in capsys.readouterr().err


def _fake_cell(out, cfg, dataset, method, trial, seconds, shape, resumed=0):
    """A finished cell's JSON with only what --status reads (no latent file, nothing fitted)."""
    from ibp_rflvm.evaluation.experiments import Cell, cell_settings

    cell = Cell(dataset, method, trial)
    record = {
        "cell": cell.id,
        "dataset": dataset,
        "method": method,
        "trial": trial,
        "settings": cell_settings(cell, cfg),
        "seconds": seconds,
        "shape": list(shape),
        "resumed_from_sweep": resumed,
    }
    (out / "cells").mkdir(parents=True, exist_ok=True)
    (out / "cells" / f"{cell.id}.json").write_text(json.dumps(record))


def test_status_estimates_the_time_left_from_the_done_cells(tmp_path, capsys):
    out = tmp_path / "out"
    _fake_cell(out, CFG, "cancer", "ibp-rflvm", 0, 10.0, (60, 30))
    _fake_cell(out, CFG, "cancer", "ibp-rflvm", 1, 20.0, (60, 30))
    # Resumed at sweep 2 of 4: its 8 s timed half the chain.
    _fake_cell(out, CFG, "cancer", "rflvm", 0, 8.0, (60, 30), resumed=2)
    _fake_cell(out, CFG, "cambridge", "ibp-rflvm", 0, 30.0, (60, 36))
    # Left: cancer IBP-RFLVM t2 at the mean of its pair (15 s); cancer RFLVM t1, t2 at the
    # whole-chain 16 s; cambridge IBP-RFLVM t1, t2 at 30 s; cambridge RFLVM t0-t2, with no done
    # cell of their own, at RFLVM's seconds per entry on cancer times cambridge's entries.
    work = 15 + 2 * 16 + 2 * 30 + 3 * 16 / (60 * 30) * (60 * 36)
    args = ["reproduce", "table1", "--datasets", "cancer,cambridge", "--methods", "ibp-rflvm,rflvm"]
    assert main([*args, "--trials", "3", "--out", str(out), "--status", "--n-jobs", "2", *SMALL]) == 0
    shown = capsys.readouterr().out
    assert "4 of 12 cells done" in shown
    assert f"({work:.0f} worker-seconds over 2 workers)" in shown
    assert "Estimated time left: 1 min " in shown  # work / 2 = 82 s, to the minute


def test_time_left_fallbacks_and_cells_in_flight():
    from ibp_rflvm.evaluation.experiments import Cell
    from ibp_rflvm.evaluation.status import cell_seconds, format_duration, time_left_line

    done = {"a": {"dataset": "cancer", "method": "ibp-rflvm", "seconds": 10.0, "shape": [60, 30]}}
    entries = {"cancer": 1800, "cambridge": 2160}.__getitem__
    gplvm = Cell("cambridge", "gplvm", 0)
    # No GPLVM cell done: every done cell's seconds per entry, times GPLVM's relative cost.
    cost = scheduling._RELATIVE_COST["gplvm"] / scheduling._RELATIVE_COST["rflvm"]
    assert cell_seconds([gplvm], done, entries)[gplvm] == pytest.approx(10 / 1800 * 2160 * cost)
    assert cell_seconds([gplvm], {}, entries) is None
    # A chain in flight halfway through counts for half its time.
    ibp = Cell("cancer", "ibp-rflvm", 1)
    assert "(5 worker-seconds over 1 worker)" in time_left_line({ibp: 0.5}, done, entries, 1)
    assert "unknown" in time_left_line({ibp: 1.0}, {}, entries, 1)
    # A chain in flight whose checkpoint timed its sweeps (40 s for the whole chain) times itself
    # and, with nothing done, the others.
    timed = {ibp: 40.0}
    assert cell_seconds([ibp, gplvm], {}, entries, timed) == {
        ibp: pytest.approx(40.0), gplvm: pytest.approx(40.0 / 1800 * 2160 * cost)
    }
    assert "(30 worker-seconds over 1 worker)" in time_left_line({ibp: 0.75}, {}, entries, 1, timed)
    assert format_duration(3 * 3600 + 5 * 60) == "3 h 05 min" and format_duration(20) == "under a minute"
    assert format_duration(2 * 86400 + 4 * 3600) == "2 d 4 h"


def test_status_of_a_finished_run_shows_no_time_left(e2e):
    table = harness.status("table1", e2e, 2, CFG, "cancer,cambridge", "ibp-rflvm,rflvm")
    assert "8 of 8 cells done" in table and "time left" not in table


def test_table_notes_name_the_start_of_the_sampler_used():
    from dataclasses import replace

    from ibp_rflvm.evaluation import report

    paper = report._notes("table1", 5, replace(CFG, sampler="paper"), [])[1]
    default = report._notes("table1", 5, replace(CFG, sampler="default"), [])[1]
    assert "start at K = 2 (the paper's sweep and start)" in paper
    assert "start at K = 12 (the library's sweep and start)" in default


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="reads worker PIDs from /proc (Linux)")
def test_sigterm_stops_the_workers_and_keeps_the_checkpoints(tmp_path):
    """`kill` of the coordinator (SIGTERM, as a batch scheduler's time limit sends) must not
    leave its worker processes computing cells nobody collects: the run stops as on Ctrl-C."""
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "out"
    # Chains long enough to be in flight when the signal comes; they checkpoint every 5 sweeps.
    cmd = [sys.executable, "-m", "ibp_rflvm.cli", "reproduce", "table1", "--datasets", "cambridge",
           "--methods", "ibp-rflvm", "--trials", "2", "--n-jobs", "2", "--out", str(out),
           "--n-iter", "100000", "--n-frequencies", "8", "--max-rows", "60", "--quiet"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    children: set[int] = set()

    def kill_all() -> None:  # a failing run must not leave its workers computing
        for pid in [proc.pid, *children]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    try:
        deadline = time.monotonic() + 120
        while len(list((out / "partial").glob("*.ckpt"))) < 2:  # both workers are sweeping
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read()
            time.sleep(0.2)
        children = {
            int(pid)
            for task in os.listdir(f"/proc/{proc.pid}/task")
            for pid in Path(f"/proc/{proc.pid}/task/{task}/children").read_text().split()
        }
        assert children
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=60)
    except BaseException:
        kill_all()
        raise
    assert proc.returncode == 130, output
    assert "interrupted" in (out / "reproduce.log").read_text()
    assert len(list((out / "partial").glob("*.ckpt"))) == 2  # kept for the next run to resume
    deadline = time.monotonic() + 30
    alive = set(children)
    while alive and time.monotonic() < deadline:
        alive = {pid for pid in alive if os.path.exists(f"/proc/{pid}") and _not_zombie(pid)}
        time.sleep(0.2)
    if alive:
        kill_all()
    assert not alive, f"worker processes {sorted(alive)} outlived the run"


def _not_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_worker_seconds_count_the_sweeps_before_a_resume_or_say_they_are_estimated(tmp_path):
    from ibp_rflvm.evaluation.report import write_timings

    def rec(trial, seconds, resumed=0, before=None):
        r = {"cell": f"cancer__rflvm__t{trial}", "dataset": "cancer", "method": "rflvm", "trial": trial,
             "seconds": seconds, "resumed_from_sweep": resumed, "settings": {"n_iter": 10}}
        if before is not None:
            r["seconds_before_resume"] = before
        return r

    fresh, timed = rec(0, 8.0, before=0.0), rec(1, 2.0, resumed=6, before=5.0)
    untimed, after_end = rec(2, 2.0, resumed=6), rec(3, 1.0, resumed=10)
    assert harness.worker_seconds(fresh) == (8.0, True)
    assert harness.worker_seconds(rec(0, 8.0)) == (8.0, True)  # a record from before the field
    assert harness.worker_seconds(timed) == (7.0, True)
    assert harness.worker_seconds(untimed) == (pytest.approx(5.0), False)  # 4 of 10 sweeps took 2 s
    assert harness.worker_seconds(after_end) == (1.0, False)
    text = write_timings(tmp_path, [fresh, timed, untimed, after_end]).read_text()
    assert "| cancer | RFLVM | 4 | 5.2 | 21.0 |" in text
    assert "Total: 21 s of worker time over 4 cells." in text
    assert "cancer__rflvm__t2 (resumed at sweep 6), cancer__rflvm__t3 (resumed at sweep 10)." in text
    assert "t0" not in text.split("Total")[1] and "t1" not in text.split("Total")[1]


@pytest.mark.parametrize(("cpus", "n_jobs", "threads"), [(4, 1, 4), (4, 2, 2), (2, 3, 1)])
def test_cells_share_the_cores_among_the_workers(tmp_path, monkeypatch, cpus, n_jobs, threads):
    """A cell's sweep gets the cores left to it by the cells running beside it (not every core
    each, which oversubscribes the machine), and its estimator receives that `n_threads`."""
    from ibp_rflvm.evaluation import cells as cells_mod

    seen: list[tuple[int, int]] = []

    class _Done(Exception):
        pass

    def record(task):
        est = cells_mod.build_estimator(task.cell.method, task.n_components, 0, task.config, task.n_threads)
        seen.append((task.n_threads, est.get_params()["n_threads"]))
        raise _Done  # the harness logs it as a failed cell; nothing is fitted

    from ibp_rflvm.plumbing import blocks

    monkeypatch.setattr(blocks, "available_cpus", lambda: cpus)
    monkeypatch.setattr(scheduling, "_backend", lambda n, s: _Capacity(n))
    monkeypatch.setattr(scheduling, "compute_cell", record)
    kw = {**_one_chain(n_iter=2), "n_jobs": n_jobs}
    reproduce("table1", tmp_path / "out", trials=1, **kw)
    assert seen == [(threads, threads)]


class _Capacity(scheduling._Serial):
    """The in-process backend reporting `n` workers, so the thread split is that of `n` jobs."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self._n = n

    def capacity(self) -> int:
        return self._n
