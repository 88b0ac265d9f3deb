"""``--from claude-code``: Claude Code session transcripts (memcli.importers.claude_code)."""

from __future__ import annotations

import pytest

from memcli.errors import InputError
from memcli.importers import get_importer
from tests.helpers import read_jsonl
from tests.import_helpers import comparable, import_values, shape, statuses, traces, write_input

SESSION = "5e55-10n"


def user(uuid, content, ts, **kw):
    return {"parentUuid": None, "isSidechain": False, "type": "user", "sessionId": SESSION, "uuid": uuid,
            "timestamp": ts, "message": {"role": "user", "content": content}, **kw}


def assistant(uuid, msg_id, blocks, ts, usage=None, **kw):
    message = {"id": msg_id, "type": "message", "role": "assistant", "model": "claude-sonnet-4",
               "content": blocks, "stop_reason": None}
    if usage:
        message["usage"] = usage
    return {"parentUuid": None, "isSidechain": False, "type": "assistant", "sessionId": SESSION, "uuid": uuid,
            "timestamp": ts, "requestId": "req_1", "message": message, **kw}


def usage(output):
    return {"input_tokens": 3, "cache_creation_input_tokens": 200, "cache_read_input_tokens": 5000,
            "output_tokens": output}


def result(uuid, tool_use_id, content, ts, is_error=None, **kw):
    block = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    if is_error is not None:
        block["is_error"] = is_error
    return user(uuid, [block], ts, toolUseResult={"stdout": "harness copy"}, **kw)


def session():
    """A main chain that runs two subagents in parallel; their results come back out of order."""
    t = "2025-09-03T00:52:{:02d}.000Z".format
    side = {"isSidechain": True}
    return [
        {"type": "summary", "summary": "Parallel work", "leafUuid": "u9"},
        {"type": "file-history-snapshot", "messageId": "u1", "snapshot": {}, "isSnapshotUpdate": False},
        user("u1", "build the app", t(1)),
        user("u2", [{"type": "text", "text": "expanded /orchestrate prompt"}], t(1), isMeta=True),
        # one API message written as three lines sharing message.id
        assistant("u3", "msg_A", [{"type": "text", "text": "Starting two agents."}], t(2), usage(3)),
        assistant("u4", "msg_A", [{"type": "tool_use", "id": "toolu_T1", "name": "Task", "input": {"prompt": "ui"}}], t(3), usage(150)),
        assistant("u5", "msg_A", [{"type": "tool_use", "id": "toolu_T2", "name": "Task", "input": {"prompt": "db"}}], t(3), usage(150)),
        user("s1", "ui", t(4), agentId="ag-ui", **side),
        user("s2", "db", t(4), agentId="ag-db", **side),
        assistant("s3", "msg_S1", [{"type": "tool_use", "id": "toolu_W1", "name": "Write", "input": {"f": "ui.tsx"}}], t(5), usage(20), agentId="ag-ui", **side),
        assistant("s4", "msg_S2", [{"type": "tool_use", "id": "toolu_W2", "name": "Write", "input": {"f": "db.ts"}}], t(5), usage(20), agentId="ag-db", **side),
        result("s5", "toolu_W2", "File has not been read yet.", t(6), is_error=True, agentId="ag-db", **side),
        result("s6", "toolu_W1", "ok", t(6), is_error=False, agentId="ag-ui", **side),
        {"type": "system", "subtype": "stop_hook_summary", "uuid": "x1", "timestamp": t(7)},
        result("u6", "toolu_T2", [{"type": "text", "text": "db done"}], t(8)),
        result("u7", "toolu_T1", [{"type": "text", "text": "ui done"}], t(9)),
        assistant("u8", "msg_B", [{"type": "text", "text": "Both done."}], t(10), usage(9)),
        user("u9", "thanks", t(11)),
    ]


def test_session_turns_sidechains_split_messages_and_results_out_of_order(memory_dir, tmp_path):
    result_ = import_values(memory_dir, "a", session(), "auto", tmp_path=tmp_path)
    assert result_.format == "claude-code" and result_.detected
    assert result_.skipped == {}  # summary, snapshot and system lines are not conversation
    got = traces(memory_dir, "a")
    assert shape(got) == [
        ("user", "turn_0001", 1, (), "build the app"),
        ("user", "turn_0001", 2, ("context",), "expanded /orchestrate prompt"),
        ("assistant", "turn_0001", 3, (), "Starting two agents."),
        ("tool_call", "turn_0001", 4, (), "toolu_T1"),
        ("tool_call", "turn_0001", 5, (), "toolu_T2"),
        ("user", "turn_0001", 6, ("sidechain",), "ui"),       # a subagent's prompt opens no turn
        ("user", "turn_0001", 7, ("sidechain",), "db"),
        ("tool_call", "turn_0001", 8, ("sidechain",), "toolu_W1"),
        ("tool_call", "turn_0001", 9, ("sidechain",), "toolu_W2"),
        ("tool_result", "turn_0001", 10, ("sidechain",), "toolu_W2"),
        ("tool_result", "turn_0001", 11, ("sidechain",), "toolu_W1"),
        ("tool_result", "turn_0001", 12, (), "toolu_T2"),
        ("tool_result", "turn_0001", 13, (), "toolu_T1"),
        ("assistant", "turn_0001", 14, (), "Both done."),
        ("user", "turn_0002", 1, (), "thanks"),
    ]
    assert statuses(got) == {"SUCCESS": 3, "ERROR": 1}
    by_id = {t.tool_call_id: t for t in got if t.trace_type == "tool_result"}
    assert by_id["toolu_W2"].tool_error == "File has not been read yet." and by_id["toolu_W2"].tool_result is None
    assert by_id["toolu_T1"].tool_result == "ui done" and by_id["toolu_T1"].tool_name == "Task"
    assert "toolUseResult" not in by_id["toolu_T1"].extra
    # the three lines of msg_A are one step: same message_id, usage once (first line)
    step = got[2:5]
    assert {t.extra["message_id"] for t in step} == {"msg_A"}
    assert [t.usage for t in step] == [{"prompt_tokens": 5203, "completion_tokens": 3, "input_tokens": 3,
                                        "cache_creation_input_tokens": 200, "cache_read_input_tokens": 5000,
                                        "output_tokens": 3}, None, None]
    assert [t.id for t in step] == ["cc-u3-0", "cc-u4-0", "cc-u5-0"]
    assert got[7].extra["agent_id"] == "ag-ui" and got[0].extra["session_id"] == SESSION
    assert got[0].ts == pytest.approx(1756860721.0)
    assert {t.source_event for t in got} == {"claude-code"}


def test_reimport_adds_nothing_and_every_prefix_then_the_whole_equals_the_whole(memory_dir, tmp_path):
    lines = session()
    import_values(memory_dir, "whole", lines, "claude-code", tmp_path=tmp_path, name="w.jsonl")
    again = import_values(memory_dir, "whole", lines, "claude-code", tmp_path=tmp_path, name="w.jsonl")
    assert again.appended == 0 and again.duplicates == 15
    whole = comparable(traces(memory_dir, "whole"))
    for cut in range(1, len(lines)):
        agent = f"cut{cut}"
        try:
            import_values(memory_dir, agent, lines[:cut], "claude-code", tmp_path=tmp_path, name="c.jsonl")
        except InputError as exc:     # a prefix of metadata lines only: no event, nothing written
            assert str(exc).startswith("no events in the input") and not (memory_dir / "agents" / agent).exists()
        import_values(memory_dir, agent, lines, "claude-code", tmp_path=tmp_path, name="c.jsonl")
        assert comparable(traces(memory_dir, agent)) == whole, f"cut after line {cut}"


def test_a_live_stream_gives_the_same_traces_as_the_file(memory_dir, tmp_path, memcli_proc):
    run = memcli_proc("ingest", "live", "--stream", input=session())
    assert run.returncode == 0, run.stderr
    assert b"format claude-code (detected)" in run.stderr   # one line is enough to tell
    import_values(memory_dir, "file", session(), "claude-code", tmp_path=tmp_path)
    assert comparable(traces(memory_dir, "live")) == comparable(traces(memory_dir, "file"))


