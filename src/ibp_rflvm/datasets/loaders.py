"""Loaders for the data sets of the paper's Tables 1 and 2 (SPEC section 5).

Every loader returns a :class:`Dataset`. Files are found in this order:

1. the explicit ``path`` argument (a file, or a directory);
2. the directory named by the environment variable ``IBP_RFLVM_DATA``;
3. the ``data_home`` argument;
4. the user cache directory, ``$XDG_CACHE_HOME/ibp_rflvm`` or ``~/.cache/ibp_rflvm``.

Directories in 2-4 (and a directory given as ``path``) are laid out like the project's shared
data folder, e.g. ``<dir>/congress109/congress109.csv``. Each file's sha256 is checked against
:data:`SHA256`. Nothing is downloaded unless asked for (``download=True`` or :func:`fetch`).
The choices made for each data set are written out in ``docs/datasets.md`` and in each
data set's ``description``.
"""

from __future__ import annotations

import hashlib
import html
import http.client
import os
import re
import tarfile
import tempfile
import urllib.error
import urllib.request
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "DATASET_NAMES",
    "ENV_VAR",
    "NEWSGROUPS_CATEGORIES",
    "SHA256",
    "Dataset",
    "available_datasets",
    "cache_dir",
    "fetch",
    "load",
]

#: Environment variable naming a data directory; it wins over ``data_home`` and the cache.
ENV_VAR = "IBP_RFLVM_DATA"

DATASET_NAMES: tuple[str, ...] = (
    "cancer",
    "mice",
    "ovarian",
    "olivetti",
    "cambridge",
    "montreal",
    "congress",
    "spam",
    "newsgroups",
)

#: Accepted sha256 sums, keyed by the file's path relative to a data directory. Olivetti and
#: 20 Newsgroups also accept the upstream file that `fetch` downloads: the Olivetti copy we
#: ship was re-saved in MATLAB (same array, other bytes) and the newsgroups archive we ship
#: is a repack of Rennie's tarball.
SHA256: dict[str, tuple[str, ...]] = {
    "congress109/congress109.csv": ("0f82e1f56cf9a5330079e26ee785e7d03def92d79c00069237333a24d09d52a1",),
    "congress109/congress109members.csv": (
        "b685cc8a417310783825dbb1b41727dda32981e5229d344877e444f307b3b070",
    ),
    "sms_spam/SMSSpamCollection": ("7d039a24a6083ed9ef0f806ebad56bbb976e3aeb8de05669173bfdc4996c239d",),
    "mice_protein/Data_Cortex_Nuclear.xls": (
        "8459fda0b8b2157fd3a45196c630bc2010f45c4f1f2f088fe35210c348cfd00a",
    ),
    "olivetti_faces/olivettifaces.mat": (
        "b1988d02c72fe5b8ee82b5ef3bb7982eafc74f1e1ff0ae0ade35061ad0af534d",
        "b612fb967f2dc77c9c62d3e1266e0c73d5fca46a4b8906c18e454d41af987794",
    ),
    "montreal_bikes/comptagesvelo2015.csv": (
        "89d92fab7b2384ff607ebd92708d9be2fdd23d23f7d42c861f6869e24061dbdf",
    ),
    "twenty_newsgroups/20news-bydate-repacked.tar.xz": (
        "8f6452125e35a570fab9b21d9800dd56a0c122753834494ea61fb880f547d600",
    ),
    "twenty_newsgroups/20news-bydate.tar.gz": (
        "8f1b2514ca22a5ade8fbb9cfa5727df95fa587f4c87b786e15c759fa66d95610",
    ),
    # The ovarian file has never been seen by this project, so there is nothing to check.
    "ovarian/ovcadatafinal-WEB.txt": (),
}

OVARIAN_URL = (
    "https://web.archive.org/web/20050306171817/"
    "http://www.path.cam.ac.uk/~angio/publications/martoglioetal2002/ovcadatafinal-WEB.txt"
)

#: The 20 Newsgroups subset: four topics that are far apart, from the "test" half of the
#: by-date split (1548 documents; the same four in the "train" half make 2324).
NEWSGROUPS_CATEGORIES: tuple[str, ...] = (
    "comp.graphics",
    "rec.sport.hockey",
    "sci.med",
    "talk.politics.guns",
)

_RAW = "https://raw.githubusercontent.com"


@dataclass(frozen=True)
class _File:
    relpath: str
    #: Download sources, tried in order. Pinned to the commit our copy came from where known.
    urls: tuple[str, ...] = ()
    note: str = ""

    @property
    def sums(self) -> tuple[str, ...]:
        return SHA256.get(self.relpath, ())


@dataclass(frozen=True)
class _Spec:
    name: str
    kind: str
    shape: tuple[int, int] | None
    source: str
    #: One entry per required file; an entry lists interchangeable alternatives, best first.
    files: tuple[tuple[_File, ...], ...] = ()
    options: tuple[str, ...] = ()


