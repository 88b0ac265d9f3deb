"""``--from openai``: Chat Completions message lists (memcli.importers.openai)."""

from __future__ import annotations

import pytest

from memcli.errors import InputError
from memcli.importers import get_importer
from memcli.tool_interactions import pair_tool_traces
from tests.import_helpers import comparable, import_values, shape, statuses, traces


def conversation():
    return [
        {"role": "system", "content": "You are a travel agent."},
        {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
        {"role": "user", "content": "Book me a flight to Oslo."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": '{"to": "OSL"}'}},
            {"id": "call_2", "type": "function", "function": {"name": "weather", "arguments": "not json {"}},
        ]},
        {"role": "tool", "tool_call_id": "call_2", "name": "weather", "content": "rain"},
        {"role": "tool", "tool_call_id": "call_1", "content": '[{"flight": "SK123"}]'},
        {"role": "assistant", "content": "SK123 it is."},
        {"role": "user", "content": "Thanks"},
    ]


def test_roles_turns_and_tool_linkage(memory_dir, tmp_path):
    result = import_values(memory_dir, "a", conversation(), "openai", tmp_path=tmp_path)
    assert result.appended == 9
    got = traces(memory_dir, "a")
    assert shape(got) == [
        ("user", "turn_0001", 1, ("system",), "You are a travel agent."),
        ("user", "turn_0001", 2, ("developer",), "Be brief."),
        ("user", "turn_0001", 3, (), "Book me a flight to Oslo."),
        ("tool_call", "turn_0001", 4, (), "call_1"),
        ("tool_call", "turn_0001", 5, (), "call_2"),
        ("tool_result", "turn_0001", 6, (), "call_2"),
        ("tool_result", "turn_0001", 7, (), "call_1"),
        ("assistant", "turn_0001", 8, (), "SK123 it is."),
        ("user", "turn_0002", 1, (), "Thanks"),
    ]
    call_1, call_2 = got[3], got[4]
    assert (call_1.tool_name, call_1.tool_args, call_1.extra) == ("search", {"to": "OSL"}, {})
    # arguments that are not JSON are kept verbatim, never dropped or "fixed"
    assert call_2.tool_args == {"input": "not json {"} and call_2.extra["tool_args_verbatim"] is True
    assert got[5].tool_result == "rain" and got[5].tool_name == "weather"
    assert got[6].tool_result == '[{"flight": "SK123"}]' and got[6].tool_name == "search"  # name from the call
    assert statuses(got) == {"SUCCESS": 2}
    assert {t.source_event for t in got} == {"openai.chat"}


def test_json_array_pretty_document_and_ndjson_give_the_same_traces(memory_dir, tmp_path):
    import_values(memory_dir, "nd", conversation(), "openai", tmp_path=tmp_path)
    import_values(memory_dir, "arr", conversation(), "auto", tmp_path=tmp_path, layout="array")
    result = import_values(memory_dir, "doc", [{"model": "gpt-4o", "messages": conversation()}], "auto",
                           tmp_path=tmp_path, layout="pretty")
    assert result.format == "openai" and result.detected
    assert comparable(traces(memory_dir, "nd")) == comparable(traces(memory_dir, "arr")) == comparable(traces(memory_dir, "doc"))
    assert {t.extra.get("model") for t in traces(memory_dir, "doc")} == {"gpt-4o"}


def test_reimport_adds_nothing_and_a_grown_file_adds_only_the_new_messages(memory_dir, tmp_path):
    messages = conversation()
    first = import_values(memory_dir, "a", messages[:5], "openai", tmp_path=tmp_path, name="s.json")
    again = import_values(memory_dir, "a", messages[:5], "openai", tmp_path=tmp_path, name="s.json")
    assert (again.appended, again.duplicates) == (0, first.appended)
    grown = import_values(memory_dir, "a", messages, "openai", tmp_path=tmp_path, name="s.json")
    assert grown.appended == 3 and grown.duplicates == first.appended == 6
    import_values(memory_dir, "whole", messages, "openai", tmp_path=tmp_path, name="w.json")
    assert comparable(traces(memory_dir, "a")) == comparable(traces(memory_dir, "whole"))


def test_two_different_conversations_in_one_agent_do_not_collide(memory_dir, tmp_path):
    one = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    two = [{"role": "user", "content": "hey"}, {"role": "assistant", "content": "hello"}]
    import_values(memory_dir, "a", one, "openai", tmp_path=tmp_path, name="1.json")
    result = import_values(memory_dir, "a", two, "openai", tmp_path=tmp_path, name="2.json")
    assert (result.appended, result.duplicates) == (2, 0)
    assert [t.turn_id for t in traces(memory_dir, "a")] == ["turn_0001"] * 2 + ["turn_0002"] * 2


def test_a_reused_call_id_pairs_first_in_first_out(memory_dir, tmp_path):
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_X", "type": "function", "function": {"name": "a", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_X", "name": "a", "content": "A"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_X", "type": "function", "function": {"name": "b", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_X", "name": "b", "content": "B"},
    ]
    import_values(memory_dir, "a", messages, "openai", tmp_path=tmp_path)
    pairs = [(i.tool_name, i.result, i.status.value) for i in pair_tool_traces(traces(memory_dir, "a"))]
    assert pairs == [("a", "A", "SUCCESS"), ("b", "B", "SUCCESS")]