def test_a_half_written_last_line_waits_for_the_next_import(memory_dir, tmp_path):
    path = write_input(tmp_path / "live.jsonl", session())
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 40])  # Claude Code is still writing the last line
    from memcli.ingest.api import ingest

    first = ingest(memory_dir, "a", path, fmt="claude-code")
    assert first.skipped == {"incomplete last line (still being written?)": 1}
    path.write_bytes(data)
    second = ingest(memory_dir, "a", path, fmt="claude-code")
    assert second.appended == 1 and second.skipped == {}
    # a bad line in the middle is still an error
    path.write_bytes(data.replace(b'{"type":"system"', b'{"type":"system" oops', 1))
    with pytest.raises(InputError, match=f"^{path}: line 14: not valid JSON"):
        ingest(memory_dir, "b", path, fmt="claude-code")


def test_compact_summary_meta_and_harness_lines_are_context(memory_dir, tmp_path):
    t = "2026-01-02T19:21:0{}Z".format
    lines = [
        user("a1", "first ask", t(0)),
        {"type": "system", "subtype": "compact_boundary", "uuid": "b1", "content": "Conversation compacted",
         "compactMetadata": {"trigger": "manual", "preTokens": 167094}},
        user("a2", "This session is being continued from a previous conversation...", t(1), isCompactSummary=True),
        user("a3", "Caveat: The messages below were generated by the user while running local commands. DO NOT respond.", t(2)),
        user("a4", "<command-name>/compact</command-name>", t(3)),
        user("a5", "<local-command-stdout>Compacted</local-command-stdout>", t(4)),
        user("a6", [{"type": "text", "text": "[Request interrupted by user]"}], t(5)),
        assistant("a7", "msg_Z", [{"type": "text", "text": "API Error: overloaded"}], t(6), isApiErrorMessage=True),
    ]
    import_values(memory_dir, "a", lines, "claude-code", tmp_path=tmp_path)
    assert shape(traces(memory_dir, "a")) == [
        ("user", "turn_0001", 1, (), "first ask"),
        ("user", "turn_0001", 2, ("compact_summary",), "This session is being continued from a previous conversation..."),
        ("user", "turn_0001", 3, ("context",), lines[3]["message"]["content"]),
        # the /compact command of a manual compaction asked the harness, not the agent: no turn
        ("user", "turn_0001", 4, ("context",), "<command-name>/compact</command-name>"),
        ("user", "turn_0001", 5, ("context",), "<local-command-stdout>Compacted</local-command-stdout>"),
        ("user", "turn_0001", 6, ("context",), "[Request interrupted by user]"),
        ("assistant", "turn_0001", 7, ("api_error",), "API Error: overloaded"),
    ]
    # the harness's own compaction is marked as such, with what its boundary said
    marked = [(t.id, t.extra.get("harness_compaction")) for t in traces(memory_dir, "a") if t.extra.get("harness_compaction")]
    assert marked == [("cc-a2-0", {"harness": "claude-code", "trigger": "manual", "pre_tokens": 167094})]


