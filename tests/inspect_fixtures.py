"""A small store written directly (not through ingest) so that every id, time and line is known:
agent ``fx`` with an archive, parallel calls answered out of order, an error, a tool call id
reused three times (archive, then twice in active), an orphan result, a pending call in the
newest turn, a long message, and episodic/semantic items of which some are superseded.

    archive   turn_0001  user, tool_call c1 (sh), tool_result c1 ok, assistant
              turn_0002  user, assistant (prompt_tokens 900)
    active    turn_0003  system context, user, tool_call c1 run_tests, tool_call c2 read_file,
                         result c2, result c1 ERROR, assistant (prompt_tokens 1500)
              turn_0004  user {retry}, tool_call c1 run_tests, result c1 {retry}, ORPHAN result ghost,
                         assistant (prompt_tokens 2100)
              turn_0005  user (long), tool_call c3 deploy — PENDING
    episodic  ep_1 (turn_0001), ep_2 (turn_0002), ep_3 rolls both up (supersedes ep_1, ep_2)
    semantic  sem_1, sem_2, sem_3 replaces sem_1
"""

from __future__ import annotations

from pathlib import Path

import orjson

BASE = 1772442000.0  # 2026-03-02T09:00:00Z
AGENT = "fx"
LONG_ASK = "Deploy it to production. " + "Check every service after the rollout and report back. " * 5


def _t(id_, minute, turn, seq, kind, content="", **kw):
    record = {"id": id_, "ts": BASE + minute * 60, "turn_id": turn, "seq": seq, "trace_type": kind,
              "content": content, "source_event": "fixture"}
    record.update(kw)
    return record


ARCHIVE = [
    _t("a1", 0, "turn_0001", 1, "user", "Set up the project."),
    _t("a2", 1, "turn_0001", 2, "tool_call", tool_name="sh", tool_call_id="c1", tool_args={"cmd": "init"}),
    _t("a3", 2, "turn_0001", 3, "tool_result", tool_name="sh", tool_call_id="c1", tool_result="ok"),
    _t("a4", 3, "turn_0001", 4, "assistant", "Done."),
    _t("a5", 10, "turn_0002", 1, "user", "What is in README?"),
    _t("a6", 11, "turn_0002", 2, "assistant", "A title.", usage={"prompt_tokens": 900, "completion_tokens": 10}),
]

ACTIVE = [
    _t("t01", 20, "turn_0003", 1, "user", "You are a helpful agent.", tags=["system"]),
    _t("t02", 21, "turn_0003", 2, "user", "Run the tests and read the config."),
    _t("t03", 22, "turn_0003", 3, "tool_call", tool_name="run_tests", tool_call_id="c1", tool_args={"path": "tests"}),
    _t("t04", 22.5, "turn_0003", 4, "tool_call", tool_name="read_file", tool_call_id="c2",
       tool_args={"path": "config.toml"}),
    _t("t05", 23, "turn_0003", 5, "tool_result", tool_name="read_file", tool_call_id="c2",
       tool_result={"text": "debug = true"}),
    _t("t06", 24, "turn_0003", 6, "tool_result", tool_name="run_tests", tool_call_id="c1", tool_error="2 failed"),
    _t("t07", 25, "turn_0003", 7, "assistant", "Two tests fail; debug is on.",
       usage={"prompt_tokens": 1500, "completion_tokens": 20}),
    _t("t08", 30, "turn_0004", 1, "user", "Try again.", tags=["retry"]),
    _t("t09", 31, "turn_0004", 2, "tool_call", tool_name="run_tests", tool_call_id="c1", tool_args={"path": "tests"}),
    _t("t10", 32, "turn_0004", 3, "tool_result", tool_name="run_tests", tool_call_id="c1", tool_result="all passed",
       tags=["retry"]),
    _t("t11", 33, "turn_0004", 4, "tool_result", tool_name="run_tests", tool_call_id="ghost",
       tool_result="late output"),
    _t("t12", 34, "turn_0004", 5, "assistant", "All green now.", usage={"prompt_tokens": 2100, "completion_tokens": 12}),
    _t("t13", 40, "turn_0005", 1, "user", LONG_ASK),
    _t("t14", 41, "turn_0005", 2, "tool_call", tool_name="deploy", tool_call_id="c3", tool_args={"env": "prod"}),
]

EPISODIC = [
    {"id": "ep_1", "ts": BASE + 15 * 60, "turn_ids": ["turn_0001"], "summary": "Set up the project.",
     "tags": ["setup"], "salience": 0.5, "trace_ids": ["a1", "a2", "a3", "a4"], "compaction_id": "cmp_1",
     "model": "offline"},
    {"id": "ep_2", "ts": BASE + 16 * 60, "turn_ids": ["turn_0002"], "summary": "Looked at the README.",
     "tags": [], "salience": 0.4, "trace_ids": ["a5", "a6"], "compaction_id": "cmp_2", "model": "offline"},
    {"id": "ep_3", "ts": BASE + 17 * 60, "turn_ids": ["turn_0001", "turn_0002"],
     "summary": "Set up the project and read the README.", "tags": [], "salience": 0.6,
     "trace_ids": ["a1", "a2", "a3", "a4", "a5", "a6"], "compaction_id": "cmp_2", "supersedes": ["ep_1", "ep_2"],
     "model": "offline"},
]

SEMANTIC = [
    {"id": "sem_1", "ts": BASE + 15 * 60, "fact": "The project uses pytest.", "tags": ["tests"],
     "confidence": 0.8, "salience": 0.5, "source_turn_ids": ["turn_0001"], "compaction_id": "cmp_1"},
    {"id": "sem_2", "ts": BASE + 16 * 60, "fact": "Tests live in tests/.", "tags": [], "confidence": 0.7,
     "salience": 0.3, "source_turn_ids": ["turn_0002"], "compaction_id": "cmp_2"},
    {"id": "sem_3", "ts": BASE + 17 * 60, "fact": "The project uses pytest with xdist.", "tags": ["tests"],
     "confidence": 0.9, "salience": 0.5, "source_turn_ids": ["turn_0002"], "compaction_id": "cmp_2",
     "supersedes": ["sem_1"]},
]


def write_jsonl(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))


def build_fixture_store(memory_dir: Path, agent: str = AGENT) -> Path:
    """Write the fixture agent into ``memory_dir``; returns its directory."""
    root = memory_dir / "agents" / agent
    write_jsonl(root / "raw_traces_archive.jsonl", ARCHIVE)
    write_jsonl(root / "raw_traces.jsonl", ACTIVE)
    write_jsonl(root / "episodic.jsonl", EPISODIC)
    write_jsonl(root / "semantic.jsonl", SEMANTIC)
    return root
