"""Tests for the data-set loaders (docs/datasets.md).

Tests that read the real files need ``IBP_RFLVM_DATA`` pointing at the shared data folder and
are skipped otherwise; the resolution, checksum and download tests build their own files.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from ibp_rflvm.datasets import loaders
from ibp_rflvm.datasets.loaders import (
    DATASET_NAMES,
    ENV_VAR,
    MONTREAL_DROPPED,
    OVARIAN_URL,
    SHA256,
    available_datasets,
    fetch,
    load,
)

_ENV = os.environ.get(ENV_VAR)
DATA = Path(_ENV) if _ENV else None
HAVE_DATA = DATA is not None and DATA.is_dir()
needs_data = pytest.mark.skipif(not HAVE_DATA, reason=f"{ENV_VAR} is unset or not a directory")

MONTREAL = "montreal_bikes/comptagesvelo2015.csv"


@pytest.fixture(scope="module")
def loaded():
    """Load each data set at most once per module; newsgroups alone takes a few seconds."""
    if not HAVE_DATA:
        pytest.skip(f"{ENV_VAR} is unset or not a directory")
    cache: dict[str, loaders.Dataset] = {}

    def get(name: str) -> loaders.Dataset:
        if name not in cache:
            # An explicit path keeps the cache independent of tests that change the environment.
            cache[name] = load(name, path=DATA if loaders._SPECS[name].files else None)
        return cache[name]

    return get


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """No data anywhere: the env var points at an empty folder and the cache is in tmp_path."""
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv(ENV_VAR, str(empty))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path


def _assert_standardised(X: np.ndarray) -> None:
    assert np.allclose(np.nanmean(X, axis=0), 0.0, atol=1e-10)
    assert np.allclose(np.nanstd(X, axis=0), 1.0, atol=1e-10)


def _assert_counts(X: np.ndarray) -> None:
    assert X.dtype == np.float64
    assert np.isfinite(X).all()
    assert (X >= 0).all()
    assert np.array_equal(X, np.round(X))


def _copy(src_rel: str, root: Path) -> Path:
    dest = root / src_rel
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(DATA / src_rel, dest)
    return dest


# ------------------------------------------------------------------------------------------
# The data sets
# ------------------------------------------------------------------------------------------


def test_cancer():
    ds = load("cancer")
    assert ds.shape == (569, 30) and ds.data.dtype == np.float64 and ds.kind == "real"
    assert np.bincount(ds.labels).tolist() == [212, 357]
    assert ds.label_names == ["malignant", "benign"]
    _assert_standardised(ds.data)


@needs_data
def test_mice(loaded):
    ds = loaded("mice")
    assert ds.shape == (1080, 77) and ds.data.dtype == np.float64
    assert int(np.isnan(ds.data).sum()) == 1396
    _assert_standardised(ds.data)
    assert ds.feature_names[0] == "DYRK1A_N" and ds.feature_names[-1] == "CaNA_N"
    assert ds.label_names == sorted(ds.label_names)
    counts = dict(zip(ds.label_names, np.bincount(ds.labels).tolist(), strict=True))
    assert counts == {
        "c-CS-m": 150, "c-CS-s": 135, "c-SC-m": 150, "c-SC-s": 135,
        "t-CS-m": 135, "t-CS-s": 105, "t-SC-m": 135, "t-SC-s": 135,
    }  # fmt: skip
    assert ds.row_names[0] == "309_1"


@needs_data
def test_olivetti_pixel_order(loaded):
    from scipy.io import loadmat

    ds = loaded("olivetti")
    assert ds.shape == (400, 4096) and ds.data.dtype == np.float64
    assert np.bincount(ds.labels).tolist() == [10] * 40
    assert np.array_equal(ds.labels[:20], np.repeat([0, 1], 10))
    _assert_standardised(ds.data)
    # Built independently: each column of the .mat is a Fortran-order 64x64 image.
    faces = loadmat(DATA / "olivetti_faces/olivettifaces.mat")["faces"].astype(float)
    images = np.stack([faces[:, i].reshape(64, 64, order="F") for i in range(400)])
    expected = images.reshape(400, -1)
    expected = (expected - expected.mean(0)) / expected.std(0)
    assert np.allclose(ds.data, expected)
    # Upright faces are left-right symmetric, not top-bottom: a check that rows are image rows.
    mean = images.mean(0)
    lr = np.corrcoef(mean.ravel(), mean[:, ::-1].ravel())[0, 1]
    tb = np.corrcoef(mean.ravel(), mean[::-1, :].ravel())[0, 1]
    assert lr > 0.9 > tb


def test_cambridge():
    ds = load("cambridge")
    assert ds.shape == (500, 36) and ds.data.dtype == np.float64 and ds.kind == "real"
    assert ds.labels.shape == (500, 4) and set(np.unique(ds.labels)) <= {0, 1}
    assert ds.label_names == ["cross", "box", "triangle", "T"]
    assert np.array_equal(load("cambridge").data, ds.data)
    assert not np.array_equal(load("cambridge", random_state=1).data, ds.data)


@needs_data
def test_montreal(loaded):
    ds = loaded("montreal")
    assert ds.shape == (319, 17) and ds.kind == "counts"
    _assert_counts(ds.data)
    assert not set(MONTREAL_DROPPED) & set(ds.feature_names)
    assert ds.feature_names[0] == "Berri1" and "Brébeuf" in ds.feature_names
    days_per_month = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 15]  # to 15 November
    assert np.bincount(ds.labels)[1:].tolist() == days_per_month
    assert ds.row_names[0] == "2015-01-01" and ds.row_names[-1] == "2015-11-15"
    assert ds.data[0, 0] == 58  # Berri1 on 1 Jan 2015, first data cell of the file


@needs_data
def test_congress(loaded):
    import pandas as pd

    ds = loaded("congress")
    assert ds.shape == (529, 1000) and ds.kind == "counts"
    _assert_counts(ds.data)
    assert ds.data.sum() == 176160
    assert np.bincount(ds.labels).tolist() == [242, 2, 285]
    assert ds.label_names == ["Democrat", "Independent", "Republican"]
    assert np.all(np.diff(ds.labels) >= 0)  # D, then I, then R
    for k in range(3):
        names = [n for n, lab in zip(ds.row_names, ds.labels, strict=True) if lab == k]
        assert names == sorted(names)
    # The rows moved with their members.
    raw = pd.read_csv(DATA / "congress109/congress109.csv").set_index("name")
    i = ds.row_names.index("Chris Cannon")
    assert np.array_equal(ds.data[i], raw.loc["Chris Cannon"].to_numpy(dtype=float))
    assert ds.labels[i] == 2


@needs_data
def test_spam(loaded):
    ds = loaded("spam")
    lines = (DATA / "sms_spam/SMSSpamCollection").read_text(encoding="utf-8").split("\n")
    assert sum(1 for ln in lines if ln) == 5574
    assert ds.shape == (5403, 1000) and ds.kind == "counts"
    _assert_counts(ds.data)
    assert (ds.data.sum(axis=1) > 0).all()
    assert np.bincount(ds.labels).tolist() == [4658, 745]  # of 4827 ham / 747 spam
    assert len(set(ds.feature_names)) == 1000
    # Columns are in order of corpus frequency.
    assert np.all(np.diff(ds.data.sum(axis=0)) <= 0)


@needs_data
def test_newsgroups(loaded):
    ds = loaded("newsgroups")
    assert ds.shape == (1543, 1000) and ds.kind == "counts"
    _assert_counts(ds.data)
    assert (ds.data.sum(axis=1) > 0).all()
    assert ds.label_names == list(loaders.NEWSGROUPS_CATEGORIES)
    assert np.bincount(ds.labels).tolist() == [389, 399, 392, 363]
    for name, lab in zip(ds.row_names, ds.labels, strict=True):
        assert name.startswith("20news-bydate-test/" + ds.label_names[lab] + "/")


@needs_data
def test_sqrt_option(loaded):
    raw = loaded("montreal")
    ds = load("montreal", path=DATA, sqrt=True)
    _assert_counts(ds.data)
    assert np.array_equal(ds.data, np.rint(np.sqrt(raw.data)))
    with pytest.raises(ValueError, match="count data only"):
        load("cancer", sqrt=True)


@needs_data
def test_shipped_checksums_match_table():
    listed = {}
    for line in (DATA / "SHA256SUMS").read_text().splitlines():
        digest, rel = line.split()
        listed[rel] = digest
    for rel, sums in SHA256.items():
        if rel in listed:
            assert listed[rel] in sums
            assert hashlib.sha256((DATA / rel).read_bytes()).hexdigest() in sums


def test_static_shapes_in_listing(loaded):
    by_name = {d["name"]: d for d in available_datasets()}
    for name in DATASET_NAMES:
        if name != "ovarian":
            assert by_name[name]["shape"] == loaded(name).shape


# ------------------------------------------------------------------------------------------
# Ovarian: a user-supplied file
# ------------------------------------------------------------------------------------------


def test_ovarian_missing_names_file_and_address(isolated):
    with pytest.raises(FileNotFoundError) as err:
        load("ovarian")
    msg = str(err.value)
    assert "ovcadatafinal-WEB.txt" in msg and OVARIAN_URL in msg and ENV_VAR in msg


def test_ovarian_user_file(tmp_path):
    rng = np.random.default_rng(0)
    values = rng.normal(size=(12, 4)) * 5 + 3
    lines = ["GeneID\tDescription\tS1\tS2\tS3\tS4"]
    for g, row in enumerate(values):
        cells = [f"{v:.6f}" for v in row]
        if g == 3:
            cells[1] = "NA"
        lines.append(f"G{g}\tgene number {g}\t" + "\t".join(cells))
    f = tmp_path / "ovca.txt"
    f.write_text("\n".join(lines) + "\n")

    ds = load("ovarian", path=f)
    assert ds.shape == (4, 12) and ds.kind == "real"
    assert ds.row_names == ["S1", "S2", "S3", "S4"] and ds.feature_names[0] == "G0"
    assert int(np.isnan(ds.data).sum()) == 1 and np.isnan(ds.data[1, 3])
    _assert_standardised(ds.data)
    assert load("ovarian", path=f, samples_as_rows=True).shape == (12, 4)


# ------------------------------------------------------------------------------------------
# Resolution, checksums, downloads
# ------------------------------------------------------------------------------------------


def test_missing_file_message(isolated):
    with pytest.raises(FileNotFoundError) as err:
        load("congress", data_home=isolated / "nowhere")
    msg = str(err.value)
    assert "congress109/congress109.csv" in msg
    assert f"${ENV_VAR}: {isolated / 'empty'}" in msg
    assert f"data_home argument: {isolated / 'nowhere'} (directory does not exist)" in msg
    assert str(isolated / "xdg" / "ibp_rflvm") in msg
    assert "fetch('congress')" in msg


def test_missing_file_message_without_env(isolated, monkeypatch):
    monkeypatch.delenv(ENV_VAR)
    with pytest.raises(FileNotFoundError, match=rf"\${ENV_VAR} \(not set\)"):
        load("spam")


@needs_data
def test_checksum_mismatch_detected(isolated, monkeypatch):
    root = isolated / "data"
    dest = _copy(MONTREAL, root)
    first_day = b"01/01/2015,00:00,58,"
    raw = dest.read_bytes()
    assert first_day in raw
    raw = raw.replace(first_day, b"01/01/2015,00:00,98,")  # Berri1 on 1 Jan; still a valid count
    dest.write_bytes(raw)
    monkeypatch.setenv(ENV_VAR, str(root))
    with pytest.raises(ValueError) as err:
        load("montreal")
    msg = str(err.value)
    assert str(dest) in msg
    assert SHA256[MONTREAL][0] in msg
    assert hashlib.sha256(raw).hexdigest() in msg
    assert load("montreal", verify=False).data[0, 0] == 98


@needs_data
def test_resolution_order(isolated, monkeypatch):
    env_dir, home, cache = isolated / "env", isolated / "home", isolated / "xdg" / "ibp_rflvm"
    for root in (env_dir, home, cache):
        _copy(MONTREAL, root)
    explicit = _copy(MONTREAL, isolated / "explicit")

    monkeypatch.setenv(ENV_VAR, str(env_dir))
    assert load("montreal", home, path=explicit).files == (explicit,)
    assert load("montreal", home).files == (env_dir / MONTREAL,)
    monkeypatch.delenv(ENV_VAR)
    assert load("montreal", home).files == (home / MONTREAL,)
    assert load("montreal").files == (cache / MONTREAL,)
    # A directory given as path may hold the file flat or in the usual sub-folder.
    assert load("montreal", path=isolated / "explicit").files == (explicit,)


@needs_data
def test_explicit_path_is_final(isolated):
    members = _copy("congress109/congress109members.csv", isolated / "c")
    with pytest.raises(FileNotFoundError, match="path argument"):
        load("congress", path=isolated / "c")
    counts = _copy("congress109/congress109.csv", isolated / "c")
    assert load("congress", path=counts).files == (counts, members)


def _failing_urlopen(*args, **kwargs):
    raise urllib.error.URLError("Name or service not known")


def test_failed_download_message(isolated, monkeypatch):
    monkeypatch.setattr(urllib.request, "urlopen", _failing_urlopen)
    with pytest.raises(FileNotFoundError) as err:
        load("montreal", download=True)
    msg = str(err.value)
    dest = isolated / "xdg" / "ibp_rflvm" / MONTREAL
    assert f"Could not download '{MONTREAL}'" in msg
    assert "raw.githubusercontent.com/tdhock/montreal-velos" in msg and "Name or service not known" in msg
    assert f"put it at '{dest}'" in msg and ENV_VAR in msg
    assert not dest.exists() and not list(dest.parent.glob("*.part"))


def test_no_implicit_download(isolated, monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("load() must not download unless asked")

    monkeypatch.setattr(urllib.request, "urlopen", forbidden)
    with pytest.raises(FileNotFoundError):
        load("montreal")


class _Response:
    def __init__(self, payload: bytes):
        self._payload, self._pos = payload, 0

    def read(self, n: int = -1) -> bytes:
        end = len(self._payload) if n < 0 else self._pos + n
        chunk, self._pos = self._payload[self._pos : end], min(end, len(self._payload))
        return chunk

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@needs_data
def test_fetch_with_injected_opener(isolated, monkeypatch):
    monkeypatch.delenv(ENV_VAR)
    served = {
        "congress109.csv": (DATA / "congress109/congress109.csv").read_bytes(),
        "congress109members.csv": (DATA / "congress109/congress109members.csv").read_bytes(),
    }
    urls = []

    def opener(url, timeout):
        urls.append(url)
        return _Response(served[url.rsplit("/", 1)[1]])

    home = isolated / "home"
    paths = fetch("congress", home, opener=opener)
    assert paths == [home / "congress109/congress109.csv", home / "congress109/congress109members.csv"]
    assert all("jgscott/STA380" in u for u in urls)
    assert load("congress", home).shape == (529, 1000)
    fetch("congress", home, opener=opener)  # already there: nothing downloaded
    assert len(urls) == 2


def test_fetch_rejects_wrong_bytes(isolated):
    home = isolated / "home"
    with pytest.raises(ValueError, match="sha256 mismatch"):
        fetch("montreal", home, opener=lambda url, timeout: _Response(b"not the csv"))
    assert not (home / MONTREAL).exists()


def test_fetch_without_known_checksum_warns(isolated):
    table = b"ID\tA\tB\tC\n" + b"".join(f"g{i}\t{i}\t{i * i}\t{3 - i}\n".encode() for i in range(6))
    home = isolated / "home"
    with pytest.warns(UserWarning, match="without verification"):
        fetch("ovarian", home, opener=lambda url, timeout: _Response(table))
    assert (home / "ovarian/ovcadatafinal-WEB.txt").read_bytes() == table
    assert load("ovarian", home).shape == (3, 6)


# ------------------------------------------------------------------------------------------
# Listing and argument checks
# ------------------------------------------------------------------------------------------


@needs_data
def test_available_datasets_with_data():
    listing = {d["name"]: d for d in available_datasets()}
    assert list(listing) == list(DATASET_NAMES)
    for name, entry in listing.items():
        assert entry["found"] == (name != "ovarian")
        counts = name in {"montreal", "congress", "spam", "newsgroups"}
        assert entry["kind"] == ("counts" if counts else "real")
    assert str(DATA) in listing["congress"]["location"]
    assert listing["ovarian"]["put_missing_in"] and OVARIAN_URL in listing["ovarian"]["put_missing_in"]
    assert listing["congress"]["put_missing_in"] is None


def test_available_datasets_without_data(isolated):
    listing = {d["name"]: d for d in available_datasets()}
    found = {name for name, d in listing.items() if d["found"]}
    assert found == {"cancer", "cambridge"}
    assert str(isolated / "xdg" / "ibp_rflvm") in listing["spam"]["put_missing_in"]
    assert listing["newsgroups"]["files"][0]["alternatives"] == ["twenty_newsgroups/20news-bydate.tar.gz"]


def test_argument_errors():
    with pytest.raises(ValueError, match="unknown dataset"):
        load("iris")
    with pytest.raises(TypeError, match="random_state"):
        load("cancer", random_state=1)
    with pytest.raises(ValueError, match="path= does not apply"):
        load("cambridge", path="x")
