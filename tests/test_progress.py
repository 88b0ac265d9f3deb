"""The progress bar (memcli/cli/progress.py): only on a terminal, only after the delay, and it
follows what the job reports."""

from __future__ import annotations

import time

import memcli.cli.progress as progress


def test_no_bar_when_stderr_is_not_a_terminal(monkeypatch):
    monkeypatch.setattr(progress, "_stderr_is_terminal", lambda: False)
    with progress.progress_bar("job", total=10, delay=0) as advance:
        advance(5)
        bar = advance.__self__
        assert bar._progress is None and bar.completed == 5


def test_no_bar_when_disabled(monkeypatch):
    monkeypatch.setattr(progress, "_stderr_is_terminal", lambda: True)
    with progress.progress_bar("job", total=10, enabled=False, delay=0) as advance:
        advance(5)
        assert advance.__self__._progress is None


def test_bar_appears_only_after_the_delay_and_tracks_completed_and_total(monkeypatch):
    monkeypatch.setattr(progress, "_stderr_is_terminal", lambda: True)
    with progress.progress_bar("job", delay=0.2) as advance:
        bar = advance.__self__
        advance(10, total=100)
        assert bar._progress is None          # a quick job shows nothing
        time.sleep(0.25)
        advance(20)
        assert bar._progress is not None
        task = bar._progress.tasks[0]
        assert (task.completed, task.total) == (30, 100)
        advance(5, total=200)
        assert (task.completed, task.total) == (35, 200)
    assert bar._progress is None              # stopped (and erased: transient) at the end


def test_export_to_a_file_writes_only_the_summary_to_stderr(cli, memory_dir, tmp_path):
    cli("ingest", "a", input=[{"trace_type": "user", "content": "hi"}])
    result = cli("export", "a", "-o", tmp_path / "out.jsonl")
    assert result.exit_code == 0
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("memcli: exported 1 trace of 'a'")
