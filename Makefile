# The two commands a newcomer types: `make demo` and `make test`.
# `demo` installs only what the package needs; `test` adds the test extra (pytest, hypothesis,
# ruff, mypy and the optional report/sweep dependencies whose tests would otherwise be skipped)
# and runs `lint` before the suite. Both install with `pip install -e .`, which compiles the
# simulation's hot path with mypyc where a C compiler exists (setup.py; ~20 s) and installs
# pure Python otherwise (same results).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test test-pure lint bench compile bench-compiled clean-compiled clean

$(BIN)/python:
	@echo "Creating $(VENV) with $(PYTHON)..."
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# The install is quiet (-q) and compiling takes a minute or more: say so first, so a first
# `make demo` does not look hung (issue 30).
INSTALL_NOTE = @echo "Installing gpuscale into $(VENV) and compiling its hot path with mypyc (a minute or two the first time; pure Python where no C compiler exists)..."

$(VENV)/.installed-base: $(BIN)/python pyproject.toml setup.py
	$(INSTALL_NOTE)
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.installed-test: $(BIN)/python pyproject.toml setup.py
	$(INSTALL_NOTE)
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@ $(VENV)/.installed-base

demo: $(VENV)/.installed-base
	$(BIN)/gpuscale demo

# Lint first: ruff (style, imports, likely bugs) and mypy (types), both configured in
# pyproject.toml; a failure there stops before the slower suite.
lint: $(VENV)/.installed-test
	$(BIN)/ruff check src tests
	$(BIN)/mypy

# The whole suite, the tests marked `slow` included (`pytest -m "not slow"` is the quick loop
# while editing; README.md).
test: lint
	$(BIN)/python -m pytest

# The suite on the pure-Python hot path even where the compiled one is installed
# (gpuscale/_hot_path.py); `make test` runs it on the compiled one and checks both give the
# same bytes (tests/test_hot_path.py).
test-pure: $(VENV)/.installed-test
	GPUSCALE_PURE=1 $(BIN)/python -m pytest

bench: $(VENV)/.installed-base
	$(BIN)/python bench/bench_azure_conv.py

# Rebuild the compiled hot path (event loop, step cost, replica, router, request table,
# fleet) after editing those modules, in place: the install compiles them once (setup.py), and a stale build is
# skipped for the sources with a message until rebuilt (gpuscale/_hot_path.py). Same results,
# ~1.4x the requests per second end to end (docs/benchmarks.md). `make clean-compiled` goes back
# to pure Python.
compile: $(VENV)/.installed-base
	$(BIN)/python -m pip install -q --no-deps --force-reinstall -e .

bench-compiled: compile
	$(BIN)/python bench/bench_azure_conv.py

clean-compiled:
	find src -name '*.so' -delete
	rm -rf src/build build src/gpuscale/_compiled_sources.json

clean: clean-compiled
	rm -rf $(VENV) build *.egg-info src/*.egg-info
