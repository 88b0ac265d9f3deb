"""The corpora of the formats added for issue 13 import with ``--from auto`` and give the counts
their MANIFEST states (many-conversation files with ``--split``). Skipped without the corpora."""

from __future__ import annotations

import json
from collections import Counter

import orjson
import pytest

from memcli.errors import InputError
from memcli.ingest.api import ingest
from tests.helpers import CORPORA, needs_corpora
from tests.import_helpers import statuses, traces, user_turns

pytestmark = needs_corpora

OH_TRAJ = "openhands/openhands_wrong_initial_state_8ev.json"
OH_LEGACY = "openhands/openhands_resolver_mock_output_legacy_2rec.jsonl"
INSPECT = "inspect/inspect_log_tool_call_error_SYNTHETIC.json"
SHAREGPT = "sharegpt/llamafactory_glaive_toolcall_zh_demo.json"
GEMINI = "gemini/inspect_gemini_contents_functionresponse_in_model_turn.json"
ADK = "gemini/adk_flow_complex_spark_sample.session.json"
CC_2X = "claude-code/claude-md-transcripts_sample_session_v2.1.116_redacted.jsonl"
CASSETTES = {"openai-responses/llm_vcr_responses_interleaved_reasoning_tool_calls.yaml": (3, 3),
             "openai-responses/llm_vcr_responses_round_trips_encrypted_reasoning.yaml": (2, 1)}


def _types(got) -> Counter:
    return Counter(t.trace_type for t in got)


def test_openhands_trajectory(memory_dir):
    result = ingest(memory_dir, "oh", CORPORA / OH_TRAJ)
    assert (result.format, result.detected) == ("openhands", True)
    got = traces(memory_dir, "oh")
    calls = [t for t in got if t.trace_type == "tool_call"]
    assert [t.tool_name for t in calls] == ["str_replace_editor", "execute_bash", "str_replace_editor", "finish"]
    assert statuses(got) == {"SUCCESS": 3, "PENDING": 1}   # finish has no observation, by design
    assert user_turns(got) == 1 and _types(got)["tool_result"] == 3
    # each call pairs by the same tool_call_id the observation repeats
    results = {t.tool_call_id for t in got if t.trace_type == "tool_result"}
    assert results == {t.tool_call_id for t in calls[:3]}
    assert {t.extra.get("model") for t in calls} == {"claude-3-5-sonnet-20241022"}
    assert sum(t.usage is not None for t in got) == 4   # 4 distinct model responses, usage once each


def test_openhands_resolver_output_legacy_history(memory_dir):
    with pytest.raises(InputError, match="holds 2 conversations"):
        ingest(memory_dir, "res", CORPORA / OH_LEGACY)
    result = ingest(memory_dir, "res", CORPORA / OH_LEGACY, split=True)
    assert result.agents == ["res.neubig-pr-viewer-5", "res.neubig-pr-viewer-1"]
    total, names, turns = Counter(), Counter(), 0
    for agent in result.agents:
        got = traces(memory_dir, agent)
        total += statuses(got)
        names.update(t.tool_name for t in got if t.trace_type == "tool_call")
        turns += user_turns(got)
    assert names == {"run": 3, "run_ipython": 21}          # finish is the agent's last message, not a call
    assert total == {"SUCCESS": 24} and turns == 2          # paired by position
    assert ingest(memory_dir, "res", CORPORA / OH_LEGACY, split=True).appended == 0


def test_inspect_log_with_tool_call_errors(memory_dir):
    result = ingest(memory_dir, "ins", CORPORA / INSPECT)
    assert (result.format, result.detected) == ("inspect", True)
    got = traces(memory_dir, "ins")
    results = [t for t in got if t.trace_type == "tool_result"]
    assert len(got) == len(results) == 11
    assert [t.tool_call_id for t in results] == [f"bash_{i}" for i in range(1, 12)]
    assert {t.tool_name for t in results} == {"bash"} and all(t.tool_error is not None for t in results)
    assert len({t.extra["error_type"] for t in results}) == 10
    assert statuses(got) == {"ORPHAN": 11}


