"""Known-item recall on the real transcripts (issue 14): every corpus file memcli imports goes into
one agent, which is compacted so that most traces are archived; for 50 archived traces drawn at
random (fixed seed), a query of 4 of their rarest words (document frequency over the agent's
traces, as the index tokenizes them) must find the trace in the top 5 at least 90% of the time.
tests/bench/bench_search.py reports the same figure."""

from __future__ import annotations

import random
import re
from collections import Counter
from pathlib import Path

import orjson

from memcli.errors import UsageError
from tests.helpers import CORPORA, needs_corpora

FORMAT_BY_DIR = {"openai": "openai", "anthropic": "anthropic", "claude-code": "claude-code", "codex": "codex"}
SAMPLE = 50
TOP = 5
_WORD = re.compile(r"[^\W_]+")


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text) if len(w) >= 3}


def build_corpus_agent(memory_dir: Path, agent: str = "corpus") -> int:
    """Import every corpus file memcli reads into ``agent`` and compact it; returns files read."""
    from memcli.compaction.compactor import compact
    from memcli.compaction.policy import CompactionPolicy
    from memcli.importers import get_importer
    from memcli.ingest.api import ingest

    read = 0
    for path in sorted(p for p in CORPORA.glob("*/*") if p.is_file()):
        fmt = FORMAT_BY_DIR.get(path.parent.name)
        if fmt is None:
            continue
        if path.name.startswith("tau-bench"):
            # 200 conversations: as one message list, so one agent holds them all (no --split)
            records = orjson.loads(path.read_bytes())
            path = memory_dir.parent / "tau-bench.ndjson"
            path.write_bytes(b"".join(orjson.dumps(m) + b"\n" for r in records for m in r["traj"]))
        try:
            get_importer(fmt)
            ingest(memory_dir, agent, path, fmt=fmt, skip_invalid=True)
            read += 1
        except UsageError:
            continue
    compact(memory_dir, agent, policy=CompactionPolicy(tail_turns=2))
    return read


def known_item_recall(memory_dir: Path, agent: str = "corpus", seed: int = 14) -> tuple[float, int, list]:
    """(share found in the top 5, traces tried, misses as (id, query))."""
    from memcli.models import to_record
    from memcli.search import search
    from memcli.store.agent import AgentStore
    from memcli.store.search_index import record_text

    store = AgentStore(memory_dir, agent)
    texts: dict[str, set[str]] = {}
    full: dict[str, str] = {}
    archived: list[str] = []
    df: Counter = Counter()
    for stored in store.iter_traces(archive=True):
        text = record_text("archive", to_record(stored.trace))
        words = _words(text)
        texts[stored.trace.id] = words
        full[stored.trace.id] = " ".join(text.split())
        df.update(words)
        if stored.tier == "archive" and len(words) >= 4:
            archived.append(stored.trace.id)
    rng = random.Random(seed)
    chosen = rng.sample(archived, min(SAMPLE, len(archived)))
    found = 0
    misses = []
    for trace_id in chosen:
        rare = sorted(texts[trace_id], key=lambda w: (df[w], w))[:4]
        query = " ".join(rare)
        hits = search(store, query, limit=TOP, kinds=["trace"]).hits
        # identical texts are one hit (its count says how many): the trace or its twin is found
        if trace_id in [h.id for h in hits] or full[trace_id] in {full.get(h.id) for h in hits}:
            found += 1
        else:
            misses.append((trace_id, query))
    return found / len(chosen), len(chosen), misses


@needs_corpora
def test_known_item_recall_on_the_corpora(memory_dir, capsys):
    assert build_corpus_agent(memory_dir) > 0, "no corpus trace was imported"
    rate, tried, misses = known_item_recall(memory_dir)
    with capsys.disabled():
        print(f"\nknown-item recall: {rate:.0%} of {tried} archived traces in the top {TOP}")
    assert tried == SAMPLE
    assert rate >= 0.9, misses
