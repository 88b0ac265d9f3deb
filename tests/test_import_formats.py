"""The formats added for issue 13 (openai-responses, gemini, openhands, inspect, sharegpt, cline):
mapping, pairing, errors, media, detection and idempotent re-import, on small transcripts shaped as
their producers write them (tests/import_format_fixtures.py)."""

from __future__ import annotations

import orjson
import pytest

from memcli.errors import InputError
from memcli.importers import FORMATS, REGISTRY, get_importer
from memcli.ingest.api import ingest
from tests import import_format_fixtures as fx
from tests.import_helpers import statuses, traces, user_turns, write_input


def _ingest(memory_dir, tmp_path, agent, value, fmt="auto", layout="pretty", **kw):
    path = write_input(tmp_path / f"{agent}.json", [value] if layout == "pretty" else value, layout)
    return ingest(memory_dir, agent, path, fmt=fmt, **kw)


def _rows(memory_dir, agent):
    out = []
    for t in traces(memory_dir, agent):
        if t.trace_type == "tool_call":
            out.append(("call", t.tool_name, t.tool_call_id, t.tool_args))
        elif t.trace_type == "tool_result":
            out.append(("error" if t.tool_error is not None else "result", t.tool_name, t.tool_call_id,
                        t.tool_error if t.tool_error is not None else t.tool_result))
        else:
            out.append((t.trace_type, tuple(t.tags), t.content))
    return out


def test_registry_lists_every_format_once_and_each_module_loads():
    assert FORMATS == ("native", "openai", "anthropic", "claude-code", "codex", "openai-responses", "gemini", "gemini-cli",
                       "openhands", "inspect", "sharegpt", "cline", "copilot-cli", "goose", "opencode", "cursor", "chatgpt",
                       "claude-ai")
    for fmt in REGISTRY:
        assert get_importer(fmt.name).name == fmt.name


def test_openai_responses_request_body(memory_dir, tmp_path):
    result = _ingest(memory_dir, tmp_path, "r", fx.responses_body())
    assert (result.format, result.detected) == ("openai-responses", True)
    assert result.skipped == {"item_reference items": 1}
    rows = _rows(memory_dir, "r")
    assert rows[:3] == [("user", ("system",), "You are terse."), ("user", (), "Weather in Oslo, and the population?"),
                        ("assistant", ("reasoning",), "Two lookups.")]
    assert rows[3:] == [
        ("call", "weather", "call_a", {"city": "Oslo"}), ("call", "population", "call_b", {"city": "Oslo"}),
        ("result", "population", "call_b", "709,000"), ("result", "weather", "call_a", "rain"),
        ("call", "web_search", "ws_1", {"type": "search", "query": "Oslo news"}),
        ("result", "web_search", "ws_1", {"status": "completed"}),
        ("call", "apply_patch", "call_c", {"input": "*** Begin Patch"}), ("result", "apply_patch", "call_c", "done"),
        ("assistant", (), "Rainy; 709k people."),
    ]
    got = traces(memory_dir, "r")
    assert next(t for t in got if t.tool_call_id == "call_a" and t.trace_type == "tool_result").media == {
        "images": ["https://x.test/radar.png"]}
    assert statuses(got) == {"SUCCESS": 4}
    # the bare item list reads the same (but for the instructions, which are not in it)
    _ingest(memory_dir, tmp_path, "r2", fx.responses_body()["input"], layout="array")
    assert _rows(memory_dir, "r2") == rows[1:]
    assert _ingest(memory_dir, tmp_path, "r", fx.responses_body()).appended == 0


