"""Run the documentation's code at build time, so that what it shows is what runs.

Three things run before Sphinx reads a page, each in a fresh process and a fresh temporary
folder, two at a time:

* every ``python`` and ``bash`` fenced block of the files named in ``snippet_sources`` (the
  README and the guide pages), in the order they appear, as one script per file: a file's
  blocks share one namespace, as they would for a reader who runs them one after another. A
  block preceded by an HTML comment ``<!-- not run: why -->`` is skipped (set-up commands that
  CI runs itself, hour-long reproductions);
* each script in ``example_scripts``; its standard output is written to
  ``_generated/examples/NAME.txt`` for the example's page to show;
* ``ibp-rflvm --help`` and each subcommand's ``--help``, written to ``_generated/cli/``.

Any failure (non-zero exit, time limit) stops the build with the file, the block's first line
and the end of its error output. ``IBP_RFLVM_DOCS_RUN=0`` skips the snippets and examples
(placeholders are written instead), for quick edits of the prose; ``make docs`` never sets it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging

logger = logging.getLogger(__name__)

FENCE = re.compile(r"^```(python|bash)\s*$")
SKIP = re.compile(r"^<!--\s*not run\b")
TIME_LIMIT_S = 300
# One process prints the command line's help and each subcommand's (imports are the slow part).
HELP_SCRIPT = """
import contextlib, io, sys
from ibp_rflvm.cli import main
sys.argv[0] = "ibp-rflvm"
for command in ([], ["fit"], ["demo"], ["datasets"], ["reproduce"]):
    text = io.StringIO()
    with contextlib.redirect_stdout(text), contextlib.suppress(SystemExit):
        main([*command, "--help"])
    name = command[0] if command else "main"
    with open(f"{out}/{{name}}.txt", "w", encoding="utf-8") as f:
        f.write(text.getvalue())
"""


def fenced_blocks(path: Path) -> list[tuple[str, int, str]]:
    """The runnable (language, first line, code) blocks of a Markdown file, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, i, skip_next = [], 0, False
    while i < len(lines):
        line = lines[i]
        if SKIP.match(line.strip()):
            skip_next = True
        match = FENCE.match(line)
        if match:
            end = i + 1
            while end < len(lines) and not lines[end].startswith("```"):
                end += 1
            if not skip_next:
                blocks.append((match.group(1), i + 2, "\n".join(lines[i + 1 : end])))
            skip_next = False
            i = end
        elif line.startswith("```"):  # a block in another language: step over it whole
            end = i + 1
            while end < len(lines) and not lines[end].startswith("```"):
                end += 1
            skip_next = False
            i = end
        i += 1
    return blocks


def as_script(path: Path, blocks: list[tuple[str, int, str]]) -> str:
    """One Python script running the blocks in order; shell blocks through ``subprocess``."""
    parts = ["import subprocess as _subprocess"]
    for language, line, code in blocks:
        parts.append(f"print('--- {path.name}, line {line}', flush=True)")
        if language == "python":
            parts.append(code)
        else:
            parts.append(f"_subprocess.run({code!r}, shell=True, check=True, executable='/bin/bash')")
    return "\n".join(parts) + "\n"


def child_env(repo: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(repo / "src"), env.get("PYTHONPATH", "")) if p)
    env["PATH"] = os.pathsep.join((str(Path(sys.executable).parent), env.get("PATH", "")))
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env["MPLBACKEND"] = "Agg"
    return env


def run_python(label: str, script: str | None, argv: list[str], env: dict[str, str]) -> tuple[str, float]:
    """Run a script (text, or a file in `argv`) in a temporary folder; its stdout, or an error."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ibp-rflvm-docs-") as tmp:
        if script is not None:
            Path(tmp, "snippets.py").write_text(script, encoding="utf-8")
            argv = ["snippets.py"]
        try:
            done = subprocess.run(
                [sys.executable, *argv], cwd=tmp, env=env, capture_output=True, text=True,
                timeout=TIME_LIMIT_S,
            )
        except subprocess.TimeoutExpired:
            raise ExtensionError(f"{label}: still running after {TIME_LIMIT_S} s") from None
    if done.returncode != 0:
        shown = [ln for ln in done.stdout.splitlines() if ln.startswith("--- ")][-1:]
        raise ExtensionError(
            f"{label} failed (exit {done.returncode}) in the block after {shown or 'the start'}:\n"
            + done.stderr[-3000:]
        )
    return done.stdout, time.perf_counter() - start


def run_all(app: Sphinx) -> None:
    confdir = Path(app.confdir)
    repo = confdir.parent
    out = confdir / "_generated"
    (out / "examples").mkdir(parents=True, exist_ok=True)
    (out / "cli").mkdir(parents=True, exist_ok=True)
    env = child_env(repo)
    run = os.environ.get("IBP_RFLVM_DOCS_RUN", "1") != "0"

    # Two at a time, longest first roughly, so that the two workers end together: the README's
    # snippets (four fits), the examples, the other pages' snippets, the help.
    pages = []
    for source in app.config.snippet_sources:
        path = (confdir / source).resolve()
        blocks = fenced_blocks(path)
        if blocks:
            pages.append((f"the snippets of {path.relative_to(repo)}", as_script(path, blocks), [], None))
    jobs = pages[:1]
    for script in app.config.example_scripts:
        path = (confdir / script).resolve()
        jobs.append((str(path.relative_to(repo)), None, [str(path)], out / "examples" / f"{path.stem}.txt"))
    jobs += pages[1:]
    jobs.append(("ibp-rflvm --help (each subcommand)", HELP_SCRIPT.format(out=str(out / "cli")), [], None))

    def one(job):
        label, script, argv, target = job
        if not run and target is None and not label.startswith("ibp-rflvm --help"):
            return label, 0.0
        if not run and "examples" in str(target):
            target.write_text("(not run: IBP_RFLVM_DOCS_RUN=0)\n")
            return label, 0.0
        stdout, seconds = run_python(label, script, argv, env)
        if target is not None:
            target.write_text(stdout.replace(str(repo), "<checkout>"), encoding="utf-8")
        return label, seconds

    with ThreadPoolExecutor(max_workers=app.config.snippet_workers) as pool:
        for label, seconds in pool.map(one, jobs):
            logger.info(f"[run_snippets] {label}: {seconds:.1f} s")


def setup(app: Sphinx) -> dict[str, object]:
    app.add_config_value("snippet_sources", [], "env")
    app.add_config_value("example_scripts", [], "env")
    app.add_config_value("snippet_workers", 2, "env")
    app.connect("builder-inited", run_all)
    return {"version": "1", "parallel_read_safe": True}
