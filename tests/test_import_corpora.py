"""Every real transcript in ../shared/corpora imports with ``--from auto`` and gives the counts
its MANIFEST states. Skipped when the corpora are not next to the repository."""

from __future__ import annotations

from collections import Counter

import orjson
import pytest

from memcli.errors import InputError
from memcli.ingest.api import ingest
from memcli.tool_interactions import pair_tool_traces
from tests.helpers import CORPORA, needs_corpora
from tests.import_helpers import comparable, statuses, traces, user_turns

pytestmark = needs_corpora

TAU = "openai/tau-bench_gpt-4o-airline.json"
SWE = "openai/swe-agent_function_calling_simple.traj"
TODO_APP = "claude-code/ccviewer_fe5e1c67_todo-app_438ev.jsonl"
COMPACTION = "claude-code/fasthooks_sample_main_transcript_compaction.jsonl"
EDGE_CASES = "claude-code/claude-code-log_edge_cases_SYNTHETIC.jsonl"
CODEX = "codex/codex_rollout_localpush_019c8a59_2722ev_sanitized.jsonl"
CODEX_SCHEMA = "codex/codex_rollout_schema_coverage_SYNTHETIC.jsonl"
SDK_TURNS = "anthropic/claude-code-action_sample-turns.json"


def _import(memory_dir, agent, path):
    return ingest(memory_dir, agent, path, fmt="auto")


def test_tau_bench_each_trajectory_as_its_own_agent(memory_dir, tmp_path):
    records = orjson.loads((CORPORA / TAU).read_bytes())
    assert len(records) == 200
    total = Counter()
    calls = results = turns = error_texts = 0
    for i, record in enumerate(records):
        path = tmp_path / "traj.json"   # what `jq -c '.[i].traj'` gives a user
        path.write_bytes(orjson.dumps(record["traj"]))
        result = _import(memory_dir, f"tau-{i}", path)
        assert (result.format, result.detected, result.skipped) == ("openai", True, Counter())
        got = traces(memory_dir, f"tau-{i}")
        total += statuses(got)
        calls += sum(t.trace_type == "tool_call" for t in got)
        results += sum(t.trace_type == "tool_result" for t in got)
        turns += user_turns(got)
        error_texts += sum(t.trace_type == "tool_result" and t.tool_result.startswith("Error:") for t in got)
        # a reused call id pairs first-in-first-out: every call meets the result of its own tool
        for interaction in pair_tool_traces(got):
            result_trace = next(t for t in got if t.id == interaction.result_trace_id)
            assert result_trace.tool_name == interaction.tool_name
    assert (calls, results) == (1164, 1164)
    assert turns == 1490                       # one per user message
    # kept as results (Chat Completions has no error flag), and read as failures: tau-bench's
    # environment answers a tool's exception as "Error: <message>" (0 pending, 0 orphans)
    assert error_texts == 73
    assert total == {"SUCCESS": 1164 - 73, "ERROR": 73}


def test_tau_bench_whole_file_is_refused_without_split(memory_dir):
    with pytest.raises(InputError, match="holds 200 conversations") as info:
        _import(memory_dir, "tau", CORPORA / TAU)   # an array of records, each with its .traj
    assert "--split" in info.value.hint
    assert not (memory_dir / "agents").exists() or not any((memory_dir / "agents").iterdir())


def test_tau_bench_split_gives_one_agent_per_trajectory_and_is_idempotent(memory_dir):
    result = ingest(memory_dir, "tau", CORPORA / TAU, split=True)
    assert (result.format, len(result.agents)) == ("openai", 200)
    # task_id repeats across trials: no unique id of their own, so agents are named by index
    assert result.agents[:3] == ["tau.1", "tau.2", "tau.3"] and result.agents[-1] == "tau.200"
    assert "split 200 conversations into 200 agents" in result.summary()
    assert "1164 tool calls" in result.summary()
    total = Counter()
    turns = systems = 0
    for name in result.agents:
        got = traces(memory_dir, name)
        total += statuses(got)
        turns += user_turns(got)
        systems += sum("system" in t.tags for t in got)
    assert total == {"SUCCESS": 1164 - 73, "ERROR": 73} and turns == 1490 and systems == 200   # ("Error: …")
    # the same ids as importing the record's .traj alone
    first = orjson.loads((CORPORA / TAU).read_bytes())[0]["traj"]
    again = ingest(memory_dir, "tau", CORPORA / TAU, split=True)
    assert again.appended == 0 and again.total("duplicates") == result.appended
    assert traces(memory_dir, "tau.1")[0].content == first[0]["content"]


def test_swe_agent_history(memory_dir, tmp_path):
    trajectory = orjson.loads((CORPORA / SWE).read_bytes())
    path = tmp_path / "history.json"   # `jq '.history' run.traj`
    path.write_bytes(orjson.dumps(trajectory["history"], option=orjson.OPT_INDENT_2))
    result = _import(memory_dir, "swe", path)
    assert result.format == "openai"
    got = traces(memory_dir, "swe")
    assert statuses(got) == {"SUCCESS": 5} and user_turns(got) == 1
    # the .traj file itself ({"history": [...]}) gives the very same traces
    _import(memory_dir, "swe-traj", CORPORA / SWE)
    assert comparable(traces(memory_dir, "swe-traj")) == comparable(got)


def test_claude_code_todo_app_with_parallel_subagents(memory_dir):
    result = _import(memory_dir, "todo", CORPORA / TODO_APP)
    assert (result.format, result.skipped) == ("claude-code", Counter())
    got = traces(memory_dir, "todo")
    assert statuses(got) == {"SUCCESS": 144, "ERROR": 23}        # 167 pairs, 0 pending
    assert sum(t.trace_type == "tool_call" for t in got) == 167
    assert sum(t.trace_type == "tool_result" for t in got) == 167
    assert sum("sidechain" in t.tags for t in got) == 405        # one trace per sidechain line
    assert user_turns(got) == 2
    # an API message split over several lines: its traces share message_id, usage once
    per_message = Counter(t.extra["message_id"] for t in got if "message_id" in t.extra)
    assert max(per_message.values()) > 1
    assert sum(t.usage is not None for t in got) == len(per_message)


def test_claude_code_compaction_and_thinking(memory_dir):
    result = _import(memory_dir, "hooks", CORPORA / COMPACTION)
    assert (result.format, result.skipped) == ("claude-code", Counter())
    got = traces(memory_dir, "hooks")
    assert statuses(got) == {"SUCCESS": 8, "ERROR": 2}
    assert sum("reasoning" in t.tags for t in got) == 12
    (summary,) = [t for t in got if "compact_summary" in t.tags]
    assert summary.content.startswith("This session is being continued") and summary.is_context
    assert summary.extra["harness_compaction"] == {"harness": "claude-code", "trigger": "manual", "pre_tokens": 21558}


def test_claude_code_edge_cases(memory_dir):
    result = _import(memory_dir, "edge", CORPORA / EDGE_CASES)
    assert result.format == "claude-code"
    assert result.skipped["lines that are not objects"] == 3
    got = traces(memory_dir, "edge")
    assert sum(t.trace_type == "tool_call" for t in got) == 3
    assert sum(t.trace_type == "tool_result" for t in got) == 1
    assert statuses(got) == {"ERROR": 1, "PENDING": 2}


def test_codex_rollout(memory_dir):
    result = _import(memory_dir, "codex", CORPORA / CODEX)
    assert result.format == "codex"
    assert result.skipped == {"web_search_call items (server-side searches, no output to pair)": 7}
    got = traces(memory_dir, "codex")
    assert statuses(got) == {"SUCCESS": 365}                    # 316 function + 49 custom, all answered
    assert sum(t.extra.get("tool_kind") == "custom" for t in got if t.trace_type == "tool_call") == 49
    assert user_turns(got) == 38
    assert sum(1 for t in got if "compact_summary" in t.tags) == 1
    assert all(t.usage["prompt_tokens"] > 0 for t in got if t.usage)


def test_codex_schema_coverage(memory_dir):
    result = _import(memory_dir, "schema", CORPORA / CODEX_SCHEMA)
    assert result.format == "codex" and result.duplicates == 0
    got = traces(memory_dir, "schema")
    assert statuses(got)["ORPHAN"] == 1


def test_claude_code_sdk_stream_json(memory_dir):
    result = _import(memory_dir, "sdk", CORPORA / SDK_TURNS)
    assert (result.format, result.skipped) == ("claude-code", Counter())
    assert statuses(traces(memory_dir, "sdk")) == {"SUCCESS": 3}
    # it sits in anthropic/: --from anthropic reads it too (with the Claude Code importer, and says so)
    named = ingest(memory_dir, "sdk-named", CORPORA / SDK_TURNS, fmt="anthropic")
    assert named.notes == ["the input is Claude Code records (Anthropic messages inside): read as --from claude-code"]
    assert comparable(traces(memory_dir, "sdk-named")) == comparable(traces(memory_dir, "sdk"))


@pytest.mark.parametrize("name", [TODO_APP, COMPACTION, EDGE_CASES, CODEX, CODEX_SCHEMA])
def test_reimport_adds_nothing_and_half_then_whole_equals_whole(memory_dir, tmp_path, name):
    path = CORPORA / name
    first = _import(memory_dir, "whole", path)
    again = _import(memory_dir, "whole", path)
    assert again.appended == 0 and again.duplicates == first.appended
    lines = path.read_bytes().splitlines(keepends=True)
    half = tmp_path / "half.jsonl"
    half.write_bytes(b"".join(lines[: len(lines) // 2]))
    _import(memory_dir, "halves", half)
    half.write_bytes(b"".join(lines))
    _import(memory_dir, "halves", half)
    assert comparable(traces(memory_dir, "halves")) == comparable(traces(memory_dir, "whole"))


def test_cli_says_what_it_detected(cli):
    run = cli("ingest", "todo", str(CORPORA / TODO_APP))
    assert run.exit_code == 0 and run.stdout == ""
    assert run.stderr == ("memcli: ingested 437 events into 'todo' (2 turns, 167 tool calls, 167 results); "
                          "format claude-code (detected)\n")
    run = cli("ingest", "todo", str(CORPORA / TODO_APP), "--from", "claude-code")
    assert run.stderr == ("memcli: ingested 0 events into 'todo' (0 turns, 0 tool calls, 0 results); "
                          "format claude-code; 437 already present\n")
