"""`ibp-rflvm fit` as a new user meets it: which chain each output comes from, the output
tables, the options for likelihood parameters and size factors, the checkpoint's name, the
output folder after a failure, and the messages."""

import re
import zipfile

import numpy as np
import pandas as pd
import pytest

from ibp_rflvm import plots
from ibp_rflvm.cli import build_parser, main
from ibp_rflvm.cli import fit as _cli_fit

FAST = ["--n-iter", "8", "--n-frequencies", "6", "--n-jobs", "1", "--quiet"]


def _frame(n=30, j=5, seed=0):
    rng = np.random.default_rng(seed)
    Y = rng.standard_normal((n, j))
    Y[2, 1] = np.nan
    return pd.DataFrame(Y, columns=[f"gene{k}" for k in range(j)], index=[f"cell{i}" for i in range(n)])


@pytest.fixture
def figures(monkeypatch):
    """The figures the command saves, by file name, instead of PNG files."""
    saved = {}

    def keep(fig, path):
        saved[path.name] = fig
        return path

    monkeypatch.setattr(plots, "_save", keep)
    yield saved
    for fig in saved.values():
        plots.plt.close(fig)


def _chains(printed: str) -> dict[int, tuple[int, float]]:
    """chain -> (final K+, stacking weight), from the lines the command prints per chain."""
    pattern = r"chain (\d+): started from \d+ dims, final K\+ (\d+), stacking weight ([\d.]+)"
    found = re.findall(pattern, printed)
    return {int(c): (int(k), float(w)) for c, k, w in found}


def test_printed_k_plus_latent_csv_and_figure_describe_the_best_chain(tmp_path, capsys, figures):
    import arviz as az

    path = tmp_path / "expr.csv"
    _frame().to_csv(path, index_label="cell")
    out = tmp_path / "out"
    # A seed whose best chain is not chain 0 (the one the command used to report) and whose
    # chains end with different K+, so that reporting the wrong chain shows.
    for seed in ("1", "3", "4", "6"):
        assert main(["fit", str(path), "--n-chains", "2", "--seed", seed, "--out", str(out), *FAST]) == 0
        printed = capsys.readouterr().out
        chains = _chains(printed)
        assert len(chains) == 2
        best = max(chains, key=lambda c: chains[c][1])
        if best != 0 and chains[0][0] != chains[1][0]:
            break
    else:
        pytest.fail("no seed gave a best chain other than chain 0 with another K+")
    assert re.search(rf"chain {best}: .*<- best", printed)
    k_best = chains[best][0]
    final = re.search(r"final K\+ = (\d+) \(chain (\d+) of 2", printed)
    assert final is not None and (int(final[1]), int(final[2])) == (k_best, best)
    assert pd.read_csv(out / "latent.csv", index_col=0).shape[1] == k_best
    assert int(az.from_netcdf(out / "samples.nc").posterior["k_plus"].values[best, -1]) == k_best
    title = figures["latent_space.png"].axes[0].get_title()
    assert f"chain {best} of 2" in title and f"K+ = {k_best}" in title


def test_k_plus_figure_shows_the_combined_posterior_once(tmp_path, capsys, figures):
    path = tmp_path / "expr.csv"
    _frame().to_csv(path)
    out = tmp_path / "o"
    assert main(["fit", str(path), "--n-chains", "2", "--seed", "1", "--out", str(out), *FAST]) == 0
    printed = capsys.readouterr().out
    line = re.search(r"posterior of K\+ over the kept sweeps \(all chains, stacking-weighted\): (.*)",
                     printed)  # fmt: skip
    posterior = {int(k): float(p) for k, p in re.findall(r"(\d+): ([\d.]+)", line[1])}
    hist = figures["k_plus_trace.png"].axes[1]
    assert len(hist.containers) == 1, "one posterior, not one histogram per chain"
    bars = {round(b.get_x() + b.get_width() / 2): b.get_height() for b in hist.containers[0]}
    assert bars.keys() == posterior.keys()
    np.testing.assert_allclose([bars[k] for k in posterior], list(posterior.values()), atol=0.006)
    assert sum(bars.values()) == pytest.approx(1.0)
    assert "stacking-weighted" in hist.get_title()


