# Everything runs inside .venv, which `make install` creates from pyproject.toml.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install generate check test demo bench sync lint typecheck clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

generate: install
	$(BIN)/python -m codegen

check: install
	$(BIN)/python -m codegen --check
	$(BIN)/ruff check codegen tests examples bench
	$(BIN)/ruff format --check codegen tests examples bench
	$(BIN)/mypy
	$(BIN)/pyright

test: install
	$(BIN)/python -m pytest

demo: install
	$(BIN)/python examples/demo.py

bench: install
	$(BIN)/python bench/run.py

sync: install
	$(BIN)/python -m workers_ai._cli sync  # -m: the checkout (and so the generator) is importable

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
