"""Aider: ``memcli sync --source aider`` over ``.aider.chat.history.md`` files written by
tests/sync_more_fixtures.py as Aider's ``append_chat_history`` writes them."""

from __future__ import annotations

import memcli
from tests.helpers import agent_traces, synced, synced_again_reading_nothing
from tests.sync_more_fixtures import aider_run

R1, R2 = "20260301-090000", "20260302-100000"


def _home(tmp_path):
    home = tmp_path / "home"
    project = home / "src" / "app"
    project.mkdir(parents=True)
    (project / ".aider.chat.history.md").write_text(
        aider_run("2026-03-01 09:00:00", ["add a --verbose flag", "/add cli.py"])
        + aider_run("2026-03-02 10:00:00", ["/ask why is\nthe test flaky?"]))
    (home / ".hidden" / "x").mkdir(parents=True)
    (home / ".hidden" / "x" / ".aider.chat.history.md").write_text(aider_run("2026-01-01 00:00:00", ["no"]))
    return home, project / ".aider.chat.history.md"




def test_first_sync_one_agent_per_run(tmp_path):
    home, _ = _home(tmp_path)
    mem = tmp_path / "mem"
    report = synced(mem, home, "aider")
    assert {a: (r.status, r.events) for a, r in report.items()} == {
        f"aider.app.{R1}": ("new", 4), f"aider.app.{R2}": ("new", 2)}
    got = agent_traces(mem, f"aider.app.{R1}")
    assert [(t["trace_type"], t.get("tags", []), t["content"]) for t in got] == [
        ("user", [], "add a --verbose flag"), ("assistant", [], "Sure, here is the change for add a --verbose flag."),
        ("user", ["context"], "/add cli.py"), ("assistant", [], "Sure, here is the change for /add cli.py.")]
    assert agent_traces(mem, f"aider.app.{R2}")[0]["content"] == "why is\nthe test flaky?"
    assert report[f"aider.app.{R1}"].skipped["Aider notices (> lines)"] == 3


def test_no_change_sync_reads_nothing(tmp_path, monkeypatch):
    home, _ = _home(tmp_path)
    mem = tmp_path / "mem"
    report = synced_again_reading_nothing(monkeypatch, lambda: synced(mem, home, "aider"), mem,
                                          "memcli.importers.aider.runs")
    assert {r.status for r in report.values()} == {"unchanged"}


def test_appended_run_adds_exactly_the_new_events(tmp_path):
    home, path = _home(tmp_path)
    mem = tmp_path / "mem"
    synced(mem, home, "aider")
    with open(path, "a") as f:
        f.write("\n#### and add tests  \n\nAdded tests.\n\n")
    report = synced(mem, home, "aider")
    assert (report[f"aider.app.{R2}"].status, report[f"aider.app.{R2}"].events) == ("rewritten", 2)
    assert report[f"aider.app.{R1}"].status == "unchanged"
    assert [t["content"] for t in agent_traces(mem, f"aider.app.{R2}")][-2:] == ["and add tests", "Added tests."]


def test_rewritten_history_never_duplicates(tmp_path):
    home, path = _home(tmp_path)
    mem = tmp_path / "mem"
    synced(mem, home, "aider")
    text = path.read_text()
    path.unlink()
    path.write_text(text + aider_run("2026-03-03 11:00:00", ["third"]))
    report = synced(mem, home, "aider")
    assert report[f"aider.app.{R1}"].status == report[f"aider.app.{R2}"].status == "unchanged"
    assert (report["aider.app.20260303-110000"].status, report["aider.app.20260303-110000"].events) == ("new", 2)
    assert len(agent_traces(mem, f"aider.app.{R1}")) == 4


def test_unreadable_history_is_reported_others_import(tmp_path):
    home, path = _home(tmp_path)
    mem = tmp_path / "mem"
    other = home / "web"
    other.mkdir()
    (other / ".aider.chat.history.md").write_text(aider_run("2026-03-05 08:00:00", ["hello"]))
    path.chmod(0)
    try:
        report = memcli.Memory(mem).sync(home=home, source="aider")
    finally:
        path.chmod(0o644)
    import os

    if os.geteuid() == 0:  # root reads anything: then both import
        assert {s.status for s in report.sessions} == {"new"}
        return
    assert [s.status for s in report.sessions if s.path == str(path)] == ["failed"]
    assert [s.agent for s in report.sessions if s.status == "new"] == ["aider.web.20260305-080000"]


def test_a_cleared_run_is_imported_again_whole_the_others_not(tmp_path):
    home, _ = _home(tmp_path)
    mem = tmp_path / "mem"
    synced(mem, home, "aider")
    memcli.Memory(mem).agent(f"aider.app.{R1}").clear()
    report = synced(mem, home, "aider")
    assert {a: (r.status, r.events) for a, r in report.items()} == {
        f"aider.app.{R1}": ("new", 4), f"aider.app.{R2}": ("unchanged", 0)}
    assert {r.status for r in synced(mem, home, "aider").values()} == {"unchanged"}
