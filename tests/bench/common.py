"""Shared by the benchmarks: timing a child process and its peak memory honestly.

Linux keeps a process's peak RSS across ``fork`` and ``exec``: a child forked from a benchmark
process that has grown (LiteLLM imported, a big store built) reports the parent's size as its
own peak. So every measured command is started by a small fresh Python process (the probe), and
the probe reports the child's peak RSS and CPU time from ``wait4``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_PROBE = r"""
import os, subprocess, sys, time
out = open(sys.argv[1], "wb")
start = time.perf_counter()
proc = subprocess.Popen(sys.argv[2:], stdout=out, stderr=subprocess.PIPE)
_, status, usage = os.wait4(proc.pid, 0)
elapsed = time.perf_counter() - start
err = proc.stderr.read().decode(errors="replace")
print(elapsed, usage.ru_maxrss, usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status))
sys.stderr.write(err)
"""


def installed_env(env: dict | None = None) -> dict:
    """``env`` (else this process's environment) for a measured memcli process as it runs when
    installed: its bytecode compiled once and read from then on (an installed package has its .pyc
    files). A bench environment with PYTHONDONTWRITEBYTECODE set would otherwise make every
    process compile the memcli modules it imports from source (0.1 s of a one-event command,
    0.2-0.3 s of a compaction's lazy imports). The bytecode goes to a cache outside the checkout.
    :func:`compile_memcli` fills it before a measurement that imports inside the timed part."""
    env = dict(os.environ if env is None else env)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "memcli-bench-pycache")
    return env


_COMPILED: set = set()   # the bytecode caches compile_memcli filled in this run


def compile_memcli(env: dict) -> None:
    """Byte-compile every memcli module into ``env``'s bytecode cache (:func:`installed_env`),
    once a run per cache."""
    cache = env.get("PYTHONPYCACHEPREFIX")
    if cache in _COMPILED:
        return
    _COMPILED.add(cache)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(__file__).resolve().parents[2] / "memcli")],
                   env=env, check=True, stdout=subprocess.DEVNULL)


def run_measured(args: list, *, stdout_path: str = os.devnull, env: dict | None = None) -> tuple[float, float, float]:
    """(wall seconds, peak RSS in MiB, CPU seconds) of ``args`` run as a fresh child."""
    probe = subprocess.run([sys.executable, "-c", _PROBE, stdout_path, *map(str, args)], capture_output=True,
                           text=True, env=env)
    fields = probe.stdout.split()
    if len(fields) != 4 or fields[3] != "0":
        raise RuntimeError(f"{args} failed: {probe.stderr[-500:]}")
    return float(fields[0]), int(fields[1]) / 1024.0, float(fields[2])


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def best_vs(wall: dict, cpu: dict, name: str, baseline: str = "--version") -> tuple[float, float, str]:
    """Of interleaved runs (name -> list of wall / CPU seconds): the best wall time of ``name``
    and of ``baseline``, and a note comparing their best CPU times."""
    own, base = min(cpu[name]), min(cpu[baseline])
    return min(wall[name]), min(wall[baseline]), f"CPU {own:.3f}s vs {base:.3f}s ({own / base:.2f}x)"
