# Everything runs inside .venv, which `make install` creates exactly as uv.lock pins it (the development,
# test, docs and CI environment; CONTRIBUTING.md says why uv). uv itself is pinned here and installed with
# pip into .uv/, so a fresh machine needs only Python and make.
PYTHON ?= python3
UV_VERSION := 0.13.9
TOOLS := .uv
UV := $(TOOLS)/bin/uv
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# `make demo` needs only the runtime and the emulator: a small venv of its own, from the same lock.
DEMO_VENV := .venv-demo
DEMO_STAMP := $(DEMO_VENV)/.installed
# uv uses the Pythons on this machine, never downloads one.
export UV_PYTHON_DOWNLOADS := never
# The lock is resolved for Python 3.11+ (the test tools need it; users' installs take 3.10 too): say so
# plainly, before uv says that the platform is not among the lock's environments.
NEED_PYTHON = @$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || { \
	echo "make: the development environment (uv.lock) needs Python 3.11 or newer; $(PYTHON) is" \
	"$$($(PYTHON) -V 2>&1). Name another one: make PYTHON=python3.12 $(MAKECMDGOALS)" >&2; exit 1; }

.PHONY: install lock generate check test fuzz test-lowest test-latest demo bench docs sync clean

install: $(STAMP)

$(UV):
	rm -rf $(TOOLS) && $(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/python -m pip install -q --disable-pip-version-check uv==$(UV_VERSION)

# --locked: fail, rather than resolve anew, when pyproject.toml and uv.lock disagree (run `make lock`).
$(STAMP): pyproject.toml uv.lock | $(UV)
	$(NEED_PYTHON)
	$(UV) sync --locked --all-extras --python $(PYTHON)
	touch $(STAMP)

# Refresh the lock: the newest releases pyproject.toml allows. Review the diff, run `make check test`, commit.
lock: $(UV)
	$(UV) lock --upgrade

generate: install
	$(BIN)/python -m codegen
	$(BIN)/python -m codegen.twins  # the async faces, printed from the sync ones (docs/architecture.md)

check: install
	$(BIN)/python -m codegen --check
	$(BIN)/python -m codegen.twins --check
	$(BIN)/ruff check codegen generated tests examples bench .ci
	$(BIN)/ruff format --check codegen generated tests examples bench .ci
	$(BIN)/mypy
	$(BIN)/pyright

# The suite on every core, up to 4 (pytest-xdist): most of its time is waiting on servers and subprocesses.
# A module runs whole on one worker (--dist loadfile), so its fixtures (an emulator, a Ray cluster) start once.
test: install
	$(BIN)/python -m pytest -n auto --maxprocesses 4 --dist loadfile

# The differential tests (tests/fuzz) at length, for maintainers: many instances per schema, any JSON where a
# schema leaves values free, still one fixed seed (FUZZ_EXAMPLES=N to change the count).
FUZZ_EXAMPLES ?= 60
fuzz: install
	WORKERS_AI_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) WORKERS_AI_FUZZ_FULL=1 $(BIN)/python -m pytest -q tests/fuzz

# The library's dependency ranges at both ends (msgspec, urllib3, aiohttp, websockets, opentelemetry-api,
# jsonschema): the runtime's tests in the locked environment with those packages set to the lowest
# versions pyproject.toml allows, or to the newest releases. .ci/bounds.py says how.
RANGE_TESTS := tests/runtime tests/emulator tests/realtime tests/network

test-lowest: $(UV)
	$(PYTHON) .ci/bounds.py venv lowest .venv-lowest
	.venv-lowest/bin/python -m pytest -q $(RANGE_TESTS)

test-latest: $(UV)
	$(PYTHON) .ci/bounds.py venv latest .venv-latest
	.venv-latest/bin/python -m pytest -q $(RANGE_TESTS)

demo: $(DEMO_STAMP)
	$(DEMO_VENV)/bin/python examples/demo.py

$(DEMO_STAMP): pyproject.toml uv.lock | $(UV)
	$(NEED_PYTHON)
	UV_PROJECT_ENVIRONMENT=$(DEMO_VENV) $(UV) sync -q --locked --no-default-groups --extra testing --python $(PYTHON)
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
	rm -rf $(VENV) $(DEMO_VENV) .venv-lowest .venv-latest $(TOOLS) .mypy_cache .pytest_cache .ruff_cache build/docs site
