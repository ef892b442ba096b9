# ragindex: `make run` (demo on the embedded default), `make test` (ruff, mypy, pytest) and `make test-fast`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_DIR ?= .ragindex-demo
QUERY ?= which moon is the largest
SCAN_QUERY ?= how much paraffin did the lighthouse burn in the fog

.PHONY: install run test test-fast lint typecheck pytest docs docs-check docs-serve docs-screenshots bench clean services wheel-smoke

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# torch first, pinned: 2.13.0 is the CPU build on local disk; an unpinned torch would pull a multi-GB CUDA build.
$(STAMP): pyproject.toml scripts/system-packages.sh | $(BIN)/python
	bash scripts/system-packages.sh
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev,parsing,server,mysql,postgres,service,workers,eval,mcp,langchain,llamaindex,docs]'
	# bytecode now, as a wheel install does: an editable install under PYTHONDONTWRITEBYTECODE=1 would compile
	# ragindex's modules again in every process (~0.16 s of each one-shot `ragindex search`)
	$(BIN)/python -m compileall -q src > /dev/null
	# the light query encoder: export the dense model to ONNX now, not on the first search (a failure only warns)
	$(BIN)/ragindex models prepare || echo "ragindex models prepare failed: searches will load torch"
	touch $(STAMP)

install: $(STAMP)

run: install
	$(BIN)/ragindex --data-dir $(DEMO_DIR) ingest examples
	$(BIN)/ragindex --data-dir $(DEMO_DIR) search "$(QUERY)" --top-k 5
	$(BIN)/ragindex --data-dir $(DEMO_DIR) search "$(SCAN_QUERY)" --top-k 2

lint: install
	$(BIN)/ruff check src tests bench scripts examples_code
	$(BIN)/ruff format --check src tests bench scripts examples_code

typecheck: install
	$(BIN)/mypy

pytest: install
	$(BIN)/pytest -q

test: lint typecheck docs-check pytest

# the documentation site (mkdocs.yml, docs/): `make docs` builds it into site/, `make docs-serve` serves it with live
# reload on http://127.0.0.1:8001; docs-check (in `make test`) fails on a broken link, anchor or API reference
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

docs-check: install
	out=$$(mktemp -d) && NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir $$out; rc=$$?; rm -rf $$out; exit $$rc

# the pictures the docs show, taken by the tests: the retrieval-testing page (headless Chromium) and `ragindex search`
# in a terminal (tmux); written to docs/images/ only here, so a normal test run leaves the tree clean
docs-screenshots: install
	DOCS_SCREENSHOTS=1 $(BIN)/pytest -q tests/browser/test_page.py tests/docs/test_code_blocks.py

docs-serve: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --dev-addr 127.0.0.1:8001

# The edit-test loop: lint, types, then the unit tests and the contract suites on SQLite and Qdrant Edge, with no
# database server, broker, browser or slow test (tests/conftest.py adds those markers from a test's fixtures and
# directory). `make test` still runs everything.
FAST_TESTS := tests/unit tests/contract
FAST_MARKERS := not integration and not slow and not mysql and not postgres and not broker and not browser

test-fast: lint typecheck
	$(BIN)/pytest -q -m "$(FAST_MARKERS)" $(FAST_TESTS)

bench: install
	$(BIN)/python -m bench.run

services:
	bash .ci/services.sh

# build the wheel, install it with no extra into a fresh venv, ingest and search a sample (see scripts/wheel-smoke.sh)
wheel-smoke:
	bash scripts/wheel-smoke.sh

clean:
	rm -rf $(DEMO_DIR) site .pytest_cache .mypy_cache .ruff_cache
