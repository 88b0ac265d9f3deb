"""``memcli sync`` (docs/design.md §7: a sync with nothing new within 2x of ``memcli --version``).

A fake home (tests/sync_fixtures.py: Claude Code sessions and Codex rollouts, two turns each,
alternating) of ``MEMCLI_BENCH_SYNC_SESSIONS`` sessions (default 2,000) is synced into an empty
store, each command a fresh process (``python -m memcli``):

* first sync: sessions per second, against a baseline that parses every line of every session
  file (orjson) and writes each session durably into a directory of its own (write, fsync of
  the file and of the directory) in one Python process — the floor of any durable import;
* no-change sync: the same command again (nothing new: every file only ``stat``-ed), best of 5,
  against ``memcli --version`` measured interleaved with it. Target 2x;
* one long Gemini CLI log (``MEMCLI_BENCH_SYNC_GEMINI_TURNS`` turns, default 2,500: four lines
  each, a record re-written as its tool call completes) synced into an empty store, against the
  same durable copy of it: a reader whose sync checkpoint (a carry of 200 signatures) was built
  after every line took ten times its reading time.

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
from tests.sync_fixtures import fake_home, gemini_chats, gm_call, gm_header, gm_model, gm_user, sid, write_lines

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


def _gemini_log(home: Path, turns: int) -> Path:
    """One Gemini CLI session log of ``turns`` turns: an ask, a metadata update, the answer, and the
    answer again with its completed tool call (how Gemini CLI re-writes a record)."""
    session = sid(90, "gm")
    lines = [gm_header(session)]
    for n in range(turns):
        call = gm_call(f"c{n}", output=f"contents of file {n} " * 8)
        lines += [gm_user(f"u{n}", f"look at file {n} and fix it", n % 60),
                  {"$set": {"lastUpdated": "2026-03-03T09:00:00.000Z"}},
                  gm_model(f"m{n}", f"reading file {n} first", n % 60),
                  gm_model(f"m{n}", f"reading file {n} first", n % 60, calls=[call])]
    return write_lines(gemini_chats(home) / f"session-2026-03-03T08-00-{session[:8]}.jsonl", lines)


def _gemini_row(tmp: Path, env: dict, memcli: list) -> dict:
    turns = int(os.environ.get("MEMCLI_BENCH_SYNC_GEMINI_TURNS", "2500"))
    home = tmp / "gemini-home"
    _gemini_log(home, turns)
    start = time.perf_counter()
    lines = _durable_copy(home, tmp / "gemini-copy")
    parse = time.perf_counter() - start
    wall, rss, _ = run_measured(memcli + ["sync", "--home", home, "--source", "gemini"],
                                env=dict(env, MEMCLI_DIR=str(tmp / "gemini-memory")))
    return {"name": "first sync of one Gemini CLI log vs a durable copy", "value": wall,
            "baseline": parse, "unit": "s", "target": None, "note": f"{lines:,} lines; peak RSS {rss:.0f} MiB"}


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
            _gemini_row(tmp, env, memcli),
        ]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
