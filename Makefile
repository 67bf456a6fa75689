# The two commands a newcomer types: `make demo` and `make test`.
# `demo` installs only what the package needs; `test` adds the test extra (pytest, hypothesis,
# and the optional report/sweep dependencies whose tests would otherwise be skipped).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test bench clean

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

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest

bench: $(VENV)/.installed-base
	$(BIN)/python bench/bench_azure_conv.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
