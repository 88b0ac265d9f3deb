"""Cursor agent transcripts: ``--from cursor`` and ``memcli sync --source cursor`` over transcripts
written by tests/sync_more_fixtures.py in the shape Cursor's CLI writes (no trailing newline; no
ids, so byte-identical lines are distinct records)."""

from __future__ import annotations

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
