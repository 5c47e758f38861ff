"""The API reference's docstrings: numpydoc's validator, the documented defaults, the examples.

The objects are those the reference renders: every entry of docs/api.md's autosummary tables
and the members docs/conf.py's ``API_MEMBERS`` lists for each class page, checked with the same
checks and exclusions as the docs build (``numpydoc_validation_checks``,
``numpydoc_validation_exclude``), so a bad docstring fails here in seconds, not only in
``make docs``.
"""

from __future__ import annotations

import ast
import doctest
import importlib
import importlib.util
import inspect
import re
from pathlib import Path

import pytest
from numpydoc.docscrape import NumpyDocString
from numpydoc.validate import validate

import ibp_rflvm

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _conf():
    spec = importlib.util.spec_from_file_location("_docs_conf", DOCS / "conf.py")
    conf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conf)
    return conf


CONF = _conf()


def listed_in_api_page(text: str) -> list[str]:
    """Full names of the entries of the autosummary tables in `text` (docs/api.md)."""
    names, module = [], None
    for block in re.findall(r"```\{eval-rst\}\n(.*?)```", text, flags=re.S):
        module = re.search(r"\.\. currentmodule:: (\S+)", block).group(1)
        body = block.split(".. autosummary::", 1)[1]
        for line in body.splitlines():
            entry = line.strip()
            if entry and not entry.startswith(":"):
                names.append(f"{module}.{entry}")
    return names


def documented_objects() -> list[str]:
    names = listed_in_api_page((DOCS / "api.md").read_text())
    for cls, (methods, properties, _) in CONF.API_MEMBERS.items():
        assert cls in names, f"{cls} has members in API_MEMBERS but no entry in docs/api.md"
        names += [f"{cls}.{m}" for m in [*methods, *properties]]
    return names


def excluded(name: str) -> bool:
    return any(re.search(pattern, name) for pattern in CONF.numpydoc_validation_exclude)


def problems(name: str) -> list[str]:
    """numpydoc's complaints about `name` among the checks the docs build enforces."""
    errors = validate(name)["errors"]
    return [f"{code} {message}" for code, message in errors if code in CONF.numpydoc_validation_checks]


def resolve(name: str):
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(name)


OBJECTS = documented_objects()
VALIDATED = [name for name in OBJECTS if not excluded(name)]


def test_the_reference_lists_the_public_api():
    assert len(VALIDATED) > 60
    listed = set(OBJECTS)
    missing = [f"ibp_rflvm.{n}" for n in ibp_rflvm.__all__ if f"ibp_rflvm.{n}" not in listed]
    from ibp_rflvm import baselines

    missing += [full for n in baselines.__all__ if (full := f"ibp_rflvm.baselines.{n}") not in listed]
    assert "ibp_rflvm.adata.ibp_rflvm" in listed
    assert missing == [], f"public objects with no page in docs/api.md: {missing}"
    # Only scikit-learn's own methods are left out of the validation.
    assert {n for n in OBJECTS if excluded(n)} <= {
        *(f"{cls}.{m}" for cls in CONF.API_MEMBERS for m in ("get_params", "set_params")),
    }  # fmt: skip


def test_the_validator_catches_a_bad_docstring():
    """What the next test relies on: an undocumented parameter and a missing Returns fail."""

    found = problems(f"{__name__}._badly_documented")
    assert any(p.startswith("PR01") for p in found) and any(p.startswith("RT01") for p in found)


def _badly_documented(a, b=1):
    """Add.

    Parameters
    ----------
    a : int
        A number.
    """
    return a + b


@pytest.mark.parametrize("name", VALIDATED)
def test_numpydoc_validation(name):
    assert problems(name) == []


def documented_defaults(obj) -> list[tuple[str, str]]:
    """``(parameter, default text)`` of each parameter whose type says ``default=...``."""
    doc = NumpyDocString(inspect.getdoc(obj) or "")
    out = []
    for param in doc["Parameters"]:
        match = re.search(r"default=(.+)$", param.type)
        if match:
            for name in param.name.split(","):
                out.append((name.strip(), match.group(1).strip()))
    return out


def test_documented_defaults_are_the_signatures():
    checked = 0
    for name in VALIDATED:
        obj = resolve(name)
        if not callable(obj) or isinstance(obj, type) and issubclass(obj, Warning):
            continue
        params = inspect.signature(obj).parameters
        for pname, text in documented_defaults(obj):
            value = ast.literal_eval(text)
            assert params[pname].default == value, f"{name}: {pname} documents default={text}"
            checked += 1
    assert checked > 100


def _examples() -> list[str]:
    return [n for n in VALIDATED if ">>>" in (inspect.getdoc(resolve(n)) or "")]


@pytest.mark.parametrize("name", _examples())
def test_examples_run(name):
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = finder.find(resolve(name), name, globs={})
    assert tests and tests[0].examples
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed"