def test_output_tables_have_header_row_names_and_no_noise(tmp_path):
    frame = _frame()
    path = tmp_path / "expr.csv"
    frame.to_csv(path, index_label="cell")
    out = tmp_path / "o"
    assert main(["fit", str(path), "--out", str(out), *FAST]) == 0
    for name, prefix in (("latent.csv", "dim"), ("embedding.csv", "component"), ("view.csv", "view")):
        text = (out / name).read_text()
        header = text.splitlines()[0].split(",")
        assert header[0] == "cell" and header[1] == f"{prefix}1"
        table = pd.read_csv(out / name, index_col=0)
        assert list(table.index) == list(frame.index)
        cells = [c for line in text.splitlines()[1:] for c in line.split(",")[1:]]
        assert not [c for c in cells if re.fullmatch(r"-0(\.0*)?(e[+-]?\d+)?", c)], "negative zero"
        assert all(len(re.sub(r"e.*|[-.]", "", c).lstrip("0")) <= 6 for c in cells), "more than 6 digits"


def test_dimensions_and_their_pictures_are_written(tmp_path, capsys):
    frame = _frame()
    path = tmp_path / "expr.csv"
    frame.to_csv(path, index_label="cell")
    out = tmp_path / "o"
    assert main(["fit", str(path), "--out", str(out), *FAST]) == 0
    dims = pd.read_csv(out / "dimensions.csv", index_col=0)
    top = pd.read_csv(out / "top_columns.csv")
    assert list(top.columns) == ["dimension", "rank", "column", "variation", "effect", "lower", "upper"]
    assert set(top["dimension"]) == set(dims.index) and set(top["column"]) <= set(frame.columns)
    std = pd.read_csv(out / "embedding_std.csv", index_col=0)
    assert list(std.index) == list(frame.index)
    for name in ("dimension_positions.csv", "dimension_positions_std.csv"):
        pos = pd.read_csv(out / name, index_col=0)
        assert list(pos.index) == list(frame.index) and list(pos.columns) == list(dims.index)
    assert (out / "dimension_effects.png").stat().st_size > 0
    assert (out / "view_by_dimension.png").exists() == (len(dims) > 0)
    assert (out / "dimension_profiles.png").exists() == (len(dims) > 0)
    assert not (out / "groups.csv").exists()
    printed = capsys.readouterr().out
    assert "effective_dims:" in printed and "embedding_dims:" in printed
    # The final line names every file the fit wrote, and --help's list names each of them.
    wrote = printed.strip().splitlines()[-1]
    written = {p.name for p in out.iterdir()}
    assert wrote.startswith("wrote ") and set(wrote[6:].rsplit(" in ", 1)[0].split(", ")) == written
    helptext = build_parser()._subparsers._group_actions[0].choices["fit"].format_help()
    assert all(name in helptext for name in written), written


def test_labels_colour_the_pictures_and_place_the_groups(tmp_path, capsys):
    frame = _frame(n=40)
    frame.insert(2, "kind", ["a", "b", "c", "d"] * 10)
    path = tmp_path / "expr.csv"
    frame.to_csv(path, index_label="cell")
    out = tmp_path / "o"
    assert main(["fit", str(path), "--out", str(out), "--labels", "kind", *FAST]) == 0
    dims = pd.read_csv(out / "dimensions.csv", index_col=0)
    groups = pd.read_csv(out / "groups.csv")
    assert list(groups.columns) == ["dimension", "group", "rows", "usage", "position", "lower", "upper"]
    assert len(groups) == 4 * len(dims) and set(groups["group"]) == {"a", "b", "c", "d"}
    assert (groups.groupby("dimension")["rows"].sum() == 40).all()
    top = pd.read_csv(out / "top_columns.csv")
    assert "kind" not in set(top["column"])  # the label column is not data
    assert "groups.csv" in capsys.readouterr().out
    code = main(["fit", str(path), "--out", str(tmp_path / "p"), "--labels", "type", *FAST])
    assert code == 2 and "no label column 'type'" in capsys.readouterr().err


