"""Goose: ``memcli sync --source goose`` over a sessions database written with Goose's own schema
(tests/sync_more_fixtures.py, from block/goose's session storage), and ``--from goose`` for the
legacy ``.jsonl`` sessions."""

from __future__ import annotations

import sqlite3

import orjson
import pytest

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


# Goose's automatic compaction (block/goose crates/goose/src/context_mgmt/mod.rs, compact_messages)
# writes, after its summary and note, a copy of the last user message the model saw
# (Message::user().with_text: shown to both); when that message was the conversation's last one,
# it hides the original (MessageMetadata::invisible()) just before the summary.
TOOL_LOOP_NOTE = ("Your context was compacted. The previous message contains a summary of the conversation so far.\n"
                  "Do not mention that you read a summary or that conversation summarization occurred.\n"
                  "Continue calling tools as necessary to complete the task.")
RECENT_NOTE = ("Your context was compacted. The previous message contains a summary of the conversation so far.\n"
               "Do not mention that you read a summary or that conversation summarization occurred.\n"
               "Just continue the conversation naturally based on the summarized context.")
SHOWN = {"userVisible": True, "agentVisible": True}
INVISIBLE = {"userVisible": False, "agentVisible": False}
ASK = "now read file1.txt"


def _text(role: str, text: str, meta: dict) -> tuple[str, list, dict]:
    return role, [{"type": "text", "text": text}], meta


def _hidden_from_model(rows: list) -> list:
    """``rows`` as Goose's compaction leaves them: ``with_agent_invisible`` (shown as before)."""
    return [(role, content, {**(meta or SHOWN), "agentVisible": False}) for role, content, meta in rows]


def _tool_loop_compacted() -> list:
    """Compacted mid tool loop: the ask (still shown), its call and result hidden from the model;
    the summary, the note, Goose's copy of the ask; the work goes on."""
    loop = goose_turn(1)[:3]   # "list files 1", its call, its result: no answer yet
    after = [(role, content, SHOWN) for role, content, _ in goose_turn(2)[1:]]   # a call, its result, the answer
    return (_hidden_from_model(goose_turn(0) + loop)
            + [_text("user", SUMMARY_TEXT, AGENT_ONLY), _text("assistant", TOOL_LOOP_NOTE, AGENT_ONLY),
               _text("user", "list files 1", SHOWN)] + after)


def _before_recent() -> list:
    return goose_turn(0) + goose_turn(1) + [_text("user", ASK, SHOWN)]


def _recent_compacted() -> list:
    """Compacted on the user's newest ask before answering it: that ask hidden from both, just
    before the summary; the copy after the note; the answer."""
    return (_hidden_from_model(goose_turn(0) + goose_turn(1))
            + [_text("user", ASK, INVISIBLE), _text("user", SUMMARY_TEXT, AGENT_ONLY),
               _text("assistant", RECENT_NOTE, AGENT_ONLY), _text("user", ASK, SHOWN),
               _text("assistant", "file1.txt holds the report.", SHOWN)])


def _ingested(tmp_path, memory_dir, rows: list, agent: str = "g") -> list[dict]:
    path = write_lines(tmp_path / f"{agent}.jsonl", [{"working_dir": "/repo", "description": "x"}] + [
        {"role": r, "created": 1700000000 + n, "content": c, "metadata": m} for n, (r, c, m) in enumerate(rows)])
    assert ingest(memory_dir, agent, path).format == "goose"
    return agent_traces(memory_dir, agent)


def _users(traces: list[dict]) -> list[tuple]:
    return [(t["content"], t.get("tags"), t["turn_id"]) for t in traces if t["trace_type"] == "user"]


def test_goose_s_copy_of_the_ask_after_a_tool_loop_compaction_is_context_not_a_second_ask(tmp_path, memory_dir):
    traces = _ingested(tmp_path, memory_dir, _tool_loop_compacted())
    assert _users(traces) == [
        ("list files 0", None, "turn_0001"), ("list files 1", None, "turn_0002"),
        (SUMMARY_TEXT, ["compact_summary"], "turn_0002"), ("list files 1", ["context"], "turn_0002")]
    # the work after the copy stays in the ask's turn
    assert traces[-1]["content"] == "There is file2.txt" and traces[-1]["turn_id"] == "turn_0002"


def test_the_ask_goose_hides_when_it_compacts_before_answering_stays_the_ask_its_copy_is_context(
        tmp_path, memory_dir):
    traces = _ingested(tmp_path, memory_dir, _recent_compacted())
    assert _users(traces) == [
        ("list files 0", None, "turn_0001"), ("list files 1", None, "turn_0002"), (ASK, None, "turn_0003"),
        (SUMMARY_TEXT, ["compact_summary"], "turn_0003"), (ASK, ["context"], "turn_0003")]
    assert traces[-1]["content"] == "file1.txt holds the report." and traces[-1]["turn_id"] == "turn_0003"