_SPECS: dict[str, _Spec] = {
    "cancer": _Spec("cancer", "real", (569, 30), "bundled with scikit-learn (load_breast_cancer)"),
    "mice": _Spec(
        "mice",
        "real",
        (1080, 77),
        "UCI Mice Protein Expression",
        (
            (
                _File(
                    "mice_protein/Data_Cortex_Nuclear.xls",
                    (
                        f"{_RAW}/WyattJenkins/analysing-mice-proteins/"
                        "6ef7d22d975f7369e8b81c304c96ec062ab2e48d/Data_Cortex_Nuclear.xls",
                        # UCI's own copy may differ from ours in container bytes (same cells);
                        # then use fetch(..., verify=False).
                        "https://archive.ics.uci.edu/ml/machine-learning-databases/00342/"
                        "Data_Cortex_Nuclear.xls",
                    ),
                ),
            ),
        ),
    ),
    "ovarian": _Spec(
        "ovarian",
        "real",
        None,
        "Martoglio et al. (2002), ovcadatafinal-WEB.txt (not available offline)",
        (
            (
                _File(
                    "ovarian/ovcadatafinal-WEB.txt",
                    # The "id_" form asks the Wayback Machine for the archived bytes unchanged;
                    # we have not been able to check that this capture still resolves.
                    (OVARIAN_URL.replace("20050306171817/", "20050306171817id_/"),),
                ),
            ),
        ),
        ("samples_as_rows",),
    ),
    "olivetti": _Spec(
        "olivetti",
        "real",
        (400, 4096),
        "AT&T/ORL faces, Roweis's olivettifaces.mat",
        (
            (
                _File(
                    "olivetti_faces/olivettifaces.mat",
                    (
                        "https://ndownloader.figshare.com/files/5976027",
                        f"{_RAW}/sjgershm/DBM/f2c3daacb880342847ed24283fb5a753c006b5d6/olivettifaces.mat",
                    ),
                ),
            ),
        ),
    ),
    "cambridge": _Spec(
        "cambridge",
        "real",
        (500, 36),
        "generated by ibp_rflvm.datasets.synthetic.make_cambridge",
        options=("random_state",),
    ),
    "montreal": _Spec(
        "montreal",
        "counts",
        (319, 17),
        "Montreal bike lanes 2015 (Kaggle pablomonleon/montreal-bike-lanes)",
        (
            (
                _File(
                    "montreal_bikes/comptagesvelo2015.csv",
                    (
                        f"{_RAW}/tdhock/montreal-velos/0b3a9be1321943de0cfb2bba821151e421b334fd/"
                        "defivelomtl/Comptages%20cyclistes%20automatiques%20par%20boucles%20de%20"
                        "d%C3%A9tection/comptagesvelo2015.csv",
                    ),
                    note="the Kaggle original needs a login, so the download uses a GitHub copy",
                ),
            ),
        ),
    ),
    "congress": _Spec(
        "congress",
        "counts",
        (529, 1000),
        "congress109 phrase counts (Gentzkow & Shapiro 2010; github.com/jgscott/STA380)",
        (
            (
                _File(
                    "congress109/congress109.csv",
                    (f"{_RAW}/jgscott/STA380/5772a33f2bb22f579df913b072a9a8e25b9e835a/data/congress109.csv",),
                ),
            ),
            (
                _File(
                    "congress109/congress109members.csv",
                    (
                        f"{_RAW}/jgscott/STA380/5772a33f2bb22f579df913b072a9a8e25b9e835a/"
                        "data/congress109members.csv",
                    ),
                ),
            ),
        ),
    ),
    "spam": _Spec(
        "spam",
        "counts",
        (5403, 1000),
        "UCI SMS Spam Collection v.1",
        (
            (
                _File(
                    "sms_spam/SMSSpamCollection",
                    (
                        f"{_RAW}/MandeepSinghthakur/SpamDetectionMachineLearning/"
                        "b3585415753a1d6e984e4ce28cc5eedf66a8f60e/smsspamcollection/SMSSpamCollection",
                    ),
                    note="UCI ships the file inside a zip; the download uses a byte-identical GitHub copy",
                ),
            ),
        ),
        ("n_terms",),
    ),
    "newsgroups": _Spec(
        "newsgroups",
        "counts",
        (1543, 1000),
        "20 Newsgroups, by-date version (Rennie)",
        (
            (
                _File("twenty_newsgroups/20news-bydate-repacked.tar.xz"),
                _File(
                    "twenty_newsgroups/20news-bydate.tar.gz",
                    (
                        "https://ndownloader.figshare.com/files/5975967",
                        "http://qwone.com/~jason/20Newsgroups/20news-bydate.tar.gz",
                    ),
                ),
            ),
        ),
        ("categories", "split", "n_terms"),
    ),
}


@dataclass(frozen=True, eq=False)
class Dataset:
    """A loaded data set.

    ``data`` is float64 ``N x J`` with NaN only where the data itself has no value.
    ``labels`` is a 1-D int array of row labels, or for ``cambridge`` the ``N x 4`` binary Z.
    ``label_names[k]`` names the k-th smallest label value (for ``cambridge``: column k of Z).
    ``kind`` is ``"real"`` or ``"counts"``. ``row_names`` identifies the rows in the source
    (member names, message line numbers, archive paths...) where that is meaningful.
    """

    name: str
    data: np.ndarray
    labels: np.ndarray
    label_names: list[str]
    kind: str
    feature_names: list[str] | None
    description: str
    row_names: list[str] | None = None
    files: tuple[Path, ...] = field(default=())

    @property
    def shape(self) -> tuple[int, int]:
        return (int(self.data.shape[0]), int(self.data.shape[1]))


