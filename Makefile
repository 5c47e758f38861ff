# Everything runs inside .venv; `make demo` and `make test` create it on a fresh machine.
# `make demo` installs only the library (with its plotting), so that a first run takes about a
# minute; `make test`, `lint`, `docs` and `bench` add every extra (docs/record/first_run.md).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
BASE_STAMP := $(VENV)/.installed-base
STAMP := $(VENV)/.installed
UV_PIP := $(BIN)/uv pip install --quiet --python $(BIN)/python
EXTRAS := dev,baselines,dask,anndata,single-cell,docs,jax
SHARED_DATA := $(abspath ../shared/datasets)
DATA_ENV := $(if $(wildcard $(SHARED_DATA)),IBP_RFLVM_DATA=$(SHARED_DATA),)
# The compiled kernels' cache, shared by the tests and the documentation's examples.
NUMBA_CACHE ?= $(abspath $(VENV))/numba-cache
# JAX's compiled programs, on disk: the suite's processes (two workers, the subprocess tests)
# compile the same device programs, and each one after the first loads it. A whole run writes
# about 40 MB; the least recently used programs go beyond 1 GB.
JAX_CACHE ?= $(abspath $(VENV))/jax-cache
JAX_ENV := JAX_COMPILATION_CACHE_DIR=$(JAX_CACHE) JAX_COMPILATION_CACHE_MAX_SIZE=1000000000

.PHONY: venv demo test lint docs bench clean

# The library and its dependencies alone: what `make demo` needs.
# uv installs what pip would (the same versions, checked by `pip freeze`): this step in 6-8 s,
# and `make venv` in about 31 s with bytecode, against pip's 58 s, on this project's 2-core
# machine with the package caches warm (docs/record/test_suite.md).
$(BASE_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	test -x $(BIN)/uv || $(BIN)/pip install --quiet --disable-pip-version-check uv
	$(UV_PIP) -e .
	touch $(BASE_STAMP)

# Every extra: the test suite, the baselines' references, Dask, AnnData and scanpy, the docs, JAX.
# With every package's bytecode, which pip wrote and uv does not by default: where
# PYTHONDONTWRITEBYTECODE is set, as on this project's machines, each process of the suite and of
# the docs' build would compile every module it imports (`import ibp_rflvm.cli`: 4.3 s against
# 1.8 s). Reinstalling from uv's cache covers the packages `make demo` installed too.
$(STAMP): $(BASE_STAMP) pyproject.toml
	$(UV_PIP) --reinstall --compile-bytecode -e ".[$(EXTRAS)]"
	touch $(STAMP)

venv: $(STAMP)

demo: $(BASE_STAMP)
	$(DATA_ENV) $(BIN)/ibp-rflvm demo --out results/demo

LINTED := src tests benchmarks studies examples docs/conf.py docs/_ext

test: $(STAMP)
	$(BIN)/ruff check $(LINTED)
	$(DATA_ENV) NUMBA_CACHE_DIR=$(NUMBA_CACHE) $(JAX_ENV) $(BIN)/pytest -n 2 --dist worksteal -q tests
	$(MAKE) docs

lint: $(STAMP)
	$(BIN)/ruff check $(LINTED)

# The site into docs/_build/html, warnings as errors; it runs the README's and the guide's code,
# the examples and the command line's help on the way (docs/_ext/run_snippets.py).
docs: $(STAMP)
	$(DATA_ENV) NUMBA_CACHE_DIR=$(NUMBA_CACHE) $(JAX_ENV) OPENBLAS_NUM_THREADS=1 \
		$(BIN)/sphinx-build -W --keep-going -q -b html docs docs/_build/html

bench: $(STAMP)
	$(DATA_ENV) $(BIN)/python benchmarks/bench_sweep.py
	$(DATA_ENV) $(BIN)/python benchmarks/bench_moves.py
	$(DATA_ENV) OPENBLAS_NUM_THREADS=1 $(BIN)/python benchmarks/bench_ess.py cancer --sweeps 600

clean:
	rm -rf $(VENV) .pytest_cache build dist src/*.egg-info docs/_build docs/_generated docs/api
