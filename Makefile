# Developer entry points. `make demo` and `make test` work on a fresh machine:
# they create .venv, install what is needed and run.
#
# `make demo` installs only what the demo needs (the core, the server and the progress bar);
# `make test` adds everything the tests need (interop peers, Jupyter, linters). Both use the
# same .venv: the test install is a superset of the demo install.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# compat editable mode puts the checkout on sys.path with a .pth file, so type checkers
# (mypy, pyright) in other projects see a2a_sync; the default finder-based mode hides it.
PIP_INSTALL := $(BIN)/python -m pip install --quiet --config-settings editable_mode=compat
DEMO_STAMP  := $(VENV)/.installed-demo
TEST_STAMP  := $(VENV)/.installed-test
NB_STAMP    := $(VENV)/.installed-notebooks
NODE_STAMP  := node_modules/.installed
DEMO_EXTRAS := server,cli
TEST_EXTRAS := server,cli,signing,postgres,test,dev

.PHONY: demo test lint unit notebooks help

help:
	@echo "make demo      - set up and run the end-to-end demo (installs only what it needs)"
	@echo "make test      - set up and run the whole test suite (interop peers included)"
	@echo "make lint      - ruff, mypy --strict and the import-layer contracts"
	@echo "make notebooks - open the notebooks in JupyterLab"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(DEMO_STAMP): pyproject.toml setup.cfg | $(BIN)/python
	$(PIP_INSTALL) -e '.[$(DEMO_EXTRAS)]'
	touch $@

$(TEST_STAMP): pyproject.toml setup.cfg | $(BIN)/python
	$(PIP_INSTALL) -e '.[$(TEST_EXTRAS)]'
	touch $@ $(DEMO_STAMP)

$(NB_STAMP): pyproject.toml setup.cfg | $(BIN)/python
	$(PIP_INSTALL) -e '.[server,notebooks]'
	touch $@

# @modelcontextprotocol/server-everything, an MCP interop peer (see package.json).
$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

demo: $(DEMO_STAMP)
	$(BIN)/a2a-sync demo

test: $(TEST_STAMP) $(NODE_STAMP)
	$(BIN)/python -m pytest

notebooks: $(NB_STAMP)
	$(BIN)/jupyter lab notebooks

lint: $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports
