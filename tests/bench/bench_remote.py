"""Shared-store benchmarks (docs/design.md §7 and §11; docs/remote.md; docs/scale.md; issue 28).

Against a real PostgreSQL started for the run (tests/pg_server.py; skipped, saying why, where
there is none):

1. ``memcli push`` of one agent with N traces (``MEMCLI_BENCH_PUSH_TRACES``, default 1,000,000),
   the whole command as a fresh process, its batches over the default number of connections
   (``memcli.remote.push.CONNECTIONS``). Baselines: a bare ``COPY`` of the same lines into a
   one-column table without index, in-process (what moving the bytes costs); and the same push
   over one connection (``MEMCLI_PUSH_CONNECTIONS=1``: what the parallel batches gain). The notes
   give traces/s (design target: >= 50,000/s to a local server).
2. ``MEMCLI_BENCH_PUSHERS`` (8) stores, each with ``MEMCLI_BENCH_PUSH_AGENTS`` (100) agents of the
   same names, pushed at once by as many processes; then every row is counted (nothing lost,
   nothing twice: the bench fails otherwise). Baseline: the same pushes one after another.
3. ``search --remote --all`` over M traces (``MEMCLI_BENCH_REMOTE_SEARCH_TRACES``, default
   5,000,000, in 50 agents pushed by ``memcli push --all``): p50 and p95 of the library call the
   command makes, a fresh connection each time, over questions of rare, middling and common words
   and a phrase. Baseline: a fresh connection and ``SELECT 1`` (the floor of any remote call).
   Design target: p50 <= 100 ms.

The stores are written directly (tests/bench/bench_search.py's generator: Zipf-like words,
~300 bytes a trace, tool calls and results).

    python tests/bench/run_all.py remote
    MEMCLI_BENCH_PUSH_TRACES=100000 MEMCLI_BENCH_REMOTE_SEARCH_TRACES=200000 python tests/bench/run_all.py remote

``MEMCLI_BENCH_PUSHERS=0`` or ``MEMCLI_BENCH_REMOTE_SEARCH_TRACES=0`` leaves that part out (the
5,000,000-trace search alone fills the database for about ten minutes).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PUSH_TRACES = int(os.environ.get("MEMCLI_BENCH_PUSH_TRACES", "1000000"))
PUSHERS = int(os.environ.get("MEMCLI_BENCH_PUSHERS", "8"))
PUSH_AGENTS = int(os.environ.get("MEMCLI_BENCH_PUSH_AGENTS", "100"))
AGENT_TRACES = int(os.environ.get("MEMCLI_BENCH_AGENT_TRACES", "200"))
SEARCH_TRACES = int(os.environ.get("MEMCLI_BENCH_REMOTE_SEARCH_TRACES", "5000000"))
SEARCH_AGENTS = 50
QUERIES = 40


def _memcli(*args, env=None) -> list[str]:
    exe = Path(sys.executable).parent / "memcli"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "memcli"]


def _store(root: Path, agents: dict[str, int], text) -> Path:
    from tests.bench.bench_search import _records, _write

    for name, n in agents.items():
        agent = root / "agents" / name
        agent.mkdir(parents=True)
        _write(agent / "raw_traces.jsonl", _records(text, 0, n))
    return root


def _count(url: str) -> tuple[int, int]:
    import psycopg

    with psycopg.connect(url) as conn:
        return conn.execute("SELECT count(*), count(DISTINCT (agent_key, id)) FROM memcli_records").fetchone()


def _bare_copy(url: str, path: Path) -> float:
    import psycopg

    with psycopg.connect(url) as conn:
        conn.execute("CREATE TABLE bare (line text)")
        start = time.perf_counter()
        with conn.cursor().copy("COPY bare (line) FROM STDIN") as copy, open(path, "rb") as f:
            while chunk := f.read(4 << 20):
                copy.write(chunk.replace(b"\\", b"\\\\"))
        conn.commit()
        return time.perf_counter() - start


def bench_push(server, text, tmp: Path) -> list[dict]:
    from memcli.remote.push import CONNECTIONS
    from tests.bench.common import run_measured

    root = _store(tmp / "push", {"big": PUSH_TRACES}, text)
    base = _bare_copy(server.new_database(), root / "agents/big/raw_traces.jsonl")
    walls = {}
    for lanes in (1, CONNECTIONS):
        url = server.new_database()
        env = {**os.environ, "MEMCLI_PUSH_CONNECTIONS": str(lanes)}
        walls[lanes], _, _ = run_measured([*_memcli(), "--dir", root, "push", "big", "--to", url], env=env)
        rows, distinct = _count(url)
        assert rows == distinct == PUSH_TRACES, (rows, distinct)
    mb = (root / "agents/big/raw_traces.jsonl").stat().st_size / 1e6
    shutil.rmtree(root)
    wall, single = walls[CONNECTIONS], walls[1]
    return [{"name": f"push {PUSH_TRACES:,} traces, {CONNECTIONS} connections (vs bare COPY)", "value": wall,
             "baseline": base, "unit": "s", "target": None,
             "note": f"{PUSH_TRACES / wall:,.0f} traces/s ({mb / wall:.1f} MB/s of JSONL); "
                     f"bare COPY {PUSH_TRACES / base:,.0f} lines/s; design target 50,000 traces/s"},
            {"name": f"push {PUSH_TRACES:,} traces, {CONNECTIONS} connections (vs 1)", "value": wall,
             "baseline": single, "unit": "s", "target": None,
             "note": f"one connection: {PUSH_TRACES / single:,.0f} traces/s"}]


def bench_concurrent(server, text, tmp: Path) -> dict:
    names = {f"agent{a:03d}": AGENT_TRACES for a in range(PUSH_AGENTS)}
    stores = [_store(tmp / f"m{p}", names, text) for p in range(PUSHERS)]

    def run(url: str, together: bool) -> float:
        start = time.perf_counter()
        procs = []
        for store in stores:
            proc = subprocess.Popen([*_memcli(), "--dir", str(store), "push", "--all", "--to", url],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            if together:
                procs.append(proc)
            else:
                proc.wait()
                procs.append(proc)
        for proc in procs:
            _, err = proc.communicate()
            assert proc.returncode == 0, err
        return time.perf_counter() - start

    url, base_url = server.new_database(), server.new_database()
    wall = run(url, True)
    base = run(base_url, False)
    expected = PUSHERS * PUSH_AGENTS * AGENT_TRACES
    for u in (url, base_url):
        rows, distinct = _count(u)
        assert rows == distinct == expected, (rows, distinct, expected)
    for store in stores:
        shutil.rmtree(store)
    return {"name": f"{PUSHERS} pushers x {PUSH_AGENTS} agents at once (vs in turn)", "value": wall,
            "baseline": base, "unit": "s", "target": None,
            "note": f"{expected:,} rows, none lost or twice; {expected / wall:,.0f} traces/s together"}


def bench_search(server, text, tmp: Path) -> list[dict]:
    import psycopg

    from memcli.remote.search import search

    per = SEARCH_TRACES // SEARCH_AGENTS
    root = tmp / "search"
    url = server.new_database()
    started = time.perf_counter()
    # in slices, so the local copy never holds more than ~1M traces
    step = max(1, 1_000_000 // per)
    for first in range(0, SEARCH_AGENTS, step):
        _store(root, {f"team{a:03d}": per for a in range(first, min(first + step, SEARCH_AGENTS))}, text)
        subprocess.run([*_memcli(), "--dir", str(root), "push", "--all", "--to", url], check=True,
                       stdout=subprocess.DEVNULL)
        shutil.rmtree(root)
    filled = time.perf_counter() - started
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE memcli_records")
        heap, total, gin = conn.execute(
            "SELECT pg_relation_size('memcli_records'), pg_total_relation_size('memcli_records'), "
            "pg_relation_size('memcli_records_tsv')").fetchone()
    vocab = text.vocab
    questions = []
    for i in range(QUERIES):
        kind = i % 4
        if kind == 0:
            questions.append(f"{vocab[5000 + i]}")                          # rare
        elif kind == 1:
            questions.append(f"what about {vocab[300 + i]} and {vocab[900 + i]}?")   # middling pair
        elif kind == 2:
            questions.append(f"{vocab[i]}")                                  # common
        else:
            questions.append(f'"{vocab[20 + i]} {vocab[40 + i]}"')           # phrase
    times = []
    for q in questions:
        start = time.perf_counter()
        search(url, q, all=True, limit=10)
        times.append(time.perf_counter() - start)

    def floor() -> float:
        start = time.perf_counter()
        with psycopg.connect(url) as conn:
            conn.execute("SELECT 1").fetchone()
        return time.perf_counter() - start

    base = statistics.median(floor() for _ in range(10))
    times.sort()
    p50, p95 = statistics.median(times), times[int(0.95 * (len(times) - 1))]
    note = (f"{SEARCH_TRACES:,} traces in {SEARCH_AGENTS} agents, filled by push in {filled:.0f}s; "
            f"{total / SEARCH_TRACES:.0f} B a trace in the database (heap {heap / SEARCH_TRACES:.0f}, "
            f"GIN {gin / SEARCH_TRACES:.0f})")
    return [{"name": f"search --remote --all over {SEARCH_TRACES:,}: p50", "value": p50, "baseline": base,
             "unit": "s", "target": None, "note": note + "; design target p50 <= 0.100 s"},
            {"name": f"search --remote --all over {SEARCH_TRACES:,}: p95", "value": p95, "baseline": base,
             "unit": "s", "target": None, "note": "baseline: connect + SELECT 1"}]


def run() -> list[dict]:
    from tests.bench.bench_search import _Text
    from tests.pg_server import PgServer, PgUnavailable

    try:
        server = PgServer().start()
    except PgUnavailable as exc:
        print(f"    remote benchmarks skipped: {exc}")
        return []
    tmp = Path(tempfile.mkdtemp(prefix="memcli-bench-remote-"))
    try:
        text = _Text()
        rows = bench_push(server, text, tmp)
        if PUSHERS:
            rows.append(bench_concurrent(server, text, tmp))
        return rows + (bench_search(server, text, tmp) if SEARCH_TRACES else [])
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