def test_thinking_images_and_a_text_reply_next_to_tool_results(memory_dir, tmp_path):
    t = "2026-01-02T10:00:0{}Z".format
    lines = [
        user("b1", [{"type": "text", "text": "look at this"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4A=="}}], t(0)),
        assistant("b2", "msg_1", [{"type": "thinking", "thinking": "Hmm.", "signature": "EpcD"}], t(1)),
        assistant("b3", "msg_1", [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}], t(2)),
        result("b4", "toolu_1", "", t(3), is_error=True),
        user("b5", [{"type": "tool_result", "tool_use_id": "toolu_x", "content": "late"},
                    {"type": "text", "text": "stop, do this instead"}], t(4)),
    ]
    import_values(memory_dir, "a", lines, "claude-code", tmp_path=tmp_path)
    got = traces(memory_dir, "a")
    assert shape(got) == [
        ("user", "turn_0001", 1, (), "look at this"),
        ("assistant", "turn_0001", 2, ("reasoning",), "Hmm."),
        ("tool_call", "turn_0001", 3, (), "toolu_1"),
        ("tool_result", "turn_0001", 4, (), "toolu_1"),
        ("tool_result", "turn_0001", 5, (), "toolu_x"),
        ("user", "turn_0002", 1, (), "stop, do this instead"),
    ]
    assert got[0].media == {"images": ["data:image/jpeg;base64,/9j/4A=="]}
    assert got[1].extra["signature"] == "EpcD"
    assert got[3].tool_error == "(no error message)"
    assert statuses(got) == {"ERROR": 1, "ORPHAN": 1}


def test_usage_goes_on_the_first_line_of_a_message_that_gives_a_trace(memory_dir, tmp_path):
    t = "2026-01-02T10:00:0{}Z".format
    lines = [
        user("c1", "go", t(0)),
        assistant("c2", "msg_1", [{"type": "text", "text": ""}], t(1), usage(1)),
        assistant("c3", "msg_1", [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}], t(2), usage(40)),
        assistant("c4", "msg_1", [{"type": "tool_use", "id": "toolu_2", "name": "Bash", "input": {}}], t(3), usage(80)),
    ]
    result = import_values(memory_dir, "a", lines, "claude-code", tmp_path=tmp_path)
    assert result.skipped == {"empty assistant messages": 1}
    got = traces(memory_dir, "a")
    assert [(t.tool_call_id, (t.usage or {}).get("completion_tokens")) for t in got[1:]] == [
        ("toolu_1", 40), ("toolu_2", None)]


def test_lines_written_again_before_a_second_compact_are_copies_not_new_turns(memory_dir, tmp_path):
    """A second ``/compact`` in one Claude Code process first appends again the lines before the
    previous compaction, the earlier boundary and summary included, each with its own uuid and
    timestamp (anthropics/claude-code#92089): each line is imported once, the second summary
    covers only the turn since the first, and no summary gives a second item."""
    t = "2026-03-01T10:00:{:02d}Z".format
    first = [
        user("a1", "make parser.py strict", t(0)),
        assistant("a2", "msg_1", [{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"p": "parser.py"}}], t(1)),
        result("a3", "toolu_1", "def parse(): ...", t(2)),
        {"type": "system", "subtype": "compact_boundary", "uuid": "b1", "timestamp": t(3),
         "content": "Conversation compacted", "compactMetadata": {"trigger": "manual", "preTokens": 1000}},
        user("s1", "This session is being continued from a previous conversation. Summary 1", t(3), isCompactSummary=True),
    ]
    lines = first + [user("a4", "now lexer.py", t(4))] + [dict(v) for v in first] + [
        {"type": "system", "subtype": "compact_boundary", "uuid": "b2", "timestamp": t(6),
         "content": "Conversation compacted", "compactMetadata": {"trigger": "manual", "preTokens": 2000}},
        user("s2", "This session is being continued from a previous conversation. Summary 2", t(6), isCompactSummary=True),
        user("a5", "and tokens.py", t(7)),
    ]
    done = import_values(memory_dir, "a", lines, "claude-code", tmp_path=tmp_path)
    assert done.skipped == {"lines written again with the uuid and timestamp of an earlier line (replayed copies)": 5}
    assert [(t.id, t.turn_id) for t in traces(memory_dir, "a")] == [
        ("cc-a1-0", "turn_0001"), ("cc-a2-0", "turn_0001"), ("cc-a3-0", "turn_0001"), ("cc-s1-0", "turn_0001"),
        ("cc-a4-0", "turn_0002"), ("cc-s2-0", "turn_0002"), ("cc-a5-0", "turn_0003")]
    items = read_jsonl(memory_dir / "agents" / "a" / "episodic.jsonl")
    assert [(i["harness_compaction"]["trace_id"], i["turn_ids"], i["harness_compaction"]["pre_tokens"]) for i in items] == [
        ("cc-s1-0", ["turn_0001"], 1000), ("cc-s2-0", ["turn_0002"], 2000)]


