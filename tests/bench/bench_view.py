"""``memcli view`` of a 2,000-step session (docs/design.md §7): the page's bytes as a ratio to the
session's JSONL (target ≤ 3x), the time to write it as a ratio to ``memcli export`` of the same
agent (the baseline: one read of the same store), and the time a real browser's script takes to
draw it (the page's own ``data-render-ms``, headless Chromium; target < 2 s, a ratio to 2 s).

The session: one turn of 2,000 steps (a note, a call, its result; every 10th call fails, results
of 100 to 3,000 characters), ingested once.

    python tests/bench/run_all.py view
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson

from tests.bench.common import run_measured

REPO = Path(__file__).resolve().parent.parent.parent
STEPS = 2000


def _events() -> bytes:
    rows = [{"id": "ask", "trace_type": "user", "content": "Make the whole suite pass, then open a PR."}]
    for i in range(STEPS):
        rows.append({"id": f"n{i}", "trace_type": "assistant", "content": f"Step {i}: checking module_{i % 97}.py"})
        rows.append({"id": f"c{i}", "trace_type": "tool_call", "tool_name": "Bash", "tool_call_id": f"k{i}",
                     "tool_args": {"command": f"pytest tests/test_{i % 97}.py -x"}})
        fail = i % 10 == 0
        rows.append({"id": f"r{i}", "trace_type": "tool_result", "tool_name": "Bash", "tool_call_id": f"k{i}",
                     "tool_result": ("collected 12 items\n" + "tests pass line\n" * (5 + (i * 37) % 180)
                                     + (f"E   AssertionError: case {i} expected 3, got 4\n" if fail else "")),
                     **({"tool_error": "exit status 1"} if fail else {})})
    return b"".join(orjson.dumps(r) + b"\n" for r in rows)


def run() -> list[dict]:
    tmp = Path(tempfile.mkdtemp(prefix="memcli-bench-view-"))
    try:
        env = dict(os.environ, MEMCLI_DIR=str(tmp / "memory"), PYTHONPATH=str(REPO), NO_COLOR="1",
                   LITELLM_LOCAL_MODEL_COST_MAP="True")
        memcli = [sys.executable, "-m", "memcli"]
        subprocess.run([*memcli, "ingest", "big"], input=_events(), env=env, check=True, capture_output=True)
        jsonl = sum(p.stat().st_size for p in (tmp / "memory" / "agents" / "big").glob("raw_traces*.jsonl"))
        page = tmp / "big.html"
        run_measured([*memcli, "view", "big", "-o", page], env=env)      # warm: token counts cached
        wall = min(run_measured([*memcli, "view", "big", "-o", page], env=env)[0] for _ in range(3))
        base = min(run_measured([*memcli, "export", "big"], env=env)[0] for _ in range(3))
        rows = [
            {"name": f"view: HTML bytes / JSONL bytes ({STEPS:,} steps)", "value": page.stat().st_size,
             "baseline": jsonl, "unit": "B", "target": 3.0,
             "note": f"{page.stat().st_size:,} B page, {jsonl:,} B JSONL, "
                     f"{page.stat().st_size / (3 * STEPS + 1):,.0f} B per trace"},
            {"name": f"view: write the page vs export ({STEPS:,} steps)", "value": wall, "baseline": base,
             "unit": "s", "target": None, "note": f"view {wall:.2f} s, export {base:.2f} s"},
        ]
        browser = shutil.which("chromium")
        if browser:
            done = subprocess.run([browser, "--headless=new", "--no-sandbox", "--disable-gpu",
                                   f"--user-data-dir={tmp / 'profile'}", "--virtual-time-budget=20000", "--dump-dom",
                                   page.as_uri()], capture_output=True, timeout=180)
            ms = re.search(rb'data-render-ms="(\d+)"', done.stdout)
            if ms:
                rows.append({"name": f"view: browser draws the page ({STEPS:,} steps)", "value": int(ms.group(1)) / 1000,
                             "baseline": 2.0, "unit": "s", "target": 1.0,
                             "note": "the page script's own time in headless Chromium, against the 2 s target"})
        return rows
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
