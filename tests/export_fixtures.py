"""Fixtures for the export/clear tests: agents with an archive and memory, made by hand (the
compaction that normally produces them is another area)."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson

from tests.events import CALL, RES, A, U  # noqa: F401  (re-exported to the export tests)
from tests.helpers import REPO, agent_dir, ndjson

SAMPLE = REPO / "sample_memory"


def copy_sample(memory_dir: Path, agents=("coder", "support")) -> None:
    for agent in agents:
        shutil.copytree(SAMPLE / "agents" / agent, agent_dir(memory_dir, agent))


def archive_turns(memory_dir: Path, agent: str, turns: int) -> int:
    """Move the traces of the first ``turns`` turns from active to archive, as a compaction
    would (whole turns; caches dropped so they are rebuilt). Returns how many moved."""
    d = agent_dir(memory_dir, agent)
    lines = (d / "raw_traces.jsonl").read_bytes().splitlines(keepends=True)
    order = []
    for line in lines:
        turn = orjson.loads(line)["turn_id"]
        if turn not in order:
            order.append(turn)
    old = set(order[:turns])
    moved = [line for line in lines if orjson.loads(line)["turn_id"] in old]
    kept = [line for line in lines if orjson.loads(line)["turn_id"] not in old]
    with open(d / "raw_traces_archive.jsonl", "ab") as f:
        f.write(b"".join(moved))
    (d / "raw_traces.jsonl").write_bytes(b"".join(kept))
    for cache in (".state.json", ".ids"):
        (d / cache).unlink(missing_ok=True)
    return len(moved)


EPISODIC = [
    {"id": "ep_1", "ts": 1772443000.0, "turn_ids": ["turn_0001", "turn_0002"], "summary": "Found the missing discount.",
     "tags": [], "salience": 0.5, "compaction_id": "cmp_1"},
    {"id": "ep_2", "ts": 1772444000.0, "turn_ids": ["turn_0003", "turn_0004"], "summary": "Ran the tests.",
     "tags": [], "salience": 0.4, "compaction_id": "cmp_2"},
    {"id": "ep_3", "ts": 1772445000.0, "turn_ids": ["turn_0001", "turn_0002", "turn_0003", "turn_0004"],
     "summary": "Fixed the discount bug; tests pass.", "tags": ["rollup"], "salience": 0.6,
     "compaction_id": "cmp_3", "supersedes": ["ep_1", "ep_2"]},
]
SEMANTIC = [
    {"id": "sem_1", "ts": 1772443000.0, "fact": "The user prefers small commits.", "tags": ["preference"],
     "confidence": 0.9, "salience": 0.7, "source_turn_ids": ["turn_0004"], "compaction_id": "cmp_1"},
    {"id": "sem_2", "ts": 1772443000.0, "fact": "Run the linter before saying done.", "tags": ["preference"],
     "confidence": 0.8, "salience": 0.6, "source_turn_ids": ["turn_0004"], "compaction_id": "cmp_1"},
    {"id": "sem_3", "ts": 1772444000.0, "fact": "Always run ruff before saying something is done.",
     "tags": ["preference"], "confidence": 0.95, "salience": 0.8, "source_turn_ids": ["turn_0004"],
     "compaction_id": "cmp_2", "supersedes": ["sem_2"]},
]


def write_memory(memory_dir: Path, agent: str, episodic=EPISODIC, semantic=SEMANTIC) -> None:
    d = agent_dir(memory_dir, agent)
    d.mkdir(parents=True, exist_ok=True)
    (d / "episodic.jsonl").write_bytes(ndjson(episodic))
    (d / "semantic.jsonl").write_bytes(ndjson(semantic))