def test_a_k_plus_that_never_moved_is_reported(tmp_path, capsys):
    frame = _frame()
    path = tmp_path / "expr.csv"
    frame.to_csv(path, index_label="cell")
    args = ["fit", str(path), "--out", str(tmp_path / "o"), "--sampler", "paper", "--dims", "3", *FAST]
    assert main(args) == 0
    assert "KPlusStuckWarning" in capsys.readouterr().err


def test_pandas_index_column_is_read_as_row_names(tmp_path, capsys):
    frame = _frame().reset_index(drop=True)
    path = tmp_path / "frame.csv"
    frame.to_csv(path)  # pandas' default: an unnamed index column first
    out = tmp_path / "o"
    assert main(["fit", str(path), "--out", str(out), *FAST]) == 0
    printed = capsys.readouterr().out
    assert "30 rows x 5 columns" in printed and "row names" in printed
    assert list(pd.read_csv(out / "latent.csv", index_col=0).index) == list(range(30))


def test_help_says_how_files_are_read_and_what_the_checkpoint_is(capsys):
    with pytest.raises(SystemExit):
        main(["fit", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "pandas' to_csv" in text and "row names" in text
    assert "checkpoint.zip" in text and "never a pickle" in text
    assert "NUMBA_CACHE_DIR" in text and "best chain" in text


def test_checkpoint_is_a_zip_named_so_and_resumes(tmp_path, capsys):
    path = tmp_path / "expr.csv"
    _frame().to_csv(path)
    out = tmp_path / "o"
    args = ["fit", str(path), "--out", str(out), "--checkpoint", *FAST]
    assert main(args) == 0
    assert zipfile.is_zipfile(out / "checkpoint.zip")
    assert not list(out.glob("*.pkl"))
    first = pd.read_csv(out / "latent.csv", index_col=0)
    assert main(args) == 0  # a finished chain resumed: the same result
    pd.testing.assert_frame_equal(pd.read_csv(out / "latent.csv", index_col=0), first)


def test_failed_run_leaves_no_output_folder(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n3,x\n")
    out = tmp_path / "new" / "out"
    assert main(["fit", str(bad), "--out", str(out), *FAST]) == 2
    assert not (tmp_path / "new").exists()
    # A failure inside fit, after the checkpoint's folder was made, removes it again.
    good = tmp_path / "good.csv"
    _frame().to_csv(good)
    assert main(["fit", str(good), "--out", str(out), "--checkpoint", *FAST, "--n-frequencies", "0"]) == 2
    assert "n_frequencies" in capsys.readouterr().err
    assert not (tmp_path / "new").exists() and tmp_path.exists()
    # The same for the paper's experiments.
    assert main(["reproduce", "table1", "--datasets", "nope", "--out", str(out), "--quiet"]) == 2
    assert not (tmp_path / "new").exists()


def test_messages_name_rows_and_columns_as_the_file_does(tmp_path, capsys):
    counts = pd.DataFrame(np.ones((6, 3), dtype=int), columns=["x", "y", "z"], index=list("abcdef"))
    counts.loc["c", "y"] = -2
    path = tmp_path / "counts.csv"
    counts.to_csv(path)
    assert main(["fit", str(path), "--likelihood", "poisson", "--out", str(tmp_path / "o"), *FAST]) == 2
    err = capsys.readouterr().err
    assert "('c', 'y')" in err and "(2, 1)" not in err
    # Without names: counted from 1, and said so.
    path.write_text("1,1,1\n1,-2,1\n1,1,1\n")
    assert main(["fit", str(path), "--likelihood", "poisson", "--out", str(tmp_path / "o"), *FAST]) == 2
    err = capsys.readouterr().err
    assert "(2, 2)" in err and "counted from 1" in err
    path.write_text("a,b\n1,2\nNA,NA\n3,4\n")
    assert main(["fit", str(path), "--out", str(tmp_path / "o"), *FAST]) == 2
    assert "rows 2 (data rows and columns counted from 1)" in capsys.readouterr().err


def test_unscaled_warning_names_the_columns(tmp_path, capsys):
    from sklearn.datasets import load_wine

    path = tmp_path / "wine.csv"
    load_wine(as_frame=True).data.to_csv(path, index=False)
    assert main(["fit", str(path), "--out", str(tmp_path / "o"), *FAST, "--n-iter", "2"]) == 0
    err = capsys.readouterr().err
    assert "warning (UnscaledDataWarning)" in err
    assert "column 13 ('proline')" in err and "column 8 ('nonflavanoid_phenols')" in err


def test_likelihood_params_option(tmp_path, capsys):
    rng = np.random.default_rng(1)
    path = tmp_path / "binom.csv"
    pd.DataFrame(rng.binomial(5, 0.3, (20, 4))).to_csv(path, index=False)
    out = tmp_path / "o"
    run = ["fit", str(path), "--likelihood", "binomial", "--out", str(out), *FAST, "--n-iter", "2"]
    assert main(run) == 2
    assert "--likelihood-param n_trials=N" in capsys.readouterr().err
    assert not out.exists()
    assert main([*run, "--likelihood-param", "n_trials=5"]) == 0
    printed = capsys.readouterr().out
    assert "20 rows x 4 columns" in printed  # pandas' 0,1,2,3 column names are a header, not a row
    assert main([*run, "--likelihood-param", "n_trials=3"]) == 2
    assert "above the number of trials" in capsys.readouterr().err
    assert main([*run, "--likelihood-param", "trials=5"]) == 2
    assert "takes n_trials, prior_scale" in capsys.readouterr().err
    assert main([*run, "--likelihood-param", "n_trials"]) == 2
    assert "KEY=VALUE" in capsys.readouterr().err
    # One number of trials per entry, from a file.
    trials = tmp_path / "trials.csv"
    np.savetxt(trials, np.full((20, 4), 6), fmt="%d", delimiter=",")
    assert main([*run, "--likelihood-param", f"n_trials=@{trials}"]) == 0


def test_size_factor_options(tmp_path, capsys):
    rng = np.random.default_rng(2)
    depth = rng.uniform(0.5, 2.0, 20)
    counts = pd.DataFrame(rng.poisson(3 * depth[:, None], (20, 4)), columns=list("abcd"),
                          index=[f"r{i}" for i in range(20)])  # fmt: skip
    counts["depth"] = depth
    path = tmp_path / "counts.csv"
    counts.to_csv(path)
    out = tmp_path / "o"
    run = ["fit", str(path), "--likelihood", "poisson", "--out", str(out), *FAST, "--n-iter", "2"]
    assert main([*run, "--size-factor-column", "depth"]) == 0
    assert "4 columns" in capsys.readouterr().out
    assert list(pd.read_csv(out / "latent.csv", index_col=0).index) == list(counts.index)
    assert main([*run, "--size-factor-column", "nope"]) == 2
    assert "'depth'" in capsys.readouterr().err
    plain = tmp_path / "plain.csv"
    counts.drop(columns="depth").to_csv(plain)
    run[1] = str(plain)
    assert main([*run, "--size-factors", "total"]) == 0
    capsys.readouterr()
    factors = tmp_path / "sf.csv"
    pd.Series(depth[::-1], index=counts.index[::-1], name="s").to_csv(factors)  # matched by name
    assert main([*run, "--size-factors", str(factors)]) == 0
    capsys.readouterr()
    bad = depth.copy()
    bad[3] = 0.0
    pd.Series(bad, index=counts.index, name="s").to_csv(factors)
    assert main([*run, "--size-factors", str(factors)]) == 2
    assert "'r3'" in capsys.readouterr().err
    assert main(["fit", str(plain), "--size-factors", "total", "--out", str(out), *FAST]) == 2
    assert "gaussian likelihood takes no size factors" in capsys.readouterr().err
    counts.loc["r5", list("abcd")] = 0
    counts.drop(columns="depth").to_csv(plain)
    assert main([*run, "--size-factors", "total"]) == 2
    assert "rows 'r5' have no positive count" in capsys.readouterr().err


def test_compile_notice_comes_before_the_fit(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(_cli_fit, "numba_note", lambda likelihood: f"NOTE {likelihood}")
    path = tmp_path / "expr.csv"
    _frame().to_csv(path)
    assert main(["fit", str(path), "--out", str(tmp_path / "o"), *FAST, "--n-iter", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    note = lines.index("NOTE gaussian")
    assert note < next(i for i, ln in enumerate(lines) if "sweeps x" in ln)


def test_compile_notice_names_the_cache_and_goes_once_cached(tmp_path):
    """In a fresh NUMBA_CACHE_DIR the notice is printed and names it; once numba's index files
    exist it is not. (Subprocesses: numba reads its cache folder at import.)"""
    import os
    import subprocess
    import sys

    code = (
        "import os, sys\n"
        "from ibp_rflvm.cli.fit import numba_note\n"
        "from numba.core.registry import CPUDispatcher\n"
        "print(numba_note('poisson'))\n"
        "if sys.argv[1] == 'fill':\n"
        "    from ibp_rflvm.likelihoods import polya_gamma\n"
        "    from ibp_rflvm.samplers import ibp\n"
        "    for mod in (ibp, polya_gamma):\n"
        "        for obj in vars(mod).values():\n"
        "            if isinstance(obj, CPUDispatcher):\n"
        "                p = obj._cache._cache_file._index_path\n"
        "                os.makedirs(os.path.dirname(p), exist_ok=True)\n"
        "                open(p, 'wb').close()\n"
    )
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    first = subprocess.run([sys.executable, "-c", code, "fill"], env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    assert "compiling" in first.stdout and str(tmp_path / "cache") in first.stdout
    second = subprocess.run([sys.executable, "-c", code, "-"], env=env, capture_output=True, text=True)
    assert second.stdout.strip() == "None", second.stdout


def test_a_cap_below_the_default_start_lowers_the_start(tmp_path, capsys):
    import arviz as az

    path = tmp_path / "expr.csv"
    _frame().to_csv(path)
    out = tmp_path / "o"
    assert main(["fit", str(path), "--max-dims", "3", "--out", str(out), *FAST]) == 0
    assert az.from_netcdf(out / "samples.nc").posterior["k_plus"].values.max() <= 3
    refused = tmp_path / "p"
    assert main(["fit", str(path), "--dims", "6", "--max-dims", "4", "--out", str(refused), *FAST]) == 2
    assert "--dims 6 exceeds --max-dims 4" in capsys.readouterr().err
    assert not refused.exists()


def test_model_gamma_poisson_fits_counts_in_z(tmp_path, monkeypatch):
    """``--model gamma-poisson`` is the IBP-RFLVM with the gamma-Poisson prior on ``Z``."""
    from ibp_rflvm import IBPRFLVM

    seen = {}
    original_fit = IBPRFLVM.fit

    def fit(self, *args, **kwargs):
        seen["z_prior"] = self.z_prior
        return original_fit(self, *args, **kwargs)

    monkeypatch.setattr(IBPRFLVM, "fit", fit)
    path = tmp_path / "expr.csv"
    _frame().to_csv(path, index_label="cell")
    assert main(["fit", str(path), "--model", "gamma-poisson", "--out", str(tmp_path / "o"), *FAST]) == 0
    assert seen == {"z_prior": "gamma-poisson"}
    assert (tmp_path / "o" / "latent.csv").exists()


@pytest.mark.parametrize("option", [[], ["--frequency-update", "mh"]])
def test_frequency_update_option_picks_the_move(tmp_path, monkeypatch, option):
    """By default every frequency moves every sweep (elliptical slice sampling); with
    ``--frequency-update mh`` the paper's step, which rejects some of its proposals, runs."""
    from ibp_rflvm import IBPRFLVM

    fitted = []
    original_fit = IBPRFLVM.fit

    def fit(self, *args, **kwargs):
        fitted.append(original_fit(self, *args, **kwargs))
        return fitted[-1]

    monkeypatch.setattr(IBPRFLVM, "fit", fit)
    path = tmp_path / "expr.csv"
    _frame().to_csv(path, index_label="cell")
    assert main(["fit", str(path), *option, "--out", str(tmp_path / "o"), *FAST]) == 0
    (model,) = fitted
    share = np.mean(model.posterior_.moves.w_moved) / model.n_frequencies
    assert model.frequency_update == (option[1] if option else None)
    assert (share == 1.0) if not option else (share < 1.0)
