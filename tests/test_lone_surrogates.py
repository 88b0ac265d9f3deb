"""Input JSON holding a lone UTF-16 surrogate escape (``"\\ud83d"`` with no low half), as a
JavaScript harness writes it: Claude Code before 2.1.132 cut tool errors inside an emoji and
``JSON.stringify`` kept the half. orjson refuses such a line; memcli reads it with each lone
surrogate replaced by U+FFFD (memcli.json_input.well_formed_json) — by ``ingest`` (lines, arrays,
whole documents) and by ``sync`` — instead of refusing the line, or the whole import. A line with
any other fault is still refused, naming it."""

from __future__ import annotations

import orjson
import pytest

import memcli
from memcli.json_input import well_formed_json
from tests.helpers import agent_traces, read_jsonl, synced, tree_digest
from tests.sync_fixtures import cc_assistant, cc_result, cc_user, claude_project, sid, write_lines

SPLIT_EMOJI = b'\\ud83d'          # a high surrogate whose low half was cut off
LONE_LOW = b'\\ude00'
PAIR = b'\\ud83d\\ude00'          # a whole emoji, escaped: read as one character, kept


def _refused(raw: bytes) -> orjson.JSONDecodeError:
    with pytest.raises(orjson.JSONDecodeError) as info:
        orjson.loads(raw)
    return info.value


@pytest.mark.parametrize("raw, expected", [
    (b'{"a": "x' + SPLIT_EMOJI + b' y"}', {"a": "x\ufffd y"}),
    (b'{"a": "' + LONE_LOW + b'"}', {"a": "\ufffd"}),
    (b'{"a": "' + PAIR + SPLIT_EMOJI + b'"}', {"a": "\U0001f600\ufffd"}),
    (b'{"k' + SPLIT_EMOJI + b'": ["' + SPLIT_EMOJI + LONE_LOW[:0] + b'\\u0041"]}', {"k\ufffd": ["\ufffdA"]}),
    (b'[{"a": "' + SPLIT_EMOJI + b'"}, 1]', [{"a": "\ufffd"}, 1]),
    (b'{"a": "\\\\' + SPLIT_EMOJI + b'"}', {"a": "\\\ufffd"}),   # an escaped backslash, then the escape
    (b'{"a": "' + SPLIT_EMOJI + b'", "n": 123456789012345678901234567890}',
     {"a": "\ufffd", "n": 1.2345678901234568e29}),   # the rest read as orjson reads it
])
def test_a_lone_surrogate_is_read_as_the_replacement_character(raw, expected):
    assert well_formed_json(raw, _refused(raw)) == expected


@pytest.mark.parametrize("raw", [
    b'{"a": "x' + SPLIT_EMOJI + b'", oops}',     # a lone surrogate and another fault
    b'{"a": NaN}',                               # not a surrogate fault: Python's reader would take it
    b'{"a": "\\u12"}',
    b'{"a": "' + SPLIT_EMOJI + b'", "n": NaN}',           # refused without the surrogate too
    b'{"a": "' + SPLIT_EMOJI + b'", "d": ' + b"[" * 1100 + b"]" * 1100 + b"}",   # too deep for orjson
])
def test_any_other_fault_is_left_to_the_error(raw):
    assert well_formed_json(raw, _refused(raw)) is None


def test_loads_replaces_a_lone_surrogate_and_raises_orjsons_own_error_otherwise():
    """``memcli.json_input.loads``, what the readers that are no hot loop call (opencode, Gemini
    CLI and Cursor documents, sync's heads and Cursor's unterminated last line)."""
    from memcli.json_input import loads
    from memcli.sync.cursor import _json

    assert loads(b'{"a": "x' + SPLIT_EMOJI + b'"}') == {"a": "x\ufffd"}
    assert loads('{"a": "x\\ud83d"}') == {"a": "x\ufffd"}   # a str too (Cursor's SQLite values)
    assert _json('{"a": "x\\ud83d"}') == {"a": "x\ufffd"}
    with pytest.raises(orjson.JSONDecodeError) as info:
        loads(b'{"a": NaN}')
    assert str(info.value) == str(_refused(b'{"a": NaN}'))


