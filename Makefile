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
	$(BIN)/python -m pip install -q -e '.[train,serve,dev,scale]'
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
	$(BIN)/pyright

# Both run on every core (pytest-xdist, one worker per core); --dist loadgroup keeps the tests of a costly
# shared fixture (the demo, a training run: tests/conftest.py's SHARED_BUILDS) on one worker, which builds
# it once. --durations names the slowest tests in every CI log.
PYTEST_PARALLEL := -n auto --dist loadgroup

test: lint typecheck
	$(OFFLINE) $(BIN)/python -m pytest $(PYTEST_PARALLEL) --durations=40

test-fast: $(STAMP)
	$(OFFLINE) $(BIN)/python -m pytest -m "not slow" $(PYTEST_PARALLEL)

clean:
	rm -rf $(VENV) demo-run
