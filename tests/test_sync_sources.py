"""``memcli sync`` per source: a session synced while it grows (cut anywhere, read on from the
offset with the importer's carry) ends up exactly as one import of the whole file; each
source's layout (subagent files, archived rollouts, Gemini replay logs) and its current line
types. Fixtures are written here from the producers' formats (tests/sync_fixtures.py); the
real samples in ../shared/corpora are used where they exist."""

from __future__ import annotations

import shutil

import orjson
import pytest

import memcli
from tests.helpers import CORPORA, agent_traces, needs_corpora, run_memcli
from tests.sync_fixtures import (
    CWD,
    cc_assistant,
    cc_result,
    cc_session,
    cc_user,
    claude_project,
    codex_rollout,
    cx_lines,
    cx_turn,
    gemini_chats,
    gm_call,
    gm_header,
    gm_model,
    gm_session,
    gm_user,
    sid,
    write_lines,
)

KEEP = ("id", "trace_type", "content", "turn_id", "seq", "tags", "tool_call_id", "usage", "agent_id",
        "replacement_history")


def _shape(traces):
    return [tuple(orjson.dumps(t.get(k), option=orjson.OPT_SORT_KEYS) for k in KEEP) for t in traces]



def _grow_and_sync(tmp_path, target, data: bytes, cuts, fmt: str):
    """Write ``data`` to ``target`` in pieces, syncing after each; then import the whole file
    once into another store: both must hold the same traces."""
    home = tmp_path / "home"
    mem = tmp_path / "mem"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"")
    previous = 0
    agent = None
    for cut in [*cuts, len(data)]:
        with open(target, "ab") as f:
            f.write(data[previous:cut])
        previous = cut
        report = memcli.Memory(mem).sync(home=home)
        assert not report.failed, report.failed[0].error
        agent = agent or next((s.agent for s in report.sessions if s.agent), None)
    whole = tmp_path / "whole"
    memcli.Memory(whole).agent("w").ingest(target, fmt=fmt)
    assert _shape(agent_traces(mem, agent)) == _shape(agent_traces(whole, "w"))
    return mem, agent


