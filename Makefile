# memcli — `make demo` runs the main job on sample_memory/, `make test` runs the suite,
# `make bench` runs the performance targets of docs/design.md §7. Each creates .venv if missing.

SHELL  := /bin/bash
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.memcli-installed
# the demo needs memcli and its runtime dependencies only, not the test extras
DEMO_STAMP := $(VENV)/.memcli-demo-installed

.PHONY: install test test-fast system-deps demo bench clean sample docs lint

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[test]'
	# AutoByteus only for the compatibility test; its memory store needs no dependencies
	$(BIN)/python -m pip install -q --no-deps 'autobyteus>=1.4'
	touch $(STAMP)

install: $(STAMP)

$(DEMO_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $(DEMO_STAMP)

lint: $(STAMP)
	$(BIN)/python -m ruff check memcli tests docs

# The server and browser tests need Debian's PostgreSQL and Chromium. As root on a Debian-like
# machine (CI) they are installed when missing; elsewhere those tests skip, naming what is missing
# (under CI=true they fail instead: a green CI never hides a missing server).
system-deps:
	@missing=""; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Debian packages:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	else echo "not installing$$missing (needs root and apt-get): those tests will skip"; fi

# everything, two test processes (2 cores); CI runs this
test: lint system-deps
	$(BIN)/python -m pytest -n 2

# the whole fast suite for a developer: the tests marked slow left out
test-fast: lint
	$(BIN)/python -m pytest -n 2 -m "not slow"

docs: $(STAMP)
	$(BIN)/python docs/gen_cli_reference.py
	$(BIN)/python docs/gen_store_layout.py

# The main job on a temporary copy of sample_memory/: the committed sample never changes.
demo: $(DEMO_STAMP)
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	cp -R sample_memory "$$tmp/memory"; export MEMCLI_DIR="$$tmp/memory" COLUMNS=110; m=$(BIN)/memcli; \
	step() { printf '\n\033[1m== %s\033[0m\n' "$$*"; }; \
	step "memcli agents"; $$m agents; \
	step "memcli tools coder --last 3   (tool calls with their results; one still pending)"; $$m tools coder --last 3; \
	step "memcli tools coder --status error"; $$m tools coder --status error; \
	step "memcli stats coder --model gpt-4o"; $$m stats coder --model gpt-4o; \
	step "memcli compact coder --dry-run"; $$m compact coder --dry-run; \
	step "memcli compact coder   (offline summarizer: no network, no key)"; $$m compact coder; \
	step "memcli memory coder"; $$m memory coder; \
	step "memcli snapshot coder --provider anthropic --tail-turns 2 | head -n 40"; \
	$$m snapshot coder --provider anthropic --tail-turns 2 | head -n 40; \
	step "memcli snapshot coder --provider text --max-tokens 1500 | tail -n 15"; \
	$$m snapshot coder --provider text --max-tokens 1500 | tail -n 15; \
	step "memcli export coder | memcli ingest coder-copy   (a backup restores byte for byte)"; \
	$$m export coder --with-memory | $$m ingest coder-copy; \
	$$m export coder --with-memory | cmp - <($$m export coder-copy --with-memory) && echo "round trip: identical"; \
	step "memcli search coder 'discount order' --limit 3   (ranked hits over the whole history; ids expand with get)"; \
	$$m search coder 'discount order' --limit 3; \
	step "memcli doctor coder"; $$m doctor coder; \
	step "memcli view coder   (one self-contained HTML page: timeline, compactions, tokens over time)"; \
	mkdir -p build; $$m view coder -o build/coder.html

bench: $(STAMP)
	$(BIN)/python tests/bench/run_all.py

sample: $(STAMP)
	$(BIN)/python sample_memory/generate.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
