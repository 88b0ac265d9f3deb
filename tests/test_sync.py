"""``memcli sync``: the framework (discovery, agent names, incremental state, failures, CLI) over
fake homes built by tests/sync_fixtures.py (lines written from the producers' formats)."""

from __future__ import annotations

import orjson
import pytest

import memcli
import memcli.sync.engine as engine
from tests.helpers import agent_traces, run_memcli, synced_again_reading_nothing
from tests.sync_fixtures import (
    CWD,
    cc_assistant,
    cc_session,
    cc_user,
    claude_project,
    codex_rollout,
    cx_lines,
    cx_turn,
    sid,
    write_lines,
)

S1, S2 = sid(1), sid(2)
X1 = sid(1, "cx")


def _home(tmp_path):
    home = tmp_path / "home"
    write_lines(claude_project(home) / f"{S1}.jsonl", cc_session(S1, 2))
    write_lines(claude_project(home) / f"{S2}.jsonl", cc_session(S2, 1))
    write_lines(codex_rollout(home, X1), cx_lines(X1, 2))
    # not sessions: the prompt histories
    write_lines(home / ".claude" / "history.jsonl", [{"display": "hi", "project": CWD}])
    write_lines(home / ".codex" / "history.jsonl", [{"session_id": X1, "ts": 1, "text": "hi"}])
    return home



def _sync(mem, home, **kw):
    return memcli.Memory(mem).sync(home=home, **kw)


