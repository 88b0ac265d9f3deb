"""Real third-party transcripts (../shared/corpora, MANIFEST.md), imported, then looked at with
``tools --json``: the tool interaction view must agree with the counts in the MANIFEST, and the
imported store must pass ``doctor`` (no errors; orphans and pending calls are the data's own).

Everything skips when the corpora are absent (a fresh clone).
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.helpers import CORPORA, needs_corpora

pytestmark = needs_corpora

# file -> (format, expected counts). Counts: calls, answered (results that found their call),
# errors, pending, orphans — only those the MANIFEST states. The file under anthropic/ holds
# Claude Code SDK stream-json records, which the claude-code importer reads.
CASES = {
    "openai/tau-bench_gpt-4o-airline.json": ("openai", {"calls": 1164, "answered": 1164, "pending": 0, "orphans": 0}),
    "openai/swe-agent_function_calling_simple.traj": ("openai", {"calls": 5, "answered": 5, "pending": 0, "orphans": 0}),
    "claude-code/ccviewer_fe5e1c67_todo-app_438ev.jsonl": (
        "claude-code", {"calls": 167, "answered": 167, "errors": 23, "pending": 0, "orphans": 0}),
    "claude-code/fasthooks_sample_main_transcript_compaction.jsonl": (
        "claude-code", {"calls": 10, "answered": 10, "errors": 2, "pending": 0, "orphans": 0}),
    "claude-code/claude-code-log_edge_cases_SYNTHETIC.jsonl": (
        "claude-code", {"calls": 3, "answered": 1, "errors": 1, "pending": 2, "orphans": 0}),
    "codex/codex_rollout_localpush_019c8a59_2722ev_sanitized.jsonl": (
        "codex", {"calls": 365, "answered": 365, "pending": 0, "orphans": 0}),
    "codex/codex_rollout_schema_coverage_SYNTHETIC.jsonl": ("codex", {"orphans": 1}),
    "anthropic/claude-code-action_sample-turns.json": ("claude-code", {"calls": 3, "answered": 3, "pending": 0, "orphans": 0}),
}


def sources(rel: str, tmp_path: Path) -> list[tuple[str, Path]]:
    """(agent, file to import) for one corpus file: a tau-bench record per agent (its ``traj``
    message list), SWE-agent's ``history`` list, every other file as it is."""
    path = CORPORA / rel
    if rel.startswith("openai/tau-bench"):
        out = []
        for n, record in enumerate(orjson.loads(path.read_bytes())):
            part = tmp_path / f"tau-{n:03d}.json"
            part.write_bytes(orjson.dumps(record["traj"]))
            out.append((f"tau-{n:03d}", part))
        return out
    if rel.endswith(".traj"):
        part = tmp_path / "swe-agent-history.json"
        part.write_bytes(orjson.dumps(orjson.loads(path.read_bytes())["history"]))
        return [("swe-agent", part)]
    return [(Path(rel).stem.replace("_", "-")[:100], path)]


def count(interactions: list[dict]) -> dict:
    statuses = [i["status"] for i in interactions]
    return {
        "calls": sum("call_trace_id" in i for i in interactions),
        "answered": sum(s in ("SUCCESS", "ERROR") for s in statuses),
        "errors": statuses.count("ERROR"),
        "pending": statuses.count("PENDING"),
        "orphans": statuses.count("ORPHAN"),
    }


@pytest.mark.slow
@pytest.mark.parametrize("rel", sorted(CASES))
def test_tools_view_agrees_with_the_manifest(cli, memory_dir, tmp_path, rel):
    from memcli.ingest.api import ingest

    fmt, expected = CASES[rel]
    totals = dict.fromkeys(("calls", "answered", "errors", "pending", "orphans"), 0)
    for agent, path in sources(rel, tmp_path):
        ingest(memory_dir, agent, path, fmt=fmt, skip_invalid="SYNTHETIC" in rel)
        result = cli("tools", agent, "--archive", "--json")
        assert result.exit_code == 0, result.stderr
        interactions = orjson.loads(result.stdout)
        for key, value in count(interactions).items():
            totals[key] += value
        # the pending fast path (state cache) and the full pairing agree
        fast = orjson.loads(cli("tools", agent, "--status", "pending", "--json").stdout)
        assert fast == [i for i in interactions if i["status"] == "PENDING"]
        # and stats counts the same
        stats = orjson.loads(cli("stats", agent, "--json").stdout)["tool_calls"]
        assert (stats["pending"], stats["orphan"], stats["error"]) == (
            sum(i["status"] == "PENDING" for i in interactions), sum(i["status"] == "ORPHAN" for i in interactions),
            sum(i["status"] == "ERROR" for i in interactions))
        doctor = cli("doctor", agent, "--json")
        errors = [f for f in orjson.loads(doctor.stdout) if f["severity"] == "error"]
        assert doctor.exit_code == 0 and errors == [], errors
    assert {k: totals[k] for k in expected} == expected
