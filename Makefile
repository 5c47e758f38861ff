# Everything runs inside .venv; `make demo` and `make test` create it on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SHARED_DATA := $(abspath ../shared/datasets)
DATA_ENV := $(if $(wildcard $(SHARED_DATA)),IBP_RFLVM_DATA=$(SHARED_DATA),)
# The compiled kernels' cache, shared by the tests and the documentation's examples.
NUMBA_CACHE ?= $(abspath $(VENV))/numba-cache

.PHONY: venv demo test lint docs bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev,baselines,dask,anndata,single-cell,docs,jax]"
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(DATA_ENV) $(BIN)/ibp-rflvm demo --out results/demo

LINTED := src tests benchmarks studies examples docs/conf.py docs/_ext

test: $(STAMP)
	$(BIN)/ruff check $(LINTED)
	$(DATA_ENV) NUMBA_CACHE_DIR=$(NUMBA_CACHE) $(BIN)/pytest -n 2 -q tests
	$(MAKE) docs

lint: $(STAMP)
	$(BIN)/ruff check $(LINTED)

# The site into docs/_build/html, warnings as errors; it runs the README's and the guide's code,
# the examples and the command line's help on the way (docs/_ext/run_snippets.py).
docs: $(STAMP)
	$(DATA_ENV) NUMBA_CACHE_DIR=$(NUMBA_CACHE) OPENBLAS_NUM_THREADS=1 \
		$(BIN)/sphinx-build -W --keep-going -q -b html docs docs/_build/html

bench: $(STAMP)
	$(DATA_ENV) $(BIN)/python benchmarks/bench_sweep.py
	$(DATA_ENV) $(BIN)/python benchmarks/bench_moves.py

clean:
	rm -rf $(VENV) .pytest_cache build src/*.egg-info docs/_build docs/_generated
