"""Figures the guide quotes from the code are the code's (issue 48).

The README and the guide pages state thresholds and defaults in prose (the scale warning's
range, the R-hat that makes chains disagree, the chains' starts, the extras and what each
adds). Each quoted figure is read back from the page here and compared with the constant, the
signature or pyproject.toml it comes from, so a change to one without the other fails.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

from ibp_rflvm import IBPRFLVM
from ibp_rflvm.plumbing.validation import MAX_GAUSSIAN, SCALE_RANGE
from ibp_rflvm.summaries.diagnostics import RHAT_DISAGREE
from ibp_rflvm.summaries.embedding import EMBEDDING_MAX_DRAWS, VARIANCE_SHARE
from ibp_rflvm.summaries.view import PERPLEXITY

ROOT = Path(__file__).resolve().parents[1]
PAGES = ("README.md", *(p.relative_to(ROOT).as_posix() for p in sorted((ROOT / "docs").glob("*.md"))))


def page(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


def quoted(pattern: str, names=PAGES) -> list[tuple[str, str]]:
    """``(page, captured text)`` of every match of `pattern` in the pages `names`."""
    return [(name, m.group(1)) for name in names for m in re.finditer(pattern, page(name))]


def default(name: str):
    return inspect.signature(IBPRFLVM).parameters[name].default


def test_scale_warning_range():
    found = quoted(r"root-mean-square[^.]*?(?:\([^)]*\))?\s+is\s+outside\s+(\S+?\.\.\S+?)[\s,.]")
    assert [p for p, _ in found] == ["docs/getting_started.md"]
    lo, hi = found[0][1].split("..")
    assert (float(lo), float(hi)) == SCALE_RANGE


def test_gaussian_magnitude_limit():
    found = quoted(r"Gaussian values above (\S+) in absolute value")
    assert found and all(float(v) == MAX_GAUSSIAN for _, v in found)


def test_rhat_threshold():
    found = quoted(r"R-hat[^.]*?(?:above|exceeds|below) (\d+\.\d+)")
    assert len(found) >= 4
    assert {float(v) for _, v in found} == {RHAT_DISAGREE}, found


def test_chain_starts_and_init_dims():
    found = quoted(r"4 chains from (\d+): ([\d, ]+)\d")
    assert len(found) >= 2
    for name, m in [(n, re.search(r"4 chains from (\d+): ([\d, ]+)", page(n))) for n, _ in found]:
        start = int(m.group(1))
        shown = [int(v) for v in m.group(2).split(",")]
        model = IBPRFLVM(n_chains=4, init_dims=start)
        assert shown == model._chain_starts(model._spec(), 4), name
    assert {int(v) for _, v in quoted(r"`init_dims` \((\d+)\)")} == {default("init_dims")}
    assert {int(v) for _, v in found} == {default("init_dims")}


def test_max_dims_default():
    found = quoted(r"`max_dims` \(default (\d+)\)") + quoted(r"`max_dims=(\d+)` \(the\s+default\)")
    assert len(found) >= 2
    assert {int(v) for _, v in found} == {default("max_dims")}


def test_embedding_share_and_draws():
    shares = quoted(r"carry (\d+)% of the centred kernel's trace")
    assert shares and {int(v) for _, v in shares} == {round(100 * VARIANCE_SHARE)}
    draws = quoted(r"kept samples thinned evenly to at most (\d+)")
    assert draws and {int(v) for _, v in draws} == {EMBEDDING_MAX_DRAWS}


def test_view_perplexity():
    found = quoted(r"t-SNE map \(perplexity (\d+)")
    assert found and {float(v) for _, v in found} == {PERPLEXITY}


def _requirement_name(req: str) -> str:
    return re.split(r"[<>=!~;\s]", req, maxsplit=1)[0]


@pytest.mark.parametrize("name", ["README.md", "docs/getting_started.md"])
def test_extras_tables_match_pyproject(name):
    extras = tomllib.loads(page("pyproject.toml"))["project"]["optional-dependencies"]
    text = page(name)
    table = text[text.index("| extra | adds | for |") :].split("\n\n", 1)[0]
    rows = {}
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0].strip("`")] = {a.strip() for a in cells[1].split(",")}
    assert set(rows) == set(extras), f"{name}: the extras table's rows are not pyproject's extras"
    for extra, reqs in extras.items():
        assert {_requirement_name(r) for r in reqs} == rows[extra], f"{name}: extra {extra!r}"


def test_latent_space_page_figures():
    from ibp_rflvm.mcmc.effective import DEFAULT_SHARE
    from ibp_rflvm.summaries.meaning import LEVEL, MIN_PROBABILITY, SUMMARY_MAX_DRAWS

    text = page("docs/latent_space.md")
    probability = re.findall(r"posterior probability at least (\d+\.\d+)", text)
    assert probability and {float(v) for v in probability} == {MIN_PROBABILITY}
    level = re.findall(r"bound a (\d+)% equal-tailed", text)
    assert [float(v) / 100 for v in level] == [LEVEL]
    assert [int(v) for v in re.findall(r"at most (\d+) kept samples per chain", text)] == [SUMMARY_MAX_DRAWS]
    share = re.findall(r"costs the fit at least (\d+)% of its", text)
    assert [float(v) / 100 for v in share] == [DEFAULT_SHARE]