def test_first_sync_one_agent_per_session_named_by_the_rule(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    report = _sync(mem, home)
    agents = sorted(s.agent for s in report.sessions)
    assert agents == sorted([f"claude-code.app.{S1}", f"claude-code.app.{S2}", f"codex.app.{X1}"])
    assert [s.status for s in report.sessions] == ["new"] * 3
    assert sorted(a.agent for a in memcli.Memory(mem).agents()) == agents  # history files are not agents
    cc = agent_traces(mem, f"claude-code.app.{S1}")
    assert [t["trace_type"] for t in cc] == ["user", "tool_call", "tool_result", "assistant"] * 2
    assert {t["source_event"] for t in cc} == {"claude-code"}
    cx = agent_traces(mem, f"codex.app.{X1}")
    assert [t["content"] for t in cx if t["trace_type"] == "user" and not t.get("tags")] == ["add feature 0", "add feature 1"]
    meta = orjson.loads((mem / "agents" / f"codex.app.{X1}" / ".source.json").read_bytes())
    assert meta["source"] == "codex" and meta["source_path"] == str(codex_rollout(home, X1))
    assert meta["resume"] == f"cd {CWD} && codex resume {X1}"
    assert meta["title"] == "add feature 0"


def test_no_change_sync_opens_no_session_file(tmp_path, monkeypatch):
    home, mem = _home(tmp_path), tmp_path / "mem"
    report = synced_again_reading_nothing(monkeypatch, lambda: _sync(mem, home), mem,
                                          (engine, "_read_file"), "memcli.sync._head.head_values")
    assert [s.status for s in report.sessions] == ["unchanged"] * 3
    assert sum(s.events for s in report.sessions) == 0


def test_appended_session_adds_exactly_the_new_events(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    _sync(mem, home)
    path = claude_project(home) / f"{S2}.jsonl"
    write_lines(path, [cc_user(S2, 50, "one more thing"), cc_assistant(S2, 51, "sure")], mode="ab")
    write_lines(codex_rollout(home, X1), cx_turn(X1, 7), mode="ab")
    report = _sync(mem, home)
    by = {s.agent: s for s in report.sessions}
    assert (by[f"claude-code.app.{S2}"].status, by[f"claude-code.app.{S2}"].events) == ("appended", 2)
    assert (by[f"codex.app.{X1}"].status, by[f"codex.app.{X1}"].events) == ("appended", 4)
    assert by[f"claude-code.app.{S1}"].status == "unchanged"
    cc = agent_traces(mem, f"claude-code.app.{S2}")
    assert [t["content"] for t in cc[-2:]] == ["one more thing", "sure"]
    assert len({t["id"] for t in cc}) == len(cc) == 6


def test_half_written_last_line_waits_for_its_newline(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    path = claude_project(home) / f"{S2}.jsonl"
    complete = orjson.dumps(cc_user(S2, 60, "typed while syncing"))
    with open(path, "ab") as f:
        f.write(complete[:25])
    r1 = {s.agent: s for s in _sync(mem, home).sessions}[f"claude-code.app.{S2}"]
    assert r1.events == 4 and r1.status == "new"
    with open(path, "ab") as f:
        f.write(complete[25:] + b"\n")
    r2 = {s.agent: s for s in _sync(mem, home).sessions}[f"claude-code.app.{S2}"]
    assert (r2.status, r2.events) == ("appended", 1)
    assert agent_traces(mem, f"claude-code.app.{S2}")[-1]["content"] == "typed while syncing"


def test_rewritten_session_is_reconciled_by_ids_never_duplicated(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    _sync(mem, home)
    path = claude_project(home) / f"{S1}.jsonl"
    lines = cc_session(S1, 2)
    path.unlink()  # a new inode, the same lines and one more: re-read whole
    write_lines(path, lines[:3] + [cc_user(S1, 90, "rewound here")])
    report = {s.agent: s for s in _sync(mem, home).sessions}[f"claude-code.app.{S1}"]
    assert report.status == "rewritten" and report.events == 1 and report.duplicates == 2
    traces = agent_traces(mem, f"claude-code.app.{S1}")
    assert len(traces) == 9 and len({t["id"] for t in traces}) == 9


def test_a_corrupt_session_is_reported_and_skipped_others_import(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    bad = claude_project(home) / f"{S2}.jsonl"
    data = bad.read_bytes().split(b"\n")
    data[2] = b'{"type": "user", "message": '  # a broken line in the middle
    bad.write_bytes(b"\n".join(data))
    proc = run_memcli("--dir", mem, "sync", "--home", home)
    assert proc.returncode == 1
    err = proc.stderr.decode()
    assert f"sync: skipped {bad}: line 3: not valid JSON" in err
    assert "1 failed" in err
    agents = {a.agent for a in memcli.Memory(mem).agents()}
    assert agents == {f"claude-code.app.{S1}", f"codex.app.{X1}"}
    # fixed: imported by the next sync, which then succeeds
    write_lines(bad, cc_session(S2, 1))
    proc = run_memcli("--dir", mem, "sync", "--home", home)
    assert proc.returncode == 0, proc.stderr
    assert f"claude-code.app.{S2}" in {a.agent for a in memcli.Memory(mem).agents()}


def test_dry_run_writes_nothing_and_lists_what_would_be_imported(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    proc = run_memcli("--dir", mem, "sync", "--home", home, "--dry-run", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = orjson.loads(proc.stdout)
    assert {s["status"] for s in doc["sessions"]} == {"new"}
    assert {s["agent"] for s in doc["sessions"]} == {f"claude-code.app.{S1}", f"claude-code.app.{S2}", f"codex.app.{X1}"}
    assert doc["summary"]["dry_run"] is True
    assert not mem.exists()


def test_source_option_limits_and_unknown_source_is_usage_error(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    report = _sync(mem, home, source="codex")
    assert [s.agent for s in report.sessions] == [f"codex.app.{X1}"]
    proc = run_memcli("--dir", mem, "sync", "--home", home, "--source", "nope")
    assert proc.returncode == 2 and "unknown source 'nope'" in proc.stderr.decode()


def test_cli_json_reports_each_session(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    proc = run_memcli("--dir", mem, "sync", "--home", home, "--json")
    assert proc.returncode == 0, proc.stderr
    doc = orjson.loads(proc.stdout)
    row = next(s for s in doc["sessions"] if s["source"] == "codex")
    assert row == {"agent": f"codex.app.{X1}", "source": "codex", "path": str(codex_rollout(home, X1)),
                   "status": "new", "events_added": 9, "resume": f"cd {CWD} && codex resume {X1}"}
    assert doc["summary"]["events_added"] == 9 + 8 + 4
    assert "sync: 3 sessions found; 3 imported (3 new, 0 appended, 0 rewritten); 21 events added" in proc.stderr.decode()


def test_archived_codex_sessions_are_found(tmp_path):
    home, mem = tmp_path / "home", tmp_path / "mem"
    write_lines(codex_rollout(home, X1, archived=True), cx_lines(X1, 1))
    report = _sync(mem, home)
    assert [(s.agent, s.events) for s in report.sessions] == [(f"codex.app.{X1}", 5)]


def _zstd_stream(data: bytes) -> bytes:
    """zstd frames as Codex's streaming encoder writes them (no content size in the header)."""
    import io

    import zstandard

    out = io.BytesIO()
    with zstandard.ZstdCompressor(level=3).stream_writer(out, closefd=False) as w:
        w.write(data[: len(data) // 2])
        w.flush()
        w.write(data[len(data) // 2:])
    return out.getvalue()


def test_codex_compressed_rollouts_are_read_and_a_plain_sibling_wins(tmp_path, monkeypatch):
    """Codex compresses cold rollouts in place to rollout-*.jsonl.zst and writes the .jsonl back
    (removing the .zst) when it resumes one: both are the same session, stored once."""
    home, mem = tmp_path / "home", tmp_path / "mem"
    X2 = sid(2, "cx")
    archived = codex_rollout(home, X1, archived=True)
    plain = write_lines(archived, cx_lines(X1, 2))
    zst = archived.with_name(archived.name + ".zst")
    zst.write_bytes(_zstd_stream(plain.read_bytes()))
    plain.unlink()
    live = codex_rollout(home, X2)
    write_lines(live, cx_lines(X2, 1))
    live.with_name(live.name + ".zst").write_bytes(b"stale copy: the plain file beside it is read")
    report = _sync(mem, home)
    assert [(s.agent, s.path, s.status, s.events) for s in report.sessions] == [
        (f"codex.app.{X2}", str(live), "new", 5), (f"codex.app.{X1}", str(zst), "new", 9)]
    with monkeypatch.context() as m:
        second = synced_again_reading_nothing(m, lambda: _sync(mem, home), mem, (engine, "read_bytes"))
        assert [s.status for s in second.sessions] == ["unchanged", "unchanged"]
    # resumed: Codex writes the plain rollout back, grown, and removes the .zst
    write_lines(archived, cx_lines(X1, 2) + cx_turn(X1, 2))
    zst.unlink()
    again = {s.agent: s for s in _sync(mem, home).sessions}[f"codex.app.{X1}"]
    assert (again.status, again.events, again.duplicates) == ("new", 4, 9)
    assert len(agent_traces(mem, f"codex.app.{X1}")) == 13


def test_a_corrupt_compressed_rollout_is_reported_and_others_import(tmp_path):
    home, mem = tmp_path / "home", tmp_path / "mem"
    bad = codex_rollout(home, X1, archived=True)
    bad = bad.with_name(bad.name + ".zst")
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"not zstd at all")
    write_lines(codex_rollout(home, sid(2, "cx")), cx_lines(sid(2, "cx"), 1))
    report = _sync(mem, home)
    assert [(s.status, s.events) for s in report.sessions] == [("new", 5), ("failed", 0)]
    assert report.sessions[1].error.startswith(f"{bad}: ") and "zstd" in report.sessions[1].error


def test_harness_homes_moved_by_their_environment_variables_are_read(tmp_path, monkeypatch):
    """CODEX_HOME, CLAUDE_CONFIG_DIR and COPILOT_HOME move where the harnesses write; sync of the
    user's own home follows them, and `--home` elsewhere does not."""
    from tests.sync_more_fixtures import cp_session

    home, moved, mem = tmp_path / "home", tmp_path / "moved", tmp_path / "mem"
    write_lines(codex_rollout(moved, X1), cx_lines(X1, 1))
    write_lines(claude_project(moved) / f"{S1}.jsonl", cc_session(S1, 1))
    P1 = sid(1, "cp")
    write_lines(moved / ".copilot" / "session-state" / P1 / "events.jsonl", cp_session(P1, 1))
    write_lines(claude_project(home) / f"{sid(3)}.jsonl", cc_session(sid(3), 1))  # not read: CLAUDE_CONFIG_DIR wins
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CODEX_HOME", str(moved / ".codex"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(moved / ".claude"))
    monkeypatch.setenv("COPILOT_HOME", str(moved / ".copilot"))
    assert [s.agent for s in memcli.Memory(mem).sync(dry_run=True).sessions] == [
        f"claude-code.app.{S1}", f"codex.app.{X1}", f"copilot.app.{P1}"]
    other = tmp_path / "old-laptop"
    write_lines(claude_project(other) / f"{S2}.jsonl", cc_session(S2, 1))
    # the XDG directory some Claude Code 1.x versions wrote to is read beside ~/.claude
    write_lines(other / ".config" / "claude" / "projects" / "-srv-web" / f"{sid(4)}.jsonl", cc_session(sid(4), 1))
    assert [s.agent for s in _sync(mem, other, dry_run=True).sessions] == [
        f"claude-code.app.{S2}", f"claude-code.app.{sid(4)}"]


def test_a_codex_thread_named_by_the_user_has_that_title(tmp_path):
    home, mem = tmp_path / "home", tmp_path / "mem"
    path = write_lines(codex_rollout(home, X1), cx_lines(X1, 1))
    _sync(mem, home)
    assert memcli.Memory(mem).agents()[0].title == "add feature 0"  # no name yet: the first ask
    renamed = {"timestamp": "2026-03-02T09:05:00.000Z", "type": "event_msg",
               "payload": {"type": "thread_name_updated", "thread_id": X1, "thread_name": "zebra migration"}}
    write_lines(path, [renamed], mode="ab")
    _sync(mem, home)
    assert memcli.Memory(mem).agents()[0].title == "zebra migration"


def test_import_session_is_the_reusable_entry_point(tmp_path):
    """What a harness hook calls for a live transcript: same agent, same state as sync."""
    from memcli.sync import get_source
    from memcli.sync.engine import import_session

    home, mem = _home(tmp_path), tmp_path / "mem"
    path = claude_project(home) / f"{S1}.jsonl"
    session = get_source("claude-code").session_of(str(path))
    first = import_session(mem, session)
    assert (first.agent, first.status, first.events) == (f"claude-code.app.{S1}", "new", 8)
    report = {s.agent: s for s in _sync(mem, home).sessions}
    assert report[f"claude-code.app.{S1}"].status == "unchanged"  # the hook's import is known to sync


@pytest.mark.parametrize("bad", [b"", b"\n\n"])
def test_empty_session_file_imports_nothing(tmp_path, bad):
    home, mem = tmp_path / "home", tmp_path / "mem"
    path = claude_project(home) / f"{S1}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(bad)
    report = _sync(mem, home)
    assert [(s.status, s.events) for s in report.sessions] == [("new", 0)]
    assert memcli.Memory(mem).agents() == []


def test_claude_code_session_state_rows_are_metadata_not_unknown(tmp_path):
    home, mem = tmp_path / "home", tmp_path / "mem"
    lines = cc_session(S1, 1)
    lines += [{"type": "ai-title", "aiTitle": "Fix the flaky test", "sessionId": S1},
              {"type": "pr-link", "sessionId": S1, "prNumber": 7, "prUrl": "https://github.com/o/r/pull/7",
               "prRepository": "o/r", "timestamp": "2026-03-01T11:00:00Z"},
              {"type": "bridge-session", "sessionId": S1},
              {"type": "pr-link", "sessionId": S1, "prNumber": 7, "prUrl": "https://github.com/o/r/pull/7"}]
    write_lines(claude_project(home) / f"{S1}.jsonl", lines)
    report = _sync(mem, home).sessions[0]
    assert report.skipped == {} and report.title == "Fix the flaky test"
    meta = orjson.loads((mem / "agents" / report.agent / ".source.json").read_bytes())
    assert meta["pr_links"] == ["https://github.com/o/r/pull/7"] and meta["ai_title"] == "Fix the flaky test"
    # the user's own title, appended later, wins; links accumulate
    write_lines(claude_project(home) / f"{S1}.jsonl",
                [{"type": "custom-title", "customTitle": "Mine", "sessionId": S1},
                 {"type": "pr-link", "sessionId": S1, "prUrl": "https://github.com/o/r/pull/8"}], mode="ab")
    assert _sync(mem, home).sessions[0].status == "appended"
    meta = orjson.loads((mem / "agents" / report.agent / ".source.json").read_bytes())
    assert meta["title"] == "Mine"
    assert meta["pr_links"] == ["https://github.com/o/r/pull/7", "https://github.com/o/r/pull/8"]


def test_search_all_finds_a_phrase_of_one_synced_session_first_with_its_resume_command(tmp_path):
    from tests.sync_fixtures import fake_home

    home, mem = fake_home(tmp_path / "home", 24, phrase_at=17, phrase="zebra migration flake"), tmp_path / "mem"
    assert run_memcli("--dir", mem, "sync", "--home", home).returncode == 0
    target = f"codex.app.{sid(17, 'cx')}"
    proc = run_memcli("--dir", mem, "search", "--all", '"zebra migration flake"', "--json", "--limit", "3")
    assert proc.returncode == 0, proc.stderr
    hits = orjson.loads(proc.stdout)
    assert hits[0]["agent"] == target and "**zebra migration flake**" in hits[0]["snippet"]  # a phrase is marked whole
    assert hits[0]["resume"] == f"cd {CWD} && codex resume {sid(17, 'cx')}"
    assert {h["agent"] for h in hits} == {target}  # no other session has the phrase
    human = run_memcli("--dir", mem, "search", "--all", "zebra", "--limit", "1").stdout.decode()
    assert target in human.splitlines()[0]
    assert f"resume: cd {CWD} && codex resume {sid(17, 'cx')}" in human
    # one argument with --all is the query; two are a usage error
    bad = run_memcli("--dir", mem, "search", "--all", "zebra", "extra")
    assert bad.returncode == 2 and "one QUERY" in bad.stderr.decode()


def test_agents_lists_title_and_json_names_source_and_path(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    _sync(mem, home)
    memcli.Memory(mem).agent("plain").ingest([{"trace_type": "user", "content": "a hand-fed ask"}])
    rows = {r["agent"]: r for r in orjson.loads(run_memcli("--dir", mem, "agents", "--json").stdout)}
    synced = rows[f"codex.app.{X1}"]
    assert (synced["source"], synced["source_path"], synced["title"]) == (
        "codex", str(codex_rollout(home, X1)), "add feature 0")
    assert (rows["plain"]["source"], rows["plain"]["source_path"], rows["plain"]["title"]) == (None, None, "a hand-fed ask")
    table = run_memcli("--dir", mem, "agents", "--width", "200").stdout.decode()
    assert "title" in table.splitlines()[0].split()
    assert "please fix bug 0" in table


def test_an_agent_ingested_from_a_file_names_its_source_in_agents_json(tmp_path):
    mem = tmp_path / "mem"
    path = write_lines(tmp_path / "rollout.jsonl", cx_lines(X1, 1))
    assert run_memcli("--dir", mem, "ingest", "fed", path).returncode == 0
    assert run_memcli("--dir", mem, "ingest", "piped", "-", input=path.read_bytes()).returncode == 0
    rows = {r["agent"]: r for r in orjson.loads(run_memcli("--dir", mem, "agents", "--json").stdout)}
    assert (rows["fed"]["source"], rows["fed"]["source_path"]) == ("codex", str(path))
    assert (rows["piped"]["source"], rows["piped"]["source_path"]) == (None, None)


def test_a_cleared_agent_is_imported_again_whole_by_the_next_sync(tmp_path):
    """``clear`` deletes the agent and what sync remembers of it: the next sync imports its
    session again as new (it was found unchanged, and a session that grew was appended to an
    agent that had lost the rest). The other sessions stay unchanged."""
    home, mem = _home(tmp_path), tmp_path / "mem"
    _sync(mem, home)
    agent = f"claude-code.app.{S1}"
    before = agent_traces(mem, agent)
    out = run_memcli("--dir", str(mem), "clear", agent, "--yes")
    assert out.returncode == 0
    assert out.stderr.decode().rstrip().endswith("; the agent no longer exists (`memcli sync` imports its session again)")
    write_lines(claude_project(home) / f"{S1}.jsonl", [cc_user(S1, 50, "one more thing")], mode="ab")
    report = {s.agent: s for s in _sync(mem, home).sessions}
    assert (report[agent].status, report[agent].events) == ("new", len(before) + 1)
    assert [t["content"] for t in agent_traces(mem, agent)] == [t["content"] for t in before] + ["one more thing"]
    assert {s.status for a, s in report.items() if a != agent} == {"unchanged"}


def test_clear_keep_memory_leaves_what_sync_remembers(tmp_path):
    home, mem = _home(tmp_path), tmp_path / "mem"
    _sync(mem, home)
    agent = f"claude-code.app.{S1}"
    (mem / "agents" / agent / "episodic.jsonl").write_bytes(b"")   # a memory file to keep
    state = (mem / ".sync" / "claude-code.json").read_bytes()
    assert run_memcli("--dir", str(mem), "clear", agent, "--keep-memory", "--yes").returncode == 0
    assert (mem / ".sync" / "claude-code.json").read_bytes() == state
    assert {s.agent: s.status for s in _sync(mem, home).sessions}[agent] == "unchanged"
