# GRPO Dynamics: the two front-door commands are `make book` and `make test`.
# Both set up everything they need on a fresh machine: the virtual environment (.venv, pinned
# requirements with the CPU build of torch 2.13.0), the page JavaScript from the npm registry,
# and (for the browser tests) Debian's Chromium.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
VENDOR := book/assets/vendor
BOOK_OUT := _build/html
# Build flags: warnings are errors, so a failing cell or a broken reference fails the build.
JB_FLAGS ?= -W -n --keep-going
PYTEST_ARGS ?=
# Two workers: the reference CI machine has 2 cores.
PYTEST_WORKERS ?= 2

.PHONY: help setup venv assets chromium book book-clean test test-fast lint bench sync-notebooks clean

help:
	@echo "make book   build the HTML book into $(BOOK_OUT) (executes every chapter)"
	@echo "make test   set up, build the book, run the whole test suite"
	@echo "make bench  run the benchmarks (ratios printed side by side)"

setup: venv assets

venv: $(VENV)/.installed

$(VENV)/.installed: requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=24"
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	@touch $@

assets: $(VENDOR)/.installed

$(VENDOR)/.installed: package.json package-lock.json scripts/vendor_assets.py $(VENV)/.installed
	npm ci --no-audit --no-fund --loglevel=error
	$(BIN)/python scripts/vendor_assets.py node_modules $(VENDOR)
	@touch $@

# Debian's Chromium for the browser tests (Playwright drives it; no browser download).
chromium:
	@if ! command -v chromium >/dev/null 2>&1; then \
	  SUDO=$$( [ "$$(id -u)" = 0 ] && echo "" || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null; \
	fi
	@chromium --version

book: setup
	$(BIN)/python scripts/book_cache.py $(CURDIR)/_build
	GRPO_BOOK_BUILD=1 PYTHONHASHSEED=0 $(BIN)/jupyter-book build book \
	  --config $(CURDIR)/_config.yml --toc $(CURDIR)/_toc.yml --path-output $(CURDIR) $(JB_FLAGS)
	@echo "Book: $(BOOK_OUT)/index.html"

book-clean:
	rm -rf _build

test: setup chromium book
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) $(PYTEST_ARGS)

# Unit tests only (no book build, no browser); for quick iteration.
test-fast: setup
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) -m "not book and not browser and not slow" $(PYTEST_ARGS)

# After changing repository.url in _config.yml or editing a chapter's .md.
sync-notebooks: venv
	$(BIN)/python scripts/sync_notebooks.py

# Uses the virtual environment as it is when it exists (no reinstall); creates it otherwise.
lint:
	@test -x $(BIN)/ruff || $(MAKE) venv
	$(BIN)/ruff check .

bench: setup
	$(BIN)/python -m bench

clean:
	rm -rf _build $(VENV) node_modules $(VENDOR) .pytest_cache
