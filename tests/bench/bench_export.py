"""Export throughput against ``cat`` of the same files, and peak memory as the history grows.

    python tests/bench/bench_export.py                          # 100 MB store (default)
    MEMCLI_BENCH_EXPORT_MB=1000 python tests/bench/bench_export.py   # the 1 GB run

Builds a store (in ``$MEMCLI_BENCH_DIR``, else the temp directory; archive + active, realistic trace mix: user asks, assistant text, tool calls
with JSON arguments and their results, ~270 bytes a line) in a temporary
directory next to the repository, then, in the same run and with the files in the page cache:

* ``cat raw_traces_archive.jsonl raw_traces.jsonl > /dev/null`` — the baseline (best of 3);
* ``memcli export big [-f json|markdown] > /dev/null`` and ``memcli export big -o FILE`` (fsync
  included), each in its own process (best of 3 for jsonl), with its peak RSS (``wait4``);
* the same export of a 1 MB store, for the peak-RSS ratio (flat memory: the ratio stays ~1).

Everything it wrote is deleted at the end (the disk is shared).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO))

DEFAULT_MB = 100


def _lines(count: int, start: int = 0):
    """Synthetic trace lines in memcli's own serialization (a user ask, two tool calls with
    their results — one multi-line file read, one command — and an assistant answer per turn)."""
    import orjson

    code = "def total(order):\n    return sum(i.price * i.qty for i in order.items)\n" * 4
    for i in range(start, start + count):
        kind = i % 6
        turn = f"turn_{i // 6 + 1:06d}"
        base = {"id": f"rt_{i:032x}", "ts": 1772442000.0 + i, "turn_id": turn, "seq": kind + 1}
        if kind == 0:
            rec = {**base, "trace_type": "user", "source_event": "bench",
                   "content": f"Please look at app/orders.py and fix issue #{i}; the totals are off."}
        elif kind == 1:
            rec = {**base, "trace_type": "tool_call", "content": "", "source_event": "bench", "tool_name": "read_file",
                   "tool_call_id": f"call_{i}", "tool_args": {"path": "app/orders.py", "start": 1, "end": 80}}
        elif kind == 2:
            rec = {**base, "trace_type": "tool_result", "content": "", "source_event": "bench", "tool_name": "read_file",
                   "tool_call_id": f"call_{i - 1}", "tool_result": code}
        elif kind == 3:
            rec = {**base, "trace_type": "tool_call", "content": "", "source_event": "bench", "tool_name": "run_command",
                   "tool_call_id": f"call_{i}", "tool_args": {"command": "pytest -q tests/test_orders.py"}}
        elif kind == 4:
            rec = {**base, "trace_type": "tool_result", "content": "", "source_event": "bench",
                   "tool_name": "run_command", "tool_call_id": f"call_{i - 1}",
                   "tool_result": {"exit_code": 0, "stdout": "12 passed in 0.81s"}}
        else:
            rec = {**base, "trace_type": "assistant", "source_event": "bench",
                   "content": "The discount is never applied: api.py calls total() but not apply(). "
                   "I changed it and all 12 tests pass; ruff is clean.",
                   "usage": {"prompt_tokens": 1000 + i % 5000, "completion_tokens": 200}}
        yield orjson.dumps(rec) + b"\n"


def build_store(root: Path, agent: str, megabytes: float) -> int:
    """Write an agent of about ``megabytes`` MB: the first 80% in the archive. Returns bytes."""
    d = root / "agents" / agent
    d.mkdir(parents=True)
    target = int(megabytes * 1_000_000)
    written = 0
    i = 0
    with open(d / "raw_traces_archive.jsonl", "wb") as archive, open(d / "raw_traces.jsonl", "wb") as active:
        while written < target:
            block = b"".join(_lines(6000, i))
            i += 6000
            (archive if written < target * 0.8 else active).write(block)
            written += len(block)
    return written


def _run(args: list, stdout_path: str = os.devnull) -> tuple[float, int]:
    """(wall seconds, peak RSS in MB) of one child process; its CPU seconds go to CPU_SECONDS.
    Started through tests.bench.common's probe, so the peak RSS is the child's own."""
    from tests.bench.common import run_measured

    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    elapsed, rss_mb, cpu = run_measured(args, stdout_path=stdout_path, env=env)
    CPU_SECONDS[tuple(map(str, args))] = min(CPU_SECONDS.get(tuple(map(str, args)), 1e9), cpu)
    return elapsed, rss_mb


CPU_SECONDS: dict = {}  # args -> least user+sys CPU seconds seen (steadier than wall time on a busy machine)


def _cpu(args: list) -> float:
    return CPU_SECONDS.get(tuple(map(str, args)), float("nan"))


def _best(n: int, args: list, stdout_path: str = os.devnull) -> tuple[float, int]:
    runs = [_run(args, stdout_path) for _ in range(n)]
    return min(r[0] for r in runs), max(r[1] for r in runs)


def run() -> list[dict]:
    megabytes = float(os.environ.get("MEMCLI_BENCH_EXPORT_MB", DEFAULT_MB))
    root = Path(tempfile.mkdtemp(prefix="memcli-bench-export-", dir=os.environ.get("MEMCLI_BENCH_DIR")))
    rows = []
    try:
        memory = root / "memory"
        size = build_store(memory, "big", megabytes)
        build_store(memory, "small", 1)
        files = [str(memory / "agents" / "big" / name) for name in ("raw_traces_archive.jsonl", "raw_traces.jsonl")]
        memcli = [sys.executable, "-m", "memcli", "--dir", str(memory), "export"]
        label = f"{size / 1e6:.0f} MB"

        _run(["cat", *files])  # warm the page cache
        cat_s, _ = _best(3, ["cat", *files])
        startup_s, _ = _best(3, [sys.executable, "-m", "memcli", "--version"])
        jsonl_s, jsonl_rss = _best(3, memcli + ["big"])
        _, small_rss = _best(1, memcli + ["small"])
        rows.append({"name": f"export jsonl {label} > /dev/null vs cat", "value": jsonl_s, "baseline": cat_s,
                     "unit": "s", "target": None,
                     "note": f"{size / jsonl_s / 1e6:.0f} MB/s vs cat {size / cat_s / 1e6:.0f} MB/s (CPU "
                             f"{_cpu(memcli + ['big']):.2f} s vs {_cpu(['cat', *files]):.2f} s); every line parsed "
                             f"and checked; includes {startup_s:.2f} s of interpreter start-up"})
        rows.append({"name": f"export jsonl peak RSS {label} vs 1 MB store", "value": jsonl_rss, "baseline": small_rss,
                     "unit": "MB", "target": 1.5, "note": "memory stays flat as the history grows"})
        out = str(root / "export.jsonl")
        file_s, _ = _best(1, memcli + ["big", "-o", out])
        os.unlink(out)
        cat_file_s, _ = _best(1, ["sh", "-c", f"cat {files[0]} {files[1]} > {out} && sync {out}"])
        os.unlink(out)
        rows.append({"name": f"export jsonl {label} -o FILE vs cat > FILE; sync", "value": file_s,
                     "baseline": cat_file_s, "unit": "s", "target": None,
                     "note": "temp file, fsync, rename: the file appears only when complete"})
        for fmt in ("json", "markdown"):
            fmt_s, fmt_rss = _best(1, memcli + ["big", "-f", fmt])
            _, fmt_small = _best(1, memcli + ["small", "-f", fmt])
            rows.append({"name": f"export {fmt} {label} > /dev/null vs cat", "value": fmt_s, "baseline": cat_s,
                         "unit": "s", "target": None,
                         "note": f"{size / fmt_s / 1e6:.0f} MB/s (CPU {_cpu(memcli + ['big', '-f', fmt]):.2f} s)"})
            rows.append({"name": f"export {fmt} peak RSS {label} vs 1 MB store", "value": fmt_rss,
                         "baseline": fmt_small, "unit": "MB", "target": 1.5, "note": ""})
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return rows


if __name__ == "__main__":
    for row in run():
        ratio = row["value"] / row["baseline"]
        print(f"{row['name']:58} {row['value']:9.3f}{row['unit']:>3} {row['baseline']:9.3f}{row['unit']:>3} {ratio:6.2f}x  {row['note']}")