def test_ingest_reads_the_line_instead_of_refusing_the_import(cli, memory_dir):
    data = (b'{"trace_type": "user", "content": "fix the \xf0\x9f\x98\x80 parser"}\n'
            b'{"trace_type": "tool_call", "tool_name": "Bash", "tool_call_id": "c1", "tool_args": {"command": "ls"}}\n'
            b'{"trace_type": "tool_result", "tool_call_id": "c1", "tool_result": "out ' + SPLIT_EMOJI + b' [truncated]"}\n'
            b'{"trace_type": "assistant", "content": "' + PAIR + b' done"}\n')
    result = cli("ingest", "a", input=data)
    assert result.exit_code == 0, result.output
    traces = agent_traces(memory_dir, "a")
    assert [t.get("content") or t.get("tool_result") for t in traces] == [
        "fix the \U0001f600 parser", None, "out \ufffd [truncated]", "\U0001f600 done"]
    assert "ufffd" not in (memory_dir / "agents" / "a" / "raw_traces.jsonl").read_text()   # UTF-8, not an escape


def test_a_byte_order_mark_and_a_lone_surrogate_on_the_first_line(cli, memory_dir):
    data = (b'\xef\xbb\xbf{"trace_type": "user", "content": "hi ' + SPLIT_EMOJI + b'"}\n'
            b'{"trace_type": "assistant", "content": "hello"}\n')
    result = cli("ingest", "a", input=data)
    assert result.exit_code == 0, result.output
    assert [t["content"] for t in agent_traces(memory_dir, "a")] == ["hi \ufffd", "hello"]


def test_a_line_with_another_fault_is_still_refused_naming_it(cli, memory_dir):
    data = (b'{"trace_type": "user", "content": "hello"}\n'
            b'{"trace_type": "user", "content": "' + SPLIT_EMOJI + b'", oops}\n')
    result = cli("ingest", "a", input=data)
    assert result.exit_code == 1
    assert "line 2: not valid JSON" in result.output
    assert not (memory_dir / "agents" / "a").exists()


def test_a_claude_code_transcript_whose_tool_error_was_cut_inside_an_emoji(cli, memory_dir, tmp_path):
    s = "5f0c1b2e-0000-4000-8000-000000000001"
    lines = [orjson.dumps(cc_user(s, 1, "run the tests")),
             orjson.dumps(cc_assistant(s, 2, "", tool=("toolu_1", "Bash", {"command": "pytest -q"}))),
             orjson.dumps(cc_result(s, 3, "toolu_1", "FAILED tests/test_x.py::test_emoji - AssertionError: 'CUT'"))
             .replace(b"CUT", SPLIT_EMOJI),
             orjson.dumps(cc_assistant(s, 4, "The emoji test fails; I fix the parser next."))]
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    result = cli("ingest", "a", path, "--from", "claude-code")
    assert result.exit_code == 0, result.output
    (failed,) = [t for t in agent_traces(memory_dir, "a") if t["trace_type"] == "tool_result"]
    assert "test_emoji - AssertionError: '\ufffd'" in orjson.dumps(failed).decode()


def test_a_json_document_with_a_lone_surrogate(cli, memory_dir, tmp_path):
    path = tmp_path / "chat.json"   # an OpenAI-style message array, one document
    path.write_bytes(b'[{"role": "user", "content": "hi ' + SPLIT_EMOJI + b'"}, '
                     b'{"role": "assistant", "content": "hello"}]')
    result = cli("ingest", "a", path)
    assert result.exit_code == 0, result.output
    assert [t["content"] for t in agent_traces(memory_dir, "a")] == ["hi \ufffd", "hello"]


def test_sync_reads_the_line_of_a_session_and_again_reads_nothing(memory_dir, tmp_path):
    home = tmp_path / "home"
    s = sid(1)
    path = write_lines(claude_project(home) / f"{s}.jsonl",
                       [cc_user(s, 1, "please fix bug 0"), cc_assistant(s, 2, "looking CUT now")])
    path.write_bytes(path.read_bytes().replace(b"CUT", LONE_LOW))
    (agent,) = synced(memory_dir, home, "claude-code")
    assert [t["content"] for t in agent_traces(memory_dir, agent)] == ["please fix bug 0", "looking \ufffd now"]
    before = tree_digest(memory_dir)
    report = memcli.Memory(memory_dir).sync(home=home, source="claude-code")
    assert [x.status for x in report.sessions] == ["unchanged"]
    assert tree_digest(memory_dir) == before
    assert read_jsonl(memory_dir / "agents" / agent / "raw_traces.jsonl")[1]["content"] == "looking \ufffd now"
