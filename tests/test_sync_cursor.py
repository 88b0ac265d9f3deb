"""Cursor agent transcripts: ``--from cursor`` and ``memcli sync --source cursor`` over transcripts
written by tests/sync_more_fixtures.py in the shape Cursor's CLI writes (no trailing newline; no
ids, so byte-identical lines are distinct records)."""

from __future__ import annotations

import orjson

import memcli
import memcli.sync.engine as engine
from memcli.ingest.api import ingest
from tests.helpers import agent_traces, read_jsonl, run_memcli, synced, synced_again_reading_nothing
from tests.sync_more_fixtures import cu_turn, cursor_transcript, sid, write_lines

C1, C2 = sid(1, "cu"), sid(2, "cu")
PROJ = "home-me-app"


def _home(tmp_path):
    home = tmp_path / "home"
    write_lines(cursor_transcript(home, PROJ, C1), cu_turn(0) + cu_turn(1), newline_at_end=False)
    write_lines(cursor_transcript(home, "srv-web", C2), cu_turn(0, "ibis"), newline_at_end=False)
    return home




def test_ingest_maps_the_ask_inside_user_query(memory_dir, tmp_path):
    path = write_lines(tmp_path / "t.jsonl", cu_turn(0) + [{"type": "turn_ended"}], newline_at_end=False)
    result = ingest(memory_dir, "cu", path)
    assert (result.format, result.detected) == ("cursor", True)
    got = read_jsonl(memory_dir / "agents" / "cu" / "raw_traces.jsonl")
    assert [(t["trace_type"], t.get("tags", []), t.get("content") or t.get("tool_result")) for t in got] == [
        ("user", [], "rename helper 0"), ("user", ["context"], "<user_info>OS: linux</user_info>"),
        ("assistant", [], "Searching."), ("tool_call", [], None), ("tool_result", [], "src/a0.py"),
        ("assistant", [], "Renamed helper 0.")]
    assert got[3]["tool_call_id"] == got[4]["tool_call_id"] and got[3]["tool_name"] == "Grep"
    assert result.skipped["turn_ended lines"] == 1


def test_first_sync_reads_the_unterminated_last_line(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    report = synced(mem, home, "cursor")
    assert {a: (r.status, r.events) for a, r in report.items()} == {
        f"cursor.{PROJ}.{C1}": ("new", 12), f"cursor.srv-web.{C2}": ("new", 6)}
    assert agent_traces(mem, f"cursor.{PROJ}.{C1}")[-1]["content"] == "Renamed helper 1."
    meta = memcli.Memory(mem).agents()
    assert {a.agent for a in meta} == set(report)


def test_no_change_sync_reads_nothing(tmp_path, monkeypatch):
    home, mem = _home(tmp_path), tmp_path / "mem"
    report = synced_again_reading_nothing(monkeypatch, lambda: synced(mem, home, "cursor"), mem,
                                          (engine, "_read_file"))
    assert {r.status for r in report.values()} == {"unchanged"}


def test_appended_transcript_adds_exactly_the_new_events_and_identical_lines_both_count(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    synced(mem, home, "cursor")
    path = cursor_transcript(home, "srv-web", C2)
    same = {"role": "assistant", "message": {"content": [{"type": "text", "text": "Done."}]}}
    with open(path, "ab") as f:  # Cursor ends the old last line when it writes the next one
        f.write(b"\n")
    write_lines(path, [same, same], mode="ab", newline_at_end=False)
    report = synced(mem, home, "cursor")[f"cursor.srv-web.{C2}"]
    assert (report.status, report.events) == ("appended", 2)
    traces = agent_traces(mem, f"cursor.srv-web.{C2}")
    assert [t["content"] for t in traces[-2:]] == ["Done.", "Done."] and len({t["id"] for t in traces}) == 8


def test_rewritten_transcript_no_duplicates(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    synced(mem, home, "cursor")
    path = cursor_transcript(home, PROJ, C1)
    fresh = write_lines(path.with_suffix(".new"), cu_turn(0) + cu_turn(1) + cu_turn(2), newline_at_end=False)
    fresh.replace(path)  # written anew (another inode), the old records and one more turn
    report = synced(mem, home, "cursor")[f"cursor.{PROJ}.{C1}"]
    assert (report.status, report.events, report.duplicates) == ("rewritten", 6, 12)


def test_corrupt_transcript_is_reported_others_import(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    bad = cursor_transcript(home, PROJ, C1)
    lines = bad.read_bytes().split(b"\n")
    lines[1] = b'{"role": "assistant", "message": '
    bad.write_bytes(b"\n".join(lines))
    proc = run_memcli("--dir", mem, "sync", "--home", home, "--source", "cursor")
    assert proc.returncode == 1
    assert f"sync: skipped {bad}: line 2: not valid JSON" in proc.stderr.decode()
    assert {a.agent for a in memcli.Memory(mem).agents()} == {f"cursor.srv-web.{C2}"}


# ---------------------------------------------------------------------------- the editor's database
SECRET = "cursor-access-token-never-read"
K1, K2 = "b5d7c9e0-1111-4aaa-8bbb-000000000001", "b5d7c9e0-1111-4aaa-8bbb-000000000002"


def _state_db(home, composers: dict, *, platform=(".config", "Cursor")):
    """Cursor's User/globalStorage/state.vscdb: ItemTable (settings and credentials) and
    cursorDiskKV (composerData:<id>, bubbleId:<id>:<bubble>), values as JSON text."""
    import sqlite3

    path = home.joinpath(*platform, "User", "globalStorage", "state.vscdb")
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE IF NOT EXISTS ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    con.execute("CREATE TABLE IF NOT EXISTS cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    con.execute("INSERT INTO ItemTable VALUES ('cursorAuth/accessToken', ?)", (SECRET,))
    for cid, (meta, bubbles) in composers.items():
        headers = [{"bubbleId": b["bubbleId"], "type": b["type"]} for b in bubbles]
        con.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", (f"composerData:{cid}", orjson.dumps(
            {"_v": 10, "composerId": cid, "fullConversationHeadersOnly": headers,
             "blobEncryptionKey": SECRET, **meta}).decode()))
        for b in bubbles:
            con.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", (f"bubbleId:{cid}:{b['bubbleId']}",
                                                                    orjson.dumps({"_v": 3, **b}).decode()))
    con.commit()
    con.close()
    return path


