"""The installable package: ``python -m build`` makes an sdist and a wheel, and the wheel works
installed alone, away from the checkout.

The wheel (built from the sdist, as ``python -m build`` does) goes into a new virtual environment
with ``--no-deps``; the running environment's site-packages directory is appended to that
environment's path for the dependencies (numpy, numba, ...), without its ``.pth`` files, so the
checkout's editable install is not seen. From a folder outside the checkout, with no
``PYTHONPATH``, that environment must import ``ibp_rflvm`` from the wheel, find the data sets'
catalogue and checksums, run the README's quick start and print the command line's help.
About 40 s on the project's 2-core machine, most of it compiling the Gaussian kernels.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "docs" / "_ext"))
from run_snippets import fenced_blocks  # noqa: E402

from ibp_rflvm.datasets import DATASET_NAMES, available_datasets  # noqa: E402
from ibp_rflvm.datasets.catalogue import SHA256  # noqa: E402

CHECK = """
import json
import sys
from pathlib import Path

import ibp_rflvm
from ibp_rflvm.datasets import available_datasets, load
from ibp_rflvm.datasets.catalogue import SHA256

where = Path(ibp_rflvm.__file__).resolve()
assert where.is_relative_to(Path(sys.prefix).resolve()), f"imported from {where}, not the wheel"
rows = {r["name"]: r for r in available_datasets()}
files = {r["name"]: [f["relpath"] for f in r["files"]] for r in rows.values()}
if rows["montreal"]["found"]:  # IBP_RFLVM_DATA (make test sets it): read and checksum a file
    assert load("montreal", verify=True).data.shape[0] > 0
print(json.dumps({"version": ibp_rflvm.__version__, "files": files, "sha256": SHA256}))
"""


def _version() -> str:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


def _quick_start() -> str:
    """The README's quick start: the first Python block under ``## Quick start``."""
    readme = REPO / "README.md"
    start = readme.read_text().splitlines().index("## Quick start") + 1
    return next(code for lang, line, code in fenced_blocks(readme) if lang == "python" and line > start)


def test_wheel_installs_alone_and_runs(tmp_path):
    import build  # noqa: F401  (the dev extra's: it makes the sdist and the wheel)

    dist = tmp_path / "dist"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(dist), str(REPO)], check=True, env=env,
        capture_output=True, timeout=300,
    )  # fmt: skip
    version = _version()
    assert (dist / f"ibp_rflvm-{version}.tar.gz").is_file()
    wheel = dist / f"ibp_rflvm-{version}-py3-none-any.whl"
    assert wheel.is_file()

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
         "--no-index", "--disable-pip-version-check", str(wheel)],
        check=True, env=env, timeout=300,
    )  # fmt: skip
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(site, "_dependencies.pth").write_text("\n".join(sorted(deps)) + "\n")

    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {**env, "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", "MPLBACKEND": "Agg"}
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "numba-cache")
    run = lambda *argv: subprocess.run(  # noqa: E731
        argv, cwd=work, env=env, capture_output=True, text=True, timeout=300
    )
    done = run(str(python), "-c", CHECK)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout)
    assert found["version"] == version
    # The data sets' catalogue and checksums are the checkout's, every file with its entry.
    expected = {r["name"]: [f["relpath"] for f in r["files"]] for r in available_datasets()}
    assert found["files"] == expected and len(expected) == len(DATASET_NAMES)
    assert found["sha256"] == {k: list(v) for k, v in SHA256.items()}
    assert all(f in SHA256 for files in expected.values() for f in files)
    done = run(str(python), "-c", _quick_start())
    assert done.returncode == 0, done.stderr[-3000:]
    done = run(str(venv / "bin" / "ibp-rflvm"), "--help")
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("usage: ibp-rflvm")
    assert "demo" in done.stdout and "fit" in done.stdout
