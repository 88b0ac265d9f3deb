"""Where an export goes: stdout, or a file that appears only once it is complete.

:func:`atomic_output` writes to a temporary file in the target's directory (created with
``O_EXCL``, mode 0600, never through a symlink), and on success flushes, fsyncs,
``os.replace``-s it onto the target and fsyncs the directory. On any failure — a corrupt line
met half-way, a full disk, Ctrl-C — the temporary file is removed and the target is left as it
was (absent, or its previous content). A reader of the target never sees half an export.

The file is created 0600 like every file memcli writes: an export holds the agent's whole
memory. Writing an export into the store itself (``<memory dir>/agents/...``) is refused — a
typo there could replace an agent's own data file.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Iterator

from memcli.errors import StoreError, UsageError
from memcli.store.jsonl import fsync_dir
from memcli.store.layout import FILE_MODE

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
WRITE_BUFFER = 1 << 20


def check_target(target: Path, memory_dir: Path) -> Path:
    """Refuse targets that cannot or must not be written, before any work is done."""
    if target.is_dir():
        raise UsageError(f"-o {target}: is a directory")
    parent = target.parent
    if not parent.is_dir():
        raise UsageError(f"-o {target}: directory {parent} does not exist")
    try:
        agents = (Path(memory_dir) / "agents").resolve()
        resolved = target.resolve()
    except OSError:
        return target
    if resolved.is_relative_to(agents):
        raise UsageError(f"-o {target}: is inside the memory store ({agents}); write the export elsewhere")
    return target


class _Writer:
    """A file whose write errors (disk full...) are StoreErrors naming the export target."""

    def __init__(self, f: BinaryIO, target: Path):
        self._f = f
        self._target = target

    def write(self, data) -> int:
        try:
            return self._f.write(data)
        except OSError as exc:
            raise StoreError(f"cannot write {self._target}: {exc.strerror or exc}") from exc

    def flush(self) -> None:
        self._f.flush()


@contextmanager
def atomic_output(target: Path) -> Iterator[BinaryIO]:
    """A buffered binary file that becomes ``target`` only if the block exits normally."""
    directory = target.parent
    tmp = None
    fd = -1
    for _ in range(100):
        candidate = directory / f".{target.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        try:
            fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, FILE_MODE)
        except FileExistsError:
            continue
        except OSError as exc:
            raise StoreError(f"cannot write {target}: {exc.strerror}") from None
        tmp = candidate
        break
    if tmp is None:
        raise StoreError(f"cannot create a temporary file next to {target}")
    f = os.fdopen(fd, "wb", buffering=WRITE_BUFFER)
    try:
        yield _Writer(f, target)
        try:
            f.flush()
            os.fsync(f.fileno())
            f.close()
            os.replace(tmp, target)
        except OSError as exc:
            raise StoreError(f"cannot write {target}: {exc.strerror or exc}") from exc
    except BaseException:
        try:
            f.close()
        except OSError:
            pass
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_dir(directory)


@contextmanager
def stdout_output(stream: BinaryIO | None = None) -> Iterator[BinaryIO]:
    out = stream if stream is not None else sys.stdout.buffer
    yield out
    out.flush()
