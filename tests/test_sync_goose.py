"""Goose: ``memcli sync --source goose`` over a sessions database written with Goose's own schema
(tests/sync_more_fixtures.py, from block/goose's session storage), and ``--from goose`` for the
legacy ``.jsonl`` sessions."""

from __future__ import annotations

import sqlite3

import orjson

import memcli
from memcli.ingest.api import ingest
from tests.helpers import agent_traces, run_memcli, synced, synced_again_reading_nothing
from tests.sync_more_fixtures import goose_db, goose_turn, write_lines

A, B = "20260203_1", "20260203_2"
STAMP = "20260203080000"


def _db(home):
    return home / ".local" / "share" / "goose" / "sessions" / "sessions.db"


def _home(tmp_path):
    home = tmp_path / "home"
    goose_db(_db(home), {A: ("/home/me/app", goose_turn(0) + goose_turn(1)),
                         B: ("/srv/web", goose_turn(0, "heron"))})
    return home




def test_first_sync_names_sessions_apart_and_tool_rows_are_not_asks(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    before = _db(home).read_bytes()
    report = synced(mem, home, "goose")
    assert {a: (r.status, r.events) for a, r in report.items()} == {
        f"goose.app.{A}-{STAMP}": ("new", 10), f"goose.web.{B}-{STAMP}": ("new", 5)}
    traces = agent_traces(mem, f"goose.app.{A}-{STAMP}")
    assert [t["trace_type"] for t in traces[:5]] == ["user", "assistant", "tool_call", "tool_result", "assistant"]
    assert [t["content"] for t in traces if t["trace_type"] == "user"] == ["list files 0", "list files 1"]
    assert traces[2]["tool_args"] == {"command": "ls 0"} and traces[3]["tool_result"] == "file0.txt"
    assert len({t["turn_id"] for t in traces}) == 2  # the tool-response rows open no turn
    meta = orjson.loads((mem / "agents" / f"goose.app.{A}-{STAMP}" / ".source.json").read_bytes())
    assert meta["resume"] == f"cd /home/me/app && goose session --resume --session-id {A}"
    assert meta["title"] == f"session {A}"
    assert _db(home).read_bytes() == before  # never written


def test_no_change_sync_does_not_open_the_database(tmp_path, monkeypatch):
    home, mem = _home(tmp_path), tmp_path / "mem"
    report = synced_again_reading_nothing(monkeypatch, lambda: synced(mem, home, "goose"), mem,
                                          "memcli.sync.goose.read_database")
    assert {r.status for r in report.values()} == {"unchanged"}


def test_no_change_sync_does_not_load_sqlite(tmp_path):
    # a sync with nothing new runs once per hook event: the unchanged database is not opened, so
    # sqlite3 (a few ms to import) is never loaded
    import subprocess
    import sys

    from tests.helpers import proc_env

    home, mem = _home(tmp_path), tmp_path / "mem"
    synced(mem, home, "goose")
    code = ("import sys, memcli; r = memcli.Memory(sys.argv[1]).sync(home=sys.argv[2], source='goose'); "
            "print(sorted(s.status for s in r.sessions), 'sqlite3' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(mem), str(home)], capture_output=True, text=True,
                         env=proc_env(None), check=True).stdout
    assert out == "['unchanged', 'unchanged'] False\n"


def test_appended_session_adds_exactly_the_new_events(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    synced(mem, home, "goose")
    goose_db(_db(home), {B: ("/srv/web", goose_turn(7))})
    report = synced(mem, home, "goose")
    assert (report[f"goose.web.{B}-{STAMP}"].status, report[f"goose.web.{B}-{STAMP}"].events) == ("rewritten", 5)
    assert report[f"goose.app.{A}-{STAMP}"].status == "unchanged"
    traces = agent_traces(mem, f"goose.web.{B}-{STAMP}")
    assert len({t["id"] for t in traces}) == len(traces) == 10


def test_rewritten_session_rows_are_reconciled_never_duplicated(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    synced(mem, home, "goose")
    con = sqlite3.connect(_db(home))  # Goose replaces a conversation: the same messages under new row ids
    rows = con.execute("SELECT role, content_json, created_timestamp, metadata_json FROM messages"
                       " WHERE session_id = ? ORDER BY id", (A,)).fetchall()
    con.execute("DELETE FROM messages WHERE session_id = ?", (A,))
    con.executemany("INSERT INTO messages (session_id, role, content_json, created_timestamp, metadata_json)"
                    " VALUES (?,?,?,?,?)", [(A, *r) for r in rows])
    con.execute("UPDATE sessions SET updated_at = '2026-02-04 00:00:00' WHERE id = ?", (A,))
    con.commit()
    con.close()
    report = synced(mem, home, "goose")[f"goose.app.{A}-{STAMP}"]
    assert (report.status, report.events, report.duplicates) == ("rewritten", 0, 10)


def test_corrupt_session_is_reported_others_import(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    con = sqlite3.connect(_db(home))
    con.execute("UPDATE messages SET content_json = '[{\"type\": \"text\"' WHERE id = 2")
    con.commit()
    con.close()
    proc = run_memcli("--dir", mem, "sync", "--home", home, "--source", "goose")
    assert proc.returncode == 1
    assert f"sync: skipped {_db(home)}: session {A}: message 2: " in proc.stderr.decode()
    assert {a.agent for a in memcli.Memory(mem).agents()} == {f"goose.web.{B}-{STAMP}"}


def test_a_locked_database_is_retried_then_reported_never_modified(tmp_path, monkeypatch):
    home, mem = _home(tmp_path), tmp_path / "mem"
    monkeypatch.setattr("memcli.sync.goose.BUSY_SECONDS", 0.3)
    holder = sqlite3.connect(_db(home), isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # the harness writing (rollback-journal mode): readers are locked out
    try:
        before = _db(home).read_bytes()
        report = memcli.Memory(mem).sync(home=home, source="goose")
        assert [s.status for s in report.sessions] == ["failed"]
        assert "cannot read the Goose database: database is locked" in report.sessions[0].error
        assert _db(home).read_bytes() == before
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert {s.status for s in memcli.Memory(mem).sync(home=home, source="goose").sessions} == {"new"}


def test_legacy_jsonl_ingest_and_sync_without_a_database(tmp_path, memory_dir):
    home, mem = tmp_path / "home", tmp_path / "mem"
    rows = [{"working_dir": "/home/me/old", "description": "old work", "schedule_id": None}] + [
        {"role": r, "created": 1700000000 + n, "content": c, "metadata": m}
        for n, (r, c, m) in enumerate(goose_turn(0) + [("user", [{"type": "futureThing"}], {})])]
    path = write_lines(home / ".local" / "share" / "goose" / "sessions" / "20240101_1.jsonl", rows)
    result = ingest(memory_dir, "g", path)
    assert (result.format, result.detected, result.appended) == ("goose", True, 5)
    assert result.skipped["futureThing items"] == 1
    report = memcli.Memory(mem).sync(home=home, source="goose")
    assert [(s.agent, s.status, s.events) for s in report.sessions] == [("goose.old.20240101_1", "new", 5)]


SUMMARY_TEXT = "The user asked to list files; file0.txt and file1.txt exist. Next: read file1.txt."
AGENT_ONLY = {"userVisible": False, "agentVisible": True}


def _compacted(note: str) -> list[tuple[str, list, dict]]:
    """Two turns as Goose keeps them after its compaction (block/goose context_mgmt): the rows it
    replaced, hidden from the model now; its summary, a user message only the model sees; the
    note after it; then the next ask."""
    hidden = [(role, content, {"userVisible": True, "agentVisible": False})
              for role, content, _ in goose_turn(0) + goose_turn(1)]
    return hidden + [
        ("user", [{"type": "text", "text": SUMMARY_TEXT}], AGENT_ONLY),
        ("assistant", [{"type": "text", "text": note}], AGENT_ONLY),
        ("user", [{"type": "text", "text": "now read file1.txt"}], {"userVisible": True, "agentVisible": True}),
    ]


def test_goose_s_own_compaction_summary_is_the_harness_compaction_not_an_ask(tmp_path):
    home, mem = tmp_path / "home", tmp_path / "mem"
    auto = ("Your context was compacted. The previous message contains a summary of the conversation so far.\n"
            "Do not mention that you read a summary or that conversation summarization occurred.\n"
            "Continue calling tools as necessary to complete the task.")
    manual = "Your context was compacted at the user's request. The previous message contains a summary."
    goose_db(_db(home), {A: ("/home/me/app", _compacted(auto)), B: ("/srv/web", _compacted(manual))})
    report = synced(mem, home, "goose")
    for sid_, trigger in ((A, "auto"), (B, "manual")):
        agent = next(a for a in report if sid_ in a)
        traces = agent_traces(mem, agent)
        summary = [t for t in traces if t["content"] == SUMMARY_TEXT]
        assert len(summary) == 1 and summary[0]["trace_type"] == "user"
        assert summary[0]["tags"] == ["compact_summary"]
        assert summary[0]["harness_compaction"] == {"harness": "goose", "trigger": trigger}
        note = next(t for t in traces if t["content"].startswith("Your context was compacted"))
        assert note["tags"] == ["context"]
        asks = [t["content"] for t in traces if t["trace_type"] == "user" and not t.get("tags")]
        assert asks == ["list files 0", "list files 1", "now read file1.txt"]
        items = [orjson.loads(line) for line in (mem / "agents" / agent / "episodic.jsonl").read_bytes().splitlines()]
        assert [(i["summary"], i["harness_compaction"]["harness"], i["harness_compaction"]["trigger"])
                for i in items] == [(SUMMARY_TEXT, "goose", trigger)]


def test_a_message_only_the_model_sees_is_context_unless_goose_s_compaction_note_follows(tmp_path, memory_dir):
    # the same agent-only user message: followed by an ordinary answer, or last in the file
    rows = [{"role": r, "created": 1700000000 + n, "content": c, "metadata": m} for n, (r, c, m) in enumerate(
        goose_turn(0) + [("user", [{"type": "text", "text": "injected reminder"}], AGENT_ONLY),
                         ("assistant", [{"type": "text", "text": "Noted."}], {}),
                         ("user", [{"type": "text", "text": "last reminder"}], AGENT_ONLY)])]
    path = write_lines(tmp_path / "s.jsonl", rows)
    assert ingest(memory_dir, "g", path).appended == 8
    traces = agent_traces(memory_dir, "g")
    tagged = {t["content"]: t.get("tags") for t in traces if t["trace_type"] == "user"}
    assert tagged == {"list files 0": None, "injected reminder": ["context"], "last reminder": ["context"]}
    assert [t["content"] for t in traces][-3:] == ["injected reminder", "Noted.", "last reminder"]
    assert not any("harness_compaction" in t for t in traces)


def test_a_session_goose_compacts_after_a_sync_gains_its_summary_and_nothing_twice(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    synced(mem, home, "goose")
    con = sqlite3.connect(_db(home))  # Goose compacts: the conversation replaced (rows rewritten)
    con.execute("DELETE FROM messages WHERE session_id = ?", (A,))
    note = "Your context was compacted. The previous message contains a summary of the conversation so far."
    con.executemany("INSERT INTO messages (session_id, role, content_json, created_timestamp, metadata_json)"
                    " VALUES (?,?,?,?,?)", [(A, role, orjson.dumps(content).decode(), 1770105600 + n,
                                             orjson.dumps(meta).decode())
                                            for n, (role, content, meta) in enumerate(_compacted(note))])
    con.execute("UPDATE sessions SET updated_at = '2026-02-04 00:00:00' WHERE id = ?", (A,))
    con.commit()
    con.close()
    agent = f"goose.app.{A}-{STAMP}"
    report = synced(mem, home, "goose")[agent]
    assert (report.events, report.duplicates) == (3, 10)
    traces = agent_traces(mem, agent)
    assert [(t["content"][:26], t.get("tags")) for t in traces[10:]] == [
        (SUMMARY_TEXT[:26], ["compact_summary"]), ("Your context was compacted", ["context"]),
        ("now read file1.txt", None)]
    assert len((mem / "agents" / agent / "episodic.jsonl").read_bytes().splitlines()) == 1


def test_every_compaction_of_a_session_goose_compacted_twice_is_the_harness_s(tmp_path, memory_dir):
    # a second compaction hides everything before it from the model too: the first summary and
    # its note become {"userVisible": false, "agentVisible": false}, and still are a compaction
    note = "Your context was compacted. The previous message contains a summary of the conversation so far."
    hidden = {"userVisible": False, "agentVisible": False}
    second = "The files are listed; file1.txt was read. Next: write the report."
    rows = [(role, content, {"userVisible": True, "agentVisible": False})
            for role, content, _ in goose_turn(0) + goose_turn(1)]
    rows += [("user", [{"type": "text", "text": SUMMARY_TEXT}], hidden),
             ("assistant", [{"type": "text", "text": note}], hidden),
             ("user", [{"type": "text", "text": "now read file1.txt"}], {"userVisible": True, "agentVisible": False}),
             ("user", [{"type": "text", "text": second}], AGENT_ONLY),
             ("assistant", [{"type": "text", "text": note}], AGENT_ONLY),
             ("user", [{"type": "text", "text": "write the report"}], {"userVisible": True, "agentVisible": True})]
    path = write_lines(tmp_path / "s.jsonl", [{"role": r, "created": 1700000000 + n, "content": c, "metadata": m}
                                              for n, (r, c, m) in enumerate(rows)])
    ingest(memory_dir, "g", path)
    traces = agent_traces(memory_dir, "g")
    assert [(t["content"], t["harness_compaction"]) for t in traces if t.get("tags") == ["compact_summary"]] == [
        (SUMMARY_TEXT, {"harness": "goose", "trigger": "auto"}), (second, {"harness": "goose", "trigger": "auto"})]
    items = [orjson.loads(line) for line in (memory_dir / "agents" / "g" / "episodic.jsonl").read_bytes().splitlines()]
    assert [i["summary"] for i in items] == [SUMMARY_TEXT, second]


def test_a_cleared_goose_session_is_read_again_from_the_database(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    synced(mem, home, "goose")
    agent, other = f"goose.app.{A}-{STAMP}", f"goose.web.{B}-{STAMP}"
    memcli.Memory(mem).agent(agent).clear()
    report = synced(mem, home, "goose")
    assert (report[agent].status, report[agent].events) == ("new", 10)
    assert (report[other].status, report[other].events) == ("unchanged", 0)


def test_a_summary_written_by_a_thinking_model_is_still_goose_s_compaction(tmp_path, memory_dir):
    # the summary is the model's answer as it came: a thinking item before its text
    note = "Your context was compacted. The previous message contains a summary of the conversation so far."
    rows = goose_turn(0) + [
        ("user", [{"type": "thinking", "thinking": "What matters next?", "signature": "s"},
                  {"type": "text", "text": SUMMARY_TEXT}], AGENT_ONLY),
        ("assistant", [{"type": "text", "text": note}], AGENT_ONLY)]
    path = write_lines(tmp_path / "s.jsonl", [{"working_dir": "/repo", "description": "x"}] + [
        {"role": r, "created": 1700000000 + n, "content": c, "metadata": m} for n, (r, c, m) in enumerate(rows)])
    assert ingest(memory_dir, "g", path).format == "goose"
    summary = [t for t in agent_traces(memory_dir, "g") if t["content"] == SUMMARY_TEXT]
    assert [(t["tags"], t["harness_compaction"]) for t in summary] == [
        (["compact_summary"], {"harness": "goose", "trigger": "auto"})]


def test_a_message_with_a_tool_item_is_no_compaction_summary_even_before_the_note(tmp_path, memory_dir):
    note = "Your context was compacted. The previous message contains a summary of the conversation so far."
    rows = goose_turn(0) + [
        ("user", [{"type": "text", "text": "partial"}, {"type": "toolResponse", "id": "tool_0", "toolResult": {
            "status": "success", "value": {"content": [{"type": "text", "text": "late"}], "isError": False}}}],
         AGENT_ONLY),
        ("assistant", [{"type": "text", "text": note}], AGENT_ONLY)]
    path = write_lines(tmp_path / "s.jsonl", [{"working_dir": "/repo", "description": "x"}] + [
        {"role": r, "created": 1700000000 + n, "content": c, "metadata": m} for n, (r, c, m) in enumerate(rows)])
    assert ingest(memory_dir, "g", path).format == "goose"
    assert not any("harness_compaction" in t for t in agent_traces(memory_dir, "g"))