def _bubbles(cid, start=0, turns=1):
    out = []
    for t in range(start, start + turns):
        ms = 1789923600000 + 60000 * t
        out += [{"bubbleId": f"{cid[:4]}-u{t}", "type": 1, "text": f"why does upload {t} retry", "createdAt": ms},
                {"bubbleId": f"{cid[:4]}-a{t}", "type": 2, "text": "", "createdAt": ms + 1000,
                 "thinking": {"text": f"look at retry {t}"},
                 "toolFormerData": {"name": "read_file", "toolCallId": f"tc{t}", "status": "completed",
                                    "rawArgs": orjson.dumps({"target_file": "up.py"}).decode(),
                                    "result": f"retries = {t}"}},
                {"bubbleId": f"{cid[:4]}-b{t}", "type": 2, "text": f"It retries {t} times.",
                 "createdAt": ms + 2000}]
    return out


def test_editor_chats_in_state_vscdb_are_synced_one_agent_per_composer(tmp_path, monkeypatch):
    home, mem = _home(tmp_path), tmp_path / "mem"
    meta = {"name": "Upload retries", "createdAt": 1789923600000, "lastUpdatedAt": 1789923660000,
            "workspaceIdentifier": {"id": "ws1", "uri": {"fsPath": "/home/me/uploader"}}}
    db = _state_db(home, {K1: (meta, _bubbles(K1)),
                          # a composer whose agent transcript exists is read from the transcript only
                          C1: ({"lastUpdatedAt": 5}, _bubbles(C1))})
    report = synced(mem, home, "cursor")
    assert (report[f"cursor.uploader.{K1}"].status, report[f"cursor.uploader.{K1}"].events) == ("new", 5)
    assert f"cursor.{PROJ}.{C1}" in report and len(report) == 3
    got = agent_traces(mem, f"cursor.uploader.{K1}")
    assert [(t["trace_type"], t.get("tags", []), t.get("content") or t.get("tool_result")) for t in got] == [
        ("user", [], "why does upload 0 retry"), ("assistant", ["reasoning"], "look at retry 0"),
        ("tool_call", [], None), ("tool_result", [], "retries = 0"), ("assistant", [], "It retries 0 times.")]
    assert got[2]["tool_args"] == {"target_file": "up.py"} and got[2]["tool_call_id"] == got[3]["tool_call_id"]
    assert got[0]["id"] == f"cud-{K1[:4]}-u0-0" and got[0]["ts"] == 1789923600.0
    meta_row = next(a for a in memcli.Memory(mem).agents() if a.agent == f"cursor.uploader.{K1}")
    assert (meta_row.title, meta_row.source_path) == ("Upload retries", str(db))
    assert SECRET.encode() not in b"".join(p.read_bytes() for p in mem.rglob("*") if p.is_file())
    # unchanged: the database is not opened
    again = synced_again_reading_nothing(monkeypatch, lambda: synced(mem, home, "cursor"), mem,
                                         ("memcli.sync.cursor.read_database"))
    assert {r.status for r in again.values()} == {"unchanged"}


def test_a_grown_composer_adds_only_its_new_bubbles(tmp_path):
    home, mem = tmp_path / "home", tmp_path / "mem"
    _state_db(home, {K1: ({"lastUpdatedAt": 1}, _bubbles(K1)), K2: ({"lastUpdatedAt": 1}, _bubbles(K2))},
              platform=("Library", "Application Support", "Cursor"))
    synced(mem, home, "cursor")
    _state_db(home, {K1: ({"lastUpdatedAt": 2}, _bubbles(K1, 0, 2))},
              platform=("Library", "Application Support", "Cursor"))
    report = synced(mem, home, "cursor")
    assert {a: (r.status, r.events) for a, r in report.items()} == {
        f"cursor.unknown.{K1}": ("rewritten", 5), f"cursor.unknown.{K2}": ("unchanged", 0)}
    assert len(agent_traces(mem, f"cursor.unknown.{K1}")) == 10
