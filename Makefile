# memcli — `make demo` runs the main job on sample_memory/, `make test` runs the suite,
# `make bench` runs the performance targets of docs/design.md §7. Each creates .venv if missing.

SHELL  := /bin/bash
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.memcli-installed
# the demo needs memcli and its runtime dependencies only, not the test extras
DEMO_STAMP := $(VENV)/.memcli-demo-installed

.PHONY: install test demo bench clean sample docs lint

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

test: lint
	$(BIN)/python -m pytest

docs: $(STAMP)
	$(BIN)/python docs/gen_cli_reference.py

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
	step "memcli doctor coder"; $$m doctor coder

bench: $(STAMP)
	$(BIN)/python tests/bench/run_all.py

sample: $(STAMP)
	$(BIN)/python sample_memory/generate.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
