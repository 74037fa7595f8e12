# Two commands on a fresh machine: `make run` and `make test`. Everything else is a building block.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha1sum | cut -c1-12)

export AGENTOMNIA_HOME ?= $(CURDIR)/.agentomnia
export DAGSTER_HOME := $(AGENTOMNIA_HOME)/dagster
# Nothing is ever downloaded at run or test time: models ship inside packages.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
export DO_NOT_TRACK := 1
# Python keeps the compiled modules it imports (a machine-wide PYTHONDONTWRITEBYTECODE would have every
# process, each sandbox worker and Dagster step among them, compile the project again: 0.2 s a start)
unexport PYTHONDONTWRITEBYTECODE

LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
	-DGGML_AVX512=OFF -DGGML_AMX_INT8=OFF -DGGML_OPENMP=OFF

.PHONY: install run ui test lint typecheck pytest init clean


# The install's own output (pip's resolver, build backends, a from-source build of llama.cpp's server)
# goes to $(VENV)/install.log; the terminal gets one line, or the log's tail when it fails.
# torch goes first: the CPU wheel on this machine's disk; a plain requirement would pull a CUDA build.
# llama.cpp's server builds from source (once; pip caches the wheel). Portable CPU flags: the native
# build picks up AVX-512/AMX and crashes on its first decode on these machines.
$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "need $(PYTHON) on PATH (set PYTHON=... to another 3.11)"; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "installing into $(VENV) (the first time takes a few minutes; log: $(VENV)/install.log)"
	@{ $(BIN)/python -m pip install -q --upgrade pip \
	  && $(BIN)/python -m pip install -q torch==2.13.0 \
	  && CMAKE_BUILD_PARALLEL_LEVEL=2 CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" \
	     $(BIN)/python -m pip install -q -e ".[dev,test,distributed,llm-server]"; } > $(VENV)/install.log 2>&1 \
	  || { tail -n 30 $(VENV)/install.log; echo "install failed; the whole log is $(VENV)/install.log"; exit 1; }
	@rm -f $(VENV)/.installed-*
	@touch $(STAMP)

install: $(STAMP)

init: install
	$(BIN)/agentomnia init

## run the whole default pipeline offline and print a summary
run: init
	$(BIN)/agentomnia run

## the Dagster web UI on 127.0.0.1:3000
ui: init
	$(BIN)/dagster dev -w workspace.yaml -h 127.0.0.1 -p 3000

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy agentomnia agentomnia_assets resources jobs sensors trainers deploy

pytest: install browser distributed-packages
	$(BIN)/pytest

## tests, lint and type check
test: install pytest lint typecheck

clean:
	rm -rf $(VENV) .agentomnia .pytest_cache .mypy_cache .ruff_cache

# building blocks of the test run: the browser for the UI test, the services for the distributed one
include tests/e2e/browser.mk
include deploy/celery.mk
