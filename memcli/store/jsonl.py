"""JSONL files: one JSON object per ``\\n``-terminated line, UTF-8, written with orjson.

Invariants this module keeps:

* A line is a record only once its ``\\n`` is on disk. Readers ignore an unterminated last line
  (a write in progress, or a crash mid-append); they never see half a record.
* Appends go through :func:`append_chunks`, which remembers the size before writing, flushes and
  fsyncs, and on any error truncates the file back — so a failed append leaves the file as it was.
* :func:`repair_tail` fixes an unterminated last line before the next append: if the bytes after
  the last ``\\n`` are a complete JSON object (a record that only lost its newline) the newline is
  added, otherwise they are cut off. The next record therefore never glues onto a torn one.
* A line in the middle that does not parse is a :class:`CorruptStoreError` naming file and line.
* New files are created 0600 (whatever the umask) and never through a symlink (``O_NOFOLLOW``).
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterable, Iterator

import orjson

from memcli.errors import CorruptStoreError, StoreError
from memcli.store.layout import FILE_MODE

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
BLOCK = 1 << 16


def _os_error(path: Path, exc: OSError, action: str) -> StoreError:
    reason = exc.strerror or str(exc)
    if getattr(exc, "errno", None) == 40:  # ELOOP: O_NOFOLLOW met a symlink
        reason = "is a symlink; memcli refuses to follow it"
    return StoreError(f"cannot {action} {path}: {reason}")


def open_read(path: Path):
    """Open for reading without following a symlink. Raises FileNotFoundError if absent."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise _os_error(path, exc, "read") from exc
    return os.fdopen(fd, "rb", buffering=1 << 16)


def open_append_fd(path: Path) -> int:
    """An O_APPEND descriptor; creates the file 0600 if missing; never follows a symlink."""
    flags = os.O_WRONLY | os.O_APPEND | _NOFOLLOW | _CLOEXEC
    try:
        try:
            fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, FILE_MODE)
            os.fchmod(fd, FILE_MODE)
        except FileExistsError:
            fd = os.open(path, flags)
    except OSError as exc:
        raise _os_error(path, exc, "write") from exc
    return fd


def file_size(path: Path) -> int:
    try:
        return os.lstat(path).st_size
    except FileNotFoundError:
        return 0


def fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` (``os.write`` may write less than it is given)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def truncate(path: Path, size: int) -> None:
    """Cut ``path`` back to ``size`` bytes, fsynced, when it is longer (an append being rolled
    back, an archive whose traces went back); never follows a symlink. Caller holds the lock."""
    if file_size(path) <= size:
        return
    fd = os.open(path, os.O_WRONLY | _NOFOLLOW | _CLOEXEC)
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
    finally:
        os.close(fd)


def append_chunks(path: Path, chunks: Iterable[bytes], *, fsync: bool = True) -> tuple[int, int]:
    """Append byte chunks (whole lines) durably. Returns (size before, size after).

    On any exception (disk full, interrupted copy) the file is truncated back to its old size and
    the exception propagates, so nothing of a failed append remains.
    """
    fd = open_append_fd(path)
    try:
        before = os.fstat(fd).st_size
        try:
            for chunk in chunks:
                write_all(fd, chunk)
            if fsync:
                os.fsync(fd)
        except BaseException:
            try:
                os.ftruncate(fd, before)
                os.fsync(fd)
            except OSError:
                pass
            raise
        after = os.fstat(fd).st_size
    finally:
        os.close(fd)
    return before, after


def append_records(path: Path, records: Iterable[dict], *, fsync: bool = True) -> tuple[int, int]:
    return append_chunks(path, (orjson.dumps(r) + b"\n" for r in records), fsync=fsync)


class TailRepair:
    """``action``: "terminated" (newline added) or "truncated"; ``offset``: where the unterminated
    tail started; ``dropped_bytes``: bytes cut off (0 when terminated)."""

    __slots__ = ("path", "action", "offset", "dropped_bytes")

    def __init__(self, path: Path, action: str, offset: int, dropped_bytes: int):
        self.path, self.action, self.offset, self.dropped_bytes = path, action, offset, dropped_bytes

    def describe(self) -> str:
        if self.action == "terminated":
            return f"{self.path}: last record had no newline; added it"
        return f"{self.path}: cut {self.dropped_bytes} bytes of a torn last line at byte {self.offset}"


def find_tail(path: Path) -> tuple[int, bytes] | None:
    """(offset, bytes) of an unterminated last line, or None if the file ends with ``\\n``."""
    try:
        f = open_read(path)
    except FileNotFoundError:
        return None
    with f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return None
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return None
        pos = size
        tail = b""
        while pos > 0:
            start = max(0, pos - BLOCK)
            f.seek(start)
            block = f.read(pos - start)
            nl = block.rfind(b"\n")
            if nl >= 0:
                tail = block[nl + 1:] + tail
                return size - len(tail), tail
            tail = block + tail
            pos = start
        return 0, tail


def _is_json_object(data: bytes) -> bool:
    try:
        return isinstance(orjson.loads(data), dict)
    except orjson.JSONDecodeError:
        return False


def unterminated_record(path: Path) -> tuple[int, bytes] | None:
    """(offset, bytes) of an unterminated last line that is a complete JSON object — a record
    that only lost its newline: readers do not see it, and :func:`repair_tail` (the next write)
    adds the newline, after which they do — else None."""
    found = find_tail(path)
    return found if found is not None and _is_json_object(found[1]) else None


def repair_tail(path: Path) -> TailRepair | None:
    """Make the file end in ``\\n`` (see module docstring). Caller holds the agent lock."""
    found = find_tail(path)
    if found is None:
        return None
    offset, tail = found
    fd = os.open(path, os.O_WRONLY | _NOFOLLOW | _CLOEXEC)
    try:
        if _is_json_object(tail):
            os.lseek(fd, 0, os.SEEK_END)
            os.write(fd, b"\n")
            repair = TailRepair(path, "terminated", offset, 0)
        else:
            os.ftruncate(fd, offset)
            repair = TailRepair(path, "truncated", offset, len(tail))
        os.fsync(fd)
    finally:
        os.close(fd)
    return repair


def line_number_at(path: Path, offset: int) -> int:
    """1-based line number of the line starting at byte ``offset`` (counts newlines before it)."""
    count = 0
    with open_read(path) as f:
        remaining = offset
        while remaining > 0:
            block = f.read(min(BLOCK * 16, remaining))
            if not block:
                break
            count += block.count(b"\n")
            remaining -= len(block)
    return count + 1


def parse_line(path: Path, line: bytes, line_no: int | None, offset: int) -> dict:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        if line_no is None:
            line_no = line_number_at(path, offset)
        raise CorruptStoreError(str(path), line_no, _why_not_json(line, exc)) from None
    if not isinstance(value, dict):
        if line_no is None:
            line_no = line_number_at(path, offset)
        raise CorruptStoreError(str(path), line_no, f"expected a JSON object, found {type(value).__name__}")
    return value


def _why_not_json(line: bytes, exc: orjson.JSONDecodeError) -> str:
    """What is wrong with a line that is not JSON: a record cut short says so (a string left open
    before the newline read "unexpected control character in string")."""
    body = line.rstrip(b"\r\n")
    try:
        orjson.loads(body)
    except orjson.JSONDecodeError as inner:
        if inner.pos >= len(body) and body:
            return f"not valid JSON: the record is cut short after {len(body):,} bytes (a write that did not finish?)"
    return f"not valid JSON ({exc})"


def iter_lines(path: Path, start: int = 0, end: int | None = None) -> Iterator[tuple[int, bytes]]:
    """(offset, line without newline) for each complete line in [start, end). Blank lines skipped.

    Missing file: nothing. ``start`` must be the start of a line.
    """
    try:
        f = open_read(path)
    except FileNotFoundError:
        return
    with f:
        if start:
            f.seek(start)
        offset = start
        for raw in f:
            if end is not None and offset >= end:
                return
            if not raw.endswith(b"\n"):
                return  # unterminated tail: not a record (yet)
            line_offset = offset
            offset += len(raw)
            stripped = raw.strip()
            if stripped:
                yield line_offset, stripped


def line_batches(f, size: int, start: int = 0, block: int = 1 << 18) -> Iterator[tuple[int, list[bytes]]]:
    """``(offset of its first line, lines)`` for the lines of the open binary file ``f``, read
    from byte ``start`` (where ``f`` stands) in blocks of ``block`` bytes: every complete line that
    starts before byte ``size``, without its newline, in file order — a ``for line in f`` loop that
    stops at ``size`` or at an unterminated line, read without a call per line. Consecutive lines
    of a batch are adjacent (a line's end is its offset plus its length plus one); so are batches.
    Blank lines are kept (the caller counts them)."""
    offset = start
    pieces: list[bytes] = []        # an unterminated line so far (longer than a block)
    while offset < size:
        data = f.read(block)
        if not data:
            return                  # an unterminated tail: not a line (yet)
        if b"\n" not in data:
            pieces.append(data)
            continue
        if pieces:
            pieces.append(data)
            data = b"".join(pieces)
        lines = data.split(b"\n")
        tail = lines.pop()
        pieces = [tail] if tail else []
        end = offset + len(data) - len(tail)
        if end > size:              # the last batch: the lines that start before ``size``
            n, at = 0, offset
            while at < size:
                at += len(lines[n]) + 1
                n += 1
            del lines[n:]
            yield offset, lines
            return
        yield offset, lines
        offset = end


def iter_run_lines(path: Path, runs: list) -> Iterator[tuple[int, bytes]]:
    """(offset, line with its newline) of every line inside ``runs``, in file order."""
    with open_read(path) as f:
        for start, end in runs:
            f.seek(start)
            offset = start
            while offset < end:
                raw = f.readline()
                if not raw:
                    return
                yield offset, raw
                offset += len(raw)


def iter_records(path: Path, start: int = 0, end: int | None = None,
                 first_line_no: int | None = 1) -> Iterator[tuple[int | None, int, dict]]:
    """(line number, offset, record) for each record; corrupt lines raise CorruptStoreError.

    Line numbers are exact when reading from the start; when ``start`` > 0 pass
    ``first_line_no=None`` and they are None (computed only if an error needs them).
    """
    line_no = first_line_no
    try:
        f = open_read(path)
    except FileNotFoundError:
        return
    with f:
        if start:
            f.seek(start)
        offset = start
        loads = orjson.loads
        for raw in f:
            if end is not None and offset >= end:
                return
            if not raw.endswith(b"\n"):
                return
            line_offset = offset
            offset += len(raw)
            try:
                value = loads(raw)
            except orjson.JSONDecodeError:
                if not raw.strip():
                    if line_no is not None:
                        line_no += 1
                    continue
                value = parse_line(path, raw, line_no, line_offset)  # raises with line
            if type(value) is not dict:
                parse_line(path, raw, line_no, line_offset)  # raises with line
            yield line_no, line_offset, value
            if line_no is not None:
                line_no += 1


def iter_lines_reverse(path: Path, end: int | None = None) -> Iterator[tuple[int, bytes]]:
    """(offset, line) for complete lines from the end of the file backwards, blank lines skipped.

    Reads fixed-size blocks from the end, so the cost depends on how far the caller reads, not on
    the file size. An unterminated last line is ignored.
    """
    try:
        f = open_read(path)
    except FileNotFoundError:
        return
    with f:
        size = os.fstat(f.fileno()).st_size if end is None else end
        if size == 0:
            return
        pos = size
        # drop an unterminated tail
        f.seek(size - 1)
        if f.read(1) != b"\n":
            found_start = None
            scan = size
            while scan > 0:
                start = max(0, scan - BLOCK)
                f.seek(start)
                block = f.read(scan - start)
                nl = block.rfind(b"\n")
                if nl >= 0:
                    found_start = start + nl + 1
                    break
                scan = start
            pos = found_start or 0
        carry = b""  # bytes of a line split across blocks (everything after the block start)
        while pos > 0:
            # a line longer than a block grows the read size, so long lines cost O(length)
            start = max(0, pos - max(BLOCK, len(carry)))
            f.seek(start)
            block = f.read(pos - start) + carry
            lines = block.split(b"\n")
            # lines[-1] is "" (the block ends with \n of the last line) or continues to the end
            carry = lines[0]
            line_end = start + len(block)
            # walk complete lines from the last one back to lines[1]
            for i in range(len(lines) - 1, 0, -1):
                piece = lines[i]
                line_start = line_end - len(piece)
                line_end = line_start - 1
                if i == len(lines) - 1 and piece == b"":
                    continue
                if piece.strip():
                    yield line_start, piece
            pos = start
        if carry.strip():
            yield 0, carry


def iter_checked(path: Path, problem: Callable[[object], str | None]) -> Iterator[dict]:
    """The records of ``path`` in file order, each a record by ``problem`` (None: it is; else why
    not): a line that is not raises CorruptStoreError naming file:line, as a corrupt one does."""
    for line_no, _, record in iter_records(path):
        why = problem(record)
        if why is not None:
            raise CorruptStoreError(str(path), line_no, why)
        yield record


@contextmanager
def refusing_bad_lines(path: Path, agent_id: str, command: str, what: str,
                       written: str = "nothing was written") -> Iterator[None]:
    """Around a read of ``path`` (an iterator that raises CorruptStoreError at a line that is not
    ``what``) before ``command`` appends to it: its first bad line is a CorruptStoreError naming
    file:line, saying what was written (``written``: nothing, unless the command wrote other files
    before), hint ``memcli doctor AGENT --repair`` (which moves the line to
    ``<file>.corrupt-lines``). One rule for every appender; the read is the caller's own, once."""
    try:
        yield
    except CorruptStoreError as exc:
        raise CorruptStoreError(
            exc.path, exc.line, f"{exc.reason}; {command} appends to this file and refuses while a line of it is "
            f"not {what}; {written}",
            hint=f"run `memcli doctor {agent_id} --repair` (it moves the line to {path.name}.corrupt-lines), "
                 f"then {command} again") from None


def iter_records_reverse(path: Path, end: int | None = None) -> Iterator[tuple[int, dict]]:
    """(offset, record) from the end backwards; a corrupt line raises with its line number."""
    for offset, line in iter_lines_reverse(path, end):
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            value = parse_line(path, line, None, offset)
        if type(value) is not dict:
            parse_line(path, line, None, offset)
        yield offset, value


def read_line_at(path: Path, offset: int) -> dict:
    with open_read(path) as f:
        f.seek(offset)
        raw = f.readline()
    return parse_line(path, raw, None, offset)


def temp_name(path: Path, purpose: str | None = None) -> Path:
    """A fresh random name beside ``path`` for a temp file (``.<name>.<hex>[.<purpose>].tmp``): with
    :func:`create_new`, nothing planted at a predictable name is ever followed or overwritten."""
    return path.with_name(f".{path.name}.{os.urandom(6).hex()}{'.' + purpose if purpose else ''}.tmp")


def create_new(path: Path) -> int:
    """Create ``path`` for writing, 0600 whatever the umask, failing if it exists (``O_EXCL``) or
    is a symlink; the file descriptor."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
    except BaseException:
        os.close(fd)
        raise
    return fd


def atomic_write_bytes(path: Path, data: bytes, *, fsync: bool = True, mode: int | None = None) -> None:
    """Write a whole file via a temp file in the same directory and ``os.replace`` (the new file
    is 0600, or ``mode`` when given: a harness's settings file keeps its own permissions)."""
    tmp = temp_name(path)
    try:
        fd = create_new(tmp)
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            write_all(fd, data)
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        if fsync:
            fsync_dir(path.parent)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise _os_error(path, exc, "write") from exc
