# Developer entry points. `make demo` and `make test` work on a fresh machine:
# they create .venv, install what is needed and run.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
NODE_STAMP := node_modules/.installed
EXTRAS := server,cli,signing,postgres,test,dev

.PHONY: demo test lint unit help

help:
	@echo "make demo   - set up and run the end-to-end demo"
	@echo "make test   - set up and run the whole test suite (interop peers included)"
	@echo "make lint   - ruff and mypy --strict"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml setup.cfg | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[$(EXTRAS)]'
	touch $@

# @modelcontextprotocol/server-everything, an MCP interop peer (see package.json).
$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

demo: $(STAMP)
	$(BIN)/a2a-sync demo

test: $(STAMP) $(NODE_STAMP)
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
