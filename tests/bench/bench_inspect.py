"""Inspection on a long history (docs/design.md §7).

* ``turns --last 5``, ``show --last 5`` and ``tools --status pending`` read from the end of the
  active file (or the state cache's offsets): the CLI process, end to end, on a store with BIG
  active traces must take within 1.5x of the same on 1,000 traces.
* ``stats``, ``show --ndjson`` (an export-style full scan) and ``tools --json`` stream: their
  peak RSS on BIG traces must stay within 1.5x of the same on BIG/10.

Stores are written directly as JSONL (turns of 10 traces: a user ask, parallel tool calls, results
answered out of order, assistant replies; the last turn ends on an unanswered call), then one
``memcli ingest`` builds the state cache, as it would be in use. Sizes: by default BIG = 100,000;
``MEMCLI_BENCH_INSPECT=full`` runs the issue's sizes (BIG = 1,000,000, RSS at 100,000 and
1,000,000). Run: ``python tests/bench/run_all.py inspect``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

from tests.bench.common import installed_env

REPO = Path(__file__).resolve().parents[2]
BASE_TS = 1772442000.0
REPEAT = 9


def _env(memory_dir: Path) -> dict:
    env = installed_env()   # as installed: byte-compiled once
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["MEMCLI_DIR"] = str(memory_dir)
    env["NO_COLOR"] = "1"
    env.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    return env


def build_store(memory_dir: Path, agent: str, n_traces: int) -> None:
    """``n_traces`` active traces written straight to raw_traces.jsonl, then the cache built once."""
    root = memory_dir / "agents" / agent
    root.mkdir(parents=True, exist_ok=True)
    dumps = orjson.dumps
    with open(root / "raw_traces.jsonl", "wb", buffering=1 << 22) as f:
        i = 0
        turn = 0
        while i < n_traces:
            turn += 1
            turn_id = f"turn_{turn:04d}"
            ts = BASE_TS + turn * 60
            c1, c2, c3 = f"call_{turn}_a", f"call_{turn}_b", f"call_{turn}_c"
            rows = [
                ("user", {"content": f"Turn {turn}: run the checks on module {turn % 97} and tell me what fails."}),
                ("assistant", {"content": "Running the checks and reading the config in parallel."}),
                ("tool_call", {"tool_name": "run_tests", "tool_call_id": c1, "tool_args": {"path": f"tests/m{turn % 97}"}}),
                ("tool_call", {"tool_name": "read_file", "tool_call_id": c2, "tool_args": {"path": "setup.cfg"}}),
                ("tool_result", {"tool_name": "read_file", "tool_call_id": c2, "tool_result": "[tool:pytest]\naddopts = -q"}),
                ("tool_result", {"tool_name": "run_tests", "tool_call_id": c1, "tool_result": "12 passed, 1 failed"}),
                ("assistant", {"content": "One test fails; reading it.", "usage": {"prompt_tokens": 1000 + turn % 5000,
                                                                                       "completion_tokens": 40}}),
                ("tool_call", {"tool_name": "read_file", "tool_call_id": c3, "tool_args": {"path": "tests/test_x.py"}}),
                ("tool_result", {"tool_name": "read_file", "tool_call_id": c3, "tool_result": "def test_x(): assert f() == 2"}),
                ("assistant", {"content": "test_x expects 2; f() returns 3 since the last change."}),
            ]
            last_turn = i + len(rows) >= n_traces
            for seq, (kind, fields) in enumerate(rows, 1):
                if i >= n_traces or (last_turn and seq == 9):  # the newest turn ends on an unanswered call
                    break
                record = {"id": f"rt_{i + 1:032x}", "ts": ts + seq, "turn_id": turn_id, "seq": seq,
                          "trace_type": kind, "content": "", "source_event": "bench", **fields}
                f.write(dumps(record))
                f.write(b"\n")
                i += 1
            if last_turn:
                break
    subprocess.run([sys.executable, "-m", "memcli", "ingest", agent],
                   input=b'{"trace_type":"assistant","content":"Still waiting for the last read."}\n',
                   env=_env(memory_dir), check=True, capture_output=True)


def time_pair(small: Path, big: Path, args: list[str]) -> tuple[float, float]:
    """Best wall time of the whole ``memcli`` process (start-up included) on each store, runs
    interleaved so that load from other processes falls on both alike."""
    times: dict[Path, list[float]] = {small: [], big: []}
    for _ in range(REPEAT):
        for memory_dir in (small, big):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "memcli", *args], env=_env(memory_dir), check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times[memory_dir].append(time.perf_counter() - start)
    return min(times[small]), min(times[big])


_RSS_PROBE = ("import resource, subprocess, sys\n"
              "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
              "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")


def peak_rss_mib(memory_dir: Path, args: list[str]) -> float:
    """Peak RSS of one ``memcli`` process, measured by a parent that waited for nothing else."""
    out = subprocess.run([sys.executable, "-c", _RSS_PROBE, sys.executable, "-m", "memcli", *args],
                         env=_env(memory_dir), check=True, capture_output=True)
    return int(out.stdout.strip()) / 1024.0


def run() -> list[dict]:
    full = os.environ.get("MEMCLI_BENCH_INSPECT", "") == "full"
    small, big = 1_000, (1_000_000 if full else 100_000)
    rss_small = 100_000 if full else 10_000
    tmp = Path(tempfile.mkdtemp(prefix="memcli-bench-inspect-"))
    rows = []
    try:
        stores = {}
        for n in sorted({small, rss_small, big}):
            start = time.perf_counter()
            stores[n] = tmp / f"m{n}"
            build_store(stores[n], "a", n)
            print(f"    (built a store of {n:,} traces in {time.perf_counter() - start:.1f}s)", file=sys.stderr)
        for label, args in (("turns --last 5", ["turns", "a", "--last", "5", "--json"]),
                            ("show --last 5", ["show", "a", "--last", "5", "--json"]),
                            ("tools --status pending", ["tools", "a", "--status", "pending", "--json"])):
            base, value = time_pair(stores[small], stores[big], args)
            rows.append({"name": f"inspect: {label} at {big:,} vs {small:,} traces", "value": value, "baseline": base,
                         "unit": "s", "target": 1.5,
                         "note": f"CLI process end to end, best of {REPEAT}: {value * 1000:.0f} ms vs {base * 1000:.0f} ms"})
        for label, args in (("stats", ["stats", "a", "--json"]),
                            ("show --ndjson (full scan)", ["show", "a", "--ndjson"]),
                            ("tools --json (full scan)", ["tools", "a", "--json"])):
            start = time.perf_counter()
            value = peak_rss_mib(stores[big], args)
            seconds = time.perf_counter() - start
            base = peak_rss_mib(stores[rss_small], args)
            rows.append({"name": f"inspect: {label} peak RSS at {big:,} vs {rss_small:,}", "value": value,
                         "baseline": base, "unit": "MiB", "target": 1.5,
                         "note": f"peak RSS {value:.1f} MiB vs {base:.1f} MiB; {seconds:.1f}s at {big:,} traces"})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


if __name__ == "__main__":
    for row in run():
        print(row)
