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
import time

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
