# simul: set-up, demo, tests and checks. `make demo` and `make test` work from a fresh clone.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
LLAMA_CPP_VERSION ?= 0.3.36
# The multimodal helper library is not needed; skipping it saves about a minute of compiling.
LLAMA_CMAKE_ARGS ?= -DLLAVA_BUILD=OFF
# COMET needs torch; pin the CPU build that this machine's pip path provides before anything pulls a CUDA one.
TORCH_SPEC ?= torch==2.13.0
PIP := $(BIN)/python -m pip
STAMP := $(VENV)/.simul-setup

.PHONY: setup demo test test-fast lint check bench clean distclean

setup: $(STAMP)

$(STAMP): pyproject.toml Makefile tools/llama_wheel.py
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet "$(TORCH_SPEC)"
	wheel="$$($(BIN)/python tools/llama_wheel.py --version $(LLAMA_CPP_VERSION) --cmake-args='$(LLAMA_CMAKE_ARGS)')" \
	  && $(PIP) install --quiet "$$wheel"
	$(PIP) install --quiet -e ".[model,comet,plot,dev]"
	@touch $@
	@echo "simul is set up in $(VENV); run: $(BIN)/simul --help"

demo: setup
	$(BIN)/simul eval --beta 0.2 --mask-k 3

test: setup
	$(BIN)/python -m pytest -q

test-fast: setup
	$(BIN)/python -m pytest -q -m "not slow"

lint: setup
	$(BIN)/ruff check simul tests tools
	$(BIN)/ruff format --check simul tests tools
	$(BIN)/mypy

check: lint test

bench: setup
	$(BIN)/simul bench

clean:
	rm -rf .pytest_cache .mypy_cache .ruff_cache build dist *.egg-info

distclean: clean
	rm -rf $(VENV)
