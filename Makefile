# Two commands on a fresh machine: `make run` (the service, embedded broker, no Redis) and
# `make test` (the whole suite, with the system packages it needs).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# easyocr's torch pair, as pinned in pyproject.toml's easyocr extra: pip installs it first because
# pip finds it in a machine's local wheel store where one exists, and uv never looks there.
TORCH_PAIR := torch==2.14.1 torchvision==0.29.1
# uv writes no bytecode unless asked. Where PYTHONDONTWRITEBYTECODE is set (it is on our machines),
# Python would then compile every module it imports (celery, sqlalchemy, flask, ...) in every
# process it starts, again and again: about 1.2 s of CPU per service process.
UV_INSTALL := $(BIN)/uv pip install --python $(BIN)/python -q --compile-bytecode
# The service's own packages, compiled for the same reason (another ~0.35 s a process start).
PACKAGES := app pipeline serving storage tasks

.PHONY: run test install install-test install-easyocr system-deps bytecode bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip uv

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(UV_INSTALL) -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(UV_INSTALL) -e '.[test]'
	touch $@ $(VENV)/.installed

$(VENV)/.installed-easyocr: pyproject.toml | $(VENV)/.installed-test
	$(BIN)/python -m pip install -q $(TORCH_PAIR)
	$(UV_INSTALL) -e '.[easyocr]'
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test
install-easyocr: $(VENV)/.installed-easyocr

system-deps:
	bash scripts/system-deps.sh test

bytecode: | $(VENV)/.installed
	$(BIN)/python -m compileall -q $(PACKAGES)

run: install bytecode
	bash scripts/system-deps.sh run
	$(BIN)/gnosi serve

# Test processes side by side (pytest-xdist): the suite waits on the services it starts about half
# the time, so a third process fills the two cores CI has; a test file stays in one process, which
# starts its module's services (and easyocr) once.
TEST_PROCESSES ?= 3

test: install-test install-easyocr system-deps bytecode
	$(BIN)/python -m pytest -q --durations=25 -n $(TEST_PROCESSES) --dist loadfile

clean:
	rm -rf $(VENV) .pytest_cache