def test_a_subagents_own_compaction_leaves_the_sessions_span_alone(memory_dir, tmp_path):
    """A subagent that compacted itself covers the turns of its own traces; the session's next
    compaction still covers every turn since the session's previous one, imported at once or
    read on from any line (sync of a growing file)."""
    t = "2026-03-01T10:00:{:02d}Z".format
    side = {"isSidechain": True, "agentId": "bg1"}

    def boundary(uuid, ts, **kw):
        return {"type": "system", "subtype": "compact_boundary", "uuid": uuid, "timestamp": ts,
                "content": "Conversation compacted", "compactMetadata": {"trigger": "auto", "preTokens": 9000}, **kw}

    def summary(uuid, text, ts, **kw):
        return user(uuid, "This session is being continued from a previous conversation. " + text, ts,
                    isCompactSummary=True, **kw)

    lines = [
        user("m1", "make parser.py strict", t(0)),
        assistant("m2", "msg_1", [{"type": "text", "text": "done"}], t(1)),
        user("m3", "now lexer.py", t(2)),
        user("b1", "survey the helpers", t(3), **side),
        assistant("b2", "msg_2", [{"type": "text", "text": "helpers: util.py"}], t(4), **side),
        boundary("bx", t(5), **side),
        summary("bs", "Subagent: helpers in util.py", t(5), **side),
        assistant("b3", "msg_3", [{"type": "text", "text": "more helpers"}], t(6), **side),
        assistant("m4", "msg_4", [{"type": "text", "text": "lexer done"}], t(7)),
        boundary("mx", t(8)),
        summary("ms", "Session: parser.py and lexer.py done", t(8)),
        user("m5", "and tokens.py", t(9)),
    ]
    import_values(memory_dir, "a", lines, "claude-code", tmp_path=tmp_path)
    spans = [(i["harness_compaction"]["trace_id"], i["turn_ids"])
             for i in read_jsonl(memory_dir / "agents" / "a" / "episodic.jsonl")]
    assert spans == [("cc-bs-0", ["turn_0002"]), ("cc-ms-0", ["turn_0001", "turn_0002"])]
    for cut in range(1, len(lines)):
        agent = f"cut{cut}"
        import_values(memory_dir, agent, lines[:cut], "claude-code", tmp_path=tmp_path, name="c.jsonl")
        import_values(memory_dir, agent, lines, "claude-code", tmp_path=tmp_path, name="c.jsonl")
        got = [(i["harness_compaction"]["trace_id"], i["turn_ids"])
               for i in read_jsonl(memory_dir / "agents" / agent / "episodic.jsonl")]
        assert got == spans, f"cut after line {cut}"
    # items lost (a store from before memcli wrote them): the same input ingested again writes
    # them back, each with the turns it covered, the subagent's its own
    (memory_dir / "agents" / "a" / "episodic.jsonl").write_bytes(b"")
    import_values(memory_dir, "a", lines, "claude-code", tmp_path=tmp_path)
    assert [(i["harness_compaction"]["trace_id"], i["turn_ids"])
            for i in read_jsonl(memory_dir / "agents" / "a" / "episodic.jsonl")] == spans


def test_lines_the_importer_does_not_understand_are_skipped_with_a_count(memory_dir, tmp_path):
    t = "2025-06-14T11:0{}:00Z".format
    lines = [
        user("e1", "hello", t(0)),
        "massive error", 42, [1],
        {"silly": "this"},
        {"type": "queue-operation", "operation": "enqueue"},
        {"type": "brand-new-kind", "uuid": "z"},
        {"type": "user", "uuid": "e2", "message": "error"},
        {"type": "user", "uuid": "e3", "message": {"role": "user", "contenst": []}},
        user("e1", "same uuid again, different line", t(1)),
    ]
    result_ = import_values(memory_dir, "a", lines, "auto", tmp_path=tmp_path)
    assert result_.format == "claude-code"
    assert result_.skipped == {"lines that are not objects": 3, "lines without a type": 1,
                               "'brand-new-kind' lines": 1, "user lines without a message object": 1,
                               "messages without content": 1}
    got = traces(memory_dir, "a")
    assert [(t.id, t.content) for t in got] == [("cc-e1-0", "hello"), ("cc-e1~2-0", "same uuid again, different line")]


def test_a_file_that_does_not_start_like_a_session_is_an_error(memory_dir, tmp_path):
    with pytest.raises(InputError) as exc:
        import_values(memory_dir, "a", ["oops", user("u", "x", "2025-01-01T00:00:00Z")], "claude-code", tmp_path=tmp_path)
    assert str(exc.value).endswith('.input: line 1: expected a Claude Code session line (an object with "type" and '
                                   '"message"), got string')
    codex = {"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta", "payload": {"id": "s"}}
    with pytest.raises(InputError, match=r"it looks like a Codex rollout \(--from codex\)"):
        import_values(memory_dir, "a", [codex], "claude-code", tmp_path=tmp_path)


