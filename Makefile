# One command per task. uv comes from PyPI if the machine lacks it.
PYTHON ?= python3
UV := $(PYTHON) -m uv
RUN := $(UV) run --frozen

.PHONY: setup demo test lint bench clean

setup:
	@$(PYTHON) -m uv --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet "uv>=0.5"
	$(UV) sync --frozen --group dev --compile-bytecode

demo: setup
	$(RUN) agentdeck run --scenario demo "Tidy up the notes file"

test: setup
	$(RUN) pytest

lint: setup
	$(RUN) ruff check src tests benchmarks scripts
	$(RUN) ruff format --check src tests benchmarks scripts
	$(RUN) mypy
	$(RUN) lint-imports

bench: setup
	$(RUN) python benchmarks/overhead.py
	$(RUN) python benchmarks/fleet.py

clean:
	rm -rf .venv .pytest_cache .mypy_cache .ruff_cache
