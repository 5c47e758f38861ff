"""The command line: `ibp-rflvm fit` on user files, and `ibp-rflvm datasets`."""

import numpy as np
import pytest

from ibp_rflvm.cli import main
from ibp_rflvm.plumbing.io import read_matrix


def _write_csv(path, Y, header=True, sep=","):
    with open(path, "w") as f:
        if header:
            f.write(sep.join(f"gene{j}" for j in range(Y.shape[1])) + "\n")
        for row in Y:
            f.write(sep.join("" if np.isnan(v) else f"{v:.6f}" for v in row) + "\n")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    Y = rng.standard_normal((30, 5))
    Y[2, 1] = np.nan
    Y[7, 4] = np.nan
    return Y


def test_fit_round_trip_on_csv_with_header_and_missing_cells(tmp_path, data, capsys):
    import arviz as az
    import pandas as pd

    path = tmp_path / "expr.csv"
    _write_csv(path, data)
    out = tmp_path / "out"
    code = main(["fit", str(path), "--n-iter", "6", "--n-frequencies", "6", "--n-chains", "2",
                 "--out", str(out), "--quiet"])  # fmt: skip
    assert code == 0
    files = ("samples.nc", "summary.csv", "latent.csv", "embedding.csv", "latent_space.png")
    files += ("k_plus_trace.png",)
    for name in files:
        assert (out / name).stat().st_size > 0, name
    idata = az.from_netcdf(out / "samples.nc")
    assert idata.posterior.sizes["chain"] == 2
    assert idata["latent"]["latent"].shape[2] == 30  # the latents are a group of their own
    table = pd.read_csv(out / "summary.csv", index_col=0)
    assert {"r_hat", "ess_bulk", "ess_tail"} <= set(table.columns)
    assert "2 unobserved entries" in capsys.readouterr().out


def test_one_chain_summary_has_a_split_rhat(tmp_path, data):
    import pandas as pd

    path = tmp_path / "expr.csv"
    _write_csv(path, data)
    out = tmp_path / "out"
    code = main(["fit", str(path), "--n-iter", "16", "--n-frequencies", "6", "--out", str(out), "--quiet"])
    assert code == 0
    table = pd.read_csv(out / "summary.csv", index_col=0)
    assert np.isfinite(table.loc["loglik", "r_hat"])  # the halves of the one chain, not NaN


def test_bad_cell_is_named_by_row_and_column(tmp_path, capsys):
    path = tmp_path / "bad.csv"
    path.write_text("a,b,c\n1,2,3\n4,abc,6\n7,8,9\n")
    assert main(["fit", str(path), "--n-iter", "2", "--out", str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "line 3" in err and "column 2" in err and "'b'" in err and "'abc'" in err


def test_readers_agree_across_formats(tmp_path, data):
    tsv = tmp_path / "x.tsv"
    _write_csv(tsv, data, header=False, sep="\t")
    npy = tmp_path / "x.npy"
    np.save(npy, data)
    npz = tmp_path / "x.npz"
    np.savez(npz, counts=data)
    from_tsv, header = read_matrix(tsv)
    assert header is None
    np.testing.assert_allclose(from_tsv, data, atol=1e-6)
    np.testing.assert_array_equal(read_matrix(npy)[0], data)
    np.testing.assert_array_equal(read_matrix(npz)[0], data)
    csv_path = tmp_path / "h.csv"
    _write_csv(csv_path, data)
    assert read_matrix(csv_path)[1] == [f"gene{j}" for j in range(5)]


def test_unusable_data_gets_a_clear_error(tmp_path, capsys):
    path = tmp_path / "empty_row.csv"
    path.write_text("a,b\n1,2\nNA,NA\n3,4\n")
    assert main(["fit", str(path), "--n-iter", "2", "--out", str(tmp_path / "o"), "--quiet"]) == 2
    assert "no observed entry" in capsys.readouterr().err
    assert main(["fit", str(tmp_path / "missing.csv"), "--out", str(tmp_path / "o")]) == 2


def test_datasets_command_lists_every_dataset(capsys):
    assert main(["datasets"]) == 0
    out = capsys.readouterr().out
    names = ("cancer", "mice", "ovarian", "olivetti", "cambridge")
    names += ("montreal", "congress", "spam", "newsgroups")
    for name in names:
        assert name in out


def test_fit_passes_the_cap_on_k_plus(tmp_path, data):
    import arviz as az

    path = tmp_path / "expr.csv"
    _write_csv(path, data)
    out = tmp_path / "out"
    args = ["fit", str(path), "--n-iter", "12", "--n-frequencies", "6", "--dims", "2", "--quiet"]
    assert main([*args, "--max-dims", "2", "--out", str(out)]) == 0
    k_plus = az.from_netcdf(out / "samples.nc").posterior["k_plus"].values
    assert k_plus.max() <= 2 and k_plus.size > 0
