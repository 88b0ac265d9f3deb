"""Read-back: what ``memcli snapshot A -p P`` writes, ``memcli ingest B`` reads with ``--from auto``
and gets the same turns, tool calls and results — for the four providers, on the corpora.

What a payload cannot carry is left out of the comparison, by the renderers' documented rules:
placeholder results of calls that were still pending, orphan results (rendered as user text),
reasoning (providers need their own signatures), tool names a provider does not accept (renamed),
and the error flag where the provider has none (Chat Completions, Responses). Turns are compared
for transcripts without harness context (context and subagent lines are user text in a payload).
"""

from __future__ import annotations

import json
import re

import orjson
import pytest

from memcli.ingest.api import ingest
from memcli.messages import PENDING_TEXT
from memcli.renderers.anthropic import CONTINUATION
from memcli.snapshot import SnapshotOptions, take_snapshot
from memcli.tool_interactions import pair_tool_traces
from tests.helpers import CORPORA, needs_corpora
from tests.import_helpers import traces, user_turns

pytestmark = needs_corpora

PROVIDERS = ("openai-chat", "openai-responses", "anthropic", "gemini")
DETECTED = {"openai-chat": "openai", "openai-responses": "openai-responses", "anthropic": "anthropic",
            "gemini": "gemini"}
WITH_ERROR_FLAG = frozenset({"anthropic", "gemini"})
SOURCES = [
    "openai/swe-agent_function_calling_simple.traj",
    "claude-code/fasthooks_sample_main_transcript_compaction.jsonl",
    "codex/codex_rollout_localpush_019c8a59_2722ev_sanitized.jsonl",
    "anthropic/claude-code-action_sample-turns.json",
    "openhands/openhands_wrong_initial_state_8ev.json",
    "openhands/openhands_resolver_mock_output_legacy_2rec.jsonl#0",
    "gemini/inspect_gemini_contents_functionresponse_in_model_turn.json",
    "gemini/adk_flow_complex_spark_sample.session.json",
    "openai/tau-bench_gpt-4o-airline.json#0",
    "openai/tau-bench_gpt-4o-airline.json#17",
    "sharegpt/llamafactory_glaive_toolcall_zh_demo.json#0",
    "openai-responses/llm_vcr_responses_interleaved_reasoning_tool_calls.yaml",
    "openai-responses/llm_vcr_responses_round_trips_encrypted_reasoning.yaml",
]


def source_file(spec: str, tmp_path):
    """The corpus file, or the one conversation ``#i`` of a many-conversation file, or the last
    request's ``input`` of a Responses cassette."""
    path, _, index = spec.partition("#")
    full = CORPORA / path
    if full.suffix == ".yaml":
        yaml = pytest.importorskip("yaml")
        interactions = yaml.safe_load(full.read_text())["interactions"]
        out = tmp_path / "input.json"
        out.write_bytes(orjson.dumps(json.loads(interactions[-1]["request"]["body"])["input"]))
        return out
    if not index:
        return full
    if full.suffix == ".jsonl":
        record = orjson.loads(full.read_bytes().splitlines()[int(index)])
    else:
        record = orjson.loads(full.read_bytes())[int(index)]
    out = tmp_path / "one.json"
    out.write_bytes(orjson.dumps(record))
    return out


def _text(value) -> str:
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def _provider_name(name: str) -> str:
    """A tool name as the renderers give it to a provider (other characters become ``_``)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64]


def _turns(trace_list) -> int:
    """User turns, not counting the short lead message a renderer adds when the history starts
    with the model."""
    return user_turns([t for t in trace_list if not (t.trace_type == "user" and t.content == CONTINUATION)])


def view(trace_list, provider: str, *, original: bool):
    pairs = pair_tool_traces(trace_list)
    paired = {p.result_trace_id for p in pairs if p.call_trace_id and p.result_trace_id}
    calls = [(_provider_name(t.tool_name), orjson.dumps(t.tool_args, option=orjson.OPT_SORT_KEYS))
             for t in trace_list if t.trace_type == "tool_call"]
    results = []
    for t in trace_list:
        if t.trace_type != "tool_result" or (original and t.id not in paired):
            continue
        text = t.tool_error if t.tool_error is not None else _text(t.tool_result)
        if not original and text == PENDING_TEXT:
            continue
        flag = t.tool_error is not None if provider in WITH_ERROR_FLAG else None
        results.append((flag, text))
    return calls, results


@pytest.mark.parametrize("spec", SOURCES)
def test_snapshot_of_each_provider_reads_back(spec, memory_dir, tmp_path):
    ingest(memory_dir, "a", source_file(spec, tmp_path))
    original = traces(memory_dir, "a")
    assert original
    harness = any(t.trace_type == "user" and (t.is_context or "sidechain" in t.tags) for t in original)
    for provider in PROVIDERS:
        snapshot = take_snapshot(memory_dir, "a", SnapshotOptions(provider=provider, max_tool_result_chars=0))
        payload = tmp_path / f"{provider}.json"
        payload.write_bytes(orjson.dumps(snapshot.payload, option=orjson.OPT_INDENT_2))
        agent = f"b-{provider}"
        result = ingest(memory_dir, agent, payload)   # --from auto
        assert (result.format, result.detected) == (DETECTED[provider], True)
        again = traces(memory_dir, agent)
        assert view(again, provider, original=False) == view(original, provider, original=True), provider
        if not harness:
            assert _turns(again) == _turns(original), provider
        assert ingest(memory_dir, agent, payload).appended == 0   # idempotent
