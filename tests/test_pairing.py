"""One pairing rule (memcli.pairing), and every view agreeing on it: the state cache's
unanswered-call map (``tools --status pending``), ``tools``, the snapshot and the markdown export."""

from __future__ import annotations

import json

from memcli.pairing import pop_open_call, take_open_call

# A call id reused across turns; the result names its turn explicitly (foreign data does), so it
# answers the call of turn_0002 although the call of turn_0001 is older.
REUSED_IDS = [
    {"trace_type": "user", "content": "q1"},
    {"trace_type": "tool_call", "tool_call_id": "x", "tool_name": "read", "tool_args": {"p": "a"}},
    {"trace_type": "user", "content": "q2"},
    {"trace_type": "tool_call", "tool_call_id": "x", "tool_name": "write", "tool_args": {"p": "b"}},
    {"trace_type": "tool_result", "tool_call_id": "x", "tool_result": "B-result", "turn_id": "turn_0002"},
]


def test_a_result_answers_the_oldest_call_of_its_own_turn_else_the_oldest():
    turn = lambda entry: entry[0]  # noqa: E731
    queue = [("t1", "a"), ("t2", "b"), ("t2", "c")]
    assert take_open_call(queue, "t2", turn) == 1
    assert take_open_call(queue, "t3", turn) == 0      # no call of that turn: first in, first out
    assert take_open_call(queue, None, turn) == 0
    open_calls = {"x": [("t1", "a"), ("t2", "b")]}
    assert pop_open_call(open_calls, "x", "t2", turn) == ("t2", "b")
    assert pop_open_call(open_calls, "x", "t2", turn) == ("t1", "a")
    assert open_calls == {}                              # an emptied id is removed
    assert pop_open_call(open_calls, "x", None, turn) is None   # an orphan


def test_state_cache_tools_snapshot_and_markdown_pair_a_reused_id_alike(cli):
    assert cli("ingest", "a", input=REUSED_IDS).exit_code == 0

    tools = json.loads(cli("tools", "a", "--json").stdout)
    assert [(t["tool_name"], t["turn_id"], t["status"], t["result"]) for t in tools] == [
        ("read", "turn_0001", "PENDING", None), ("write", "turn_0002", "SUCCESS", "B-result")]

    pending = json.loads(cli("tools", "a", "--status", "pending", "--json").stdout)  # the state cache
    assert [(t["tool_name"], t["turn_id"]) for t in pending] == [("read", "turn_0001")]

    messages = json.loads(cli("snapshot", "a", "--provider", "openai-chat").stdout)["messages"]
    calls = {c["id"]: c["function"]["name"] for m in messages for c in m.get("tool_calls") or ()}
    results = {calls[m["tool_call_id"]]: m["content"] for m in messages if m["role"] == "tool"}
    assert results["write"] == "B-result"
    assert results["read"].startswith("[no result yet")

    markdown = cli("export", "a", "--format", "markdown").stdout
    read_part, write_part = markdown.split("## turn_0002")
    assert "B-result" in write_part and "B-result" not in read_part
    assert "No result" in read_part
