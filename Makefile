# The two commands: `make run` and `make test` (`make test-fast`: its quick part). Both set up a
# virtual environment first.
# `make screenshots` redraws docs/screenshot-*.png (needs Debian's chromium at /usr/bin/chromium).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000

.PHONY: run test test-fast lint bench screenshots clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

run: $(BIN)/.installed
	$(BIN)/servescope serve --port $(PORT)

# The linters first: ruff (pyflakes, pycodestyle, isort, bugbear) and import-linter's contracts
# (scheduler_core's layers, app above the core, no import cycles), then the whole suite.
test: lint
	$(BIN)/python -m pytest -q

# The core and the app without a browser or anything slow (markers in pyproject.toml): under a
# minute, for the edit-test loop; `make test` still runs everything.
test-fast: $(BIN)/.installed
	$(BIN)/python -m pytest -q -m "not browser and not slow"

lint: $(BIN)/.installed
	$(BIN)/ruff check scheduler_core app tests benchmarks tools
	$(BIN)/lint-imports

bench: $(BIN)/.installed
	$(BIN)/python benchmarks/bench_core.py
	$(BIN)/python benchmarks/bench_long_run.py
	$(BIN)/python benchmarks/bench_cost_model.py
	$(BIN)/python benchmarks/bench_stream.py
	$(BIN)/python benchmarks/bench_ui.py
	$(BIN)/python benchmarks/bench_classroom.py
	$(BIN)/python benchmarks/bench_sweep.py
	$(BIN)/python benchmarks/bench_abuse.py

screenshots: $(BIN)/.installed
	$(BIN)/python benchmarks/screenshots.py
	$(BIN)/python benchmarks/screenshots_cluster.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
