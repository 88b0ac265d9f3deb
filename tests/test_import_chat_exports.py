"""``--from chatgpt`` and ``--from claude-ai``: the data exports' ``conversations.json``, on
exports written by tests/chat_export_fixtures.py from the documented shape."""

from __future__ import annotations

import orjson
import pytest

from memcli.errors import InputError
from memcli.ingest.api import ingest
from tests import chat_export_fixtures as cx
from tests.import_helpers import traces


def _write(tmp_path, conversations, name="conversations.json"):
    path = tmp_path / name
    path.write_bytes(orjson.dumps(conversations, option=orjson.OPT_INDENT_2))
    return path


def _rows(memory_dir, agent):
    out = []
    for t in traces(memory_dir, agent):
        if t.trace_type == "tool_call":
            out.append(("call", t.tool_name, t.tool_call_id, t.tool_args))
        elif t.trace_type == "tool_result":
            out.append(("result", t.tool_name, t.tool_call_id, t.tool_result))
        else:
            out.append((t.trace_type, tuple(t.tags), t.content))
    return out


def test_chatgpt_follows_the_current_branch_and_pairs_tool_calls(memory_dir, tmp_path):
    conv = cx.chatgpt_conversation(1, 2)
    result = ingest(memory_dir, "g", _write(tmp_path, [conv]))
    assert (result.format, result.detected) == ("chatgpt", True)
    p = conv["id"][:8]
    assert _rows(memory_dir, "g") == [
        ("user", (), "question 0"),
        ("call", "python", f"cg-{p}-t0-call", {"input": "print(0 + 1)"}),
        ("result", "python", f"cg-{p}-t0-call", "1"),
        ("assistant", (), "the answer is 1"),
        ("user", (), "question 1"),
        ("call", "python", f"cg-{p}-t1-call", {"input": "print(1 + 1)"}),
        ("result", "python", f"cg-{p}-t1-call", "2"),
        ("assistant", (), "the answer is 2"),
    ]
    assert result.skipped == {"messages on other branches (edits, regenerations)": 1,
                              "hidden messages (the app's own context)": 1}
    got = traces(memory_dir, "g")
    assert got[0].ts == cx.T0 and got[1].extra["model"] == "gpt-4o" and got[0].extra["session_id"] == conv["id"]
    assert ingest(memory_dir, "g", _write(tmp_path, [conv])).appended == 0


def test_chatgpt_later_export_adds_only_the_new_turn(memory_dir, tmp_path):
    conv = cx.chatgpt_conversation(1, 1)
    ingest(memory_dir, "g", _write(tmp_path, [conv]))
    again = ingest(memory_dir, "g", _write(tmp_path, [cx.chatgpt_add_turn(conv, 5, "and then?")]))
    assert again.appended == 2 and again.duplicates == 4
    assert [t.content for t in traces(memory_dir, "g")][-2:] == ["and then?", "reply to and then?"]


def test_chatgpt_content_types_images_thoughts_and_unknown_ones_are_counted(memory_dir, tmp_path):
    conv = cx.chatgpt_conversation(2, 1, branch=False)
    m = conv["mapping"]
    q = next(k for k in m if k.endswith("-t0-q"))
    m[q]["message"]["content"] = {"content_type": "multimodal_text", "parts": [
        {"content_type": "image_asset_pointer", "asset_pointer": "file-service://file-abc", "width": 8},
        "what is in this picture?"]}
    a = next(k for k in m if k.endswith("-t0-a"))
    m[a]["message"]["content"] = {"content_type": "thoughts", "thoughts": [{"summary": "Looking", "content": "a cat"}]}
    new = f"{conv['id'][:8]}-recap"
    cx._node(m, new, a, cx.cg_message(new, "assistant", {"content_type": "reasoning_recap", "content": "Thought 2s"},
                                       cx.T0 + 9))
    conv["current_node"] = new
    result = ingest(memory_dir, "g", _write(tmp_path, [conv]))
    got = traces(memory_dir, "g")
    assert got[0].media == {"images": ["file-service://file-abc"]} and got[0].content == "what is in this picture?"
    assert (got[-1].content, got[-1].tags) == ("Looking\na cat", ["reasoning"])
    assert result.skipped["reasoning_recap messages"] == 1


def test_many_conversations_need_split_and_split_names_agents_by_conversation_id(memory_dir, tmp_path):
    convs = [cx.chatgpt_conversation(1), cx.chatgpt_conversation(2)]
    path = _write(tmp_path, convs)
    with pytest.raises(InputError, match="holds 2 conversations"):
        ingest(memory_dir, "gpt", path)
    assert not (memory_dir / "agents").exists()
    split = ingest(memory_dir, "gpt", path, split=True)
    assert split.agents == [f"gpt.{c['id']}" for c in convs]
    assert [t.content for t in traces(memory_dir, split.agents[1]) if t.trace_type == "user"] == ["question 0",
                                                                                                 "question 1"]


def test_claude_ai_blocks_tools_attachments(memory_dir, tmp_path):
    conv = cx.claude_ai_conversation(1, 1)
    result = ingest(memory_dir, "c", _write(tmp_path, [conv]))
    assert (result.format, result.detected) == ("claude-ai", True)
    p = conv["uuid"][:8]
    assert _rows(memory_dir, "c") == [
        ("user", (), "find fact 0"),
        ("user", ("context",), "[attachment notes.txt]\nhello notes"),
        ("assistant", ("reasoning",), "I should search for fact 0"),
        ("call", "web_search", f"ca-{p}-a0-c1", {"query": "fact 0"}),
        ("result", "web_search", f"ca-{p}-a0-c1", "fact 0 is true"),
        ("assistant", (), "fact 0 holds"),
    ]
    assert traces(memory_dir, "c")[0].ts == cx.T0
    assert ingest(memory_dir, "c", _write(tmp_path, [conv])).appended == 0


def test_claude_ai_follows_parent_chain_when_given(memory_dir, tmp_path):
    conv = cx.claude_ai_conversation(3, 1)
    h, a = conv["chat_messages"]
    h["parent_message_uuid"] = "00000000-0000-4000-8000-000000000000"
    retried = dict(a, uuid="retried", content=[{"type": "text", "text": "old answer"}])
    retried["parent_message_uuid"] = a["parent_message_uuid"] = h["uuid"]
    conv["chat_messages"] = [h, retried, a]
    result = ingest(memory_dir, "c", _write(tmp_path, [conv]))
    assert "old answer" not in [t.content for t in traces(memory_dir, "c")]
    assert result.skipped["messages on other branches (retries, edits)"] == 1


def test_claude_ai_split_and_wrong_shape_errors(memory_dir, tmp_path):
    convs = [cx.claude_ai_conversation(1), cx.claude_ai_conversation(2)]
    split = ingest(memory_dir, "cl", _write(tmp_path, convs), split=True)
    assert split.agents == [f"cl.{c['uuid']}" for c in convs]
    with pytest.raises(InputError) as info:
        ingest(memory_dir, "w", _write(tmp_path, [{"role": "user", "content": "x"}]), fmt="claude-ai")
    assert info.value.line == 2 and "a Claude.ai conversation" in str(info.value)