@pytest.mark.slow
def test_sharegpt_glaive_toolcall_dataset(memory_dir):
    with pytest.raises(InputError, match="holds 300 conversations"):
        ingest(memory_dir, "sg", CORPORA / SHAREGPT)
    result = ingest(memory_dir, "sg", CORPORA / SHAREGPT, split=True)
    assert (result.format, len(result.agents), result.agents[-1]) == ("sharegpt", 300, "sg.300")
    types, total, orphans = Counter(), Counter(), []
    for i, agent in enumerate(result.agents):
        got = traces(memory_dir, agent)
        types += Counter((t.trace_type, "system" in t.tags) for t in got)
        status = statuses(got)
        total += status
        if status.get("ORPHAN"):
            orphans.append(i)
    assert types == {("user", False): 722, ("assistant", False): 724, ("tool_call", False): 216,
                     ("tool_result", False): 218}
    assert total == {"SUCCESS": 216, "ORPHAN": 2} and orphans == [197, 293]
    assert "1880 events" in result.summary() and "216 tool calls" in result.summary()


def test_gemini_contents_with_a_response_in_a_model_turn(memory_dir):
    result = ingest(memory_dir, "gm", CORPORA / GEMINI)
    assert (result.format, result.detected) == ("gemini", True)
    got = traces(memory_dir, "gm")
    call = next(t for t in got if t.trace_type == "tool_call")
    assert call.tool_name == "call_mcp_tool" and call.extra["signature"].startswith("Esw")
    assert statuses(got) == {"SUCCESS": 1}
    assert sum("system" in t.tags for t in got) == 1 and user_turns(got) == 1
    assert any(t.trace_type == "assistant" and t.content.startswith("<think redacted") for t in got)


def test_adk_session(memory_dir):
    result = ingest(memory_dir, "adk", CORPORA / ADK)
    assert (result.format, result.detected) == ("gemini", True)
    got = traces(memory_dir, "adk")
    assert _types(got) == {"user": 1, "assistant": 4, "tool_call": 2, "tool_result": 2}
    assert statuses(got) == {"SUCCESS": 2}
    assert {t.tool_name for t in got if t.trace_type == "tool_call"} == {"transfer_to_other_agent"}
    assert len({t.extra.get("name") for t in got if t.trace_type == "assistant"}) == 4   # agents by author


@pytest.mark.parametrize("cassette", list(CASSETTES))
def test_responses_cassette_request_inputs(cassette, memory_dir, tmp_path):
    yaml = pytest.importorskip("yaml")
    interactions = yaml.safe_load((CORPORA / cassette).read_text())["interactions"]
    body = json.loads(interactions[-1]["request"]["body"])
    path = tmp_path / "input.json"
    path.write_bytes(orjson.dumps(body["input"]))
    result = ingest(memory_dir, "resp", path)
    assert (result.format, result.detected) == ("openai-responses", True)
    calls, reasoning = CASSETTES[cassette]
    got = traces(memory_dir, "resp")
    assert statuses(got) == {"SUCCESS": calls} and user_turns(got) == 1
    assert result.skipped == {"reasoning items with only encrypted content": reasoning}
    # the whole request body reads the same
    body_path = tmp_path / "body.json"
    body_path.write_bytes(orjson.dumps(body))
    ingest(memory_dir, "body", body_path)
    assert [t.id for t in traces(memory_dir, "body")] == [t.id for t in got]


def test_claude_code_2x_session_opening_with_metadata_lines(memory_dir):
    result = ingest(memory_dir, "cc", CORPORA / CC_2X)
    assert (result.format, result.detected) == ("claude-code", True)
    assert not any("mode" in kind or "attachment" in kind or "title" in kind or "prompt" in kind
                   for kind in result.skipped)
