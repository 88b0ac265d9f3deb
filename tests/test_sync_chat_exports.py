"""``memcli sync --source chatgpt,claude-ai``: data exports (``conversations.json``) found in
``~/Downloads``, one agent per conversation, over exports written by tests/chat_export_fixtures.py
from the documented shape (no public sample is used)."""

from __future__ import annotations

import os

import orjson

import memcli
from memcli.sync import chat_exports
from tests import chat_export_fixtures as cx
from tests.helpers import agent_traces, run_memcli, synced, synced_again_reading_nothing

G1, G2, C1 = cx.cid(1), cx.cid(2), cx.cid(1, "ca")


def _export(path, conversations):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(conversations))
    return path


def _home(tmp_path):
    home = tmp_path / "home"
    _export(home / "Downloads" / "chatgpt-export" / "conversations.json",
            [cx.chatgpt_conversation(1, 2), cx.chatgpt_conversation(2, 1, phrase="walrus")])
    _export(home / "Downloads" / "data-2026-01-02" / "conversations.json", [cx.claude_ai_conversation(1, 1)])
    (home / "Downloads" / "notes").mkdir()
    return home




def test_first_sync_one_agent_per_conversation(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    report = synced(mem, home, "chatgpt,claude-ai")
    assert {a: (r.status, r.events) for a, r in report.items()} == {
        f"chatgpt.chat.{G1}": ("new", 8), f"chatgpt.chat.{G2}": ("new", 4), f"claude-ai.chat.{C1}": ("new", 6)}
    assert [t["content"] for t in agent_traces(mem, f"chatgpt.chat.{G2}") if t["trace_type"] == "user"] == ["question 0 walrus"]
    meta = orjson.loads((mem / "agents" / f"chatgpt.chat.{G1}" / ".source.json").read_bytes())
    assert meta["source"] == "chatgpt" and meta["resume"] == f"https://chatgpt.com/c/{G1}"
    assert meta["title"] == "Sums 1" and meta["source_path"].endswith("chatgpt-export/conversations.json")
    meta = orjson.loads((mem / "agents" / f"claude-ai.chat.{C1}" / ".source.json").read_bytes())
    assert (meta["title"], meta["resume"]) == ("Facts 1", f"https://claude.ai/chat/{C1}")
    assert {t["source_event"] for t in agent_traces(mem, f"claude-ai.chat.{C1}")} == {"claude-ai"}


def test_no_change_sync_opens_no_export(tmp_path, monkeypatch):
    home, mem = _home(tmp_path), tmp_path / "mem"
    report = synced_again_reading_nothing(monkeypatch, lambda: synced(mem, home, "chatgpt,claude-ai"), mem,
                                          (chat_exports, "written_by"), (chat_exports.ExportSource, "_conversations"))
    assert len(report) == 3 and {r.status for r in report.values()} == {"unchanged"}


def test_a_newer_export_adds_exactly_the_new_messages(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    synced(mem, home, "chatgpt,claude-ai")
    path = home / "Downloads" / "chatgpt-export" / "conversations.json"
    g1 = cx.chatgpt_add_turn(cx.chatgpt_conversation(1, 2), 7, "one more")
    g1["update_time"] += 1000
    _export(path, [g1, cx.chatgpt_conversation(2, 1, phrase="walrus"), cx.chatgpt_conversation(3, 1)])
    report = synced(mem, home, "chatgpt,claude-ai")
    assert (report[f"chatgpt.chat.{G1}"].status, report[f"chatgpt.chat.{G1}"].events) == ("rewritten", 2)
    assert report[f"chatgpt.chat.{G2}"].status == "unchanged"          # same update_time: not imported again
    assert (report[f"chatgpt.chat.{cx.cid(3)}"].status, report[f"chatgpt.chat.{cx.cid(3)}"].events) == ("new", 4)
    assert report[f"claude-ai.chat.{C1}"].status == "unchanged"
    traces = agent_traces(mem, f"chatgpt.chat.{G1}")
    assert [t["content"] for t in traces[-2:]] == ["one more", "reply to one more"]
    assert len({t["id"] for t in traces}) == len(traces) == 10


def test_a_rewritten_export_is_reconciled_by_ids_never_duplicated(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    synced(mem, home, "chatgpt,claude-ai")
    path = home / "Downloads" / "data-2026-01-02" / "conversations.json"
    conv = cx.claude_ai_conversation(1, 1)
    conv["updated_at"] = cx.ca_iso(cx.T0 + 5000)  # renamed in the app: a new update time, same messages
    path.unlink()
    _export(path, [conv])
    report = synced(mem, home, "chatgpt,claude-ai")[f"claude-ai.chat.{C1}"]
    assert (report.status, report.events, report.duplicates) == ("rewritten", 0, 6)
    assert len(agent_traces(mem, f"claude-ai.chat.{C1}")) == 6


def test_a_corrupt_export_is_reported_others_import(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    bad = home / "Downloads" / "chatgpt-export" / "conversations.json"
    good = bad.read_bytes()
    bad.write_bytes(good[: len(good) // 2])
    proc = run_memcli("--dir", mem, "sync", "--home", home, "--source", "chatgpt,claude-ai")
    assert proc.returncode == 1
    assert f"sync: skipped {bad}: line 1: " in proc.stderr.decode()
    assert {a.agent for a in memcli.Memory(mem).agents()} == {f"claude-ai.chat.{C1}"}
    bad.write_bytes(good)  # fixed: the next sync imports it
    assert run_memcli("--dir", mem, "sync", "--home", home, "--source", "chatgpt,claude-ai").returncode == 0
    assert len(memcli.Memory(mem).agents()) == 3


def test_a_conversation_that_cannot_be_read_is_skipped_and_retried(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    path = home / "Downloads" / "chatgpt-export" / "conversations.json"
    _export(path, [cx.chatgpt_conversation(1, 1), {"mapping": {}, "id": "broken", "update_time": 5,
                                                   "current_node": None, "title": 3, "x": [1]}, "oops"])
    report = memcli.Memory(mem).sync(home=home, source="chatgpt")
    assert [s.status for s in report.sessions] == ["new", "new", "failed"]
    assert "line 1: conversation 3 at line 1 is not an object" in report.failed[0].error
    assert f"chatgpt.chat.{G1}" in {a.agent for a in memcli.Memory(mem).agents()}
    again = memcli.Memory(mem).sync(home=home, source="chatgpt")  # the file is read again, adds nothing
    assert [s.status for s in again.sessions] == ["unchanged", "unchanged", "failed"]
    assert sum(s.events for s in again.sessions) == 0


def test_only_its_own_files_and_dry_run_writes_nothing(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    report = memcli.Memory(mem).sync(home=home, source="claude-ai", dry_run=True)
    assert [(s.agent, s.status) for s in report.sessions] == [(f"claude-ai.chat.{C1}", "new")]
    assert not mem.exists()
    os.remove(home / "Downloads" / "data-2026-01-02" / "conversations.json")
    assert memcli.Memory(mem).sync(home=home, source="claude-ai").sessions == []


def test_path_imports_an_export_or_aider_log_kept_elsewhere(tmp_path):
    from tests.sync_more_fixtures import aider_run

    home, mem = tmp_path / "home", tmp_path / "mem"
    home.mkdir()
    export = _export(tmp_path / "archive" / "conversations.json", [cx.claude_ai_conversation(1, 1)])
    project = tmp_path / "work" / "tool"
    project.mkdir(parents=True)
    (project / ".aider.chat.history.md").write_text(aider_run("2026-03-01 09:00:00", ["hi"]))
    proc = run_memcli("--dir", mem, "sync", "--home", home, "--path", export.parent, "--path", project, "--json")
    assert proc.returncode == 0, proc.stderr
    rows = orjson.loads(proc.stdout)["sessions"]
    assert sorted((r["agent"], r["status"]) for r in rows) == [
        ("aider.tool.20260301-090000", "new"), (f"claude-ai.chat.{C1}", "new")]
    again = memcli.Memory(mem).sync(home=home, path=[export, project / ".aider.chat.history.md"])
    assert {s.status for s in again.sessions} == {"unchanged"}
    bad = tmp_path / "notes.txt"
    bad.write_text("hello")
    proc = run_memcli("--dir", mem, "sync", "--home", home, "--path", bad)
    assert proc.returncode == 2 and "not a session file sync reads" in proc.stderr.decode()


def test_a_cleared_conversation_is_imported_again_whole_the_others_not(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    synced(mem, home, "chatgpt,claude-ai")
    assert run_memcli("--dir", mem, "clear", f"chatgpt.chat.{G2}", "--yes").returncode == 0
    report = synced(mem, home, "chatgpt,claude-ai")
    assert {a: (r.status, r.events) for a, r in report.items()} == {
        f"chatgpt.chat.{G1}": ("unchanged", 0), f"chatgpt.chat.{G2}": ("new", 4), f"claude-ai.chat.{C1}": ("unchanged", 0)}
    assert {r.status for r in synced(mem, home, "chatgpt,claude-ai").values()} == {"unchanged"}