def test_sdk_stream_json_without_uuids_imports_idempotently(memory_dir, tmp_path):
    records = [
        {"type": "system", "subtype": "init", "session_id": "sdk-1", "tools": ["Read"]},
        {"type": "assistant", "session_id": "sdk-1", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
            "content": [{"type": "text", "text": "Reading."},
                        {"type": "tool_use", "id": "tc1", "name": "Read", "input": {"file_path": "a"}}],
            "usage": {"input_tokens": 100, "output_tokens": 5}}},
        {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "tc1", "content": "x"}]}},
        {"type": "assistant", "session_id": "sdk-1", "message": {
            "id": "msg_2", "type": "message", "role": "assistant", "content": [{"type": "text", "text": "Done."}]}},
        {"type": "result", "result": "Done.", "total_cost_usd": 0.01},
    ]
    first = import_values(memory_dir, "a", records, "auto", tmp_path=tmp_path, layout="array", name="r.json")
    assert first.format == "claude-code" and first.appended == 4 and first.skipped == {}
    again = import_values(memory_dir, "a", records, "auto", tmp_path=tmp_path, layout="array", name="r.json")
    assert again.appended == 0
    got = traces(memory_dir, "a")
    assert statuses(got) == {"SUCCESS": 1}
    assert got[0].usage["prompt_tokens"] == 100 and got[0].extra["session_id"] == "sdk-1"


def test_sniffing_one_line_is_enough_for_a_stream():
    importer = get_importer("claude-code")
    for first in session()[:3]:
        assert importer.sniff([(1, first)]) > 90
    assert importer.sniff([(1, {"role": "user", "content": "x"})]) == 0
    assert importer.sniff([(1, {"type": "response_item", "payload": {"type": "message"}})]) == 0


def test_inline_subagents_without_agent_id_stay_apart_by_their_parent_chain(cli, memory_dir):
    """Claude Code 1.x wrote parallel subagents inline (``isSidechain``) without ``agentId``: each
    subagent's lines form their own ``parentUuid`` chain, whose first uuid names the lane."""
    def line(uuid, parent, text, side=True, kind="assistant"):
        return {"type": kind, "uuid": uuid, "parentUuid": parent, "isSidechain": side, "sessionId": "s",
                "timestamp": "2026-01-01T00:00:00Z", "message": {"role": kind, "content": text}}
    lines = [line("m1", None, "Do two things", side=False, kind="user"),
             line("a1000000-1", "m1", "task A", kind="user"), line("b2000000-1", "m1", "task B", kind="user"),
             line("a1000000-2", "a1000000-1", "A works"), line("b2000000-2", "b2000000-1", "B works"),
             line("a1000000-3", "a1000000-2", "A done"), line("m2", "m1", "both done", side=False)]
    assert cli("ingest", "cc", input=lines, env=None).exit_code == 0
    traces = read_jsonl(memory_dir / "agents" / "cc" / "raw_traces.jsonl")
    lanes = {t["content"]: t.get("agent_id") for t in traces}
    assert lanes == {"Do two things": None, "task A": "a1000000", "task B": "b2000000", "A works": "a1000000",
                     "B works": "b2000000", "A done": "a1000000", "both done": None}


def queued(uuid, prompt, ts, mode="prompt", origin="human"):
    """An ``attachment`` line holding a message from Claude Code's input queue (typed while it worked)."""
    attachment = {"type": "queued_command", "prompt": prompt, "commandMode": mode}
    if origin:
        attachment["origin"] = {"kind": origin}
    return {"parentUuid": None, "isSidechain": False, "type": "attachment", "sessionId": SESSION, "uuid": uuid,
            "timestamp": ts, "attachment": attachment}


def queue_op(operation, ts, content=None, **kw):
    """A ``queue-operation`` line of Claude Code's input queue (no uuid, as Claude Code writes it)."""
    line = {"type": "queue-operation", "operation": operation, "timestamp": ts, "sessionId": SESSION, **kw}
    if content is not None:
        line["content"] = content
    return line


