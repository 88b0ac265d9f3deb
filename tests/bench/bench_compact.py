"""Compaction benchmarks.

1. Offline compaction of a large store (100,000 turns of 4 traces; ``MEMCLI_BENCH_COMPACT_TURNS``
   to change it), in a fresh process: wall time against the I/O floor measured in the same run (a
   minimal loop that parses every active line and writes the kept lines to a new file and the
   moved ones to the archive), and peak RSS against a process that only imports memcli.
2. Offline compaction of ONE turn of 100,000 steps (``MEMCLI_BENCH_COMPACT_STEPS``): the window is
   steps of the open turn, toward ``--target-tokens``; wall time against the same I/O floor, peak
   RSS against the import-only process.

   Each of the two is timed in ``MEMCLI_BENCH_COMPACT_ROUNDS`` (3) interleaved rounds on fresh
   copies of the store, the disk flushed before each side; the best time of each is compared.
3. A 20-chunk LLM compaction against a local OpenAI-compatible server that answers in 0.5 s, at
   concurrency 4 against concurrency 1 (ideal: 0.25x), and concurrency 1 against the serial floor
   (20 × 0.5 s).

``python tests/bench/run_all.py compact``
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import orjson

REPO = Path(__file__).resolve().parent.parent.parent
TURNS = int(os.environ.get("MEMCLI_BENCH_COMPACT_TURNS", "100000"))
STEPS = int(os.environ.get("MEMCLI_BENCH_COMPACT_STEPS", "100000"))
ROUNDS = int(os.environ.get("MEMCLI_BENCH_COMPACT_ROUNDS", "3"))


def _ingest(memory_dir: Path, records) -> Path:
    """Agent ``big`` made of ``records`` (native events), ingested the normal way (so its caches exist)."""
    sys.path.insert(0, str(REPO))
    from memcli.ingest.api import ingest

    src = memory_dir.parent / "events.ndjson"
    with open(src, "wb") as f:
        for rec in records:
            f.write(orjson.dumps(rec) + b"\n")
    ingest(memory_dir, "big", src)
    src.unlink()
    return memory_dir / "agents" / "big"


def _call_and_result(t: int) -> list[dict]:
    return [{"trace_type": "tool_call", "tool_name": "run_command", "tool_call_id": f"c{t}",
             "tool_args": {"command": f"pytest -q tests/test_{t % 13}.py"}},
            {"trace_type": "tool_result", "tool_name": "run_command", "tool_call_id": f"c{t}",
             "tool_result": {"exit_code": 0, "stdout": "12 passed in 0.8s " + "." * 120}}]


def _write_one_turn(memory_dir: Path, steps: int) -> Path:
    """An agent with one open turn: an ask, then ``steps`` steps (a note, a call, its result)."""
    def records():
        yield {"trace_type": "user", "content": "Make the whole suite pass."}
        for t in range(1, steps + 1):
            yield {"trace_type": "assistant", "content": f"Step {t}: checking src/module_{t % 97}.py next."}
            yield from _call_and_result(t)
    return _ingest(memory_dir, records())


def _write_store(memory_dir: Path, turns: int) -> Path:
    """An agent with ``turns`` turns of 4 traces: an ask, a call, its result, the answer."""
    def records():
        for t in range(1, turns + 1):
            yield {"trace_type": "user", "content": f"Please check order A-{t} and fix src/module_{t % 97}.py"}
            yield from _call_and_result(t)
            yield {"trace_type": "assistant", "content": f"Order A-{t} is fine; src/module_{t % 97}.py updated. " * 2}
    return _ingest(memory_dir, records())


_COMPACT = """
import resource, sys, time
sys.path.insert(0, {repo!r})
from memcli.compaction.compactor import compact
t = time.perf_counter()
r = compact({mem!r}, "big")
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, r.turns, len(r.summary or ""),
      resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""

