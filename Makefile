# One command per task. uv comes from PyPI if the machine lacks it.
PYTHON ?= python3
UV := $(PYTHON) -m uv
RUN := $(UV) run --frozen

.PHONY: setup browser sandbox terminal postgres demo test lint bench clean

setup:
	@$(PYTHON) -m uv --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet "uv>=0.5"
	$(UV) sync --frozen --group dev --compile-bytecode

demo: setup sandbox
	$(RUN) agentdeck demo

# Debian's Chromium drives the dashboard's browser tests (no browser download).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	  else echo "note: install Debian's chromium to run the browser tests (they are skipped without it)"; fi; }

# bubblewrap confines agents (a profile's `sandbox:`); socat serves Claude Code's own
# Bash sandbox. Without them a profile that requires a sandbox refuses to start agents.
sandbox:
	@command -v bwrap >/dev/null 2>&1 && command -v socat >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap socat; \
	  else echo "note: install bubblewrap and socat (apt-get install bubblewrap socat) to sandbox agents; \`agentdeck sandbox check\` says what works"; fi; }

# tmux runs `agentdeck tui` in a real terminal for its end-to-end test (skipped without).
terminal:
	@command -v tmux >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux; \
	  else echo "note: install tmux to run the terminal UI's end-to-end test (it is skipped without it)"; fi; }

# PostgreSQL's server binaries: the store's suite and the multi-host tests start a
# private cluster in a temporary directory (tests/support/pgcluster.py), no service.
postgres:
	@command -v pg_ctl >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; \
	  else echo "note: install Debian's postgresql to run the PostgreSQL tests (they are skipped without it)"; fi; }

# The suite runs on two processes (pytest-xdist, a test module to each at a time, its
# module fixtures built once): ~15 min instead of ~28 here. TEST_WORKERS=0 runs it in
# one process (e.g. to debug a test with -s or pdb).
TEST_WORKERS ?= 2

test: setup browser sandbox terminal postgres
	$(RUN) pytest -n $(TEST_WORKERS) --dist loadscope --durations=25

lint: setup
	$(RUN) ruff check src tests benchmarks scripts
	$(RUN) ruff format --check src tests benchmarks scripts
	$(RUN) mypy
	$(RUN) lint-imports

# Memory search's goal is set at 1,000,000 observations, whose fixture takes minutes
# and 1.5 GiB to build (then it is reused): make bench MEMORY_OBSERVATIONS=1000000
MEMORY_OBSERVATIONS ?= 100000

bench: setup
	$(RUN) python benchmarks/overhead.py
	$(RUN) python benchmarks/fleet.py
	$(RUN) python benchmarks/events.py
	$(RUN) python benchmarks/hooks.py
	$(RUN) python benchmarks/sandbox.py
	$(RUN) python benchmarks/scrubbing.py
	$(RUN) python benchmarks/shutdown.py
	$(RUN) python benchmarks/bridge.py
	$(RUN) python benchmarks/tui.py
	$(RUN) python benchmarks/memory_search.py --observations $(MEMORY_OBSERVATIONS)

clean:
	rm -rf .venv .pytest_cache .mypy_cache .ruff_cache
