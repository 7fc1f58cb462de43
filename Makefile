# jepka: `make demo` and `make test` are the two commands a new user types;
# each sets everything up first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
CDS    := $(VENV)/.spark-cds

.PHONY: setup system demo test acceptance record detect lint bench clean

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

# Everything but the full live chaos matrix (the `acceptance` marker), on
# three workers (tests/conftest.py); ends with the 15 slowest tests, and
# pytest's last line gives the wall time.
test: setup lint
	$(BIN)/python -m pytest -m "not acceptance" -n 3 --dist loadgroup --durations=15

# The full live chaos: every test marked acceptance (each acceptance case,
# bug-mode run and longer live cluster run), the nightly
# matrix twice per case (both, whatever the first gives), then a million
# mutated request frames against a broker that must survive them;
# .github/workflows/nightly-chaos.yml runs this.
acceptance: setup
	status=0; \
	$(BIN)/python -m pytest -m acceptance --durations=15 || status=1; \
	$(BIN)/jepka suite suites/nightly.yml --repeat 2 || status=1; \
	$(BIN)/python bench/fuzz_broker.py --frames 1000000 || status=1; \
	exit $$status

# Re-records the checker's history corpus (tests/data/histories/) from live
# runs; CASES selects by pattern, e.g. make record CASES='nightly/bug-no-dedup*';
# TRIES=N runs each case up to N times until one checks as expected; FROM=RUN
# keeps that stored run of the one case selected instead.
record: setup
	$(BIN)/python scripts/record_histories.py $(foreach c,$(CASES),'$(c)') $(if $(TRIES),--tries $(TRIES)) $(if $(FROM),--from '$(FROM)')

# The detection table (docs/detection.md): each bug mode and the correct
# broker on every workload, ROUNDS times (default 1) on seeds drawn at
# random; every run appends a line to bench/detection.jsonl, so rounds run
# at different times add up. A round takes about an hour here.
detect: setup
	$(BIN)/jepka detect --rounds $(or $(ROUNDS),1)

bench: setup
	@bash scripts/bench.sh

clean:
	rm -rf $(VENV) store bench/out .pytest_cache .ruff_cache
