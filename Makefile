# `make demo` (the main job) and `make test` (CI: lint, format, types, every test); `make test-fast` is the
# development loop (tests marked slow left out). All build .venv once and reuse it until pyproject.toml
# (or the C soup kernel) changes.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast lint typecheck setup clean readme-demo

OFFLINE := HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1

$(STAMP): pyproject.toml train/_soup_kernel.c
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	# The CPU torch wheel first, or a dependency pulls a multi-GB CUDA build.
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e '.[train,serve,dev]'
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/pairstore demo demo-run

# Run the demo into demo-run/ and write its numbers into README.md's demo section (scripts/readme_demo.py).
readme-demo: $(STAMP)
	$(OFFLINE) $(BIN)/python scripts/readme_demo.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

test: lint typecheck
	$(OFFLINE) $(BIN)/python -m pytest

test-fast: $(STAMP)
	$(OFFLINE) $(BIN)/python -m pytest -m "not slow" -n auto

clean:
	rm -rf $(VENV) demo-run
