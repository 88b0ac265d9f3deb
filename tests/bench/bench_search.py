"""Search benchmarks (docs/design.md §7; docs/memory-as-tools.md; issue 14).

1. ``search`` on an agent with N traces (default 1,000,000; ``MEMCLI_BENCH_SEARCH_TRACES``) once
   indexed: the library call ``memcli search`` makes, in-process, best of several runs of a
   few queries (two words of middling frequency, a rare word, a phrase, a prefix). Target: the
   0.5 s budget (the baseline column).
2. Catch-up after 1,000 new traces (appended to the active file): the first search after them.
   Target: the 1 s budget.
3. Index size against the JSONL files' size. Target: at most half.
4. Known-item recall on the corpora (tests/test_search_corpora.py): misses against the 10% allowed.
5. ``memcli mcp`` ready: spawn to ``initialize`` answered, with the SDK's stdio client, against a
   bare ``python -c "import mcp.server.fastmcp"`` (the SDK's import is most of it). Target: 1.5x
   (the issue's budget is 3 s absolute: see the note).

The store is written directly (no ingest): N-1,000 traces in the archive (an agent with a long
history has compacted most of it), 1,000 active; text drawn from a 30,000-word vocabulary with
Zipf-like frequencies, ~300 bytes a trace, tool calls and results included. The index is built
once by the first search (its time is reported in the note).

    python tests/bench/run_all.py search
    MEMCLI_BENCH_SEARCH_TRACES=100000 python tests/bench/run_all.py search
"""

from __future__ import annotations

import itertools
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import orjson

TRACES = int(os.environ.get("MEMCLI_BENCH_SEARCH_TRACES", "1000000"))
ACTIVE = 1_000
NEW = 1_000
RUNS = 5
AGENT = "bench"
BASE_TS = 1767261600.0


def _vocabulary(rng: random.Random, n: int = 30_000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = set()
    while len(words) < n:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(3, 10))))
    return sorted(words)


class _Text:
    def __init__(self, seed: int = 7):
        self.rng = random.Random(seed)
        self.vocab = _vocabulary(self.rng)
        self.cum = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(len(self.vocab))))

    def words(self, k: int) -> str:
        return " ".join(self.rng.choices(self.vocab, cum_weights=self.cum, k=k))


def _records(text: _Text, start: int, n: int):
    for i in range(start, start + n):
        turn = f"turn_{i // 6 + 1:07d}"
        seq = i % 6 + 1
        r = i % 6
        base = {"id": f"rt_{i:08d}", "ts": BASE_TS + i, "turn_id": turn, "seq": seq, "source_event": "bench"}
        if r == 0:
            base.update(trace_type="user", content=text.words(18))
        elif r in (1, 5):
            base.update(trace_type="assistant", content=text.words(30))
        elif r == 2:
            base.update(trace_type="tool_call", content="", tool_name="read_file", tool_call_id=f"c{i}",
                        tool_args={"path": f"src/{text.words(1)}.py"})
        elif r == 3:
            base.update(trace_type="tool_call", content="", tool_name="run_command", tool_call_id=f"c{i}",
                        tool_args={"command": f"grep -rn {text.words(1)} src"})
        else:
            base.update(trace_type="tool_result", content="", tool_name="run_command", tool_call_id=f"c{i - 1}",
                        tool_result=text.words(40))
        yield base


def _write(path: Path, records) -> None:
    with open(path, "ab") as f:
        buf = []
        for record in records:
            buf.append(orjson.dumps(record))
            if len(buf) >= 10_000:
                f.write(b"\n".join(buf) + b"\n")
                buf.clear()
        if buf:
            f.write(b"\n".join(buf) + b"\n")


def make_store(root: Path, n: int, text: _Text) -> Path:
    agent = root / "agents" / AGENT
    agent.mkdir(parents=True)
    _write(agent / "raw_traces_archive.jsonl", _records(text, 0, n - ACTIVE))
    _write(agent / "raw_traces.jsonl", _records(text, n - ACTIVE, ACTIVE))
    return root


def _best(fn, runs: int = RUNS) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _mcp_ready(memory_dir: Path) -> float:
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    exe = Path(sys.executable).parent / "memcli"
    command, args = (str(exe), []) if exe.exists() else (sys.executable, ["-m", "memcli"])
    params = StdioServerParameters(command=command, args=[*args, "--dir", str(memory_dir), "mcp", "--agent", AGENT],
                                   env=dict(os.environ))
    out = {}

    async def main():
        start = time.perf_counter()
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                out["ready"] = time.perf_counter() - start

    anyio.run(main)
    return out["ready"]


def _sdk_import() -> float:
    import subprocess

    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import mcp.server.fastmcp"], check=True)
    return time.perf_counter() - start


def _known_item_recall(root: Path) -> list[dict]:
    from tests.helpers import CORPORA
    from tests.test_search_corpora import SAMPLE, TOP, build_corpus_agent, known_item_recall

    if not CORPORA.is_dir() or build_corpus_agent(root / "corpora") == 0:
        return []
    rate, tried, _ = known_item_recall(root / "corpora")
    return [{"name": f"known-item recall on the corpora: misses in the top {TOP}", "value": 1 - rate,
             "baseline": 0.1, "unit": " ", "target": 1.0,
             "note": f"{rate:.0%} of {tried} archived traces (of {SAMPLE} asked) found by 4 of their rarest words; "
                     "baseline = the 10% of misses allowed"}]


def run() -> list[dict]:
    from memcli.search import search
    from memcli.store.agent import AgentStore

    root = Path(tempfile.mkdtemp(prefix="memcli-bench-search-"))
    try:
        text = _Text()
        start = time.perf_counter()
        memory_dir = make_store(root, TRACES, text)
        built = time.perf_counter() - start
        store = AgentStore(memory_dir, AGENT)
        agent_dir = memory_dir / "agents" / AGENT
        jsonl_bytes = sum(p.stat().st_size for p in agent_dir.glob("*.jsonl"))

        start = time.perf_counter()
        search(store, text.vocab[500])
        indexed = time.perf_counter() - start

        queries = [f"{text.vocab[300]} {text.vocab[2000]}", text.vocab[25_000], f'"{text.vocab[100]} {text.vocab[101]}"',
                   text.vocab[1200][:4] + "*"]
        times = {q: _best(lambda q=q: search(store, q, limit=10)) for q in queries}
        worst_query = max(times, key=times.get)
        # the worst case: the two commonest words (each in most traces): bm25 scores every match
        common = f"{text.vocab[0]} {text.vocab[1]}"
        t_common = _best(lambda: search(store, common, limit=10), runs=2)
        rows = [{
            "name": f"search {TRACES:,} traces (slowest of {len(queries)} queries)",
            "value": times[worst_query], "baseline": 0.5, "unit": "s", "target": 1.0,
            "note": "best of %d each: %s; worst case, the two commonest words %r: %.0f ms; first search built the "
                    "index in %.1f s (store of %.0f MB written in %.1f s); baseline = the 0.5 s budget"
                    % (RUNS, ", ".join(f"{q!r} {t * 1000:.0f} ms" for q, t in times.items()), common,
                       t_common * 1000, indexed, jsonl_bytes / 1e6, built),
        }]

        _write(agent_dir / "raw_traces.jsonl", _records(text, TRACES, NEW))
        start = time.perf_counter()
        result = search(store, text.vocab[25_001], limit=10)
        catch_up = time.perf_counter() - start
        rows.append({"name": f"search catch-up after {NEW:,} new traces", "value": catch_up, "baseline": 1.0,
                     "unit": "s", "target": 1.0, "note": f"{len(result.hits)} hits; baseline = the 1 s budget"})

        index_bytes = sum(p.stat().st_size for p in agent_dir.glob(".search.sqlite*"))
        jsonl_bytes = sum(p.stat().st_size for p in agent_dir.glob("*.jsonl"))
        rows.append({"name": "search index size vs JSONL size", "value": index_bytes / 1e6,
                     "baseline": jsonl_bytes / 1e6, "unit": "MB", "target": 0.5,
                     "note": f"index {index_bytes / 1e6:,.1f} MB, JSONL {jsonl_bytes / 1e6:,.1f} MB"})

        rows += _known_item_recall(root)
        try:
            ready = min(_mcp_ready(memory_dir) for _ in range(3))
            sdk = min(_sdk_import() for _ in range(3))
            rows.append({"name": "memcli mcp ready (initialize answered) vs SDK import", "value": ready,
                         "baseline": sdk, "unit": "s", "target": 1.5,
                         "note": f"best of 3, SDK stdio client: ready in {ready:.2f} s (budget 3 s); a bare "
                                 f"`python -c 'import mcp.server.fastmcp'` takes {sdk:.2f} s here"})
        except ImportError:
            pass
        return rows
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    for row in run():
        print(row)
