# The two commands a newcomer types: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@

demo: $(VENV)/.installed
	$(BIN)/gpuscale demo

test: $(VENV)/.installed
	$(BIN)/python -m pytest

bench: $(VENV)/.installed
	$(BIN)/python bench/bench_azure_conv.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