def test_a_message_taken_from_the_queue_mid_turn_is_an_ask_where_it_reached_claude(memory_dir, tmp_path):
    """Claude Code 2.1.x before the ``queued_command`` attachment journals a message typed while
    it worked only as ``enqueue`` (its text) and ``remove`` (the moment the running turn took
    it): that message is an ask there (the spotter session's "new beads ... tackle them", which
    redirected the work). A background task's notice queued alike is no ask and takes no
    message's place; ``dequeue`` (written as a user line of its own) and ``popAll`` (drawn back
    to the input box) give none; a remove with another reason (gone to a subagent) none; one the
    tool result already carried as its text none; a remove beside its attachment one."""
    t = "2026-02-11T20:5{}:{:02d}.000Z".format
    note = "<task-notification>\n<task-id>b0be39e</task-id>\n<status>completed</status>\n</task-notification>"
    call = lambda uuid, msg, tool, ts: assistant(uuid, msg, [{"type": "tool_use", "id": tool, "name": "Bash",  # noqa: E731
                                                               "input": {"command": "mix test"}}], ts)
    lines = [
        user("u1", "Implement spotter-gqc", t(0, 0)),
        call("a1", "msg_1", "toolu_1", t(0, 1)),
        queue_op("enqueue", t(0, 2), note),                       # a notice, never removed
        queue_op("enqueue", t(0, 3), "check again"),
        {"type": "progress", "uuid": "p1", "timestamp": t(0, 4), "data": {"type": "hook_progress"}},
        queue_op("remove", t(0, 5)),                              # 2.1.39: no reason, no content
        result("r1", "toolu_1", "3 tests, 1 failure", t(0, 6)),
        call("a2", "msg_2", "toolu_2", t(0, 7)),
        queue_op("enqueue", t(1, 0), "new beads for the epic were added. tackle them"),
        queue_op("remove", t(1, 1)),
        result("r2", "toolu_2", "3 tests, 0 failures", t(1, 2)),
        assistant("a3", "msg_3", [{"type": "text", "text": "Now let me check the new beads you mentioned."}], t(1, 3)),
        queue_op("enqueue", t(2, 0), "typed, then drawn back to edit"),
        queue_op("popAll", t(2, 1)),
        queue_op("enqueue", t(2, 2), "did you push?"),
        queue_op("dequeue", t(2, 3)),
        user("u2", "did you push?", t(2, 4)),                      # the dequeued message, its own line
        call("a4", "msg_4", "toolu_4", t(2, 5)),
        queue_op("enqueue", t(3, 0), "ask the db agent too"),
        queue_op("remove", t(3, 1), "ask the db agent too", reason="delivered_to_agent"),
        queue_op("enqueue", t(3, 2), "also update the README"),
        result("r4", "toolu_4", "clean\n\nThe user sent a new message while you were working:\nalso update the README", t(3, 3)),
        queue_op("remove", t(3, 4), "also update the README", reason="absorbed_mid_turn"),
        call("a5", "msg_5", "toolu_5", t(3, 5)),
        queue_op("enqueue", t(4, 0), "and tag it"),
        queue_op("remove", t(4, 1), "and tag it", reason="absorbed_mid_turn"),
        queued("q1", "and tag it", t(4, 2)),                      # current Claude Code: the attachment too
        result("r5", "toolu_5", "pushed", t(4, 3)),
        assistant("a6", "msg_6", [{"type": "text", "text": "Pushed and tagged."}], t(4, 4)),
    ]
    import_values(memory_dir, "a", lines, "claude-code", tmp_path=tmp_path)
    asks = [(x.turn_id, x.content, x.ts) for x in traces(memory_dir, "a") if x.trace_type == "user"]
    assert [(turn, text) for turn, text, _ in asks] == [
        ("turn_0001", "Implement spotter-gqc"), ("turn_0002", "check again"),
        ("turn_0003", "new beads for the epic were added. tackle them"), ("turn_0004", "did you push?"),
        ("turn_0005", "and tag it")]
    assert asks[2][2] == traces(memory_dir, "a")[0].ts + 61   # when the running turn took it (its remove)
    # a second read: a short message a later result merely contains ("stop" in "stopped worker")
    # was dropped; a slash command never removed took the place of the next message; a notice's
    # own dequeue took the person's; a message a remove gave, written again after its dequeue,
    # was asked twice
    more = [
        user("v1", "Start the workers", t(5, 0)),
        call("b1", "msg_7", "toolu_7", t(5, 1)),
        queue_op("enqueue", t(5, 2), "/model opus"),              # run by Claude Code, never removed
        queue_op("enqueue", t(5, 3), "stop"),
        result("s1", "toolu_7", "stopped worker 3; the others run", t(5, 4)),
        queue_op("remove", t(5, 5)),
        call("b2", "msg_8", "toolu_8", t(5, 6)),
        queue_op("enqueue", t(6, 0), note),
        queue_op("enqueue", t(6, 1), "then deploy"),
        result("s2", "toolu_8", "stopped", t(6, 2)),
        assistant("b3", "msg_9", [{"type": "text", "text": "Stopped."}], t(6, 3)),
        queue_op("dequeue", t(6, 4)),                             # the notice's: its user line follows
        user("v2", note, t(6, 5)),
        call("b4", "msg_10", "toolu_10", t(6, 6)),
        queue_op("remove", t(6, 7)),
        result("s3", "toolu_10", "deployed", t(6, 8)),
        assistant("b5", "msg_11", [{"type": "text", "text": "Deployed."}], t(6, 9)),
        queue_op("dequeue", t(7, 0)),
        user("v3", "then deploy", t(7, 1)),                       # written again: the same ask
        assistant("b6", "msg_12", [{"type": "text", "text": "Already deployed."}], t(7, 2)),
    ]
    import_values(memory_dir, "b", more, "claude-code", tmp_path=tmp_path)
    assert [x.content for x in traces(memory_dir, "b") if x.trace_type == "user" and not x.tags] == [
        "Start the workers", "stop", "then deploy"]
    # a sync that stops between the enqueue and the remove goes on with the message queued
    from memcli.ingest.pipeline import IngestResult
    importer = get_importer("claude-code")
    first = importer.resume(IngestResult("a"), None)
    head = [(n, v) for n, v in enumerate(lines[:9], 1)]   # up to the enqueue of "new beads"
    said = [e["content"] for _, e in first.events(head) if e.get("trace_type") == "user"]
    later = importer.resume(IngestResult("a"), first.checkpoint())
    said += [e["content"] for _, e in later.events([(n, v) for n, v in enumerate(lines[9:], 10)])
             if e.get("trace_type") == "user"]
    assert said == [text for _, text, _ in asks]