def test_a_sync_before_and_after_goose_compacts_on_the_newest_ask_stores_what_one_import_does(
        tmp_path, memory_dir):
    home, mem = tmp_path / "home", tmp_path / "mem"
    goose_db(_db(home), {A: ("/home/me/app", _before_recent())})
    synced(mem, home, "goose")   # the ask, shown, before Goose answers it
    con = sqlite3.connect(_db(home))   # Goose compacts: the conversation replaced (rows rewritten)
    con.execute("DELETE FROM messages WHERE session_id = ?", (A,))
    con.executemany("INSERT INTO messages (session_id, role, content_json, created_timestamp, metadata_json)"
                    " VALUES (?,?,?,?,?)", [(A, role, orjson.dumps(content).decode(), 1770105600 + n,
                                             orjson.dumps(meta).decode())
                                            for n, (role, content, meta) in enumerate(_recent_compacted())])
    con.execute("UPDATE sessions SET updated_at = '2026-02-04 00:00:00' WHERE id = ?", (A,))
    con.commit()
    con.close()
    agent = f"goose.app.{A}-{STAMP}"
    assert synced(mem, home, "goose")[agent].events == 4   # summary, note, copy, answer
    synced_traces = agent_traces(mem, agent)
    once = _ingested(tmp_path, memory_dir, _recent_compacted())
    assert [(t["trace_type"], t["content"], t.get("tags"), t["turn_id"]) for t in synced_traces] == \
        [(t["trace_type"], t["content"], t.get("tags"), t["turn_id"]) for t in once]
    assert [t["content"] for t in synced_traces if t["trace_type"] == "user" and not t.get("tags")] == [
        "list files 0", "list files 1", ASK]


def test_goose_compacting_twice_on_the_same_ask_copies_its_copy_still_one_ask(tmp_path, memory_dir):
    # compacted on the newest ask, then again before any answer: the first copy is then the newest
    # message, hidden in its turn (invisible), and copied again after the second note
    second = "The files are listed; the user wants file1.txt read."
    rows = (_hidden_from_model(goose_turn(0) + goose_turn(1))
            + [_text("user", ASK, INVISIBLE), _text("user", SUMMARY_TEXT, INVISIBLE),
               _text("assistant", RECENT_NOTE, INVISIBLE), _text("user", ASK, INVISIBLE),
               _text("user", second, AGENT_ONLY), _text("assistant", RECENT_NOTE, AGENT_ONLY),
               _text("user", ASK, SHOWN), _text("assistant", "file1.txt holds the report.", SHOWN)])
    traces = _ingested(tmp_path, memory_dir, rows)
    assert _users(traces)[2:] == [
        (ASK, None, "turn_0003"), (SUMMARY_TEXT, ["compact_summary"], "turn_0003"), (ASK, ["context"], "turn_0003"),
        (second, ["compact_summary"], "turn_0003"), (ASK, ["context"], "turn_0003")]


def test_the_same_words_typed_again_are_an_ask_unless_they_are_goose_s_copy_right_after_its_note(
        tmp_path, memory_dir):
    # /compact copies nothing: what follows its note is the person's; so is a repeat further on
    manual = "Your context was compacted at the user's request. The previous message contains a summary."
    rows = (_hidden_from_model(goose_turn(0) + goose_turn(1))
            + [_text("user", SUMMARY_TEXT, AGENT_ONLY), _text("assistant", manual, AGENT_ONLY),
               _text("user", "list files 1", SHOWN), _text("assistant", "Again: file1.txt", SHOWN),
               _text("user", "list files 1", SHOWN)])
    traces = _ingested(tmp_path, memory_dir, rows)
    assert [(c, tags) for c, tags, _ in _users(traces)] == [
        ("list files 0", None), ("list files 1", None), (SUMMARY_TEXT, ["compact_summary"]),
        ("list files 1", None), ("list files 1", None)]


def _manual_after_a_hidden_message() -> list:
    """A /compact (no copy) whose summary follows a message hidden from both, then the person
    typing that message's words again."""
    manual = "Your context was compacted at the user's request. The previous message contains a summary."
    return (_hidden_from_model(goose_turn(0) + goose_turn(1))
            + [_text("user", ASK, INVISIBLE), _text("user", SUMMARY_TEXT, AGENT_ONLY),
               _text("assistant", manual, AGENT_ONLY), _text("user", ASK, SHOWN)])


@pytest.mark.parametrize("rows", [_recent_compacted, _tool_loop_compacted, _manual_after_a_hidden_message])
def test_the_fidelity_bench_reads_goose_s_asks_before_its_compaction_as_the_importer_does(tmp_path, memory_dir,
                                                                                            rows):
    from tests.bench.fidelity import compactions

    traces = _ingested(tmp_path, memory_dir, rows())
    before = traces[:next(n for n, t in enumerate(traces) if t.get("tags") == ["compact_summary"])]
    asks = [t["content"] for t in before if t["trace_type"] == "user" and not t.get("tags")]
    [session] = compactions(tmp_path / "g.jsonl")
    assert (session.first_ask, session.last_ask) == (asks[0], asks[-1])
