# The two commands: `make run` and `make test`. Both set up a virtual environment first.
# `make screenshots` redraws docs/screenshot-*.png (needs Debian's chromium at /usr/bin/chromium).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000

.PHONY: run test bench screenshots clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

run: $(BIN)/.installed
	$(BIN)/servescope serve --port $(PORT)

test: $(BIN)/.installed
	$(BIN)/python -m pytest -q

bench: $(BIN)/.installed
	$(BIN)/python benchmarks/bench_core.py
	$(BIN)/python benchmarks/bench_long_run.py
	$(BIN)/python benchmarks/bench_cost_model.py
	$(BIN)/python benchmarks/bench_stream.py
	$(BIN)/python benchmarks/bench_ui.py
	$(BIN)/python benchmarks/bench_classroom.py

screenshots: $(BIN)/.installed
	$(BIN)/python benchmarks/screenshots.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
