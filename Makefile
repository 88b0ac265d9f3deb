# memcli — `make demo` runs the main job on sample_memory/, `make test` runs the suite,
# `make bench` runs the performance targets of DESIGN.md §7. Each creates .venv if missing.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.memcli-installed

.PHONY: install test demo bench clean sample

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[test]'
	# AutoByteus only for the compatibility test; its memory store needs no dependencies
	$(BIN)/python -m pip install -q --no-deps 'autobyteus>=1.4'
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest

# Works on a temporary copy: the committed sample never changes.
demo: $(STAMP)
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	cp -R sample_memory "$$tmp/memory"; export MEMCLI_DIR="$$tmp/memory"; m=$(BIN)/memcli; \
	echo "== agents in sample_memory/"; ls "$$tmp/memory/agents"; \
	echo; echo "== ingest one more event into coder"; \
	echo '{"trace_type":"user","content":"Is the integration suite done?"}' | $$m ingest coder; \
	echo; echo "== the last three traces of coder"; tail -n 3 "$$tmp/memory/agents/coder/raw_traces.jsonl"

bench: $(STAMP)
	$(BIN)/python tests/bench/run_all.py

sample: $(STAMP)
	$(BIN)/python sample_memory/generate.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
