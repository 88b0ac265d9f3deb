"""Working memory: what a full tree costs a ``memcli memory-tool`` call (the whole log is replayed
on each call, memcli.store.memory_files).

The full tree is the limit: 2,000 files of ~1 KB, plus ``MEMCLI_BENCH_WM_EDITS`` (default
20,000) edits spread over them — written straight into the log (valid records, as the tool would
write them), since making them through the tool would replay a growing log 22,000 times.
Figures, each the best of a few runs, as a fresh process:

* ``memory-tool`` ``str_replace`` on the full tree vs the same command on a tree of one file
  (the cost of replay), target 2x;
* the same call vs ``memcli --version`` (start-up), no target: reported.
"""

from __future__ import annotations

import os
import random
import shutil
import sys
import tempfile
from pathlib import Path

import orjson

from tests.bench.common import run_measured

AGENT = "bench"
FILES = 2000
EDITS = int(os.environ.get("MEMCLI_BENCH_WM_EDITS", "20000"))
RUNS = 5


def _write_log(memory_dir: Path, files: int, edits: int) -> int:
    from memcli.store.memory_files import MemoryTree

    rng = random.Random(7)
    directory = memory_dir / "agents" / AGENT
    directory.mkdir(parents=True)
    records = []
    texts = {}
    for i in range(files):
        path = f"/memories/topic{i % 40:02d}/note{i:04d}.md"
        texts[path] = "".join(f"- item {j}: {rng.random():.6f}\n" for j in range(40))
        records.append({"id": f"wm_{len(records):032x}", "ts": 1.7e9, "op": "create", "path": path,
                        "content": texts[path]})
    paths = sorted(texts)
    for _ in range(edits):
        path = rng.choice(paths)
        at = rng.randrange(len(texts[path]) - 3)
        text = f"edit {rng.random():.4f}\n"
        texts[path] = texts[path][:at] + text + texts[path][at + 3:]
        records.append({"id": f"wm_{len(records):032x}", "ts": 1.7e9, "op": "str_replace", "path": path,
                        "at": at, "cut": 3, "text": text})
    log = directory / "memory_files.jsonl"
    log.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    assert MemoryTree.replay(log).files == texts
    return log.stat().st_size


def _best(args: list, env: dict) -> float:
    return min(run_measured(args, env=env)[0] for _ in range(RUNS))


def run() -> list[dict]:
    root = Path(tempfile.mkdtemp(prefix="memcli-bench-wm-"))
    try:
        full, small = root / "full", root / "small"
        size = _write_log(full, FILES, EDITS)
        _write_log(small, 1, 0)
        env = dict(os.environ)
        env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2]) + os.pathsep + env.get("PYTHONPATH", "")
        command = orjson.dumps({"command": "view", "path": "/memories/topic00/note0000.md", "view_range": [1, 3]})
        cmd_file = root / "command.json"
        cmd_file.write_bytes(command)
        # the probe gives the child no stdin: a shell feeds the command file
        def call(memory_dir):
            return ["sh", "-c", f'"{sys.executable}" -m memcli --dir "{memory_dir}" memory-tool {AGENT} < "{cmd_file}"']

        t_full, t_small = _best(call(full), env), _best(call(small), env)
        t_version = _best(["sh", "-c", f'"{sys.executable}" -m memcli --version'], env)
        note = (f"best of {RUNS}; {FILES:,} files + {EDITS:,} edits = {size / 1e6:.1f} MB of log, "
                f"replayed on every call")
        return [
            {"name": "memory-tool view: full tree vs one file", "value": t_full, "baseline": t_small, "unit": "s",
             "target": 2.0, "note": note},
            {"name": "memory-tool view on the full tree vs memcli --version", "value": t_full, "baseline": t_version,
             "unit": "s", "target": None, "note": "start-up included in both"},
        ]
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    for row in run():
        print(row)
