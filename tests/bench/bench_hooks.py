"""Harness hook latency (docs/hooks.md): each ``memcli hook claude-code EVENT`` on a warm store, as
a ratio to ``memcli --version``, best of 5, interleaved, each a fresh process started by a shell
with the payload on stdin — as Claude Code runs it.

The session: a Claude Code transcript of :data:`TURNS` turns (a user ask, then assistant text and
a Bash call with its result per step, :data:`STEPS` steps a turn; ~0.7 MB, written here), already
imported once (warm: the agent, its state and its search index exist). Events:

* ``Stop`` with nothing new (the common case between two turns: the whole file is re-read, ids
  skip what the agent has);
* ``Stop`` after one more turn was written (its lines appended before each run, then imported);
* ``PreCompact`` (nothing new);
* ``SessionStart`` (``compact``): import, then the context (latest ask, pinned fact, recall, related history).

Target: within 2x of ``--version`` (docs/design.md §7: a hook "well under 1 s on a warm store").

    python tests/bench/run_all.py hooks
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

import orjson

from tests.bench.common import best_vs, compile_memcli, installed_env, run_measured

REPO = Path(__file__).resolve().parent.parent.parent
RUNS = 7
TURNS = 60
STEPS = 8


def _turn_lines(t: int) -> list[bytes]:
    lines = [{"type": "user", "uuid": f"u{t}", "sessionId": "bench", "timestamp": "2026-01-01T00:00:00Z",
              "message": {"role": "user", "content": f"turn {t}: fix the failing test in module_{t}.py and rerun"}}]
    for s in range(STEPS):
        lines.append({"type": "assistant", "uuid": f"a{t}-{s}", "sessionId": "bench",
                      "message": {"id": f"m{t}-{s}", "role": "assistant", "model": "claude", "content": [
                          {"type": "text", "text": f"Step {s}: looking at module_{t}.py " + "details " * 40},
                          {"type": "tool_use", "id": f"c{t}-{s}", "name": "Bash",
                           "input": {"command": f"pytest tests/test_{t}.py -k case_{s}"}}]}})
        lines.append({"type": "user", "uuid": f"r{t}-{s}", "sessionId": "bench",
                      "message": {"role": "user", "content": [
                          {"type": "tool_result", "tool_use_id": f"c{t}-{s}",
                           "content": f"FAILED tests/test_{t}.py::case_{s} " + "trace line\n" * 60}]}})
    return [orjson.dumps(line) + b"\n" for line in lines]


def run() -> list[dict]:
    tmp = Path(tempfile.mkdtemp(prefix="memcli-bench-hooks-"))
    try:
        memory = tmp / "memory"
        transcript = tmp / "session.jsonl"
        with open(transcript, "wb") as f:
            for t in range(TURNS):
                f.writelines(_turn_lines(t))
        size = transcript.stat().st_size
        payload = tmp / "payload.json"
        payload.write_bytes(orjson.dumps({"session_id": "bench", "transcript_path": str(transcript), "cwd": str(tmp),
                                          "hook_event_name": "Stop", "source": "compact"}))
        env = installed_env(dict(os.environ, PYTHONPATH=str(REPO)))   # as installed: compiled
        env.pop("MEMCLI_DIR", None)
        compile_memcli(env)
        memcli = shlex.join([sys.executable, "-m", "memcli"])
        hook = f"{memcli} --dir {shlex.quote(str(memory))} hook claude-code"
        commands = {
            "--version": f"exec {memcli} --version",
            "Stop (nothing new)": f"exec {hook} Stop < {shlex.quote(str(payload))}",
            "Stop (one new turn)": f"exec {hook} Stop < {shlex.quote(str(payload))}",
            "PreCompact": f"exec {hook} PreCompact < {shlex.quote(str(payload))}",
            "SessionStart (compact)": f"exec {hook} SessionStart < {shlex.quote(str(payload))}",
        }
        # warm: the first import, a pinned fact, and one context (fills the search index)
        for name in ("Stop (nothing new)", "SessionStart (compact)"):
            run_measured(["sh", "-c", commands[name]], env=env)
        sys.path.insert(0, str(REPO))
        import memcli as api
        from memcli.sync.naming import session_agent_id

        agent = session_agent_id("claude-code", "bench", cwd=str(tmp))
        api.Memory(memory).agent(agent).remember("CI runs on the self-hosted runner", pin=True)
        wall = {name: [] for name in commands}
        cpu = {name: [] for name in commands}
        extra = TURNS
        for _ in range(RUNS):
            for name, command in commands.items():
                if name == "Stop (one new turn)":
                    with open(transcript, "ab") as f:
                        f.writelines(_turn_lines(extra))
                    extra += 1
                seconds, _, cpu_seconds = run_measured(["sh", "-c", command], env=env)
                wall[name].append(seconds)
                cpu[name].append(cpu_seconds)
        rows = []
        for name in commands:
            if name != "--version":
                value, version, cpu_note = best_vs(wall, cpu, name)
                rows.append({"name": f"hook claude-code {name} vs --version", "value": value, "baseline": version,
                             "unit": "s", "target": 2.0,
                             "note": f"best of {RUNS}; {cpu_note}; transcript {size / 1e6:.1f} MB, {TURNS}+ turns"})
        return rows
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
