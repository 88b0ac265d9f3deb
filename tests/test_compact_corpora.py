"""Offline compaction of every real transcript in ../shared/corpora: nothing is lost or
duplicated, the summary and facts are written, and a second compaction after more turns rolls
forward cleanly. One case per corpus file of a format listed in FORMAT_BY_DIR."""

from __future__ import annotations

from collections import Counter

import pytest

from memcli.compaction.compactor import compact
from memcli.compaction.policy import CompactionPolicy
from memcli.store.agent import AgentStore
from tests.helpers import CORPORA, needs_corpora
from tests.import_helpers import one_conversation

FORMAT_BY_DIR = {"openai": "openai", "anthropic": "anthropic", "claude-code": "claude-code", "codex": "codex",
                 "openai-responses": "openai-responses", "gemini": "gemini", "openhands": "openhands",
                 "inspect": "inspect", "sharegpt": "sharegpt"}
# transcripts (the Responses cassettes are HTTP recordings: tests/test_import_corpora_formats.py reads them)
FILES = sorted(p for p in CORPORA.glob("*/*") if p.is_file() and p.suffix in (".json", ".jsonl", ".traj")) \
    if CORPORA.is_dir() else []


def _all_ids(store: AgentStore) -> list:
    return [s.trace.id for s in store.iter_traces(archive=True)]


@needs_corpora
@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_offline_compaction_keeps_every_trace_of_a_real_transcript(memory_dir, tmp_path, path):
    fmt = FORMAT_BY_DIR[path.parent.name]
    from memcli.ingest.api import ingest

    ingest(memory_dir, "agent", one_conversation(path, tmp_path), fmt=fmt, skip_invalid=True)
    store = AgentStore(memory_dir, "agent")
    before = _all_ids(store)
    assert before, "the importer produced no traces"
    result = compact(memory_dir, "agent", policy=CompactionPolicy(tail_turns=2))
    after = _all_ids(store)
    assert Counter(after) == Counter(before)  # same ids, none twice
    if result.compacted:
        archived = {s.trace.id for s in store.iter_traces(archive=True, active=False)}
        assert len(archived) == result.traces
        episodic, semantic = store.live_memory()
        assert [e.id for e in episodic] == [result.episodic_id]
        assert episodic[0].summary.startswith(f"{result.turns} turn")
        assert len(episodic[0].summary) <= 19_000   # HARD_MAX_CHARS: the budget sizes it
    else:  # nothing to move, or moving it would not make the snapshot smaller (never worse)
        assert "nothing to compact" in result.reason or result.never_worse
    # compacting again is safe (nothing or little left to move) and still loses nothing
    compact(memory_dir, "agent", policy=CompactionPolicy(tail_turns=0))
    assert Counter(_all_ids(store)) == Counter(before)
    _export_and_snapshot_still_work(memory_dir, before)


def _export_and_snapshot_still_work(memory_dir, ids: list) -> None:
    """After compaction: `export` yields every ingested trace, `snapshot` renders valid payloads."""
    import io

    import orjson

    from memcli.export.api import export
    from memcli.snapshot import SnapshotOptions, take_snapshot
    from tests.snapshot_validation import check_payload

    out = io.BytesIO()
    export(memory_dir, "agent", fmt="jsonl", stdout=out)
    exported = [orjson.loads(line)["id"] for line in out.getvalue().splitlines()]
    assert Counter(exported) == Counter(ids)
    for provider in ("openai-chat", "openai-responses", "anthropic", "gemini"):
        snap = take_snapshot(memory_dir, "agent", SnapshotOptions(provider=provider))
        check_payload(provider, snap.payload)


@needs_corpora
@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_the_read_ahead_child_summarizes_a_real_transcript_as_one_process_does(memory_dir, tmp_path, path,
                                                                              monkeypatch):
    """The same compaction, its summary read ahead by a forked child (with a small feed budget,
    so giant turns spill) or read after the plan in one process: the same summary, facts, turns
    and trace ids."""
    import shutil

    import memcli.compaction.compactor as compactor
    import memcli.compaction.window as window
    from memcli.ingest.api import ingest

    ingest(memory_dir, "agent", one_conversation(path, tmp_path), fmt=FORMAT_BY_DIR[path.parent.name],
           skip_invalid=True)
    monkeypatch.setattr(compactor, "_can_fork", lambda: True)
    monkeypatch.setattr(compactor, "READ_AHEAD_MIN_BYTES", 0)
    monkeypatch.setattr(window, "WHOLE_TURN_FEED_BYTES", 64 << 10)
    finished = []
    finish = compactor._ReadAhead.finish
    monkeypatch.setattr(compactor._ReadAhead, "finish", lambda self, plan: finished.append(finish(self, plan))
                        or finished[-1])
    outcomes = []
    for forked in (True, False):
        copy = tmp_path / f"copy-{forked}"
        shutil.copytree(memory_dir, copy)
        if not forked:
            monkeypatch.setattr(compactor._ReadAhead, "of", classmethod(lambda cls, *args: None))
        result = compact(copy, "agent", policy=CompactionPolicy(tail_turns=1, keep_steps=2))
        episodic, semantic = AgentStore(copy, "agent").live_memory()
        outcomes.append((result.compacted, result.summary, result.facts, result.turn_ids, result.traces,
                         [sorted(e.trace_ids) for e in episodic], [s.fact for s in semantic]))
    assert outcomes[0] == outcomes[1]
    if outcomes[0][0]:
        assert finished and finished[0] is not None   # the child's summary was used
