"""Real third-party transcripts (../shared/corpora), imported with memcli's importers, render to
payloads every provider accepts — the full working snapshot, the compaction snapshot and a token
budget. Skips a file whose importer is not in this version of memcli, and everything when the
corpora are absent (a fresh clone)."""

from __future__ import annotations

import pytest

from memcli.renderers import RENDERERS
from memcli.snapshot import SnapshotOptions, take_snapshot
from tests.helpers import CORPORA, needs_corpora
from tests.snapshot_validation import check_payload

FORMAT_OF_DIR = {"openai": "openai", "anthropic": "anthropic", "claude-code": "claude-code", "codex": "codex"}
FILES = sorted(p for p in CORPORA.glob("*/*") if p.is_file() and p.parent.name in FORMAT_OF_DIR) \
    if CORPORA.is_dir() else []
OPTIONS = [{}, {"tail_turns": 4}, {"max_tokens": 2000, "max_tool_result_chars": 500}]


@needs_corpora
@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.name}" for p in FILES])
def test_corpus_renders_to_accepted_payloads(memory_dir, path):
    from memcli.ingest.api import ingest

    fmt = FORMAT_OF_DIR[path.parent.name]
    result = ingest(memory_dir, "corpus", path, fmt=fmt, skip_invalid=True)
    assert result.appended > 0
    for provider in RENDERERS:
        for options in OPTIONS:
            snap = take_snapshot(memory_dir, "corpus", SnapshotOptions(provider=provider, **options))
            check_payload(provider, snap.payload)
