"""Loaders of the text corpora as bags of words: SMS spam and 20 Newsgroups."""

from __future__ import annotations

import html
import re
import tarfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .base import Dataset

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


#: The 20 Newsgroups subset: four topics that are far apart, from the "test" half of the
#: by-date split (1548 documents; the same four in the "train" half make 2324).
NEWSGROUPS_CATEGORIES: tuple[str, ...] = (
    "comp.graphics",
    "rec.sport.hockey",
    "sci.med",
    "talk.politics.guns",
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