def _cuts(data: bytes, n: int):
    """``n`` cut points spread over ``data``, some inside lines (half-written)."""
    step = max(1, len(data) // (n + 1))
    return [step * i + (i % 3) * 7 for i in range(1, n + 1)]


# ---------------------------------------------------------------------------- Claude Code
def test_claude_code_grown_in_pieces_equals_the_whole(tmp_path):
    s = sid(3)
    lines = cc_session(s, 6)
    # one API message written as two lines sharing message.id: usage counted once
    lines.insert(3, cc_assistant(s, 200, "thinking it over", msg_id=f"msg_{s[:8]}_2"))
    # a message typed while Claude worked (an attachment line), then written again as a user line
    queued = {"type": "attachment", "uuid": f"{s[:8]}-q1", "sessionId": s, "timestamp": "2026-03-01T10:00:09Z",
              "attachment": {"type": "queued_command", "prompt": "also run the linter", "commandMode": "prompt"}}
    lines[9:9] = [queued, cc_user(s, 300, "also run the linter")]
    data = b"".join(orjson.dumps(x) + b"\n" for x in lines)
    cuts = sorted(_cuts(data, 9) + [data.index(b"\n", data.index(b"queued_command")) + 1])  # between the two
    mem, agent = _grow_and_sync(tmp_path, claude_project(tmp_path / "home") / f"{s}.jsonl", data, cuts,
                                "claude-code")
    assert [t["id"] for t in agent_traces(mem, agent) if t.get("content") == "also run the linter"] == [f"cc-{s[:8]}-q1-0"]
    usages = [t for t in agent_traces(mem, agent) if t.get("message_id") == f"msg_{s[:8]}_2" and t.get("usage")]
    assert len(usages) == 1


@needs_corpora
@pytest.mark.parametrize("name", ["ccviewer_fe5e1c67_todo-app_438ev.jsonl",
                                  "fasthooks_sample_main_transcript_compaction.jsonl"])
def test_claude_code_corpus_grown_in_pieces_equals_the_whole(tmp_path, name):
    data = (CORPORA / "claude-code" / name).read_bytes()
    target = claude_project(tmp_path / "home") / "fe5e1c67-aaaa-4bbb-8ccc-000000000000.jsonl"
    mem, agent = _grow_and_sync(tmp_path, target, data, _cuts(data, 12), "claude-code")
    assert len(agent_traces(mem, agent)) > 40


def test_claude_code_subagent_files_join_the_session_as_sidechains(tmp_path):
    home, mem = tmp_path / "home", tmp_path / "mem"
    s = sid(4)
    project = claude_project(home)
    main = cc_session(s, 1)
    main.append(cc_assistant(s, 10, "", tool=("toolu_task", "Task", {"prompt": "look around"})))
    write_lines(project / f"{s}.jsonl", main)
    for agent, n in (("a1b2c3d", 20), ("e4f5a6b", 40)):  # two parallel subagents
        write_lines(project / s / "subagents" / f"agent-{agent}.jsonl", [
            cc_user(s, n, f"subtask for {agent}", sidechain=True, agent=agent),
            cc_assistant(s, n + 1, "", sidechain=True, agent=agent, tool=(f"toolu_{agent}", "Read", {"path": "x"})),
            cc_result(s, n + 2, f"toolu_{agent}", "contents", sidechain=True, agent=agent),
            cc_assistant(s, n + 3, f"report from {agent}", sidechain=True, agent=agent),
        ])
    # Claude Code's own compaction request is written like a subagent; it is not one (the
    # conversation sent again and the summary the session holds): not read
    write_lines(project / s / "subagents" / "agent-acompact-1a2b.jsonl", [
        {**cc_user(s, 60, "summarize the conversation"), "isSidechain": True}])
    # nor is its guess at the user's next prompt
    write_lines(project / s / "subagents" / "agent-aprompt_suggestion-9f8e7d.jsonl", [
        {**cc_user(s, 70, "suggest what the user types next"), "isSidechain": True},
        {**cc_assistant(s, 71, "run the tests"), "isSidechain": True}])
    report = memcli.Memory(mem).sync(home=home)
    assert [(r.agent, r.status, r.events) for r in report.sessions] == [(f"claude-code.app.{s}", "new", 4 + 1 + 8)]
    traces = agent_traces(mem, f"claude-code.app.{s}")
    side = [t for t in traces if "sidechain" in (t.get("tags") or [])]
    assert {t["agent_id"] for t in side} == {"a1b2c3d", "e4f5a6b"}
    assert [t["content"] for t in side if t["trace_type"] == "assistant"] == ["report from a1b2c3d", "report from e4f5a6b"]
    # a subagent that goes on later is read on from where it stopped
    write_lines(project / s / "subagents" / "agent-e4f5a6b.jsonl", [
        cc_assistant(s, 50, "one more finding", sidechain=True, agent="e4f5a6b")], mode="ab")
    again = memcli.Memory(mem).sync(home=home).sessions[0]
    assert (again.status, again.events) == ("appended", 1)


def test_claude_code_1x_inline_sidechains_keep_their_agent(tmp_path):
    home, mem = tmp_path / "home", tmp_path / "mem"
    s = sid(5)
    lines = cc_session(s, 1) + [cc_user(s, 30, "inline subtask", sidechain=True),
                                cc_assistant(s, 31, "inline answer", sidechain=True)]
    write_lines(claude_project(home) / f"{s}.jsonl", lines)
    report = memcli.Memory(mem).sync(home=home).sessions[0]
    traces = agent_traces(mem, report.agent)
    assert [t["content"] for t in traces if "sidechain" in (t.get("tags") or [])] == ["inline subtask", "inline answer"]
    assert max(int(t["turn_id"][5:]) for t in traces) == 1  # a sidechain ask opens no turn


# ---------------------------------------------------------------------------- Codex
def _cx_current(session: str) -> list[dict]:
    """A rollout with the line types Codex writes today (codex-rs/protocol RolloutItem)."""
    ts = "2026-03-02T10:00:00.000Z"
    lines = cx_lines(session, 1)
    lines += [
        {"timestamp": ts, "type": "world_state", "payload": {"cwd": CWD}},
        {"timestamp": ts, "type": "inter_agent_communication",
         "payload": {"author": "/root", "recipient": "/root/worker", "content": "check the tests", "trigger_turn": True}},
        {"timestamp": ts, "type": "inter_agent_communication_metadata", "payload": {"agent_path": "/root/worker"}},
        {"timestamp": ts, "type": "response_item", "payload": {"type": "message", "role": "assistant",
                                                               "content": [{"type": "output_text", "text": "tests pass"}]}},
        {"timestamp": ts, "type": "token_usage_record", "payload": {"response_id": "resp_1", "usage": {
            "input_tokens": 300, "cached_input_tokens": 200, "output_tokens": 9, "reasoning_output_tokens": 0}}},
        {"timestamp": ts, "type": "event_msg", "payload": {"type": "token_count", "info": {
            "last_token_usage": {"input_tokens": 999, "output_tokens": 999}}}},
        {"timestamp": ts, "type": "compacted", "payload": {"message": "Earlier: added feature 0.",
                                                           "replacement_history": [
                                                               {"type": "message", "role": "user",
                                                                "content": [{"type": "input_text", "text": "add feature 0"}]}]}},
        {"timestamp": ts, "type": "security_risk_score", "payload": {"score": 0}},
        {"timestamp": ts, "type": "response_item", "payload": {"type": "additional_tools", "role": "developer",
                                                               "tools": [{"type": "function", "name": "x"}]}},
        {"timestamp": ts, "type": "response_item", "payload": {"type": "agent_message", "author": "/root/worker",
                                                               "recipient": "/root", "content": "all green"}},
    ]
    return lines


def test_codex_current_line_types_read_or_passed_over_with_a_count(tmp_path):
    home, mem = tmp_path / "home", tmp_path / "mem"
    x = sid(6, "cx")
    write_lines(codex_rollout(home, x), _cx_current(x))
    report = memcli.Memory(mem).sync(home=home).sessions[0]
    assert report.skipped == {"world_state lines (harness state, passed over)": 1,
                              "inter_agent_communication_metadata lines (harness state, passed over)": 1,
                              "security_risk_score lines (harness state, passed over)": 1,
                              "additional_tools items (tool definitions, passed over)": 1}
    traces = agent_traces(mem, report.agent)
    inter = [t for t in traces if "inter_agent" in (t.get("tags") or [])]
    assert [(t["content"], t["name"], t["tags"]) for t in inter] == [
        ("check the tests", "/root", ["context", "inter_agent"]), ("all green", "/root/worker", ["context", "inter_agent"])]
    answer = next(t for t in traces if t["content"] == "tests pass")
    assert answer["usage"]["prompt_tokens"] == 300  # from token_usage_record, not the token_count copy
    summary = next(t for t in traces if "compact_summary" in (t.get("tags") or []))
    assert summary["replacement_history"][0]["content"][0]["text"] == "add feature 0"
    # the prompt is written twice (response_item + event_msg): one ask
    assert [t["content"] for t in traces if t["trace_type"] == "user" and not t.get("tags")] == ["add feature 0"]


def test_codex_grown_in_pieces_equals_the_whole(tmp_path):
    x = sid(7, "cx")
    lines = cx_lines(x, 5) + _cx_current(x)[8:] + cx_turn(x, 9)
    # once token_usage_record lines are written, they (not token_count) close each response
    lines.append({"timestamp": "2026-03-02T11:00:00.000Z", "type": "token_usage_record",
                  "payload": {"response_id": "resp_9", "usage": {"input_tokens": 5, "output_tokens": 1}}})
    data = b"".join(orjson.dumps(v) + b"\n" for v in lines)
    _grow_and_sync(tmp_path, codex_rollout(tmp_path / "home", x), data, _cuts(data, 15), "codex")


@needs_corpora
def test_codex_corpus_grown_in_pieces_equals_the_whole(tmp_path):
    src = CORPORA / "codex" / "codex_rollout_localpush_019c8a59_2722ev_sanitized.jsonl"
    data = src.read_bytes()
    target = codex_rollout(tmp_path / "home", "019c8a59-e9dd-71f0-9ae3-4079fe9726a9")
    mem, agent = _grow_and_sync(tmp_path, target, data, _cuts(data, 8), "codex")
    assert agent == "codex.59b923df4d.019c8a59-e9dd-71f0-9ae3-4079fe9726a9"
    assert len(agent_traces(mem, agent)) > 1000


def test_codex_response_waits_for_its_usage_unless_the_rollout_is_settled(tmp_path, monkeypatch):
    import os

    home, mem = tmp_path / "home", tmp_path / "mem"
    x = sid(12, "cx")
    turn = cx_turn(x, 1)
    path = write_lines(codex_rollout(home, x), cx_lines(x, 1) + turn[:-1])  # no token_count yet
    first = memcli.Memory(mem).sync(home=home).sessions[0]
    assert first.skipped["model output held back until Codex writes its token usage (imported next time)"] == 1
    assert "done 1" not in [t["content"] for t in agent_traces(mem, first.agent)]
    write_lines(path, turn[-1:], mode="ab")
    memcli.Memory(mem).sync(home=home)
    done = next(t for t in agent_traces(mem, first.agent) if t["content"] == "done 1")
    assert done["usage"]["prompt_tokens"] == 100
    # a rollout that ends without its usage (Codex stopped) is imported whole once it is settled
    y = sid(13, "cx")
    path = write_lines(codex_rollout(home, y), cx_lines(y, 1) + turn[:-1])
    os.utime(path, (1_700_000_000, 1_700_000_000))
    report = {r.agent: r for r in memcli.Memory(mem).sync(home=home).sessions}[f"codex.app.{y}"]
    assert "done 1" in [t["content"] for t in agent_traces(mem, report.agent)]
    # held back while fresh, then the rollout settles without changing: the next sync imports it
    z = sid(14, "cx")
    path = write_lines(codex_rollout(home, z), cx_lines(z, 1) + turn[:-1])
    memcli.Memory(mem).sync(home=home)
    assert "done 1" not in [t["content"] for t in agent_traces(mem, f"codex.app.{z}")]
    monkeypatch.setattr("memcli.sync.engine.SETTLED", -1.0)  # time passes; the file is not touched
    memcli.Memory(mem).sync(home=home)
    assert "done 1" in [t["content"] for t in agent_traces(mem, f"codex.app.{z}")]


def test_codex_user_message_held_across_a_sync_is_placed_once(tmp_path):
    """The prompt's two copies straddle a sync: the first is held, not stored as context."""
    home, mem = tmp_path / "home", tmp_path / "mem"
    x = sid(8, "cx")
    turn = cx_turn(x, 3)
    path = write_lines(codex_rollout(home, x), cx_lines(x, 1) + turn[:1])
    memcli.Memory(mem).sync(home=home)
    write_lines(path, turn[1:], mode="ab")
    memcli.Memory(mem).sync(home=home)
    traces = agent_traces(mem, f"codex.app.{x}")
    assert [t["content"] for t in traces if t["trace_type"] == "user" and not t.get("tags")] == ["add feature 0",
                                                                                                  "add feature 3"]


def test_corrupt_codex_rollout_is_skipped_others_import(tmp_path):
    home, mem = tmp_path / "home", tmp_path / "mem"
    good, bad = sid(9, "cx"), sid(10, "cx")
    write_lines(codex_rollout(home, good), cx_lines(good, 1))
    path = write_lines(codex_rollout(home, bad), cx_lines(bad, 1))
    path.write_bytes(path.read_bytes().replace(b'"type":"event_msg"', b'"type":"event_msg",,', 1))
    report = memcli.Memory(mem).sync(home=home)
    by = {r.path: r for r in report.sessions}
    assert by[str(path)].status == "failed" and f"{path}: line 4: not valid JSON" in by[str(path)].error
    assert by[str(codex_rollout(home, good))].status == "new"
    assert [a.agent for a in memcli.Memory(mem).agents()] == [f"codex.app.{good}"]


def test_codex_rewritten_rollout_adds_nothing_twice(tmp_path):
    home, mem = tmp_path / "home", tmp_path / "mem"
    x = sid(11, "cx")
    path = write_lines(codex_rollout(home, x), cx_lines(x, 2))
    memcli.Memory(mem).sync(home=home)
    copy = tmp_path / "copy.jsonl"
    shutil.copy(path, copy)
    write_lines(copy, cx_turn(x, 5), mode="ab")
    copy.replace(path)  # replaced by rename: a new inode
    report = memcli.Memory(mem).sync(home=home).sessions[0]
    assert (report.status, report.events) == ("rewritten", 4)
    traces = agent_traces(mem, report.agent)
    assert len(traces) == len({t["id"] for t in traces}) == 13


# ---------------------------------------------------------------------------- Gemini CLI
def _gm(mem, agent):
    return [(t["trace_type"], t["content"] if t["trace_type"] != "tool_result" else t.get("tool_result"))
            for t in agent_traces(mem, agent)]


def test_gemini_jsonl_session_replayed_last_version_wins_rewind_truncates(tmp_path):
    home, mem = tmp_path / "home", tmp_path / "mem"
    g = sid(20, "gm")
    chats = gemini_chats(home)
    lines = [gm_header(g),
             gm_user("u1", "what is in the readme"),
             gm_model("m1", "let me look", calls=[gm_call("c1", status="executing")]),   # first version
             gm_model("m1", "let me look", calls=[gm_call("c1", output="# App")], thoughts=True),  # re-written
             {"id": "i1", "timestamp": "2026-03-03T08:00:40.000Z", "type": "info", "content": "Checkpoint saved"},
             gm_user("u2", "a question I took back", 1),
             gm_model("m2", "an answer to it", 1),
             {"$rewindTo": "u2"},
             {"$set": {"summary": "Reading the readme", "lastUpdated": "2026-03-03T08:05:00.000Z"}},
             gm_user("u3", "now the tests", 2),
             gm_model("m3", "they pass", 2)]
    write_lines(chats / f"session-2026-03-03T08-00-{g[:8]}.jsonl", lines)
    write_lines(home / ".gemini" / "tmp" / "app" / "logs.json", [{"sessionId": g, "messageId": 0, "type": "user",
                                                                   "message": "hi"}])
    report = memcli.Memory(mem).sync(home=home).sessions
    assert [(r.agent, r.status) for r in report] == [(f"gemini.app.{g}", "new")]
    assert report[0].skipped == {"info messages (the CLI's own notices)": 1}
    assert report[0].resume == f"cd {CWD} && gemini --resume {g}"
    assert report[0].title == "Reading the readme"  # Gemini's own summary ($set)
    assert _gm(mem, f"gemini.app.{g}") == [
        ("user", "what is in the readme"), ("assistant", "Planning: look at the files first"),
        ("assistant", "let me look"), ("tool_call", ""), ("tool_result", "# App"),
        ("user", "now the tests"), ("assistant", "they pass")]
    ids = [t["id"] for t in agent_traces(mem, f"gemini.app.{g}")]
    assert ids[:5] == ["gm-u1-u0", "gm-m1-t0", "gm-m1-x0", "gm-m1-c0", "gm-m1-r0"]


def test_gemini_appended_and_rewritten_messages_add_only_what_is_new(tmp_path):
    home, mem = tmp_path / "home", tmp_path / "mem"
    g = sid(21, "gm")
    path = write_lines(gemini_chats(home) / f"session-2026-03-03T08-00-{g[:8]}.jsonl",
                       [gm_header(g), gm_user("u1", "read it"), gm_model("m1", "reading", calls=[gm_call("c1", status="executing")])])
    first = memcli.Memory(mem).sync(home=home).sessions[0]
    assert first.events == 3  # the call's result does not exist yet: not stored empty
    write_lines(path, [gm_model("m1", "reading", calls=[gm_call("c1", output="text")]),  # the call finished
                       gm_user("u2", "thanks")], mode="ab")
    again = memcli.Memory(mem).sync(home=home).sessions[0]
    assert (again.status, again.events) == ("appended", 2)
    assert _gm(mem, first.agent)[-2:] == [("tool_result", "text"), ("user", "thanks")]
    # a checkpoint ($set.messages) replays the conversation: nothing is stored twice
    write_lines(path, [{"$set": {"messages": [gm_user("u1", "read it"), gm_model("m1", "reading",
                                                                                   calls=[gm_call("c1", output="text")]),
                                              gm_user("u2", "thanks"), gm_model("m2", "you're welcome")]}}], mode="ab")
    third = memcli.Memory(mem).sync(home=home).sessions[0]
    assert (third.status, third.events, third.duplicates) == ("appended", 1, 5)


def test_gemini_tool_response_records_are_not_asks_and_results_are_stored_once(tmp_path):
    # Gemini CLI (May 2026 on) records each tool response as a user message of functionResponse
    # parts, beside the result it keeps on the call's record
    home, mem = tmp_path / "home", tmp_path / "mem"
    g = sid(26, "gm")
    response = {"id": "r1", "timestamp": "2026-03-03T08:00:40.000Z", "type": "user",
                "content": [{"functionResponse": {"id": "c1", "name": "read_file", "response": {"output": "# App"}}}]}
    write_lines(gemini_chats(home) / f"session-2026-03-03T08-00-{g[:8]}.jsonl",
                [gm_header(g), gm_user("u1", "what is in the readme"),
                 gm_model("m1", "let me look", calls=[gm_call("c1", output="# App")]), response,
                 gm_model("m2", "it is the app's readme", 1)])
    report = memcli.Memory(mem).sync(home=home).sessions[0]
    assert report.skipped == {"tool responses (read from their call's record)": 1}
    traces = agent_traces(mem, report.agent)
    assert _gm(mem, report.agent) == [("user", "what is in the readme"), ("assistant", "let me look"),
                                      ("tool_call", ""), ("tool_result", "# App"),
                                      ("assistant", "it is the app's readme")]
    assert len({t["turn_id"] for t in traces}) == 1   # the tool response opened no turn


def test_gemini_compression_summary_is_the_harness_compaction_not_an_ask(tmp_path):
    # /compress (or auto compression) replaces the history: $set.messages with the summary as a
    # new user message holding <state_snapshot>, then the model's acknowledgement
    home, mem = tmp_path / "home", tmp_path / "mem"
    g = sid(27, "gm")
    summary = "scratchpad first\n<state_snapshot>\n<overall_goal>ship it</overall_goal>\n</state_snapshot>"
    kept = [gm_user("s1", summary, 3), gm_model("s2", "Got it. Thanks for the additional context!", 3)]
    write_lines(gemini_chats(home) / f"session-2026-03-03T08-00-{g[:8]}.jsonl",
                gm_session(g, 1) + kept + [{"$set": {"messages": kept}}, gm_user("u9", "go on", 4)])
    report = memcli.Memory(mem).sync(home=home).sessions[0]
    snap = [t for t in agent_traces(mem, report.agent) if t["content"] == summary]
    assert len(snap) == 1
    assert snap[0]["trace_type"] == "user" and snap[0]["tags"] == ["compact_summary"]
    assert snap[0]["harness_compaction"] == {"harness": "gemini-cli"}


def test_gemini_legacy_json_and_the_jsonl_resume_writes_beside_it_are_one_agent(tmp_path):
    home, mem = tmp_path / "home", tmp_path / "mem"
    g = sid(22, "gm")
    chats = gemini_chats(home, "0a1b2c", root=None)
    legacy = dict(gm_header(g), messages=gm_session(g, 1)[1:])
    (chats / f"session-2026-03-01T09-00-{g[:8]}.json").parent.mkdir(parents=True, exist_ok=True)
    (chats / f"session-2026-03-01T09-00-{g[:8]}.json").write_bytes(orjson.dumps(legacy, option=orjson.OPT_INDENT_2))
    first = memcli.Memory(mem).sync(home=home).sessions
    assert [(r.agent, r.events) for r in first] == [(f"gemini.0a1b2c.{g}", 4)]
    # gemini --resume: the legacy record migrated to a .jsonl beside it, then the session goes on
    write_lines(chats / f"session-2026-03-01T09-00-{g[:8]}.jsonl",
                [gm_header(g)] + gm_session(g, 1)[1:] + [gm_user("new", "one more question", 5)])
    second = memcli.Memory(mem).sync(home=home).sessions
    assert [(r.agent, r.status, r.events, r.duplicates) for r in second] == [(f"gemini.0a1b2c.{g}", "new", 1, 4)]


def test_gemini_subagent_session_joins_its_parent(tmp_path):
    home, mem = tmp_path / "home", tmp_path / "mem"
    g, sub = sid(23, "gm"), sid(24, "gm")
    chats = gemini_chats(home)
    write_lines(chats / f"session-2026-03-03T08-00-{g[:8]}.jsonl", gm_session(g, 1))
    write_lines(chats / g / f"{sub}.jsonl", [gm_header(sub, "subagent"), gm_user("s1", "investigate", 3),
                                            gm_model("s2", "found it", 3)])
    report = memcli.Memory(mem).sync(home=home).sessions
    assert [(r.agent, r.events) for r in report] == [(f"gemini.app.{g}", 6)]
    side = [t for t in agent_traces(mem, report[0].agent) if "sidechain" in (t.get("tags") or [])]
    assert [(t["content"], t["agent_id"]) for t in side] == [("investigate", sub), ("found it", sub)]


def test_gemini_grown_in_pieces_equals_the_whole(tmp_path):
    g = sid(25, "gm")
    data = b"".join(orjson.dumps(v) + b"\n" for v in gm_session(g, 6))
    _grow_and_sync(tmp_path, gemini_chats(tmp_path / "home") / f"session-2026-03-03T08-00-{g[:8]}.jsonl", data,
                   _cuts(data, 10), "gemini-cli")


def test_corrupt_gemini_session_is_reported_others_import(tmp_path):
    home, mem = tmp_path / "home", tmp_path / "mem"
    good, bad = sid(26, "gm"), sid(27, "gm")
    chats = gemini_chats(home)
    write_lines(chats / f"session-2026-03-03T08-00-{good[:8]}.jsonl", gm_session(good, 1))
    path = write_lines(chats / f"session-2026-03-03T09-00-{bad[:8]}.jsonl", gm_session(bad, 1))
    path.write_bytes(path.read_bytes().replace(b'"type":"user"', b'"type":"user"}}', 1))
    proc = run_memcli("--dir", mem, "sync", "--home", home, "--source", "gemini")
    assert proc.returncode == 1
    assert f"sync: skipped {path}: line 2: not valid JSON" in proc.stderr.decode()
    assert [a.agent for a in memcli.Memory(mem).agents()] == [f"gemini.app.{good}"]


def test_a_last_line_without_newline_is_read_for_formats_that_never_end_it(tmp_path):
    """SessionFile.complete_tail (Cursor writes its last line without a newline): read when it
    parses, never stopped after, so a later line is read and the tail not stored twice."""
    from memcli.sync import Session, SessionFile
    from memcli.sync.engine import import_session

    mem = tmp_path / "mem"
    s = sid(30)
    path = tmp_path / f"{s}.jsonl"
    lines = [orjson.dumps(x) for x in cc_session(s, 1)]
    path.write_bytes(b"\n".join(lines))  # no newline at the end
    session = Session("claude-code", [SessionFile(str(path), "claude-code", complete_tail=True)])
    first = import_session(mem, session)
    assert first.events == 4
    with open(path, "ab") as f:
        f.write(b"\n" + orjson.dumps(cc_user(s, 40, "later")))
    again = import_session(mem, session)
    assert (again.events, again.duplicates) == (1, 1)
    # without complete_tail the unterminated line waits for its newline
    plain = Session("claude-code", [SessionFile(str(path), "claude-code")])
    other = import_session(tmp_path / "mem2", plain)
    assert other.events == 4


def test_claude_code_older_subagent_file_beside_the_sessions_joins_the_session_it_names(tmp_path):
    home, mem = tmp_path / "home", tmp_path / "mem"
    s = sid(31)
    write_lines(claude_project(home) / f"{s}.jsonl", cc_session(s, 1))
    write_lines(claude_project(home) / "agent-9f8e7d6.jsonl", [
        cc_user(s, 70, "older layout subtask", sidechain=True, agent="9f8e7d6"),
        cc_assistant(s, 71, "older layout answer", sidechain=True, agent="9f8e7d6")])
    report = memcli.Memory(mem).sync(home=home).sessions
    assert {r.agent for r in report} == {f"claude-code.app.{s}"}
    assert [a.agent for a in memcli.Memory(mem).agents()] == [f"claude-code.app.{s}"]
    side = [t for t in agent_traces(mem, f"claude-code.app.{s}") if "sidechain" in (t.get("tags") or [])]
    assert [(t["content"], t["agent_id"]) for t in side] == [("older layout subtask", "9f8e7d6"),
                                                           ("older layout answer", "9f8e7d6")]


def _task_session(s: str, agents: tuple = ("aa11", "bb22"), n0: int = 0) -> tuple[list[dict], dict[str, list[dict]]]:
    """A Claude Code session whose first turn runs two parallel Task subagents (their lines
    interleaved in time, written while the main file waits for the Task results), then a second
    turn: (main lines, subagent id -> its lines)."""
    def sub(agent, n, report):
        return [cc_user(s, n, f"subtask for {agent}", sidechain=True, agent=agent),
                cc_assistant(s, n + 2, "", sidechain=True, agent=agent, tool=(f"toolu_{agent}", "Edit", {
                    "file_path": f"{CWD}/{agent}.py", "old_string": "a", "new_string": "b"})),
                cc_result(s, n + 4, f"toolu_{agent}", "The file has been updated.", sidechain=True, agent=agent),
                cc_assistant(s, n + 6, report, sidechain=True, agent=agent)]
    main = [{"type": "permission-mode", "permissionMode": "default", "sessionId": s},
            cc_user(s, n0 + 1, "split the work in two"),
            cc_assistant(s, n0 + 2, "", tool=("toolu_task1", "Task", {"prompt": "first half"})),
            cc_assistant(s, n0 + 3, "", tool=("toolu_task2", "Task", {"prompt": "second half"})),
            cc_result(s, n0 + 20, "toolu_task1", "first half done"),
            cc_result(s, n0 + 21, "toolu_task2", "second half done"),
            cc_assistant(s, n0 + 22, "both halves done"),
            cc_user(s, n0 + 30, "now commit"),
            cc_assistant(s, n0 + 31, "committed")]
    return main, {agents[0]: sub(agents[0], n0 + 4, "first report"), agents[1]: sub(agents[1], n0 + 5, "second report")}


def _sync_in_steps(tmp_path, layout: str, steps: list[dict]) -> tuple:
    """Two sessions of one project directory (the second's lines interleaved in time with the
    first's), their subagent files beside the sessions (``older``, Claude Code 2.0.x) or in
    ``<session>/subagents/``; written in ``steps`` (file -> lines written by then; a missing
    file: whole), synced after each: (memory dir, first session's agent, second's)."""
    home, mem = tmp_path / layout / "home", tmp_path / layout / "mem"
    project = claude_project(home)
    sessions = [(sid(40), *_task_session(sid(40))), (sid(41), *_task_session(sid(41), ("cc33", "dd44"), 1))]
    done: dict = {}
    for step in steps:
        for s, main, subs in sessions:
            files = [(project / f"{s}.jsonl", "main", main)]
            for agent, lines in subs.items():
                where = project if layout == "older" else project / s / "subagents"
                files.append((where / f"agent-{agent}.jsonl", agent, lines))
            for path, name, lines in files:
                upto = step.get(name, len(lines)) if s == sid(40) else len(lines)
                if upto > done.get(path, 0):
                    write_lines(path, lines[done.get(path, 0):upto], mode="ab")
                    done[path] = upto
        report = memcli.Memory(mem).sync(home=home)
        assert not report.failed, report.failed[0].error
    return mem, f"claude-code.app.{sid(40)}", f"claude-code.app.{sid(41)}"


WHOLE = [{}]
# synced while the subagents run (the main file waits at the Task calls), then once they are done
WHILE_RUNNING = [{"main": 4, "aa11": 2, "bb22": 1}, {}]
# the main file synced past the second subagent's last lines (as when a sync comes while a
# background subagent still runs): memory is append-only, those lines are stored last
PAST = [{"bb22": 2}, {}]


@pytest.mark.parametrize("steps", [WHOLE, WHILE_RUNNING, PAST], ids=["whole", "while_running", "past"])
def test_claude_code_2_0_subagent_files_beside_the_sessions_merge_as_the_subagents_directory(tmp_path, steps):
    """Claude Code 2.0.x wrote ``<key>/agent-<id>.jsonl`` beside the sessions: each file is one
    more file of the session its lines name, merged by timestamp as ``<session>/subagents/`` is —
    not a session of its own stored after the whole session (the subagents' work then landed in
    the newest turn)."""
    older, s1, s2 = _sync_in_steps(tmp_path, "older", steps)
    current, _, _ = _sync_in_steps(tmp_path, "subagents", steps)
    assert sorted(p.name for p in (older / "agents").iterdir()) == sorted([s1, s2])
    for agent in (s1, s2):
        assert _shape(agent_traces(older, agent)) == _shape(agent_traces(current, agent))
    traces = agent_traces(older, s1)
    side = [i for i, t in enumerate(traces) if "sidechain" in (t.get("tags") or [])]
    assert len(side) == 8 and {traces[i]["agent_id"] for i in side} == {"aa11", "bb22"}
    results = [i for i, t in enumerate(traces) if t["trace_type"] == "tool_result" and not t.get("agent_id")]
    if steps is PAST:
        assert side[-2:] == [len(traces) - 2, len(traces) - 1]  # after what was stored, not moved back
        return
    assert [traces[i]["turn_id"] for i in side] == ["turn_0001"] * 8
    assert max(side) < min(results)  # the subagents' work comes before the Task results it gave
    assert [traces[i]["content"] for i in side if traces[i]["trace_type"] == "user"] == [
        "subtask for aa11", "subtask for bb22"]


def test_claude_code_2_0_subagent_files_join_the_hooks_session_too(tmp_path):
    """A hook imports ``session_of(transcript)``: its 2.0.x subagent files are among its files (as
    ``find`` gives them: a hook and a sync keep one state), and a subagent file's session is the
    one it names; one whose session file is not there is a session of its own, stored into the
    agent of the session it names."""
    from memcli.sync import get_source

    home = tmp_path / "home"
    project = claude_project(home)
    s, other, gone = sid(42), sid(43), sid(44)
    main, subs = _task_session(s)
    write_lines(project / f"{s}.jsonl", main)
    for agent, lines in subs.items():
        write_lines(project / f"agent-{agent}.jsonl", lines)
    write_lines(project / f"{other}.jsonl", cc_session(other, 1))
    write_lines(project / "agent-0ther.jsonl", [cc_user(other, 5, "other's subtask", sidechain=True, agent="0ther")])
    write_lines(project / "agent-g0ne.jsonl", [cc_user(gone, 5, "orphan subtask", sidechain=True, agent="g0ne")])
    source = get_source("claude-code")
    files = [(f.path, f.sidechain) for f in source.session_of(str(project / f"{s}.jsonl")).files]
    assert files == [(str(project / f"{s}.jsonl"), None)] + [
        (str(project / f"agent-{a}.jsonl"), a) for a in sorted(subs)]
    assert [(f.path, f.sidechain) for f in source.session_of(str(project / f"agent-{sorted(subs)[0]}.jsonl")).files] == files
    found = {tuple(f.path for f in x.files) for x in source.find(home)}
    assert tuple(p for p, _ in files) in found
    assert (str(project / "agent-g0ne.jsonl"),) in found
    mem = tmp_path / "mem"
    memcli.Memory(mem).sync(home=home)
    assert sorted(a.agent for a in memcli.Memory(mem).agents()) == sorted(
        f"claude-code.app.{x}" for x in (s, other, gone))
    assert [t["content"] for t in agent_traces(mem, f"claude-code.app.{other}") if t.get("agent_id")] == [
        "other's subtask"]


def test_gemini_no_change_sync_reads_nothing_and_a_replaced_file_adds_only_the_new(tmp_path, monkeypatch):
    import memcli.sync.engine as engine

    home, mem = tmp_path / "home", tmp_path / "mem"
    g = sid(28, "gm")
    path = write_lines(gemini_chats(home) / f"session-2026-03-03T08-00-{g[:8]}.jsonl", gm_session(g, 2))
    assert memcli.Memory(mem).sync(home=home).sessions[0].events == 8
    with monkeypatch.context() as m:
        m.setattr(engine, "_read_file", lambda *a, **k: pytest.fail("an unchanged session was read"))
        assert memcli.Memory(mem).sync(home=home).sessions[0].status == "unchanged"
    replacement = tmp_path / "new.jsonl"
    write_lines(replacement, gm_session(g, 3))  # rewritten whole (a new inode): one more exchange
    replacement.replace(path)
    report = memcli.Memory(mem).sync(home=home).sessions[0]
    assert (report.status, report.events, report.duplicates) == ("rewritten", 4, 8)
