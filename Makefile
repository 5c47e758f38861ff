# Everything runs inside .venv; `make demo` and `make test` create it on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SHARED_DATA := $(abspath ../shared/datasets)
DATA_ENV := $(if $(wildcard $(SHARED_DATA)),IBP_RFLVM_DATA=$(SHARED_DATA),)

.PHONY: venv demo test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev,baselines,dask,anndata,single-cell]"
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(DATA_ENV) $(BIN)/ibp-rflvm demo --out results/demo

test: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(DATA_ENV) NUMBA_CACHE_DIR=$(VENV)/numba-cache $(BIN)/pytest -n 2 -q tests

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks

bench: $(STAMP)
	$(DATA_ENV) $(BIN)/python benchmarks/bench_sweep.py
	$(DATA_ENV) $(BIN)/python benchmarks/bench_moves.py

clean:
	rm -rf $(VENV) .pytest_cache build src/*.egg-info
