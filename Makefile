# jepka: `make demo` and `make test` are the two commands a new user types;
# each sets everything up first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup system demo test lint bench clean

setup: system $(STAMP)

system:
	@bash scripts/setup-system.sh

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	@touch $(STAMP)

demo: setup
	@bash scripts/demo.sh

lint: setup
	$(BIN)/ruff check .

test: setup lint
	$(BIN)/python -m pytest

bench: setup
	@bash scripts/bench.sh

clean:
	rm -rf $(VENV) store bench/out .pytest_cache .ruff_cache
