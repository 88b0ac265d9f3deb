"""GitHub Copilot CLI sessions: ``--from copilot-cli`` and ``memcli sync --source copilot``, over
logs written by tests/sync_more_fixtures.py from the Copilot SDK's session event schema."""

from __future__ import annotations

import orjson

import memcli
import memcli.sync.engine as engine
from memcli.ingest.api import ingest
from tests.helpers import agent_traces, read_jsonl, run_memcli, synced, synced_again_reading_nothing
from tests.sync_more_fixtures import CWD, copilot_events, cp_session, cp_turn, sid, write_lines

P1, P2 = sid(1, "cp"), sid(2, "cp")


def _home(tmp_path):
    home = tmp_path / "home"
    write_lines(copilot_events(home, P1), cp_session(P1, 2))
    write_lines(copilot_events(home, P2), cp_session(P2, 1, cwd="/srv/web", phrase="pelican"))
    (home / ".copilot" / "session-state" / P1 / "workspace.yaml").write_text("id: x\n")
    return home




def test_ingest_maps_the_events_and_keeps_what_the_person_typed(memory_dir, tmp_path):
    path = write_lines(tmp_path / "events.jsonl", cp_session(P1, 1) + [
        {"type": "brand.new_thing", "data": {}, "id": "z1", "timestamp": "2026-02-01T10:00:00Z", "parentId": None}])
    result = ingest(memory_dir, "cp", path)
    assert (result.format, result.detected) == ("copilot-cli", True)
    got = read_jsonl(memory_dir / "agents" / "cp" / "raw_traces.jsonl")
    assert [(t["trace_type"], t.get("tags", []), t.get("content") or t.get("tool_result") or t.get("tool_name"))
            for t in got] == [
        ("user", [], "run the tests 0"),
        ("assistant", ["reasoning"], "I will run pytest 0"),
        ("tool_call", [], "bash"),
        ("tool_result", [], "0 passed"),
        ("assistant", [], "all 0 passed"),
    ]
    assert got[2]["tool_args"] == {"command": "pytest -k t0"} and got[2]["tool_call_id"] == got[3]["tool_call_id"]
    assert got[0]["session_id"] == P1 and got[2]["model"] == "gpt-5"
    assert result.skipped["unknown event type 'brand.new_thing'"] == 1
    assert result.skipped["assistant.usage events"] == 1


def test_failed_tools_user_run_commands_and_compaction(memory_dir, tmp_path):
    lines = cp_session(P1, 0) + [
        {"type": "tool.execution_start", "id": "x1", "timestamp": "2026-02-01T10:00:00Z", "parentId": None,
         "data": {"toolCallId": "u1", "toolName": "bash", "arguments": {"command": "ls"}}},
        {"type": "tool.execution_complete", "id": "x2", "timestamp": "2026-02-01T10:00:01Z", "parentId": None,
         "data": {"toolCallId": "u1", "success": False, "error": {"message": "denied"}}},
        {"type": "session.compaction_complete", "id": "x3", "timestamp": "2026-02-01T10:00:02Z", "parentId": None,
         "data": {"success": True, "summaryContent": "we ran ls", "preCompactionTokens": 9000}}]
    ingest(memory_dir, "cp", write_lines(tmp_path / "e.jsonl", lines))
    got = read_jsonl(memory_dir / "agents" / "cp" / "raw_traces.jsonl")
    assert [(t["trace_type"], t.get("tool_error")) for t in got] == [("tool_call", None), ("tool_result", "denied"),
                                                                      ("user", None)]
    assert got[2]["tags"] == ["compact_summary"] and got[2]["harness_compaction"] == {
        "harness": "copilot-cli", "pre_tokens": 9000}


