"""Sphinx configuration: ``make docs`` (warnings are errors) builds the site into docs/_build/html."""

from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE / "_ext"))

project = "ibp-rflvm"
author = "the ibp-rflvm authors"
copyright = "2026, the ibp-rflvm authors"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "run_snippets",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "_generated", "_ext", "Thumbs.db", ".DS_Store"]
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3

# The API reference: numpy-style docstrings, members in source order, no private names.
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"show-inheritance": False}
napoleon_google_docstring = False
napoleon_numpy_docstring = True

html_theme = "alabaster"
html_title = "ibp-rflvm"
html_static_path: list[str] = []
html_theme_options = {"description": "Sparse non-linear latent variables by MCMC", "fixed_sidebar": True}

# Code executed at build time (docs/_ext/run_snippets.py): the README's and the guide pages'
# python and bash blocks, the examples, the command line's help.
snippet_sources = [
    "../README.md",
    "getting_started.md",
    "likelihoods.md",
    "chains.md",
    "embedding.md",
    "single_cell.md",
    "scaling.md",
    "cli.md",
]
example_scripts = [
    "../examples/quick_fit.py",
    "../examples/counts.py",
    "../examples/several_chains.py",
    "../examples/anndata_tool.py",
]
snippet_workers = 2


# Fitted attributes named in running prose (``latent_``, ``n_iter_ :``) read as reStructuredText
# references unless quoted; some docstrings name them bare. Escape a bare trailing underscore
# outside inline literals so that such a docstring renders as written instead of failing.
_LITERAL = re.compile(r"(``.*?``|`[^`]*`_?)")
_BARE = re.compile(r"(?<![\\\w])([A-Za-z]\w*?)_(?=[\s,.;:)]|$)")


def _escape_bare_underscores(app, what, name, obj, options, lines: list[str]) -> None:
    for i, line in enumerate(lines):
        parts = _LITERAL.split(line)
        lines[i] = "".join(p if j % 2 else _BARE.sub(r"\1\\_", p) for j, p in enumerate(parts))


def setup(app) -> None:
    app.connect("autodoc-process-docstring", _escape_bare_underscores)