def test_legacy_function_call_pairs_by_position_and_name(memory_dir, tmp_path):
    messages = [
        {"role": "user", "content": "weather and time?"},
        {"role": "assistant", "content": None, "function_call": {"name": "weather", "arguments": '{"city": "Oslo"}'}},
        {"role": "assistant", "content": None, "function_call": {"name": "clock", "arguments": "{}"}},
        {"role": "function", "name": "clock", "content": "12:00"},
        {"role": "function", "name": "weather", "content": "rain"},
        {"role": "function", "name": "nobody", "content": "?"},
    ]
    import_values(memory_dir, "a", messages, "openai", tmp_path=tmp_path)
    got = traces(memory_dir, "a")
    calls = {t.tool_name: t.tool_call_id for t in got if t.trace_type == "tool_call"}
    results = {t.tool_result: t.tool_call_id for t in got if t.trace_type == "tool_result"}
    assert results["12:00"] == calls["clock"] and results["rain"] == calls["weather"]
    assert statuses(got) == {"SUCCESS": 2, "ORPHAN": 1}
    assert next(t for t in got if t.tool_name == "weather" and t.trace_type == "tool_call").tool_args == {"city": "Oslo"}


def test_custom_tool_calls_keep_their_free_form_input(memory_dir, tmp_path):
    messages = [
        {"role": "user", "content": "count rows"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_c", "type": "custom", "custom": {"name": "sql", "input": '{"looks": "like json"}'}}]},
        {"role": "tool", "tool_call_id": "call_c", "content": "3"},
    ]
    import_values(memory_dir, "a", messages, "openai", tmp_path=tmp_path)
    call = traces(memory_dir, "a")[1]
    assert call.tool_args == {"input": '{"looks": "like json"}'}
    assert call.extra == {"tool_args_verbatim": True, "tool_kind": "custom"}
    assert statuses(traces(memory_dir, "a")) == {"SUCCESS": 1}


def test_swe_agent_tool_call_ids_list_and_history_document(memory_dir, tmp_path):
    history = [
        {"role": "system", "content": "SETTING", "agent": "main", "message_type": "system_prompt"},
        {"role": "user", "content": "fix it"},
        {"role": "assistant", "content": "look", "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "tool", "content": "a.py", "tool_call_ids": ["call_a"], "message_type": "observation"},
    ]
    result = import_values(memory_dir, "a", [{"history": history}], "auto", tmp_path=tmp_path, layout="pretty")
    assert result.format == "openai"
    got = traces(memory_dir, "a")
    assert statuses(got) == {"SUCCESS": 1}
    assert got[-1].tool_name == "ls" and got[-1].tool_result == "a.py"


def test_multimodal_parts_become_media_and_unknown_parts_are_counted(memory_dir, tmp_path):
    messages = [{"role": "user", "content": [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": "https://x.example/cat.png", "detail": "low"}},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
        {"type": "file", "file": {"file_id": "file-1"}},
        {"type": "text", "text": "and this?"},
    ]}]
    result = import_values(memory_dir, "a", messages, "openai", tmp_path=tmp_path)
    (user,) = traces(memory_dir, "a")
    assert user.content == "what is this?\nand this?"
    assert user.media == {"images": ["https://x.example/cat.png", "data:image/png;base64,iVBORw0KGgo="],
                          "audio": ["data:audio/wav;base64,UklGRg=="]}
    assert result.skipped == {"file parts": 1}
    assert "skipped 1 file parts" in result.summary()


def test_refusal_reasoning_empty_messages_and_unknown_roles(memory_dir, tmp_path):
    messages = [
        {"role": "user", "content": "do the bad thing"},
        {"role": "assistant", "content": None, "refusal": "I can't help with that."},
        {"role": "assistant", "content": "", "reasoning_content": "thinking..."},
        {"role": "assistant", "content": None},
        {"role": "ipython", "content": "42"},
    ]
    result = import_values(memory_dir, "a", messages, "openai", tmp_path=tmp_path)
    got = traces(memory_dir, "a")
    assert [(t.trace_type, t.tags, t.content) for t in got] == [
        ("user", [], "do the bad thing"),
        ("assistant", ["refusal"], "I can't help with that."),
        ("assistant", ["reasoning"], "thinking..."),
    ]
    assert result.skipped == {"empty assistant messages": 1, "messages with role 'ipython'": 1}


def test_a_file_that_is_not_a_message_list_is_an_error_naming_the_line(memory_dir, tmp_path):
    claude = {"type": "user", "uuid": "u1", "sessionId": "s", "message": {"role": "user", "content": "hi"}}
    with pytest.raises(InputError) as exc:
        import_values(memory_dir, "a", [claude], "openai", tmp_path=tmp_path)
    assert exc.value.line == 1   # (the message names the file first: FILE: line 1: …)
    assert ': line 1: expected an OpenAI chat message (an object with "role"), got an object' in str(exc.value)
    assert "it looks like a Claude Code session (--from claude-code)" in str(exc.value)
    bad_later = [{"role": "user", "content": "hi"}, {"role": "tool", "content": "x"}]
    with pytest.raises(InputError, match=r"\.input: line 2: expected a tool message with a tool_call_id"):
        import_values(memory_dir, "a", bad_later, "openai", tmp_path=tmp_path)
    assert not (memory_dir / "agents" / "a" / "raw_traces.jsonl").exists() or \
        (memory_dir / "agents" / "a" / "raw_traces.jsonl").read_bytes() == b""


def test_sniffing_one_line_is_enough():
    importer = get_importer("openai")
    assert importer.sniff([(1, {"role": "system", "content": "x"})]) > 90
    assert importer.sniff([(1, {"role": "user", "content": "x"})]) > get_importer("anthropic").sniff(
        [(1, {"role": "user", "content": "x"})])
    assert importer.sniff([(1, {"trace_type": "user", "content": "x"})]) == 0
