# The two commands a newcomer types: `make demo` and `make test`.
# `demo` installs only what the package needs; `test` adds the test extra (pytest, hypothesis,
# ruff, mypy and the optional report/sweep dependencies whose tests would otherwise be skipped)
# and runs `lint` before the suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint bench compile bench-compiled clean-compiled clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed-base: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.installed-test: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@ $(VENV)/.installed-base

demo: $(VENV)/.installed-base
	$(BIN)/gpuscale demo

# Lint first: ruff (style, imports, likely bugs) and mypy (types), both configured in
# pyproject.toml; a failure there stops before the slower suite.
lint: $(VENV)/.installed-test
	$(BIN)/ruff check src tests
	$(BIN)/mypy

test: lint
	$(BIN)/python -m pytest

bench: $(VENV)/.installed-base
	$(BIN)/python bench/bench_azure_conv.py

# Optional: compile the simulation's hot path (event loop, step cost, replica engine, router)
# with mypyc into C extensions next to the sources; Python then imports those instead. One
# invocation, so the four modules call each other natively. Same results (the whole suite
# passes on them), ~1.5-3x the requests per second (docs/benchmarks.md).
# `make clean-compiled` goes back to pure Python.
compile: $(VENV)/.installed-base
	$(BIN)/python -m pip install -q 'mypy>=1.10,<2'
	cd src && ../$(BIN)/mypyc gpuscale/core/simulation.py gpuscale/serving/performance.py \
		gpuscale/serving/replica.py gpuscale/serving/router.py

bench-compiled: compile
	$(BIN)/python bench/bench_azure_conv.py

clean-compiled:
	find src -name '*.so' -delete
	rm -rf src/build

clean: clean-compiled
	rm -rf $(VENV) build *.egg-info src/*.egg-info
