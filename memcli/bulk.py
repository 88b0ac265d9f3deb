"""Bulk passes over a store: CPython's cyclic garbage collector paused while they run, and the
CPUs they may spread over.

A pass over many lines — a compaction's plan, an ingest, an export's read, a snapshot of a long
session — allocates millions of short-lived objects (parsed records, traces, messages) while it
holds some long-lived ones (indexes, per-unit records, the state). Every full collection then
re-traverses all of those: measured here, a tenth of a large compaction, a fifth of an ingest,
and more than half of ``take_snapshot`` of 100,000 turns (7.5 s of CPU with the collector, 3.2 s
without). Reference counting frees everything as usual; whatever cycles a pass makes wait for the
collector, which resumes, if it was on, when the outermost pass ends (a generator's pass: when it
is exhausted or closed).

:func:`usable_cpus` is what a pass may run on at once: the CPUs of the process's affinity (e.g.
``taskset``, a container's cpuset), lowered to the CPU time its cgroups allow (a container started
with ``--cpus 1``, a CI runner's quota), which ``os.cpu_count`` and the affinity do not show. Two
processes sharing one CPU's worth of quota take longer than one doing both halves in turn.
"""

from __future__ import annotations

import gc
import os
from contextlib import contextmanager
from typing import Iterator

MOUNTINFO = "/proc/self/mountinfo"   # where cgroup file systems are mounted (module constants: tests point them
CGROUP = "/proc/self/cgroup"         # at files of their own) and this process's cgroup in each hierarchy


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """The block runs with the cyclic collector off; nested blocks leave it to the outermost."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def usable_cpus() -> int:
    """The CPUs this process may keep busy at once: its affinity (else the machine's count), at
    most its cgroup CPU quota rounded to the nearest whole CPU, and at least one (module docstring)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    quota = cgroup_cpu_quota()
    if quota is not None:
        cpus = min(cpus, int(quota + 0.5))
    return max(cpus, 1)


def cgroup_cpu_quota() -> float | None:
    """CPUs' worth of time per period this process's cgroups allow — cgroup v2's ``cpu.max``
    (``"<quota> <period>"`` or ``"max <period>"``), v1's ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``
    (quota -1: none) — the smallest on the way from its cgroup up to the mount's root; None where
    no limit is set or nothing can be read (no Linux, no cgroup file system)."""
    try:
        with open(CGROUP) as f:
            memberships = [line.rstrip("\n").split(":", 2) for line in f]
        with open(MOUNTINFO) as f:
            mounts = [line.split() for line in f]
    except OSError:
        return None
    limits = []
    for fields in mounts:
        if "-" not in fields:
            continue
        sep = fields.index("-")
        if sep + 1 >= len(fields) or len(fields) < 5:
            continue
        fstype, super_options = fields[sep + 1], fields[-1].split(",")
        root, mount_point = fields[3], fields[4]
        if fstype == "cgroup2":
            path = next((m[2] for m in memberships if len(m) == 3 and m[0] == "0" and m[1] == ""), None)
            files = ("cpu.max",)
        elif fstype == "cgroup" and "cpu" in super_options:
            path = next((m[2] for m in memberships if len(m) == 3 and "cpu" in m[1].split(",")), None)
            files = ("cpu.cfs_quota_us", "cpu.cfs_period_us")
        else:
            continue
        if path is None:
            continue
        if root != "/" and (path == root or path.startswith(root + "/")):
            path = path[len(root):]   # the mount shows a subtree (a cgroup namespace, a container)
        directory = os.path.join(mount_point, path.lstrip("/")) if path.startswith("/") else mount_point
        limits.extend(_limits_up(directory, mount_point, files))
    return min(limits) if limits else None


def _limits_up(directory: str, mount_point: str, files: tuple) -> Iterator[float]:
    """The CPU limits set in ``directory`` and each parent up to ``mount_point``."""
    mount_point = os.path.normpath(mount_point)
    directory = os.path.normpath(directory)
    while True:
        try:
            values = []
            for name in files:
                with open(os.path.join(directory, name)) as f:
                    values.extend(f.read().split())
            quota, period = values[0], values[1]
            if quota not in ("max", "-1") and float(period) > 0:
                yield float(quota) / float(period)
        except (OSError, ValueError, IndexError):
            pass
        if directory == mount_point or len(directory) <= len(mount_point):
            return
        directory = os.path.dirname(directory)
