"""``--from anthropic``: Messages API conversations (memcli.importers.anthropic)."""

from __future__ import annotations

from memcli.errors import InputError
from memcli.importers import get_importer
from memcli.tool_interactions import pair_tool_traces
from tests.import_helpers import comparable, import_values, shape, statuses, traces

PNG = "iVBORw0KGgo="


def request():
    return {
        "model": "claude-sonnet-4-5",
        "system": [{"type": "text", "text": "You are a coder."}, {"type": "text", "text": "Be careful."}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Fix the bug."},
                                         {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}]},
            {"id": "msg_1", "type": "message", "role": "assistant", "content": [
                {"type": "thinking", "thinking": "Let me look.", "signature": "sig1"},
                {"type": "text", "text": "Reading both files."},
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.py"}},
                {"type": "tool_use", "id": "toolu_2", "name": "read", "input": {"path": "b.py"}},
            ], "usage": {"input_tokens": 10, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 1000,
                         "output_tokens": 50}},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": True,
                 "content": [{"type": "text", "text": "ENOENT: b.py"}]},
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": [
                    {"type": "text", "text": "print(1)"},
                    {"type": "image", "source": {"type": "url", "url": "https://x.example/shot.png"}}]},
            ]},
            {"role": "assistant", "content": "Done."},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_9", "content": ""},
                {"type": "text", "text": "Now run the tests."}]},
        ],
    }


def test_blocks_turns_errors_media_and_usage(memory_dir, tmp_path):
    result = import_values(memory_dir, "a", [request()], "auto", tmp_path=tmp_path, layout="pretty")
    assert result.format == "anthropic" and result.detected
    got = traces(memory_dir, "a")
    assert shape(got) == [
        ("user", "turn_0001", 1, ("system",), "You are a coder.\nBe careful."),
        ("user", "turn_0001", 2, (), "Fix the bug."),
        ("assistant", "turn_0001", 3, ("reasoning",), "Let me look."),
        ("assistant", "turn_0001", 4, (), "Reading both files."),
        ("tool_call", "turn_0001", 5, (), "toolu_1"),
        ("tool_call", "turn_0001", 6, (), "toolu_2"),
        # a user message holding only tool results is not a new turn
        ("tool_result", "turn_0001", 7, (), "toolu_2"),
        ("tool_result", "turn_0001", 8, (), "toolu_1"),
        ("assistant", "turn_0001", 9, (), "Done."),
        ("tool_result", "turn_0001", 10, (), "toolu_9"),   # an orphan joins the open turn
        ("user", "turn_0002", 1, (), "Now run the tests."),  # text next to tool results is a new ask
    ]
    assert got[1].media == {"images": [f"data:image/png;base64,{PNG}"]}
    assert got[2].extra["signature"] == "sig1"
    assert got[4].tool_args == {"path": "a.py"} and got[4].tool_name == "read"
    # the message's usage once, on its first trace; prompt_tokens counts the cache too
    assert got[2].usage == {"prompt_tokens": 1110, "completion_tokens": 50, "input_tokens": 10,
                            "cache_creation_input_tokens": 100, "cache_read_input_tokens": 1000, "output_tokens": 50}
    assert [t.usage for t in got[3:6]] == [None, None, None]
    assert {t.extra.get("message_id") for t in got[2:6]} == {"msg_1"}
    error, ok = got[6], got[7]
    assert (error.tool_error, error.tool_result, error.tool_name) == ("ENOENT: b.py", None, "read")
    assert (ok.tool_result, ok.media) == ("print(1)", {"images": ["https://x.example/shot.png"]})
    assert statuses(got) == {"ERROR": 1, "SUCCESS": 1, "ORPHAN": 1}
    assert {t.extra.get("model") for t in got} == {"claude-sonnet-4-5"}


def test_reimport_and_growth(memory_dir, tmp_path):
    messages = request()["messages"]
    import_values(memory_dir, "a", messages[:2], "anthropic", tmp_path=tmp_path, layout="array", name="c.json")
    again = import_values(memory_dir, "a", messages[:2], "anthropic", tmp_path=tmp_path, layout="array", name="c.json")
    assert again.appended == 0
    grown = import_values(memory_dir, "a", messages, "anthropic", tmp_path=tmp_path, layout="array", name="c.json")
    assert grown.appended == 5
    import_values(memory_dir, "whole", messages, "anthropic", tmp_path=tmp_path, layout="array", name="w.json")
    assert comparable(traces(memory_dir, "a")) == comparable(traces(memory_dir, "whole"))


def test_server_tools_pair_inside_the_assistant_message(memory_dir, tmp_path):
    messages = [
        {"role": "user", "content": "news?"},
        {"role": "assistant", "content": [
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "news"}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
             "content": [{"type": "web_search_result", "url": "https://n.example", "title": "N"}]},
            {"type": "server_tool_use", "id": "srvtoolu_2", "name": "web_search", "input": {"query": "more"}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_2",
             "content": {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}},
            {"type": "text", "text": "Here is the news."},
        ]},
    ]
    import_values(memory_dir, "a", messages, "anthropic", tmp_path=tmp_path)
    interactions = pair_tool_traces(traces(memory_dir, "a"))
    assert [(i.tool_name, i.status.value, i.error) for i in interactions] == [
        ("web_search", "SUCCESS", None), ("web_search", "ERROR", "max_uses_exceeded")]
    assert interactions[0].result == [{"type": "web_search_result", "url": "https://n.example", "title": "N"}]


def test_unknown_blocks_are_counted_and_empty_errors_still_count_as_errors(memory_dir, tmp_path):
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "read"},
                                     {"type": "document", "source": {"type": "base64", "data": "JVBERi0="}}]},
        {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "xyz"},
                                          {"type": "tool_use", "id": "t1", "name": "run", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": True}]},
    ]
    result = import_values(memory_dir, "a", messages, "anthropic", tmp_path=tmp_path)
    assert result.skipped == {"document blocks": 1, "redacted_thinking blocks": 1}
    got = traces(memory_dir, "a")
    assert got[-1].tool_error == "(no error message)"
    assert statuses(got) == {"ERROR": 1}


def test_not_anthropic_is_an_error():
    importer = get_importer("anthropic")
    from memcli.ingest.pipeline import IngestResult

    events = list(importer.events(iter([(1, ["not", "a", "message"]), (2, {"role": "user", "content": "x"})]),
                                  IngestResult("a")))
    assert len(events) == 1
    line, error = events[0]
    assert isinstance(error, InputError)
    assert str(error) == 'line 1: expected an Anthropic message (an object with "role" and "content"), got array'


def test_sniffing_prefers_anthropic_only_when_its_blocks_are_there():
    anthropic, openai = get_importer("anthropic"), get_importer("openai")
    tool_use = {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "x", "input": {}}]}
    assert anthropic.sniff([(1, tool_use)]) > openai.sniff([(1, tool_use)])
    assert anthropic.sniff([(1, {"system": "s", "messages": [{"role": "user", "content": "x"}]})]) > 90
    assert anthropic.sniff([(1, {"role": "tool", "content": "x", "tool_call_id": "c"})]) == 0
