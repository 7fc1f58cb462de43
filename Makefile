# jepka: `make demo` and `make test` are the two commands a new user types;
# each sets everything up first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
CDS    := $(VENV)/.spark-cds

.PHONY: setup system demo test record lint bench clean

setup: system $(STAMP) $(CDS)

system:
	@bash scripts/setup-system.sh

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	@touch $(STAMP)

# The archive of classes Spark's JVM loads, so every later JVM starts faster.
$(CDS): $(STAMP)
	$(BIN)/python -m checkers.spark.cds
	@touch $(CDS)

demo: setup
	@bash scripts/demo.sh

lint: setup
	$(BIN)/ruff check .

test: setup lint
	$(BIN)/python -m pytest

# Re-records the checker's history corpus (tests/data/histories/) from live
# runs; CASES selects by pattern, e.g. make record CASES='nightly/bug-no-dedup*'.
record: setup
	$(BIN)/python scripts/record_histories.py $(foreach c,$(CASES),'$(c)')

bench: setup
	@bash scripts/bench.sh

clean:
	rm -rf $(VENV) store bench/out .pytest_cache .ruff_cache
