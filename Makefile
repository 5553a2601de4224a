# Two commands: `make demo` (the main job) and `make test`. Both build .venv once
# and reuse it until pyproject.toml (or the C soup kernel) changes.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint setup clean

$(STAMP): pyproject.toml train/_soup_kernel.c
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	# The CPU torch wheel first, or a dependency pulls a multi-GB CUDA build.
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e '.[train,serve,dev]'
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/pairstore demo demo-run

lint: $(STAMP)
	$(BIN)/ruff check .

test: $(STAMP)
	$(BIN)/ruff check .
	HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/python -m pytest

clean:
	rm -rf $(VENV) demo-run
