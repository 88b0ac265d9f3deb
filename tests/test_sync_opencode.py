"""opencode: ``memcli sync --source opencode`` over a database with opencode's own tables and over
the legacy JSON tree, and ``--from opencode`` for ``opencode export`` documents (fixtures written
by tests/sync_more_fixtures.py from opencode's session schema and message parts)."""

from __future__ import annotations

import sqlite3

import orjson

import memcli
from memcli.ingest.api import ingest
from tests.helpers import agent_traces, run_memcli, synced, synced_again_reading_nothing
from tests.sync_more_fixtures import oc_turn, opencode_db, opencode_legacy

# time-ordered ids that share a long prefix: a shortened id would not be unique
S1, S2 = "ses_3f2a1b0c9d8eAAAAAAAAAAAA01", "ses_3f2a1b0c9d8eAAAAAAAAAAAA02"


def _db(home):
    return home / ".local" / "share" / "opencode" / "opencode.db"


def _home(tmp_path):
    home = tmp_path / "home"
    opencode_db(_db(home), {S1: ("/home/me/app", oc_turn(0) + oc_turn(1)), S2: ("/srv/web", oc_turn(0, "otter"))})
    return home




def test_first_sync_reads_the_database_without_writing_it(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    before = _db(home).read_bytes()
    report = synced(mem, home, "opencode")
    assert {a: (r.status, r.events) for a, r in report.items()} == {
        f"opencode.app.{S1}": ("new", 10), f"opencode.web.{S2}": ("new", 5)}
    traces = agent_traces(mem, f"opencode.app.{S1}")
    assert [(t["trace_type"], t.get("tags", [])) for t in traces[:5]] == [
        ("user", []), ("assistant", ["reasoning"]), ("tool_call", []), ("tool_result", []), ("assistant", [])]
    assert traces[2]["tool_args"] == {"command": "ruff check 0"} and traces[3]["tool_result"] == "0 errors fixed"
    meta = orjson.loads((mem / "agents" / f"opencode.app.{S1}" / ".source.json").read_bytes())
    assert meta["resume"] == f"cd /home/me/app && opencode --session {S1}" and meta["title"] == "title AA01"
    assert _db(home).read_bytes() == before


def test_a_channel_database_is_read_beside_the_main_one(tmp_path):
    # opencode of another channel than latest/beta/prod (a dev or preview build) writes
    # opencode-<channel>.db instead of opencode.db
    home, mem = _home(tmp_path), tmp_path / "mem"
    s3 = "ses_3f2a1b0c9d8eAAAAAAAAAAAA03"
    opencode_db(_db(home).with_name("opencode-dev.db"), {s3: ("/home/me/tool", oc_turn(0, "heron"))})
    report = synced(mem, home, "opencode")
    assert {a: r.status for a, r in report.items()} == {
        f"opencode.app.{S1}": "new", f"opencode.web.{S2}": "new", f"opencode.tool.{s3}": "new"}
    assert report[f"opencode.tool.{s3}"].path.endswith("opencode-dev.db")
    _db(home).unlink()   # only a channel database: it is still found, the legacy tree is not looked for
    again = synced(mem, home, "opencode")
    assert {a: r.status for a, r in again.items()} == {f"opencode.tool.{s3}": "unchanged"}


def test_rows_of_the_v2_session_store_are_named_as_passed_over_not_taken_as_nothing(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    con = sqlite3.connect(_db(home))
    con.execute("CREATE TABLE session_message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, type TEXT NOT NULL,"
                " seq INTEGER, time_created INTEGER, time_updated INTEGER, data TEXT NOT NULL)")
    for n in range(3):
        con.execute("INSERT INTO session_message VALUES (?, ?, 'user', ?, 0, 0, ?)",
                    (f"msg_v2{n}", S2, n, orjson.dumps({"text": "hello", "time": {"created": 0}}).decode()))
    con.commit()
    con.close()
    report = synced(mem, home, "opencode")
    assert report[f"opencode.web.{S2}"].skipped["session_message rows (opencode's v2 session store, not read)"] == 3
    assert "session_message rows (opencode's v2 session store, not read)" not in report[f"opencode.app.{S1}"].skipped


def test_no_change_sync_does_not_open_the_database(tmp_path, monkeypatch):
    home, mem = _home(tmp_path), tmp_path / "mem"
    report = synced_again_reading_nothing(monkeypatch, lambda: synced(mem, home, "opencode"), mem,
                                          "memcli.sync.opencode.read_database")
    assert {r.status for r in report.values()} == {"unchanged"}


def test_appended_session_and_a_finished_tool_add_exactly_the_new_events(tmp_path):
    home, mem = tmp_path / "home", tmp_path / "mem"
    opencode_db(_db(home), {S1: ("/home/me/app", oc_turn(0, status="running"))})
    assert synced(mem, home, "opencode")[f"opencode.app.{S1}"].events == 4  # the call, no result yet
    con = sqlite3.connect(_db(home))
    pid, data = con.execute("SELECT id, data FROM part WHERE data LIKE '%\"tool\"%'").fetchone()
    done = orjson.loads(data)
    done["state"].update(status="completed", output="0 errors fixed")
    con.execute("UPDATE part SET data = ?, time_updated = time_updated + 5000 WHERE id = ?", (orjson.dumps(done), pid))
    con.commit()
    con.close()
    opencode_db(_db(home), {S1: ("/home/me/app", oc_turn(1))})
    report = synced(mem, home, "opencode")[f"opencode.app.{S1}"]
    assert (report.status, report.events) == ("rewritten", 6)  # the result, then the new turn's 5
    traces = agent_traces(mem, f"opencode.app.{S1}")
    assert len({t["id"] for t in traces}) == len(traces) == 10


def test_rewritten_rows_are_reconciled_never_duplicated(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    synced(mem, home, "opencode")
    con = sqlite3.connect(_db(home))
    con.execute("UPDATE session SET time_updated = time_updated + 99 WHERE id = ?", (S2,))
    con.commit()
    con.close()
    report = synced(mem, home, "opencode")[f"opencode.web.{S2}"]
    assert (report.status, report.events, report.duplicates) == ("rewritten", 0, 5)


def test_corrupt_session_is_reported_others_import(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    con = sqlite3.connect(_db(home))
    con.execute("UPDATE part SET data = '{\"type\": ' WHERE session_id = ? AND data LIKE '%reasoning%'", (S1,))
    con.commit()
    con.close()
    proc = run_memcli("--dir", mem, "sync", "--home", home, "--source", "opencode")
    assert proc.returncode == 1
    assert f"sync: skipped {_db(home)}: session {S1}: " in proc.stderr.decode()
    assert {a.agent for a in memcli.Memory(mem).agents()} == {f"opencode.web.{S2}"}


def test_a_locked_database_is_retried_then_reported_never_modified(tmp_path, monkeypatch):
    home, mem = _home(tmp_path), tmp_path / "mem"
    monkeypatch.setattr("memcli.sync.opencode.BUSY_SECONDS", 0.3)
    holder = sqlite3.connect(_db(home), isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        before = _db(home).read_bytes()
        report = memcli.Memory(mem).sync(home=home, source="opencode")
        assert [s.status for s in report.sessions] == ["failed"]
        assert "cannot read the opencode database: database is locked" in report.sessions[0].error
        assert _db(home).read_bytes() == before
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert len(memcli.Memory(mem).sync(home=home, source="opencode").sessions) == 2


def test_wal_database_is_read_while_opencode_holds_it_open(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    writer = sqlite3.connect(_db(home))
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("BEGIN IMMEDIATE")  # a write in progress: WAL readers go on
    try:
        assert {r.status for r in synced(mem, home, "opencode").values()} == {"new"}
    finally:
        writer.rollback()
        writer.close()


def test_legacy_tree_and_export_documents(tmp_path, memory_dir):
    home, mem = tmp_path / "home", tmp_path / "mem"
    storage = home / ".local" / "share" / "opencode" / "storage"
    opencode_legacy(storage, S1, "/home/me/old", oc_turn(0))
    report = memcli.Memory(mem).sync(home=home, source="opencode")
    assert [(s.agent, s.status, s.events) for s in report.sessions] == [(f"opencode.old.{S1}", "new", 5)]
    again = memcli.Memory(mem).sync(home=home, source="opencode")
    assert [s.status for s in again.sessions] == ["unchanged"]
    from memcli.sync.opencode import legacy_document

    path = tmp_path / "export.json"
    path.write_bytes(orjson.dumps(legacy_document(str(storage / "session" / "p1" / f"{S1}.json"), storage)))
    result = ingest(memory_dir, "oc", path)
    assert (result.format, result.detected, result.appended) == ("opencode", True, 5)
    assert result.skipped == {"step-start parts": 1, "step-finish parts": 1}