def test_a_message_typed_while_claude_works_is_an_ask_once(memory_dir, tmp_path):
    """Current Claude Code writes a message queued mid-turn only as an attachment line: it is an
    ask (text or blocks); harness attachments are not; a user line repeating it is stored once."""
    t = "2026-10-06T09:20:{:02d}.000Z".format
    note = "<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n</task-notification>"
    lines = [
        user("q1", "start the migration", t(0)),
        assistant("q2", "msg_1", [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "make"}}], t(1)),
        {"type": "queue-operation", "operation": "enqueue", "sessionId": SESSION, "content": "and check the logs"},
        result("q3", "toolu_1", "ok", t(2)),
        queued("q4", "and check the logs", t(3), origin=None),
        queued("q5", note, t(4), mode="task-notification", origin="task-notification"),
        queued("q6", "from another agent", t(5), origin="agent"),
        {"type": "attachment", "uuid": "q7", "sessionId": SESSION, "attachment": {"type": "date_change", "newDate": "x"}},
        assistant("q8", "msg_2", [{"type": "text", "text": "Logs are clean."}], t(6)),
        queued("q9", [{"type": "text", "text": "now deploy"}], t(7)),
        user("q10", "now deploy", t(8)),  # the same message written again as a user line
        assistant("q11", "msg_3", [{"type": "text", "text": "Deployed."}], t(9)),
    ]
    import_values(memory_dir, "a", lines, "claude-code", tmp_path=tmp_path)
    assert shape(traces(memory_dir, "a")) == [
        ("user", "turn_0001", 1, (), "start the migration"),
        ("tool_call", "turn_0001", 2, (), "toolu_1"),
        ("tool_result", "turn_0001", 3, (), "toolu_1"),
        ("user", "turn_0002", 1, (), "and check the logs"),
        ("assistant", "turn_0002", 2, (), "Logs are clean."),
        ("user", "turn_0003", 1, (), "now deploy"),
        ("assistant", "turn_0003", 2, (), "Deployed."),
    ]
    assert [t.id for t in traces(memory_dir, "a") if t.trace_type == "user"] == ["cc-q1-0", "cc-q4-0", "cc-q9-0"]
