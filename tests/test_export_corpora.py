"""Real third-party transcripts (../shared/corpora): import each one, export it as jsonl, ingest
the export into a new agent, and compare — every trace must come back with the same id, turn,
seq and fields, and a second ingest must change nothing.

Skips when the corpora are absent or this build has no importer for a format.
"""

from __future__ import annotations

import orjson
import pytest

from tests.helpers import CORPORA, agent_dir, needs_corpora, read_jsonl, tree_digest

# (importer that must exist, file, --from value). The Claude Code SDK stream-json file holds
# Anthropic messages inside Claude Code records: whichever importer claims it (auto) reads it.
CASES = [
    ("openai", "openai/tau-bench_gpt-4o-airline.json", "openai"),
    ("openai", "openai/swe-agent_function_calling_simple.traj", "openai"),
    ("claude-code", "anthropic/claude-code-action_sample-turns.json", "auto"),
    ("claude-code", "claude-code/ccviewer_fe5e1c67_todo-app_438ev.jsonl", "claude-code"),
    ("claude-code", "claude-code/fasthooks_sample_main_transcript_compaction.jsonl", "claude-code"),
    ("claude-code", "claude-code/claude-code-log_edge_cases_SYNTHETIC.jsonl", "claude-code"),
    ("codex", "codex/codex_rollout_localpush_019c8a59_2722ev_sanitized.jsonl", "codex"),
    ("codex", "codex/codex_rollout_schema_coverage_SYNTHETIC.jsonl", "codex"),
]


def _input_file(name: str, tmp_path):
    """The corpus file, or for tau-bench (200 records whose ``traj`` is a Chat Completions
    message list) all 5,308 messages one per line, as one history (200 separate conversations
    would be refused without --split), call ids reused inside conversations."""
    source = CORPORA / name
    if not name.startswith("openai/tau-bench"):
        return source
    records = orjson.loads(source.read_bytes())
    path = tmp_path / "tau-bench.ndjson"
    path.write_bytes(b"".join(orjson.dumps(m) + b"\n" for r in records for m in r["traj"]))
    return path


def _traces(memory_dir, agent):
    d = agent_dir(memory_dir, agent)
    return read_jsonl(d / "raw_traces_archive.jsonl") + read_jsonl(d / "raw_traces.jsonl")


@needs_corpora
@pytest.mark.parametrize("needs, name, fmt", CASES, ids=[name.split("/")[1] for _, name, _ in CASES])
def test_imported_corpus_round_trips_through_jsonl_export(cli, memory_dir, tmp_path, needs, name, fmt):
    assert (CORPORA / name).exists(), f"{name} is not in the corpora"
    imported = cli("ingest", "src", _input_file(name, tmp_path), "--from", fmt, "--skip-invalid")
    assert imported.exit_code == 0, imported.stderr
    original = _traces(memory_dir, "src")
    assert original, "the importer produced no traces"

    exported = cli("export", "src")
    assert exported.exit_code == 0, exported.stderr
    assert [orjson.loads(line) for line in exported.stdout_bytes.splitlines()] == original
    copied = cli("ingest", "copy", input=exported.stdout_bytes)
    assert copied.exit_code == 0, copied.stderr
    assert _traces(memory_dir, "copy") == original  # ids, turn_ids, seqs, every field, order

    before = tree_digest(agent_dir(memory_dir, "copy"))
    again = cli("ingest", "copy", input=exported.stdout_bytes)
    assert again.exit_code == 0 and f"{len(original)} already present" in again.stderr
    assert tree_digest(agent_dir(memory_dir, "copy")) == before

    # the other formats read the same history without failing
    for other in ("json", "markdown"):
        result = cli("export", "src", "-f", other)
        assert result.exit_code == 0, (other, result.stderr)
    assert orjson.loads(cli("export", "src", "-f", "json").stdout_bytes) == original