def test_openai_responses_response_object_and_failed_hosted_items(memory_dir, tmp_path):
    response = {"id": "resp_1", "object": "response", "status": "completed", "model": "gpt-5",
                "usage": {"input_tokens": 10, "output_tokens": 4},
                "output": [{"type": "web_search_call", "id": "ws_9", "status": "failed", "action": {"query": "x"}},
                           {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Sorry."}]}]}
    _ingest(memory_dir, tmp_path, "resp", response)
    got = traces(memory_dir, "resp")
    assert [(t.trace_type, t.tool_error) for t in got] == [("tool_call", None), ("tool_result", "failed"), ("assistant", None)]
    assert got[2].usage["prompt_tokens"] == 10 and got[2].extra["model"] == "gpt-5"


def test_gemini_request_parts_pairing_media_and_errors(memory_dir, tmp_path):
    result = _ingest(memory_dir, tmp_path, "g", fx.gemini_request())
    assert (result.format, result.detected) == ("gemini", True)
    rows = _rows(memory_dir, "g")
    assert [r[0] for r in rows] == ["user", "user", "assistant", "call", "call", "result", "error", "call", "result",
                                    "assistant"]
    assert rows[0] == ("user", ("system",), "Be helpful.") and rows[2] == ("assistant", ("reasoning",), "Let me look.")
    describe, ocr = rows[3], rows[4]
    assert rows[5] == ("result", "describe", describe[2], "a cat") and rows[6] == ("error", "ocr", ocr[2], "no text found")
    assert rows[7][1:] == ("code_execution", rows[7][2], {"language": "PYTHON", "code": "print(1+1)"})
    assert rows[8] == ("result", "code_execution", rows[7][2], "2\n")
    got = traces(memory_dir, "g")
    assert got[1].media == {"images": ["data:image/png;base64,iVBORw0KGgo="]}
    assert got[3].extra["signature"] == "c2ln"
    assert user_turns(got) == 1


def test_gemini_call_ids_pair_by_id_then_name_then_order(memory_dir, tmp_path):
    contents = [{"role": "user", "parts": [{"text": "go"}]},
                {"role": "model", "parts": [{"functionCall": {"id": "a", "name": "f", "args": {}}},
                                            {"functionCall": {"name": "g", "args": {}}},
                                            {"functionCall": {"name": "h", "args": {}}}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "h", "response": {"output": "H"}}},
                                           {"functionResponse": {"name": "zzz", "response": {"x": 1}}},
                                           {"functionResponse": {"id": "a", "name": "f", "response": {"result": "F"}}}]}]
    _ingest(memory_dir, tmp_path, "ids", contents, layout="array")
    rows = _rows(memory_dir, "ids")
    calls = {r[1]: r[2] for r in rows if r[0] == "call"}
    assert [r[1:] for r in rows if r[0] == "result"] == [("h", calls["h"], "H"), ("zzz", calls["g"], {"x": 1}),
                                                       ("f", "a", "F")]


def test_gemini_cli_session_and_checkpoint(memory_dir, tmp_path):
    # a Gemini CLI session document is detected as --from gemini-cli (ids from the message ids, as
    # memcli sync reads it); --from gemini reads it too, with hash-chain ids
    result = _ingest(memory_dir, tmp_path, "cli", fx.gemini_cli_session())
    assert (result.format, result.skipped) == ("gemini-cli", {"info messages (the CLI's own notices)": 1})
    named = _ingest(memory_dir, tmp_path, "named", fx.gemini_cli_session(), fmt="gemini")
    assert (named.format, named.skipped) == ("gemini", {"info messages": 1})
    rows = _rows(memory_dir, "cli")
    assert rows == _rows(memory_dir, "named") == [
        ("user", (), "List files"), ("assistant", ("reasoning",), "Plan: use ls"),
        ("call", "list_directory", "ls-1", {"path": "."}), ("call", "read_file", "rd-1", {"path": "c.txt"}),
        ("result", "list_directory", "ls-1", "a.txt\nb.txt"), ("error", "read_file", "rd-1", "not found"),
        ("assistant", (), "Two files: a.txt, b.txt.")]
    for agent in ("cli", "named"):
        assert traces(memory_dir, agent)[1].usage == {"prompt_tokens": 120, "completion_tokens": 8, "input": 120,
                                                      "output": 8, "cached": 0, "total": 128}
    checkpoint = {"history": fx.gemini_request()["contents"], "authType": "oauth-personal"}   # /chat save
    _ingest(memory_dir, tmp_path, "ckpt", checkpoint)
    _ingest(memory_dir, tmp_path, "legacy", fx.gemini_request()["contents"], layout="array")  # older: bare contents
    assert _rows(memory_dir, "ckpt") == _rows(memory_dir, "legacy")
    assert len(_rows(memory_dir, "ckpt")) == 9


def test_openhands_trajectory(memory_dir, tmp_path):
    result = _ingest(memory_dir, tmp_path, "oh", fx.openhands_trajectory(), layout="array")
    assert (result.format, result.skipped) == ("openhands", {"agent_state_changed observations": 1})
    rows = _rows(memory_dir, "oh")
    call_id = rows[5][2]
    assert rows == [("user", ("system",), "You are OpenHands."), ("user", (), "List files"),
                    ("assistant", (), "Let me look."), ("call", "execute_bash", "toolu_1", {"command": "ls"}),
                    ("result", "execute_bash", "toolu_1", "a.txt"), ("call", "run", call_id, {"command": "false"}),
                    ("error", "run", call_id, "(no error message)"), ("assistant", (), "Done: a.txt")]
    got = traces(memory_dir, "oh")
    assert got[1].media == {"images": ["https://x.test/a.png"]}
    assert got[2].usage == {"prompt_tokens": 90, "completion_tokens": 12}
    assert sum(t.usage is not None for t in got) == 1   # the observation repeats the response: usage once


def test_inspect_log_samples_are_conversations(memory_dir, tmp_path):
    with pytest.raises(InputError, match="holds 2 conversations"):
        _ingest(memory_dir, tmp_path, "ev", fx.inspect_log())
    result = _ingest(memory_dir, tmp_path, "ev", fx.inspect_log(), split=True)
    assert result.agents == ["ev.q1", "ev.q2"] and result.format == "inspect"
    rows = _rows(memory_dir, "ev.q1")
    assert rows == [("user", ("system",), "Use tools."), ("user", (), "2+2?"), ("assistant", ("reasoning",), "Use python."),
                    ("assistant", (), "Computing."), ("call", "python", "py_1", {"code": "print(2+2)"}),
                    ("call", "bash", "sh_1", {"cmd": "ls /nope"}), ("result", "python", "py_1", "4"),
                    ("error", "bash", "sh_1", "ls: /nope: No such file"), ("assistant", (), "4")]
    got = traces(memory_dir, "ev.q1")
    assert got[7].extra["error_type"] == "file_not_found" and got[1].media == {"images": ["data:image/png;base64,AAAA"]}
    assert got[8].usage == {"prompt_tokens": 50, "completion_tokens": 9, "input_tokens": 50, "output_tokens": 9}
    assert got[2].extra["signature"] == "sig" and got[3].extra["model"] == "openai/gpt-4o"
    # several epochs: agents named <id>.<epoch>
    log = fx.inspect_log()
    log["samples"][1]["id"], log["samples"][1]["epoch"] = "q1", 2
    assert _ingest(memory_dir, tmp_path, "ep", log, split=True).agents == ["ep.q1.1", "ep.q1.2"]


def test_sharegpt_records_and_llamafactory_variant(memory_dir, tmp_path):
    result = _ingest(memory_dir, tmp_path, "sg", fx.sharegpt_records(), layout="array", split=True)
    assert result.agents == ["sg.rec-1", "sg.rec-2"]   # own ids, sanitised ("rec/2")
    rows = _rows(memory_dir, "sg.rec-1")
    call_id = rows[2][2]
    assert rows[0] == ("user", ("system",), "Be kind.") and rows[1] == ("user", (), "Find SK123")
    assert rows[2:5] == [("call", "lookup", call_id, {"flight": "SK123"}), ("result", None, call_id, '{"status": "on time"}'),
                         ("assistant", (), "SK123 is on time.")]
    assert rows[5][0] == "result" and rows[5][2] != call_id   # an observation no call waits for: an orphan
    assert statuses(traces(memory_dir, "sg.rec-1")) == {"SUCCESS": 1, "ORPHAN": 1}
    assert traces(memory_dir, "sg.rec-1")[0].extra["tools"] == [{"name": "lookup", "parameters": {"type": "object"}}]
    assert _rows(memory_dir, "sg.rec-2") == [("user", (), "Hi"), ("assistant", (), "Hello!")]


def test_cline_history_pairs_text_results_with_the_preceding_calls(memory_dir, tmp_path):
    """Built from Cline's own source (see import_format_fixtures.cline_history): no public sample."""
    result = _ingest(memory_dir, tmp_path, "cl", fx.cline_history(), layout="array")
    assert (result.format, result.detected) == ("cline", True)
    got = traces(memory_dir, "cl")
    assert statuses(got) == {"SUCCESS": 3, "ERROR": 2}   # nothing pending, nothing orphan
    rows = _rows(memory_dir, "cl")
    calls = [r for r in rows if r[0] == "call"]
    assert [(c[1], c[3]) for c in calls] == [
        ("execute_command", {"command": "npm test", "requires_approval": "false"}),
        ("read_file", {"path": "src/app.test.ts"}), ("write_to_file", {"path": "/etc/x", "content": "y"}),
        ("execute_command", {"command": "rm -rf node_modules", "requires_approval": "true"}),
        ("attempt_completion", {"result": "Fixed the expectation."})]
    outcomes = [r for r in rows if r[0] in ("result", "error")]
    assert [(o[0], o[1], o[2]) for o in outcomes] == [(k, c[1], c[2]) for k, c in
                                                      zip(["result", "result", "error", "error", "result"], calls)]
    assert outcomes[0][3] == "Command executed.\nOutput:\n1 failing"
    assert outcomes[3][3].startswith("The user denied this operation.") and "Don't delete things" in outcomes[3][3]
    # the task and the user's later message open turns; environment details are context
    assert user_turns(got) == 2
    assert sum(t.is_context for t in got if t.trace_type == "user") == 4
    assert got[1].extra["model"] == "claude-sonnet-4-20250514" and got[0].ts == fx.T0 / 1000


@pytest.mark.parametrize("value, expected", [
    ({"custom_id": "r1", "method": "POST", "body": {}}, "looks like an OpenAI Batch API file"),
    ({"instance_id": "x", "model_patch": "diff"}, "looks like SWE-bench predictions"),
])
def test_a_known_format_memcli_does_not_read_is_named(memory_dir, tmp_path, value, expected):
    with pytest.raises(InputError, match=expected):
        _ingest(memory_dir, tmp_path, "x", [value], layout="array")
    assert not (memory_dir / "agents").exists()


def test_undecided_input_names_the_keys_it_saw_and_the_nearest_format(memory_dir, tmp_path):
    with pytest.raises(InputError) as info:
        _ingest(memory_dir, tmp_path, "x", [{"speaker": "a", "conversations": 3, "tools": "t"}], layout="array")
    message = str(info.value)
    assert "saw keys: conversations, speaker, tools" in message
    assert "resembles a ShareGPT-style dataset most (--from sharegpt)" in message
    assert "--from " + "|".join(FORMATS) in info.value.hint


def test_detection_skips_claude_code_metadata_lines(memory_dir, tmp_path):
    lines = [{"type": "mode", "mode": "normal", "sessionId": "s"}, {"type": "permission-mode", "permissionMode": "default", "sessionId": "s"}]
    lines += [{"type": "attachment", "parentUuid": None, "attachment": {"type": "hook_success"}, "uuid": f"a{i}", "sessionId": "s"}
              for i in range(70)]
    lines.append({"type": "user", "uuid": "u1", "sessionId": "s", "message": {"role": "user", "content": "hi"}})
    result = ingest(memory_dir, "cc", write_input(tmp_path / "cc.jsonl", lines))
    assert (result.format, result.detected, result.skipped) == ("claude-code", True, {})
    assert [t.content for t in traces(memory_dir, "cc")] == ["hi"]


@pytest.mark.parametrize("fmt, value, layout", [
    ("openai-responses", fx.responses_body(), "pretty"), ("gemini", fx.gemini_request(), "pretty"),
    ("gemini-cli", fx.gemini_cli_session(), "pretty"), ("openhands", fx.openhands_trajectory(), "array"),
    ("sharegpt", fx.sharegpt_records()[:1], "array"), ("cline", fx.cline_history(), "array"),
    ("inspect", {**fx.inspect_log(), "samples": fx.inspect_log()["samples"][:1]}, "pretty"),
])
def test_each_format_is_detected_and_reimport_adds_nothing(memory_dir, tmp_path, fmt, value, layout):
    first = _ingest(memory_dir, tmp_path, "d", value, layout=layout)
    assert (first.format, first.detected) == (fmt, True) and first.appended > 0
    assert _ingest(memory_dir, tmp_path, "d", value, layout=layout).appended == 0
    assert _ingest(memory_dir, tmp_path, "named", value, fmt=fmt, layout=layout).appended == first.appended


def test_a_wrong_format_named_explicitly_is_a_line_numbered_error(memory_dir, tmp_path):
    for fmt in ("openai-responses", "gemini", "openhands", "inspect", "sharegpt", "cline"):
        with pytest.raises(InputError) as info:
            _ingest(memory_dir, tmp_path, "w", [{"trace_type": "user", "content": "x"}], fmt=fmt, layout="array")
        assert info.value.line == 1, fmt
    assert traces(memory_dir, "w") == []


def test_the_in_memory_array_reader_gives_what_the_streaming_scanner_gives(tmp_path):
    from memcli.ingest.source import _array_in_memory, _iter_array

    values = [{"a": "x\ny", "b": [1, {"c": "]"}]}, "s,t", 1.5, None, [], {"nested": ["[", "{"]}]
    for layout in (orjson.dumps(values), orjson.dumps(values, option=orjson.OPT_INDENT_2),
                   b"\xef\xbb\xbf[\n\n" + b",\n\n".join(orjson.dumps(v) for v in values) + b"\n]\n"):
        path = tmp_path / "a.json"
        path.write_bytes(layout)
        with open(path, "rb") as f:
            f.seek(3 if layout.startswith(b"\xef") else 0)
            fast = _array_in_memory(f)
            assert f.tell() == (3 if layout.startswith(b"\xef") else 0)
            assert fast == list(_iter_array(f)) and [v for _, v in fast] == values
    path.write_bytes(b'[{"a": 1},\n{"a": NaN}]')   # not JSON: the streaming scanner says where
    with open(path, "rb") as f:
        assert _array_in_memory(f) is None
