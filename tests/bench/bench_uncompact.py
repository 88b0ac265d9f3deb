"""Undoing a compaction costs about what the compaction did (issue 23): ``memcli uncompact`` of a
whole-history compaction against the ``memcli compact`` that made it, on the same store, each a
fresh process, best of 3 (compact and uncompact alternate, so each uncompact undoes the compact
just measured). The active file must come back byte for byte every time.

Target: uncompact within 1.5x the compaction's wall time. Both read the active file and count
the working snapshot; the undo also rewrites the active file with the archived lines back in
place, and counts the (larger) snapshot it leaves. ``MEMCLI_BENCH_TURNS`` sets the size (default
5,000 turns, 20,001 traces).

    python tests/bench/run_all.py uncompact
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from tests.bench.common import run_measured
from tests.compact_fixtures import conversation
from tests.helpers import ndjson

REPO = Path(__file__).resolve().parent.parent.parent
RUNS = 3


def run() -> list[dict]:
    turns = int(os.environ.get("MEMCLI_BENCH_TURNS") or 5_000)
    tmp = Path(tempfile.mkdtemp(prefix="memcli-bench-uncompact-"))
    try:
        memory = tmp / "memory"
        events = tmp / "events.jsonl"
        events.write_bytes(ndjson(conversation(turns, big=200)))
        env = dict(os.environ, MEMCLI_DIR=str(memory), PYTHONPATH=str(REPO))
        memcli = [sys.executable, "-m", "memcli"]
        run_measured(memcli + ["ingest", "a", events], env=env)
        active = memory / "agents" / "a" / "raw_traces.jsonl"
        original = active.read_bytes()
        results = {"compact": [], "uncompact": []}
        for _ in range(RUNS):
            for name in ("compact", "uncompact"):
                results[name].append(run_measured(memcli + [name, "a"], env=env))
            if active.read_bytes() != original:
                raise AssertionError("uncompact did not give back the active file byte for byte")
        (undo, undo_rss, _), (done, done_rss, _) = min(results["uncompact"]), min(results["compact"])
        return [{"name": f"uncompact of {turns:,} turns vs the compact it undoes", "value": undo, "baseline": done,
                 "unit": "s", "target": 1.5,
                 "note": f"best of {RUNS}; peak RSS {undo_rss:.0f} MiB vs {done_rss:.0f} MiB; "
                         f"active file back byte for byte ({len(original):,} bytes)"}]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