_COMPACT_STEPS = """
import resource, sys, time
sys.path.insert(0, {repo!r})
from memcli.compaction.compactor import compact
from memcli.compaction.policy import CompactionPolicy
t = time.perf_counter()
r = compact({mem!r}, "big", policy=CompactionPolicy(target_tokens=20_000))
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, r.steps, len(r.summary or ""),
      resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""

# the compaction modules, and the tokenizer the compaction counts with (the working snapshot's:
# o200k_base for the default provider; TokenCounter(None) would load the smaller cl100k_base)
_IMPORT_ONLY = """
import resource, sys
sys.path.insert(0, {repo!r})
import memcli.compaction.compactor, memcli.compaction.offline, memcli.tokens
from memcli.snapshot.assemble import working_counter
working_counter(None).count("warm up")
print(0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, 0, 0, 0)
"""


def _floor(active: Path, tmp: Path) -> float:
    """Parse every line, write the kept ones to a new file and the moved ones to an archive."""
    t = time.perf_counter()
    with open(active, "rb") as src, open(tmp / "kept", "wb") as kept, open(tmp / "moved", "wb") as moved:
        loads = orjson.loads
        last_turns = None
        for line in src:
            record = loads(line)
            (moved if record["turn_id"] != last_turns else kept).write(line)
        kept.flush()
        os.fsync(kept.fileno())
        moved.flush()
        os.fsync(moved.fileno())
    return time.perf_counter() - t


def _run(code: str, mem: Path) -> tuple[float, int, int, int, int]:
    """(seconds, peak RSS in KiB, turns, summary chars, the read-ahead child's peak RSS in KiB) of
    ``code`` in a fresh process as installed (its bytecode compiled), started through
    tests.bench.common's probe so the peak RSS is that process's own. The compaction's read-ahead child (forked from it: Linux starts its
    peak at the parent's size then, pages shared until written) reports its own peak."""
    import tempfile as _tempfile

    from tests.bench.common import compile_memcli, installed_env, run_measured

    env = installed_env({**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    compile_memcli(env)   # the compaction imports modules inside the timed part: as installed, compiled
    with _tempfile.NamedTemporaryFile() as out:
        _, rss_mb, _ = run_measured([sys.executable, "-c", code.format(repo=str(REPO), mem=str(mem))],
                                    stdout_path=out.name, env=env)
        seconds, _, turns, chars, child_kb = Path(out.name).read_text().split()
    return float(seconds), int(rss_mb * 1024), int(turns), int(chars), int(child_kb)


def _fresh_copy(mem: Path, dst: Path) -> Path:
    """A copy of the memory directory ``mem`` at ``dst``, its state cache valid again (it names
    the files' inodes) and every page written to disk: each round starts from the same store with
    no writeback of an earlier one pending."""
    import shutil

    from memcli.store.agent import AgentStore

    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(mem, dst)
    with AgentStore(dst, "big").writer(create=False):
        pass
    os.sync()
    return dst / "agents" / "big"


class _Measured(NamedTuple):
    size_mb: float      # the active file
    floor: float        # the I/O floor's best time, s
    seconds: float      # the compaction's best time
    rss_kb: int         # the compacting process's highest peak
    units: int          # turns or steps compacted
    chars: int          # the summary's characters
    base_kb: int        # the import-only process's peak
    child_kb: int       # the read-ahead child's highest peak
    rounds: str         # every round's floor and time, said


def _measure(write, size: int, code: str) -> _Measured:
    """What compacting a store ``write(memory_dir, size)`` made measures, in fresh processes: :data:`ROUNDS` interleaved rounds, each
    on a fresh copy of the store (the floor, then the compaction), the best time of each side
    reported (as the other benchmarks do: noise only ever adds time; here the disk's flush moved
    one floor from 0.5 s to 1.0 s between runs), the highest peak."""
    with tempfile.TemporaryDirectory() as tmp:
        mem = Path(tmp) / "memory"
        d = write(mem, size)
        size_mb = (d / "raw_traces.jsonl").stat().st_size / 1e6
        floors, times, peaks, child_peaks = [], [], [], []
        for _ in range(ROUNDS):
            copy = _fresh_copy(mem, Path(tmp) / "round")
            floors.append(_floor(copy / "raw_traces.jsonl", Path(tmp)))
            os.sync()
            seconds, rss_kb, units, chars, child_kb = _run(code, Path(tmp) / "round")
            times.append(seconds)
            peaks.append(rss_kb)
            child_peaks.append(child_kb)
        base_kb = _run(_IMPORT_ONLY, mem)[1]
    return _Measured(size_mb, min(floors), min(times), max(peaks), units, chars, base_kb, max(child_peaks),
                     f"best of {ROUNDS} rounds: floor {'/'.join(f'{x:.2f}' for x in floors)}s, "
                     f"compaction {'/'.join(f'{x:.2f}' for x in times)}s")


_RSS_NOTE = ("baseline: a process that only imports memcli's compaction modules and loads the tokenizer they count "
             "with (the working snapshot's); the compacting process's own peak")


def _child_note(child_kb: int, base_kb: int) -> str:
    return (f"; its read-ahead child (forked while it plans; Linux counts the parent's pages it shares from the "
            f"fork on): {child_kb / 1024:.0f} MB = {child_kb / base_kb:.2f}x" if child_kb else "; no read-ahead child")


def bench_offline() -> list[dict]:
    size_mb, floor, seconds, rss_kb, turns, chars, base_kb, child_kb, rounds = _measure(_write_store, TURNS, _COMPACT)
    return [
        {"name": f"offline compact {TURNS:,} turns ({size_mb:.0f} MB active)", "value": seconds, "baseline": floor,
         "unit": "s", "target": 5,
         "note": f"baseline: parse every line + write kept/moved files ({floor:.2f}s); {turns:,} turns compacted, "
                 f"summary {chars:,} chars; includes counting tokens of every trace (tiktoken); {rounds}"},
        {"name": f"offline compact {TURNS:,} turns: peak RSS", "value": rss_kb / 1024, "baseline": base_kb / 1024,
         "unit": "MB", "target": 2, "note": _RSS_NOTE + _child_note(child_kb, base_kb)},
    ]


def bench_offline_steps() -> list[dict]:
    size_mb, floor, seconds, rss_kb, steps, chars, base_kb, child_kb, rounds = _measure(_write_one_turn, STEPS,
                                                                                      _COMPACT_STEPS)
    return [
        {"name": f"offline compact 1 turn of {STEPS:,} steps ({size_mb:.0f} MB active)", "value": seconds,
         "baseline": floor, "unit": "s", "target": 5,
         "note": f"baseline: parse every line + write kept/moved files ({floor:.2f}s); {steps:,} steps compacted "
                 f"toward --target-tokens 20000, summary {chars:,} chars; {rounds}"},
        {"name": f"offline compact 1 turn of {STEPS:,} steps: peak RSS", "value": rss_kb / 1024,
         "baseline": base_kb / 1024, "unit": "MB", "target": 2, "note": _RSS_NOTE + _child_note(child_kb, base_kb)},
    ]


def bench_llm_concurrency() -> list[dict]:
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-dummy")
    from memcli.compaction.compactor import compact
    from memcli.compaction.llm import LiteLLMSummarizer, _import_litellm
    from memcli.compaction.policy import CompactionPolicy
    from memcli.ingest.api import ingest
    from tests.compact_fixtures import FakeModelServer, conversation, faithful_answer

    _import_litellm()  # LiteLLM's import (seconds) is not what is measured
    delay = 0.5
    server = FakeModelServer(lambda body, i: (200, faithful_answer(body), delay))
    times = {}
    chunks = {}
    try:
        for concurrency in (1, 4):
            with tempfile.TemporaryDirectory() as tmp:
                mem = Path(tmp) / "memory"
                events = conversation(24)
                for e in events:  # ~1,500 tokens of varied text per turn: one turn per chunk at 4,000
                    if e["trace_type"] == "tool_result":
                        e["tool_result"]["note"] = " ".join(str(k * 7919 % 100003) for k in range(700))
                src = Path(tmp) / "events.ndjson"
                src.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
                ingest(mem, "llm", src)
                summarizer = LiteLLMSummarizer("openai/test-model", api_base=server.api_base, max_context_tokens=4000,
                                               retries=0)
                before = len(server.requests)
                t = time.perf_counter()
                result = compact(mem, "llm", summarizer=summarizer, concurrency=concurrency,
                                 policy=CompactionPolicy(tail_turns=4))
                times[concurrency] = time.perf_counter() - t
                chunks[concurrency] = result.chunks
                assert len(server.requests) - before == result.chunks
    finally:
        server.close()
    n = chunks[4]
    return [
        {"name": f"LLM compact {n} chunks, concurrency 4 vs 1", "value": times[4], "baseline": times[1], "unit": "s",
         "target": 0.4, "note": f"server answers in {delay}s; concurrency 1: {times[1]:.2f}s, concurrency 4: "
                                f"{times[4]:.2f}s (ideal ratio 0.25)"},
        {"name": f"LLM compact {n} chunks, concurrency 1 vs serial floor", "value": times[1],
         "baseline": n * delay, "unit": "s", "target": 1.5,
         "note": f"floor = {n} requests x {delay}s; the rest is LiteLLM's import (first run) and per-request overhead"},
    ]


def run() -> list[dict]:
    return bench_offline() + bench_offline_steps() + bench_llm_concurrency()


if __name__ == "__main__":
    for row in run():
        print(row)
