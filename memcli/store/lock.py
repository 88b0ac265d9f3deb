"""The per-agent write lock (docs/design.md §3).

Every write to an agent (ingest, compaction, repair, clear) happens while holding
``<memory dir>/.locks/<agent_id>.lock`` through ``filelock.FileLock`` (an ``flock`` on Unix). The
lock file is created 0600 and never deleted, so every process locks the same inode. Readers do not
lock: appends are whole lines and readers ignore an unterminated last line.

``MEMCLI_LOCK_TIMEOUT`` (seconds, default 120) bounds the wait; a timeout is a clean error, not a
hang. :func:`waiting_at_most` caps the wait for the code it wraps (a harness hook must never hold
up the user's session: ``memcli hook`` waits a few seconds at most). ``MEMCLI_UNSAFE_NO_LOCK=1`` disables locking; it exists only so the concurrency test can show
that it fails without the lock, and must never be used otherwise.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Callable, Iterator

from memcli.errors import CompactionBusy, LockTimeoutError, StoreError
from memcli.store.layout import FILE_MODE, LOCKS, AgentPaths, ensure_dir

DEFAULT_TIMEOUT = 120.0
_AT_MOST: ContextVar[float | None] = ContextVar("memcli_lock_wait_at_most", default=None)


def _timeout() -> float:
    raw = os.environ.get("MEMCLI_LOCK_TIMEOUT", "")
    try:
        wait = float(raw) if raw else DEFAULT_TIMEOUT
    except ValueError:
        wait = DEFAULT_TIMEOUT
    cap = _AT_MOST.get()
    return wait if cap is None else min(wait, cap)


@contextmanager
def waiting_at_most(seconds: float) -> Iterator[None]:
    """Within this block, no agent lock is waited for longer than ``seconds``."""
    token = _AT_MOST.set(seconds)
    try:
        yield
    finally:
        _AT_MOST.reset(token)


def _make_lock(path: str, timeout: float):
    import filelock  # ~50 ms: only processes that write pay for it

    try:
        return filelock.FileLock(path, timeout=timeout, mode=FILE_MODE, preserve_lock_file=True)
    except TypeError:  # filelock 3.x has no preserve_lock_file; its Unix lock keeps the file
        return filelock.FileLock(path, timeout=timeout, mode=FILE_MODE)


@contextmanager
def _holding(path: Path, wait: float, busy: Callable[[], Exception]) -> Iterator[None]:
    """Hold the lock file ``path`` (its directory exists), waiting at most ``wait`` seconds; a
    lock still held by another process then raises ``busy()``, any other failure a StoreError."""
    import filelock

    lock = _make_lock(str(path), wait)
    try:
        lock.acquire()
    except filelock.Timeout:
        raise busy() from None
    except OSError as exc:
        raise StoreError(f"cannot lock {path}: {exc.strerror or exc}") from exc
    try:
        yield
    finally:
        lock.release()


@contextmanager
def agent_lock(paths: AgentPaths, timeout: float | None = None) -> Iterator[None]:
    if os.environ.get("MEMCLI_UNSAFE_NO_LOCK") == "1":
        yield
        return
    ensure_dir(paths.lock_dir)
    wait = _timeout() if timeout is None else timeout
    with _holding(paths.lock, wait, lambda: LockTimeoutError(
            f"agent {paths.agent_id!r} is locked by another memcli process (waited {wait:g}s; "
            "set MEMCLI_LOCK_TIMEOUT to wait longer)")):
        yield


@contextmanager
def store_lock(memory_dir: str | os.PathLike, name: str) -> Iterator[None]:
    """A store-wide lock, ``<memory dir>/.locks/<name>`` (``name`` starts with a dot: agent ids
    cannot), waited for and bypassed like :func:`agent_lock`."""
    if os.environ.get("MEMCLI_UNSAFE_NO_LOCK") == "1":
        yield
        return
    locks = Path(memory_dir) / LOCKS
    ensure_dir(locks)
    wait = _timeout()
    with _holding(locks / name, wait, lambda: LockTimeoutError(
            f"{locks / name} is held by another memcli process (waited {wait:g}s; "
            "set MEMCLI_LOCK_TIMEOUT to wait longer)")):
        yield


@contextmanager
def compaction_lock(target) -> Iterator[None]:
    """The non-blocking per-agent compaction lock (one compaction per agent at a time;
    it is held while the summary is produced, without the write lock)."""
    paths: AgentPaths = getattr(target, "paths", target)  # an AgentStore or its AgentPaths
    ensure_dir(paths.lock_dir)
    with _holding(paths.lock_dir / f"{paths.agent_id}.compact.lock", 0,
                  lambda: CompactionBusy(f"another compaction of agent {paths.agent_id!r} is running")):
        yield
