# Everything runs inside .venv, which `make install` creates from pyproject.toml.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# `make demo` needs only the runtime and the emulator: a small venv of its own (msgspec, urllib3, jsonschema).
DEMO_VENV := .venv-demo
DEMO_STAMP := $(DEMO_VENV)/.installed

.PHONY: install generate check test demo bench docs sync lint typecheck clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

generate: install
	$(BIN)/python -m codegen
	$(BIN)/python -m codegen.twins  # the async faces, printed from the sync ones (docs/architecture.md)

check: install
	$(BIN)/python -m codegen --check
	$(BIN)/python -m codegen.twins --check
	$(BIN)/ruff check codegen generated tests examples bench
	$(BIN)/ruff format --check codegen generated tests examples bench
	$(BIN)/mypy
	$(BIN)/pyright

test: install
	$(BIN)/python -m pytest

demo: $(DEMO_STAMP)
	$(DEMO_VENV)/bin/python examples/demo.py

$(DEMO_STAMP): pyproject.toml
	rm -rf $(DEMO_VENV) && $(PYTHON) -m venv --without-pip $(DEMO_VENV)
	$(PYTHON) -m pip --python $(DEMO_VENV)/bin/python install -q --disable-pip-version-check \
		$$($(PYTHON) -c "import tomllib; p = tomllib.load(open('pyproject.toml', 'rb'))['project']; print(' '.join(p['dependencies'] + p['optional-dependencies']['testing']))")
	$(DEMO_VENV)/bin/python -c "import pathlib, sysconfig; pathlib.Path(sysconfig.get_path('purelib'), 'workers_ai.pth').write_text(str(pathlib.Path('generated').resolve()) + chr(10))"
	touch $(DEMO_STAMP)

bench: install
	$(BIN)/python bench/run.py

# The site: the pages at their repository paths (so relative links work in both places) and the per-model
# reference printed from the plan, into build/docs; then mkdocs, strict, into site/. Pages other branches
# are still writing get a one-line stand-in until they land.
DOCS_SRC := build/docs
docs: install
	rm -rf $(DOCS_SRC) && mkdir -p $(DOCS_SRC)/docs $(DOCS_SRC)/bench
	cp README.md CONTRIBUTING.md $(DOCS_SRC)/ && cp docs/*.md $(DOCS_SRC)/docs/ && cp bench/README.md $(DOCS_SRC)/bench/
	$(BIN)/python -m codegen.reference --out $(DOCS_SRC)/reference
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict  # not --quiet: it hides the warnings strict counts

sync: install
	$(BIN)/workers-ai sync  # the installed console script: the generator is installed with the project

clean:
	rm -rf $(VENV) $(DEMO_VENV) .mypy_cache .pytest_cache .ruff_cache build/docs site