# --------------------------------------------------------------------------------------------
# File resolution, checksums and downloads
# --------------------------------------------------------------------------------------------


def cache_dir() -> Path:
    """The user cache directory: ``$XDG_CACHE_HOME/ibp_rflvm``, else ``~/.cache/ibp_rflvm``."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "ibp_rflvm"


def _search_roots(data_home: str | os.PathLike | None) -> list[tuple[str, Path | None]]:
    env = os.environ.get(ENV_VAR)
    return [
        (f"${ENV_VAR}", Path(env).expanduser() if env else None),
        ("data_home argument", Path(data_home).expanduser() if data_home is not None else None),
        ("user cache directory", cache_dir()),
    ]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _verify(path: Path, sums: Sequence[str]) -> None:
    if not sums:
        return
    actual = _sha256(path)
    if actual not in sums:
        expected = " or ".join(sums)
        raise ValueError(
            f"sha256 mismatch for {path}: expected {expected}, got {actual}. The file is damaged or "
            f"is a different version; replace it, or pass verify=False if you know the contents "
            f"are right (e.g. another copy of the mice .xls, which differs only in container bytes)."
        )


def _put_hint(spec: _Spec, slot: tuple[_File, ...], data_home) -> str:
    target = (Path(data_home).expanduser() if data_home is not None else cache_dir()) / slot[0].relpath
    lines = [
        f"To fix: set {ENV_VAR} to a directory that contains '{slot[0].relpath}', "
        f"or copy the file to '{target}'."
    ]
    urls = [u for f in slot for u in f.urls]
    if spec.name == "ovarian":
        lines.append(
            f"The file is not distributed with this project. The paper gives its address as {OVARIAN_URL} "
            f"(an archived page); save it there or pass load('ovarian', path=<your file>)."
        )
    elif urls:
        lines.append(
            f"Or download it: ibp_rflvm.datasets.fetch('{spec.name}') or load('{spec.name}', "
            f"download=True) (source: {urls[0]})."
        )
    return "\n".join(lines)


def _missing_message(spec: _Spec, slot: tuple[_File, ...], searched: list[str], data_home) -> str:
    names = " or ".join(f"'{f.relpath}'" for f in slot)
    where = "\n".join(f"  - {s}" for s in searched)
    return (
        f"Dataset '{spec.name}' needs the file {names}, which was not found. Searched:\n{where}\n"
        + _put_hint(spec, slot, data_home)
    )


def _find_in_dir(directory: Path, f: _File) -> Path | None:
    for candidate in (directory / f.relpath, directory / Path(f.relpath).name):
        if candidate.is_file():
            return candidate
    return None


def _resolve(spec: _Spec, data_home, path) -> list[Path]:
    """The files of `spec`, one per slot; FileNotFoundError if one is missing.

    An explicit ``path`` is final: we do not fall back to other places, since a user who names
    a file wants that file and nothing else.
    """
    found: list[Path] = []
    if path is not None:
        given = Path(path).expanduser()
        for i, slot in enumerate(spec.files):
            hit: Path | None = None
            if given.is_file():
                # The named file fills the first slot; companions are looked for beside it.
                hit = (
                    given
                    if i == 0
                    else next((p for f in slot if (p := _find_in_dir(given.parent, f)) is not None), None)
                )
            elif given.is_dir():
                hit = next((p for f in slot if (p := _find_in_dir(given, f)) is not None), None)
            if hit is None:
                place = given.parent if given.is_file() else given
                state = "" if given.exists() else " (does not exist)"
                raise FileNotFoundError(
                    _missing_message(spec, slot, [f"path argument: {place}{state}"], None)
                )
            found.append(hit)
        return found

    roots = _search_roots(data_home)
    for slot in spec.files:
        hit = None
        searched = []
        for label, root in roots:
            if root is None:
                searched.append(f"{label} (not set)")
                continue
            if not root.is_dir():
                searched.append(f"{label}: {root} (directory does not exist)")
                continue
            searched.append(f"{label}: {root}")
            hit = next((p for f in slot if (p := _find_in_dir(root, f)) is not None), None)
            if hit is not None:
                break
        if hit is None:
            raise FileNotFoundError(_missing_message(spec, slot, searched, data_home))
        found.append(hit)
    return found


def _default_opener(url: str, timeout: float):
    # Looked up at call time so that tests can monkeypatch urllib.request.urlopen.
    request = urllib.request.Request(url, headers={"User-Agent": "ibp-rflvm dataset fetcher"})
    return urllib.request.urlopen(request, timeout=timeout)


def _download(f: _File, dest: Path, opener: Callable, verify: bool, timeout: float) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    errors = []
    for url in f.urls:
        fd, tmp_name = tempfile.mkstemp(prefix=dest.name + ".", suffix=".part", dir=dest.parent)
        tmp = Path(tmp_name)
        try:
            with os.fdopen(fd, "wb") as out, opener(url, timeout) as response:
                for block in iter(lambda r=response: r.read(1 << 20), b""):
                    out.write(block)
            if verify and f.sums:
                try:
                    _verify(tmp, f.sums)
                except ValueError as exc:
                    errors.append(f"{url}: {exc}")
                    continue
            elif not f.sums:
                warnings.warn(
                    f"{dest.name} has no known checksum; downloaded from {url} without verification",
                    stacklevel=3,
                )
            os.replace(tmp, dest)
            return dest
        except (OSError, urllib.error.URLError, http.client.HTTPException) as exc:
            errors.append(f"{url}: {exc}")
        finally:
            tmp.unlink(missing_ok=True)
    raise _DownloadFailed(errors)


class _DownloadFailed(Exception):
    def __init__(self, errors: list[str]):
        super().__init__("; ".join(errors))
        self.errors = errors


def fetch(
    name: str,
    data_home: str | os.PathLike | None = None,
    *,
    verify: bool = True,
    opener: Callable | None = None,
    timeout: float = 60.0,
) -> list[Path]:
    """Download the files of data set `name` into `data_home` (default: :func:`cache_dir`).

    Files already present there with a good checksum are kept. Sources are the original public
    addresses, pinned to the commit our reference copy came from where that is a GitHub file
    (see ``docs/datasets.md``). `opener(url, timeout)` must return a context manager with a
    ``read(n)`` method; it defaults to :func:`urllib.request.urlopen`.

    Raises FileNotFoundError, naming the file, the addresses tried and where to put the file by
    hand, when no source can be downloaded (e.g. offline); ValueError on a checksum mismatch
    when every source was reached but none had the right bytes.
    """
    spec = _get_spec(name)
    if not spec.files:
        return []
    opener = opener or _default_opener
    root = Path(data_home).expanduser() if data_home is not None else cache_dir()
    paths = []
    for slot in spec.files:
        present = next((p for f in slot if (p := _find_in_dir(root, f)) is not None), None)
        if present is not None:
            if verify:
                _verify(present, [s for f in slot for s in f.sums])
            paths.append(present)
            continue
        candidates = [f for f in slot if f.urls]
        errors: list[str] = []
        for f in candidates:
            try:
                paths.append(_download(f, root / f.relpath, opener, verify, timeout))
                break
            except _DownloadFailed as exc:
                errors.extend(exc.errors)
        else:
            tried = "\n".join(f"  - {e}" for e in errors) or "  - (no download address known)"
            reached_all = errors and all("sha256 mismatch" in e for e in errors)
            message = (
                f"Could not download '{slot[0].relpath}' for dataset '{spec.name}'. Tried:\n{tried}\n"
                f"If you are offline, get the file by hand and put it at '{root / slot[0].relpath}', "
                f"or set {ENV_VAR} to a directory that contains '{slot[0].relpath}'."
            )
            if reached_all:
                raise ValueError(message)
            raise FileNotFoundError(message)
    return paths


# --------------------------------------------------------------------------------------------
# Shared preprocessing
# --------------------------------------------------------------------------------------------


def _standardise(A: np.ndarray) -> np.ndarray:
    """Columns to mean 0, sd 1 (population sd), ignoring NaN; constant columns become 0."""
    A = np.asarray(A, dtype=np.float64)
    with warnings.catch_warnings():
        # An all-NaN column has no mean; it stays NaN, which is what it already is.
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(A, axis=0)
        sd = np.nanstd(A, axis=0)
    # Dividing a constant column by 0 would turn it into NaN, i.e. into "missing".
    sd = np.where(np.isfinite(sd) & (sd > 0), sd, 1.0)
    return (A - mean) / sd


_TOKEN = re.compile(r"[a-z0-9]+")


def _stop_words() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def _tokenise(text: str, stop: frozenset[str]) -> list[str]:
    # Apostrophes are deleted rather than split on, so "don't" and the SMS spelling "dont"
    # become one term; HTML entities (the SMS corpus writes "&lt;#&gt;") are decoded first.
    text = html.unescape(text).lower().replace("'", "").replace("\u2019", "")
    return [t for t in _TOKEN.findall(text) if len(t) >= 2 and t not in stop]


def _bag_of_words(texts: Sequence[str], n_terms: int) -> tuple[np.ndarray, list[str], np.ndarray]:
    """Counts over the `n_terms` most frequent terms; returns (counts, vocabulary, kept rows)."""
    if n_terms < 1:
        raise ValueError(f"n_terms must be a positive integer; got {n_terms}")
    stop = _stop_words()
    docs = [_tokenise(t, stop) for t in texts]
    totals = Counter(tok for doc in docs for tok in doc)
    # Ties in frequency are broken alphabetically so the vocabulary never depends on hashing.
    vocab = [term for term, _ in sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))[:n_terms]]
    index = {term: j for j, term in enumerate(vocab)}
    counts = np.zeros((len(docs), len(vocab)), dtype=np.float64)
    for i, doc in enumerate(docs):
        for tok in doc:
            j = index.get(tok)
            if j is not None:
                counts[i, j] += 1.0
    kept = np.flatnonzero(counts.sum(axis=1) > 0)
    return counts[kept], vocab, kept


# --------------------------------------------------------------------------------------------
# The data sets
# --------------------------------------------------------------------------------------------


def _load_cancer(files: list[Path]) -> Dataset:
    from sklearn.datasets import load_breast_cancer

    bunch = load_breast_cancer()
    X = np.asarray(bunch.data, dtype=np.float64)
    y = np.asarray(bunch.target, dtype=np.int64)
    if X.shape != (569, 30):
        raise ValueError(f"scikit-learn's breast cancer data has shape {X.shape}, expected (569, 30)")
    return Dataset(
        name="cancer",
        data=_standardise(X),
        labels=y,
        label_names=[str(s) for s in bunch.target_names],
        kind="real",
        feature_names=[str(s) for s in bunch.feature_names],
        description=(
            "Wisconsin diagnostic breast cancer (UCI), as bundled with scikit-learn "
            "(load_breast_cancer; no separate file or checksum). 569 x 30; each column "
            "standardised to mean 0, population sd 1. Labels: 0 malignant (212), 1 benign (357)."
        ),
    )


def _load_mice(files: list[Path]) -> Dataset:
    import pandas as pd

    with warnings.catch_warnings():
        # pandas 3 deprecates the xlrd engine, but it is the only reader of this .xls format here.
        warnings.filterwarnings("ignore", message=".*xlrd.*")
        df = pd.read_excel(files[0], engine="xlrd")
    cols = list(df.columns)
    try:
        start, stop = cols.index("MouseID") + 1, cols.index("Genotype")
    except ValueError as exc:
        raise ValueError(f"{files[0]}: expected columns MouseID ... Genotype; found {cols[:5]}...") from exc
    proteins = cols[start:stop]
    if len(proteins) != 77:
        raise ValueError(f"{files[0]}: expected 77 protein columns, found {len(proteins)}")
    X = df[proteins].to_numpy(dtype=np.float64)
    classes = sorted(str(c) for c in df["class"].unique())
    code = {c: k for k, c in enumerate(classes)}
    labels = np.array([code[str(c)] for c in df["class"]], dtype=np.int64)
    n_missing = int(np.isnan(X).sum())
    return Dataset(
        name="mice",
        data=_standardise(X),
        labels=labels,
        label_names=classes,
        kind="real",
        feature_names=[str(p) for p in proteins],
        description=(
            f"UCI Mice Protein Expression, {files[0].name}: the 77 protein columns, 1080 x 77. "
            f"The {n_missing} missing cells are kept as NaN (the paper's imputation is not stated; "
            "the models treat NaN as unobserved and never score it). Columns standardised ignoring "
            "NaN (nanmean, population nanstd). Labels: the 8 'class' values in sorted order."
        ),
        row_names=[str(m) for m in df["MouseID"]],
    )


def _parse_table(path: Path) -> tuple[np.ndarray, list[str] | None, list[str] | None]:
    """A whitespace/tab separated numeric table with optional header row and label columns.

    Returns (values, row labels from the first non-numeric column, header of numeric columns).
    """
    na = {"", "na", "nan", "null", "n/a", "-", "?"}
    lines = [ln.rstrip("\r\n") for ln in path.read_text(encoding="latin-1").splitlines()]
    lines = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        raise ValueError(f"{path} is empty")
    # Tabs allow gene descriptions with spaces in them; without tabs any whitespace separates.
    sep = "\t" if any("\t" in ln for ln in lines) else None
    rows = [ln.split(sep) for ln in lines]
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]

    def numeric(cell: str) -> bool:
        c = cell.strip()
        if c.lower() in na:
            return True
        try:
            float(c)
        except ValueError:
            return False
        return True

    def n_text(r: list[str]) -> int:
        return sum(not numeric(c) for c in r)

    has_header = len(rows) > 1 and n_text(rows[0]) > n_text(rows[1])
    header = rows[0] if has_header else None
    body = rows[1:] if has_header else rows
    num_cols = [j for j in range(width) if all(numeric(r[j]) for r in body)]
    num_cols = [j for j in num_cols if any(r[j].strip().lower() not in na for r in body)]
    text_cols = [j for j in range(width) if j not in num_cols]
    if not num_cols:
        raise ValueError(f"{path}: no numeric columns found")
    values = np.array(
        [[np.nan if r[j].strip().lower() in na else float(r[j]) for j in num_cols] for r in body]
    )
    row_ids = [r[text_cols[0]].strip() for r in body] if text_cols else None
    col_ids = [header[j].strip() for j in num_cols] if header is not None else None
    return values, row_ids, col_ids


def _load_ovarian(files: list[Path], samples_as_rows: bool | None = None) -> Dataset:
    values, row_ids, col_ids = _parse_table(files[0])
    if samples_as_rows is None:
        # Expression tables list genes down the rows and far outnumber the samples.
        samples_as_rows = values.shape[0] <= values.shape[1]
    if not samples_as_rows:
        values, row_ids, col_ids = values.T, col_ids, row_ids
    n = values.shape[0]
    return Dataset(
        name="ovarian",
        data=_standardise(values),
        labels=np.zeros(n, dtype=np.int64),
        label_names=["unlabelled"],
        kind="real",
        feature_names=col_ids,
        description=(
            f"Ovarian cancer gene expression (Martoglio et al. 2002), user file {files[0]} "
            f"(original: {OVARIAN_URL}). Parsed as a tab/whitespace table; non-numeric columns "
            f"and a header row are taken as identifiers. Orientation: "
            f"{'samples as rows' if samples_as_rows else 'genes as rows, transposed'}, giving "
            f"{values.shape[0]} samples x {values.shape[1]} genes. Columns standardised ignoring "
            "NaN. No labels (the file layout is not known to this project)."
        ),
        row_names=row_ids,
    )


def _load_olivetti(files: list[Path]) -> Dataset:
    from scipy.io import loadmat

    faces = loadmat(files[0])["faces"]
    if faces.shape != (4096, 400):
        raise ValueError(f"{files[0]}: 'faces' has shape {faces.shape}, expected (4096, 400)")
    # The .mat stores each 64x64 image column-major; transpose so rows are row-major images.
    images = faces.T.reshape(400, 64, 64).transpose(0, 2, 1).reshape(400, -1).astype(np.float64)
    return Dataset(
        name="olivetti",
        data=_standardise(images),
        labels=np.arange(400, dtype=np.int64) // 10,
        label_names=[f"person {k}" for k in range(40)],
        kind="real",
        feature_names=None,
        description=(
            f"Olivetti (AT&T/ORL) faces, {files[0].name}: 400 images of 40 people x 10, each a "
            "row-major 64x64 image (the .mat is column-major, so pixels are reordered), 400 x 4096. "
            "Each pixel column standardised (a constant column would be left at 0; there are none). "
            "Labels: person index, arange(400) // 10."
        ),
    )


def _load_cambridge(files: list[Path], random_state: Any = 0) -> Dataset:
    from .synthetic import CAMBRIDGE_SHAPES, make_cambridge

    out = make_cambridge(500, random_state=random_state)
    return Dataset(
        name="cambridge",
        data=np.asarray(out["Y"], dtype=np.float64),
        labels=np.asarray(out["Z"], dtype=np.int64),
        label_names=list(CAMBRIDGE_SHAPES),
        kind="real",
        feature_names=None,
        description=(
            f"Non-linear Cambridge bars generated by make_cambridge(500, random_state={random_state!r}) "
            "(SPEC section 5): 500 x 36, not standardised. Labels: the 500 x 4 binary Z, one column "
            "per shape (cross, box, triangle, T)."
        ),
    )


#: Counters with gaps in 2015 (257, 267, 110 and 269 missing days); dropped to keep the
#: matrix complete.
MONTREAL_DROPPED: tuple[str, ...] = (
    "Maisonneuve_1",
    "Parc U-Zelt Test",
    "Pont_Jacques_Cartier",
    "Saint-Laurent U-Zelt Test",
)

_MONTHS = [
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
]  # fmt: skip


def _load_montreal(files: list[Path]) -> Dataset:
    import pandas as pd

    df = pd.read_csv(files[0], encoding="utf-8")
    if df.columns[0] != "Date" or not all(c in df.columns for c in MONTREAL_DROPPED):
        raise ValueError(f"{files[0]}: unexpected columns {list(df.columns)}")
    dates = pd.to_datetime(df["Date"], format="%d/%m/%Y")
    # Column 1 is the unnamed, always-00:00 time of day.
    counters = [c for c in df.columns[2:] if c not in MONTREAL_DROPPED]
    Y = df[counters].to_numpy(dtype=np.float64)
    if np.isnan(Y).any():
        raise ValueError(f"{files[0]}: the kept counters have missing days")
    months = dates.dt.month.to_numpy().astype(np.int64)
    return Dataset(
        name="montreal",
        data=Y,
        labels=months,
        label_names=[_MONTHS[m - 1] for m in np.unique(months)],
        kind="counts",
        feature_names=[str(c) for c in counters],
        description=(
            f"Montreal bike-lane daily counts 2015, {files[0].name}: 319 days (1 Jan - 15 Nov) x 17 "
            "counters. Dropped Date, the constant time column and the 4 counters with gaps "
            f"({', '.join(MONTREAL_DROPPED)}), leaving a complete matrix (the paper does not state "
            "its J). Raw counts. Labels: month of the day, 1..11 (label_names[k] is month k+1)."
        ),
        row_names=[d.strftime("%Y-%m-%d") for d in dates],
    )


_PARTY_ORDER = {"D": 0, "I": 1, "R": 2}
_PARTY_NAMES = ["Democrat", "Independent", "Republican"]


def _load_congress(files: list[Path]) -> Dataset:
    import pandas as pd

    counts = pd.read_csv(files[0])
    members = pd.read_csv(files[1])
    if counts.columns[0] != "name" or counts.shape != (529, 1001):
        raise ValueError(f"{files[0]}: expected 529 rows of name + 1000 counts; got {counts.shape}")
    if not members["name"].is_unique or set(members["name"]) != set(counts["name"]):
        raise ValueError(f"{files[1]} does not list the same members as {files[0]}")
    # Join on the name rather than trusting that both files share a row order.
    party = members.set_index("name").loc[counts["name"], "party"].to_numpy()
    if not set(party) <= set(_PARTY_ORDER):
        raise ValueError(f"{files[1]}: unexpected party codes {sorted(set(party))}")
    rank = np.array([_PARTY_ORDER[p] for p in party], dtype=np.int64)
    names = counts["name"].to_numpy().astype(str)
    order = np.lexsort((names, rank))
    Y = counts.iloc[:, 1:].to_numpy(dtype=np.float64)[order]
    n_by_party = {p: int((party == p).sum()) for p in _PARTY_ORDER}
    independents = ", ".join(sorted(names[party == "I"])) or "none"
    return Dataset(
        name="congress",
        data=Y,
        labels=rank[order],
        label_names=list(_PARTY_NAMES),
        kind="counts",
        feature_names=[str(c) for c in counts.columns[1:]],
        description=(
            "congress109 phrase counts (Gentzkow & Shapiro 2010, as in github.com/jgscott/STA380): "
            "529 members x 1000 phrases, raw counts. Rows sorted by party - Democrats "
            f"({n_by_party['D']}), then Independents ({n_by_party['I']}: {independents}), then "
            f"Republicans ({n_by_party['R']}) - and by name within a party. Labels: 0 D, 1 I, 2 R. "
            "The paper's caption says the first 285 rows are Democrats, but the file has 242 D and "
            "285 R; its plot most likely had the Republicans first."
        ),
        row_names=[str(n) for n in names[order]],
    )


def _bow_description(n_terms: int) -> str:
    return (
        f"Bag of words: HTML entities decoded, lower-cased, apostrophes deleted, tokens "
        f"[a-z0-9]+ of 2+ characters, scikit-learn's English stop words removed; vocabulary = the "
        f"{n_terms} most frequent terms over the corpus (ties alphabetical), columns in order of "
        f"frequency; documents with no vocabulary term are dropped. Raw counts."
    )


def _load_spam(files: list[Path], n_terms: int = 1000) -> Dataset:
    text = files[0].read_text(encoding="utf-8")
    labels_raw, messages = [], []
    for lineno, line in enumerate(text.split("\n")):
        if not line.strip():
            continue
        # Split on the first tab only: messages contain stray quotes that a CSV reader mangles.
        label, sep, message = line.rstrip("\r").partition("\t")
        if not sep or label not in ("ham", "spam"):
            raise ValueError(f"{files[0]}, line {lineno + 1}: expected 'ham|spam<TAB>message'")
        labels_raw.append(label)
        messages.append(message)
    Y, vocab, kept = _bag_of_words(messages, n_terms)
    y = np.array([1 if lab == "spam" else 0 for lab in labels_raw], dtype=np.int64)[kept]
    n_dropped = len(messages) - len(kept)
    return Dataset(
        name="spam",
        data=Y,
        labels=y,
        label_names=["ham", "spam"],
        kind="counts",
        feature_names=vocab,
        description=(
            f"UCI SMS Spam Collection, {files[0].name}: {len(messages)} messages (each line split on "
            f"its first tab). {_bow_description(n_terms)} Dropped {n_dropped} messages, leaving "
            f"{len(kept)} x {len(vocab)} (ham {int((y == 0).sum())}, spam {int((y == 1).sum())}); "
            "file order kept. Labels: 0 ham, 1 spam. row_names are 0-based line numbers."
        ),
        row_names=[str(i) for i in kept],
    )


def _read_newsgroups(path: Path, categories: Sequence[str], split: str) -> list[tuple[int, str, str]]:
    wanted = {c: k for k, c in enumerate(categories)}
    prefix = f"20news-bydate-{split}"
    docs = []
    with tarfile.open(path, "r:*") as archive:
        for member in archive:
            if not member.isfile():
                continue
            parts = member.name.split("/")
            if len(parts) != 3 or parts[0] != prefix or parts[1] not in wanted:
                continue
            fh = archive.extractfile(member)
            if fh is None:
                continue
            raw = fh.read().decode("latin-1")
            # The body starts after the first blank line; a post without one has no body.
            body = raw.replace("\r\n", "\n").partition("\n\n")[2]
            docs.append((wanted[parts[1]], member.name, body))
    docs.sort(key=lambda d: (d[0], d[1]))
    return docs


def _load_newsgroups(
    files: list[Path],
    categories: Sequence[str] = NEWSGROUPS_CATEGORIES,
    split: str = "test",
    n_terms: int = 1000,
) -> Dataset:
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test'; got {split!r}")
    categories = list(categories)
    docs = _read_newsgroups(files[0], categories, split)
    found = {d[0] for d in docs}
    absent = [c for k, c in enumerate(categories) if k not in found]
    if absent:
        raise ValueError(f"{files[0]}: no documents for categories {absent} in the {split} split")
    Y, vocab, kept = _bag_of_words([d[2] for d in docs], n_terms)
    labels = np.array([d[0] for d in docs], dtype=np.int64)[kept]
    return Dataset(
        name="newsgroups",
        data=Y,
        labels=labels,
        label_names=categories,
        kind="counts",
        feature_names=vocab,
        description=(
            f"20 Newsgroups (by-date), {files[0].name}: the '{split}' split of {len(categories)} "
            f"categories ({', '.join(categories)}), {len(docs)} posts, decoded as Latin-1, headers "
            f"removed (text after the first blank line; quotes and signatures kept). "
            f"{_bow_description(n_terms)} Dropped {len(docs) - len(kept)} posts, leaving "
            f"{len(kept)} x {len(vocab)}. Rows grouped by category, then archive path. "
            "Labels: category index."
        ),
        row_names=[docs[i][1] for i in kept],
    )


_BUILDERS: dict[str, Callable[..., Dataset]] = {
    "cancer": _load_cancer,
    "mice": _load_mice,
    "ovarian": _load_ovarian,
    "olivetti": _load_olivetti,
    "cambridge": _load_cambridge,
    "montreal": _load_montreal,
    "congress": _load_congress,
    "spam": _load_spam,
    "newsgroups": _load_newsgroups,
}


def _get_spec(name: str) -> _Spec:
    key = str(name).strip().lower()
    if key not in _SPECS:
        raise ValueError(f"unknown dataset {name!r}; choose from {', '.join(DATASET_NAMES)}")
    return _SPECS[key]


def load(
    name: str,
    data_home: str | os.PathLike | None = None,
    *,
    sqrt: bool = False,
    path: str | os.PathLike | None = None,
    verify: bool = True,
    download: bool = False,
    **options: Any,
) -> Dataset:
    """Load data set `name` (one of :data:`DATASET_NAMES`).

    Parameters
    ----------
    name : data set name.
    data_home : a data directory searched after ``$IBP_RFLVM_DATA`` and before the cache.
    sqrt : count data only; apply the paper's square-root transform, rounded to the nearest
        integer so that count likelihoods still apply. Raw counts by default.
    path : an explicit file or directory; when given, nothing else is searched.
    verify : check the sha256 of each file (mismatch raises ValueError).
    download : if a file is missing, :func:`fetch` it into `data_home` (or the cache) first.
    options : data-set specific: ``random_state`` (cambridge, default 0), ``samples_as_rows``
        (ovarian, default: guess from the shape), ``n_terms`` (spam, newsgroups, default 1000),
        ``categories`` and ``split`` (newsgroups, default :data:`NEWSGROUPS_CATEGORIES`, "test").

    Raises FileNotFoundError (naming the file, the places searched and where to put it) when a
    file is missing and not downloaded.
    """
    spec = _get_spec(name)
    unknown = sorted(set(options) - set(spec.options))
    if unknown:
        allowed = ", ".join(spec.options) or "none"
        raise TypeError(f"load({spec.name!r}) got unexpected options {unknown}; allowed: {allowed}")
    if sqrt and spec.kind != "counts":
        raise ValueError(f"sqrt=True applies to count data only; {spec.name!r} is {spec.kind}-valued")
    if path is not None and not spec.files:
        raise ValueError(f"{spec.name!r} is not read from a file, so path= does not apply")

    files: list[Path] = []
    if spec.files:
        try:
            files = _resolve(spec, data_home, path)
        except FileNotFoundError:
            if not download or path is not None:
                raise
            fetch(spec.name, data_home, verify=verify)
            files = _resolve(spec, data_home, None)
        if verify:
            for slot, p in zip(spec.files, files, strict=True):
                _verify(p, [s for f in slot for s in f.sums])

    ds = _BUILDERS[spec.name](files, **options)
    ds = replace(ds, files=tuple(files))
    if sqrt:
        ds = replace(
            ds,
            data=np.rint(np.sqrt(ds.data)),
            description=ds.description
            + " Square-root transform applied (the paper's sqrt(Y)), rounded to the nearest integer.",
        )
    return ds


def available_datasets(data_home: str | os.PathLike | None = None) -> list[dict[str, Any]]:
    """One dict per data set: name, kind, shape (after loading with default options; None when
    unknown), source, files (each with relpath, found, location), found (all files present),
    and where to put missing files. Nothing is parsed or checksummed, so this is fast."""
    roots = [(label, root) for label, root in _search_roots(data_home) if root is not None]
    target = Path(data_home).expanduser() if data_home is not None else cache_dir()
    out = []
    for name in DATASET_NAMES:
        spec = _SPECS[name]
        entries = []
        for slot in spec.files:
            location = None
            for label, root in roots:
                hit = next((p for f in slot if (p := _find_in_dir(root, f)) is not None), None)
                if hit is not None:
                    location = f"{hit} ({label})"
                    break
            entries.append(
                {
                    "relpath": slot[0].relpath,
                    "alternatives": [f.relpath for f in slot[1:]],
                    "found": location is not None,
                    "location": location,
                    "sources": [u for f in slot for u in f.urls],
                }
            )
        if not spec.files:
            place = "generated in code" if name == "cambridge" else "bundled with scikit-learn"
            put = None
        else:
            missing = [e["relpath"] for e in entries if not e["found"]]
            put = (
                None
                if not missing
                else f"set {ENV_VAR} to a directory holding {', '.join(missing)}, or copy "
                f"{'them' if len(missing) > 1 else 'it'} under {target}"
                + (f"; original address: {OVARIAN_URL}" if name == "ovarian" else "")
            )
            place = "; ".join(e["location"] for e in entries if e["location"]) or None
        out.append(
            {
                "name": name,
                "kind": spec.kind,
                "shape": spec.shape,
                "source": spec.source,
                "files": entries,
                "found": all(e["found"] for e in entries),
                "location": place,
                "put_missing_in": put,
            }
        )
    return out
