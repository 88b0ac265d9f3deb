"""Short commands on a small agent (docs/design.md §7): ``memcli snapshot coder`` and ``memcli stats
coder`` on the 281-trace sample agent within 2x of ``memcli --version``, best of 5, all in the
same run, each a fresh process (``python -m memcli``, as a user's shell starts it).

The tokenizer's start-up (0.2–0.5 s to load a tiktoken encoding) must not be paid on every
call: after the first command has counted the agent's texts, later ones read the counts from
the agent's count cache (memcli/store/token_counts.py). One untimed run of each command fills
it, as any first use would; the figure for a cold cache is printed as a note.

    python tests/bench/run_all.py latency
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from tests.bench.common import best_vs, compile_memcli, installed_env, run_measured

REPO = Path(__file__).resolve().parent.parent.parent
RUNS = 5


def run() -> list[dict]:
    tmp = Path(tempfile.mkdtemp(prefix="memcli-bench-latency-"))
    try:
        memory = tmp / "memory"
        shutil.copytree(REPO / "sample_memory", memory)
        env = installed_env(dict(os.environ, MEMCLI_DIR=str(memory), PYTHONPATH=str(REPO)))   # as installed
        compile_memcli(env)
        memcli = [sys.executable, "-m", "memcli"]
        commands = {"--version": ["--version"], "snapshot": ["snapshot", "coder"], "stats": ["stats", "coder"]}
        cold = {name: run_measured(memcli + args, env=env)[0] for name, args in commands.items()}  # fills the cache
        wall = {name: [] for name in commands}
        cpu = {name: [] for name in commands}
        for _ in range(RUNS):  # interleaved, so a busy machine slows every command alike
            for name, args in commands.items():
                seconds, _, cpu_seconds = run_measured(memcli + args, env=env)
                wall[name].append(seconds)
                cpu[name].append(cpu_seconds)
        rows = []
        for name in ("snapshot", "stats"):
            value, version, cpu_note = best_vs(wall, cpu, name)
            rows.append({"name": f"{name} coder (281 traces) vs --version", "value": value, "baseline": version,
                         "unit": "s", "target": 2.0,
                         "note": f"best of {RUNS}; {cpu_note}; first run (count cache empty): {cold[name]:.3f}s"})
        return rows
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
