"""``memcli sync`` (docs/design.md §7: a sync with nothing new within 2x of ``memcli --version``).

A fake home (tests/sync_fixtures.py: Claude Code sessions and Codex rollouts, two turns each,
alternating) of ``MEMCLI_BENCH_SYNC_SESSIONS`` sessions (default 2,000) is synced into an empty
store, each command a fresh process (``python -m memcli``):

* first sync: sessions per second, against a baseline that parses every line of every session
  file (orjson) and writes each session durably into a directory of its own (write, fsync of
  the file and of the directory) in one Python process — the floor of any durable import;
* no-change sync: the same command again (nothing new: every file only ``stat``-ed), best of 5,
  against ``memcli --version`` measured interleaved with it. Target 2x.

    MEMCLI_BENCH_SYNC_SESSIONS=300 python tests/bench/run_all.py sync
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import orjson

from tests.bench.common import installed_env, run_measured
from tests.sync_fixtures import fake_home

REPO = Path(__file__).resolve().parent.parent.parent
RUNS = 5


def _durable_copy(home: Path, into: Path) -> int:
    """The floor of any durable import: parse every line of every session, and write each
    session into its own new directory with an fsync of the file and of the directory."""
    lines = 0
    for n, path in enumerate(sorted(home.rglob("*.jsonl"))):
        data = path.read_bytes()
        for raw in data.splitlines():
            orjson.loads(raw)
            lines += 1
        target = into / str(n)
        target.mkdir(parents=True)
        fd = os.open(target / "copy.jsonl", os.O_WRONLY | os.O_CREAT, 0o600)
        os.write(fd, data)
        os.fsync(fd)
        os.close(fd)
        dfd = os.open(target, os.O_RDONLY)
        os.fsync(dfd)
        os.close(dfd)
    return lines


def run() -> list[dict]:
    sessions = int(os.environ.get("MEMCLI_BENCH_SYNC_SESSIONS", "2000"))
    tmp = Path(tempfile.mkdtemp(prefix="memcli-bench-sync-"))
    try:
        home = fake_home(tmp / "home", sessions)
        memory = tmp / "memory"
        env = installed_env(dict(os.environ, MEMCLI_DIR=str(memory), PYTHONPATH=str(REPO)))
        memcli = [sys.executable, "-m", "memcli"]
        run_measured(memcli + ["--version"], env=env)  # compiles what --version loads
        run_measured(memcli + ["sync", "--home", tmp / "nothing-here"], env=env)  # and what sync loads
        start = time.perf_counter()
        lines = _durable_copy(home, tmp / "copy")
        parse = time.perf_counter() - start
        first, first_rss, _ = run_measured(memcli + ["sync", "--home", home], env=env)
        again, version, again_cpu, version_cpu = [], [], [], []
        for _ in range(RUNS):  # interleaved, so a busy machine slows both alike
            wall, _, cpu = run_measured(memcli + ["sync", "--home", home], env=env)
            again.append(wall)
            again_cpu.append(cpu)
            wall, _, cpu = run_measured(memcli + ["--version"], env=env)
            version.append(wall)
            version_cpu.append(cpu)
        return [
            {"name": f"first sync of {sessions:,} sessions vs a durable copy", "value": first, "baseline": parse,
             "unit": "s", "target": None,
             "note": f"{sessions / first:,.0f} sessions/s ({lines:,} lines); peak RSS {first_rss:.0f} MiB"},
            {"name": f"sync with nothing new ({sessions:,} sessions) vs --version", "value": min(again),
             "baseline": min(version), "unit": "s", "target": 2.0,
             "note": f"best of {RUNS}; CPU {min(again_cpu):.3f}s vs {min(version_cpu):.3f}s "
                     f"({min(again_cpu) / min(version_cpu):.2f}x)"},
        ]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
