"""Two writes for the shared store (memcli.remote): the store's id, and an agent restored whole.

``<memory dir>/.store-id`` names this store in a shared database, so that agents of the same name
pushed from two machines stay two agents there. It is made once (``<host>-<8 hex>``), published
with ``os.link`` from a temp file so that two first pushes racing agree on one id, and never
changed.

:func:`restore_agent` writes an agent's data files from an iterator of lines (``pull``): every file
is written into a fresh hidden directory beside the agents (``agents/.pull-<hex>``, never listed
as an agent), fsynced, and the directory is renamed to ``agents/<agent_id>`` under the agent's
lock. So a pull either leaves the complete agent or nothing (a crash leaves a hidden directory the
next restore of that id removes). An agent that already exists is never overwritten.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
from pathlib import Path
from typing import Iterable, Iterator

from memcli.errors import StoreError
from memcli.store import jsonl, layout
from memcli.store.layout import DATA_FILES, DIR_MODE, agent_paths, ensure_dir
from memcli.store.lock import agent_lock

STORE_ID = layout.STORE_ID
STORE_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def store_id(memory_dir: str | os.PathLike, *, create: bool = True) -> str | None:
    """This store's id (module docstring); made on first use when ``create``."""
    path = Path(memory_dir) / STORE_ID
    try:
        value = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        value = None
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from exc
    if value is not None:
        if not STORE_ID_RE.fullmatch(value):
            raise StoreError(f"{path} does not hold a store id (1-64 of A-Z a-z 0-9 . _ -)")
        return value
    if not create:
        return None
    host = re.sub(r"[^A-Za-z0-9._-]", "-", socket.gethostname().split(".")[0])[:40].strip("-._") or "store"
    value = f"{host}-{os.urandom(4).hex()}"
    ensure_dir(Path(memory_dir))
    tmp = jsonl.temp_name(path)
    fd = jsonl.create_new(tmp)
    try:
        os.write(fd, value.encode() + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)
    jsonl.fsync_dir(path.parent)
    return store_id(memory_dir, create=False)


def _write_lines(path: Path, lines: Iterable[bytes]) -> int:
    fd = jsonl.create_new(path)
    count = 0
    try:
        buffer: list[bytes] = []
        size = 0
        for line in lines:
            buffer.append(line)
            buffer.append(b"\n")
            size += len(line) + 1
            count += 1
            if size >= 1 << 20:
                jsonl.write_all(fd, b"".join(buffer))
                buffer, size = [], 0
        jsonl.write_all(fd, b"".join(buffer))
        os.fsync(fd)
    finally:
        os.close(fd)
    return count


def restore_agent(memory_dir: str | os.PathLike, agent_id: str,
                  files: Iterator[tuple[str, Iterable[bytes]]]) -> dict[str, int]:
    """Write a new agent from ``(data file name, lines without \\n)`` pairs; lines per file."""
    paths = agent_paths(memory_dir, agent_id)
    ensure_dir(paths.agents_dir)
    with agent_lock(paths):
        if paths.exists():
            raise StoreError(f"agent {agent_id!r} already exists in {paths.memory_dir}: nothing was written")
        for stale in paths.agents_dir.glob(f".pull-{agent_id}.*"):
            shutil.rmtree(stale, ignore_errors=True)
        staging = paths.agents_dir / f".pull-{agent_id}.{os.urandom(6).hex()}"
        os.mkdir(staging, DIR_MODE)
        counts: dict[str, int] = {}
        try:
            for name, lines in files:
                if name not in DATA_FILES:
                    raise StoreError(f"refusing to write {name!r}: not a data file of this memcli")
                counts[name] = _write_lines(staging / name, lines)
            jsonl.fsync_dir(staging)
            if paths.dir.exists():
                os.rmdir(paths.dir)  # only an empty leftover (exists() said it holds no data file)
            os.rename(staging, paths.dir)
            jsonl.fsync_dir(paths.agents_dir)
        except OSError as exc:
            shutil.rmtree(staging, ignore_errors=True)
            raise StoreError(f"cannot restore agent {agent_id!r} into {paths.dir}: {exc.strerror or exc}") from exc
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    return counts
