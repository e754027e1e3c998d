# Two commands on a fresh machine: `make run` (the service, embedded broker, no Redis) and
# `make test` (the whole suite, with the system packages it needs).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: run test install install-test system-deps bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip uv

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/uv pip install --python $(BIN)/python -q -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/uv pip install --python $(BIN)/python -q -e '.[test]'
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

system-deps:
	bash scripts/system-deps.sh

run: install
	$(BIN)/gnosi serve

test: install-test system-deps
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) .pytest_cache