def test_subagent_events_by_agent_id_and_messages_the_person_did_not_type(memory_dir, tmp_path):
    """Newer CLIs mark a subagent's events with a top-level agentId (parentToolCallId is
    deprecated); autopilot continuations, skill injections and other agents' prompts are user.message
    events too, but not the person's asks."""
    ev = lambda n, kind, data, **top: {"type": kind, "data": data, "id": f"s{n}", "parentId": None,  # noqa: E731
                                       "timestamp": f"2026-02-01T10:00:{n:02d}Z", **top}
    lines = cp_session(P1, 0) + [
        ev(1, "user.message", {"content": "review the PR", "delivery": "idle"}),
        ev(2, "assistant.message", {"messageId": "m1", "content": "", "toolRequests": [
            {"toolCallId": "task1", "name": "task", "arguments": {"prompt": "read diff"}}]}),
        ev(3, "user.message", {"content": "read diff", "source": "agent-rev1"}, agentId="rev1"),
        ev(4, "assistant.message", {"messageId": "m2", "content": "diff read"}, agentId="rev1"),
        ev(5, "tool.execution_complete", {"toolCallId": "task1", "success": True, "result": {"content": "ok"}}),
        ev(6, "user.message", {"content": "<skill>pdf</skill>", "source": "skill-pdf"}),
        ev(7, "user.message", {"content": "continue", "isAutopilotContinuation": True}),
        ev(8, "assistant.message", {"messageId": "m3", "content": "done"}),
    ]
    ingest(memory_dir, "cp", write_lines(tmp_path / "e.jsonl", lines), fmt="copilot-cli")
    got = read_jsonl(memory_dir / "agents" / "cp" / "raw_traces.jsonl")
    assert [(t["trace_type"], t.get("tags", []), t.get("agent_id"), t.get("turn_id")) for t in got] == [
        ("user", [], None, "turn_0001"),
        ("tool_call", [], None, "turn_0001"),
        ("user", ["context", "inter_agent", "sidechain"], "rev1", "turn_0001"),
        ("assistant", ["sidechain"], "rev1", "turn_0001"),
        ("tool_result", [], None, "turn_0001"),
        ("user", ["context"], None, "turn_0001"),
        ("user", ["context"], None, "turn_0001"),
        ("assistant", [], None, "turn_0001"),
    ]
    assert got[2]["name"] == "agent-rev1"


def test_first_sync(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    report = synced(mem, home, "copilot")
    assert {a: (r.status, r.events) for a, r in report.items()} == {
        f"copilot.app.{P1}": ("new", 10), f"copilot.web.{P2}": ("new", 5)}
    meta = orjson.loads((mem / "agents" / f"copilot.app.{P1}" / ".source.json").read_bytes())
    assert meta["resume"] == f"cd {CWD} && copilot --resume {P1}" and meta["title"] == "run the tests 0"


def test_no_change_sync_reads_nothing(tmp_path, monkeypatch):
    home, mem = _home(tmp_path), tmp_path / "mem"
    report = synced_again_reading_nothing(monkeypatch, lambda: synced(mem, home, "copilot"), mem,
                                          (engine, "_read_file"), "memcli.sync._head.head_values")
    assert {r.status for r in report.values()} == {"unchanged"}


def test_appended_session_adds_exactly_the_new_events(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    synced(mem, home, "copilot")
    write_lines(copilot_events(home, P2), cp_turn(P2, 5), mode="ab")
    report = synced(mem, home, "copilot")
    assert (report[f"copilot.web.{P2}"].status, report[f"copilot.web.{P2}"].events) == ("appended", 5)
    assert report[f"copilot.app.{P1}"].status == "unchanged"
    traces = agent_traces(mem, f"copilot.web.{P2}")
    assert len({t["id"] for t in traces}) == len(traces) == 10
    assert [t["content"] for t in traces if t["trace_type"] == "user"] == ["run the tests 0 pelican", "run the tests 5"]


def test_call_requested_before_an_append_is_not_stored_twice(tmp_path):
    home, mem = tmp_path / "home", tmp_path / "mem"
    lines = cp_session(P1, 1)
    write_lines(copilot_events(home, P1), lines[:6])   # up to the assistant's tool request
    synced(mem, home, "copilot")
    write_lines(copilot_events(home, P1), lines[6:], mode="ab")
    report = synced(mem, home, "copilot")[f"copilot.app.{P1}"]
    assert report.status == "appended"
    traces = agent_traces(mem, f"copilot.app.{P1}")
    assert [t["trace_type"] for t in traces] == ["user", "assistant", "tool_call", "tool_result", "assistant"]


def test_rewritten_session_no_duplicates(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    synced(mem, home, "copilot")
    path = copilot_events(home, P1)
    path.unlink()
    write_lines(path, cp_session(P1, 1) + cp_turn(P1, 9))
    report = synced(mem, home, "copilot")[f"copilot.app.{P1}"]
    assert (report.status, report.events, report.duplicates) == ("rewritten", 5, 5)
    traces = agent_traces(mem, f"copilot.app.{P1}")
    assert len({t["id"] for t in traces}) == len(traces) == 15


def test_corrupt_session_is_reported_others_import(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    bad = copilot_events(home, P1)
    data = bad.read_bytes().split(b"\n")
    data[3] = b'{"type": "assistant.message", "data": '
    bad.write_bytes(b"\n".join(data))
    proc = run_memcli("--dir", mem, "sync", "--home", home, "--source", "copilot")
    assert proc.returncode == 1
    assert f"sync: skipped {bad}: line 4: not valid JSON" in proc.stderr.decode()
    assert {a.agent for a in memcli.Memory(mem).agents()} == {f"copilot.web.{P2}"}
