"""Reading ingest input: a file or stdin holding NDJSON, a JSON array, or one JSON document.

:func:`open_input` gives a seekable binary file: a named file is opened as it is; stdin is used
directly when it is a regular file (``< file``) and otherwise spooled to an anonymous temporary
file first, so a slow producer never holds the agent lock and huge inputs cost disk, not memory.

:func:`iter_json_values` yields ``(line, value)`` pairs, where ``line`` is the 1-based line the
value starts on, or ``(line, InputError)`` for a value that is not JSON (so ``--skip-invalid`` can
go on). The layout is detected from the first non-blank byte:

* ``[`` — a JSON array, split into elements by a streaming scanner (constant memory);
* otherwise NDJSON, one value per line; blank lines are skipped. If the first line does not parse
  but the whole input is one JSON value (a pretty-printed ``{"messages": [...]}`` document), that
  value is yielded once, at line 1.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from pathlib import Path
from typing import IO, Iterator

import orjson

from memcli.errors import InputError, UsageError
from memcli.json_input import loads as loads_input
from memcli.json_input import well_formed_json

CHUNK = 1 << 20


def open_input(file: str | os.PathLike | None, stdin: IO[bytes] | None = None) -> tuple[IO[bytes], str]:
    """(seekable binary file, display name). ``None`` or ``-`` means stdin."""
    if file is None or str(file) == "-":
        stream = stdin if stdin is not None else sys.stdin.buffer
        try:
            if stat.S_ISREG(os.fstat(stream.fileno()).st_mode):
                return os.fdopen(os.dup(stream.fileno()), "rb"), "<stdin>"
        except (OSError, ValueError, AttributeError):
            pass
        from memcli.ingest.pipeline import anonymous_temp_file

        spool = anonymous_temp_file()
        while True:
            block = stream.read(CHUNK)
            if not block:
                break
            spool.write(block)
        spool.seek(0)
        return spool, "<stdin>"
    path = Path(file)
    try:
        return open(path, "rb"), str(path)
    except FileNotFoundError:
        raise UsageError(f"cannot read {path}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"cannot read {path}: it is a directory") from None
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None


def json_error(data: bytes, exc: Exception, line: int) -> InputError:
    """An InputError that says why ``data`` is not JSON (invalid UTF-8 is named as such)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as ude:
        return InputError(f"invalid UTF-8 (byte {ude.start + 1} of the line)", line=line)
    if _YAML_LINE.match(data):
        return InputError("this is YAML, not JSON: memcli reads JSON and JSONL (a YAML file such as a VCR "
                          "cassette must be converted first, e.g. `yq -o=json`)", line=line)
    message = str(exc).split(": line")[0]
    return InputError(f"not valid JSON ({message})", line=line)


# a YAML document's first line: a "---" marker, a "%YAML" directive, "key:" or "- item"
_YAML_LINE = re.compile(rb"\s*(?:---\s*$|%YAML\b|[A-Za-z_][\w .-]*:(?:\s|$)|- )")


def parse_json(data: bytes, line: int):
    try:
        return loads_input(data)
    except orjson.JSONDecodeError as exc:
        raise json_error(data, exc, line) from None


def _first_byte(f: IO[bytes]) -> bytes:
    start = f.tell()
    while True:
        block = f.read(4096)
        if not block:
            f.seek(start)
            return b""
        stripped = block.lstrip(b" \t\r\n\xef\xbb\xbf")
        if stripped:
            f.seek(start)
            return stripped[:1]


def iter_json_values(f: IO[bytes]) -> Iterator[tuple[int, object]]:
    first = _first_byte(f)
    if first == b"[":
        fast = _array_in_memory(f)
        if fast is not None:
            yield from fast
        else:
            yield from _iter_array(f)
    elif first:
        yield from _iter_ndjson(f)


FAST_ARRAY_MAX = 64 << 20


def _reject_constant(name):
    raise ValueError(f"{name} is not JSON")


def _array_in_memory(f: IO[bytes]) -> list | None:
    """A JSON array of at most ``FAST_ARRAY_MAX`` bytes as ``(line, element)`` pairs, parsed in
    one go by orjson (the same values as the streaming scanner gives) with each element's first
    line found by the C scanner of the standard library's ``json`` — 10-50x the streaming
    scanner's speed. None, and the position unchanged, when the input is larger or not valid JSON
    (the streaming scanner then says where and why)."""
    import json

    start = f.tell()
    try:
        size = os.fstat(f.fileno()).st_size - start
    except (OSError, ValueError, AttributeError):
        return None
    if size > FAST_ARRAY_MAX:
        return None
    data = f.read()
    f.seek(start)
    try:
        values = orjson.loads(data.lstrip(b"\xef\xbb\xbf"))
        text = data.decode("utf-8")
    except (orjson.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(values, list):
        return None
    if "\n" not in text:   # one line: every element is on line 1, no need to find where each starts
        return [(1, value) for value in values]
    decode = json.JSONDecoder(parse_constant=_reject_constant).raw_decode
    pos = _skip_space(text, text.index("[") + 1)
    starts = []
    try:
        while not text.startswith("]", pos):
            starts.append(pos)
            _, pos = decode(text, pos)
            pos = _skip_space(text, pos)
            if text.startswith(",", pos):
                pos = _skip_space(text, pos + 1)
            elif not text.startswith("]", pos):
                return None
    except (ValueError, RecursionError):
        return None
    if len(starts) != len(values):
        return None
    out, last, line = [], 0, 1
    for offset, value in zip(starts, values):
        line += text.count("\n", last, offset)
        last = offset
        out.append((line, value))
    return out


def _skip_space(text: str, pos: int) -> int:
    n = len(text)
    while pos < n and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _iter_ndjson(f: IO[bytes]) -> Iterator[tuple[int, object]]:
    start = f.tell()
    line = 0
    first_value = True
    loads = orjson.loads
    for raw in f:
        line += 1
        try:
            value = loads(raw)
        except orjson.JSONDecodeError as exc:
            if not raw.strip():
                continue
            value = well_formed_json(raw, exc)
            if value is not None:   # a lone surrogate (memcli.json_input), replaced
                first_value = False
                yield line, value
                continue
            if first_value:
                whole = _whole_document(f, start)
                if whole is not None:
                    yield line, whole
                    return
            first_value = False
            if raw.startswith(b"\xef\xbb\xbf"):  # a byte-order mark on the first line
                try:
                    yield line, loads_input(raw[3:])
                    continue
                except orjson.JSONDecodeError:
                    pass
            yield line, json_error(raw.rstrip(b"\r\n"), exc, line)
            continue
        first_value = False
        yield line, value


def _whole_document(f: IO[bytes], start: int):
    """The whole input as one JSON value, or None (then the position is unchanged)."""
    pos = f.tell()
    f.seek(start)
    data = f.read()
    data = data.lstrip(b"\xef\xbb\xbf")
    try:
        return loads_input(data)
    except orjson.JSONDecodeError:
        f.seek(pos)
        return None


# a complete string | a lone quote (string not complete in the buffer) | a structural byte
_TOKEN = re.compile(rb'"(?:[^"\\\n]|\\[^\n])*"|["\[\]{},\n]')


def _iter_array(f: IO[bytes]) -> Iterator[tuple[int, object]]:
    """Split a top-level JSON array into elements without holding it in memory."""
    buf = f.read(CHUNK)
    eof = not buf
    pos = 0
    line = 1
    depth = 0
    elem_from: int | None = None   # where the current top-level element's bytes begin
    elem_line = 1
    closed = False
    after_comma = False

    def element(end: int) -> tuple[int, object]:
        raw = buf[elem_from:end]
        stripped = raw.strip()
        lead = len(raw) - len(raw.lstrip())
        start_line = elem_line + raw[:lead].count(b"\n")
        if not stripped:
            return start_line, InputError("empty array element (a stray comma?)", line=start_line)
        try:
            return start_line, orjson.loads(stripped)
        except orjson.JSONDecodeError as exc:
            value = well_formed_json(stripped, exc)
            return start_line, json_error(stripped, exc, start_line) if value is None else value

    while True:
        m = _TOKEN.search(buf, pos)
        if m is None or (m.group() == b'"' and not eof and b"\n" not in buf[m.start():]):
            if eof:
                break
            if closed and buf[pos:].strip():
                raise InputError("unexpected data after the JSON array", line=line)
            resume = m.start() if m is not None else pos
            keep = resume if elem_from is None else min(resume, elem_from)
            more = f.read(CHUNK)
            eof = not more
            buf = buf[keep:] + more
            pos = resume - keep
            if elem_from is not None:
                elem_from -= keep
            continue
        token = m.group()
        pos = m.end()
        c = token[0]
        if c == 0x0A:
            line += 1
            continue
        if closed:
            raise InputError("unexpected data after the JSON array", line=line)
        if len(token) > 1:  # a complete string
            if depth == 0:
                raise InputError("expected a JSON array", line=line)
        elif c == 0x22:  # lone quote: an unterminated string, or a raw newline inside one
            raise InputError("not valid JSON (unterminated string)", line=line)
        elif depth == 0:
            if c != 0x5B:
                raise InputError("expected a JSON array", line=line)
            depth = 1
            elem_from, elem_line = pos, line
        elif c in (0x5B, 0x7B):
            depth += 1
        elif c in (0x5D, 0x7D):
            depth -= 1
            if depth == 0:
                if buf[elem_from:m.start()].strip() or after_comma:
                    yield element(m.start())
                elem_from = None
                closed = True
        elif c == 0x2C and depth == 1:
            yield element(m.start())
            elem_from, elem_line = pos, line
            after_comma = True
    if depth != 0:
        raise InputError("not valid JSON (the array is not closed)", line=line)
    if buf[pos:].strip():
        raise InputError("unexpected data after the JSON array", line=line)


class LiveLines:
    """Lines of a live stream (a pipe from a running agent) for ``--stream``.

    Iterating yields ``(line, bytes)``. Before it would block waiting for more input, and at
    least every ``max_delay`` seconds while input keeps flowing, it calls ``on_idle`` (set by the
    consumer) so that what has arrived so far gets committed.
    """

    def __init__(self, stream: IO[bytes], max_delay: float = 0.2):
        self.fd = stream.fileno()
        self.max_delay = max_delay
        self.on_idle = lambda: None

    def set_idle_callback(self, callback) -> None:
        self.on_idle = callback

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        import select
        import time

        pending = b""
        line_no = 0
        last_idle = time.monotonic()
        while True:
            ready, _, _ = select.select([self.fd], [], [], 0)
            if not ready or time.monotonic() - last_idle >= self.max_delay:
                self.on_idle()
                last_idle = time.monotonic()
                if not ready:
                    select.select([self.fd], [], [])
            data = os.read(self.fd, CHUNK)
            if not data:
                break
            pending += data
            *lines, pending = pending.split(b"\n")
            for raw in lines:
                line_no += 1
                yield line_no, raw
        if pending.strip():
            yield line_no + 1, pending


def values_from_lines(lines) -> Iterator[tuple[int, object]]:
    """NDJSON values from ``(line, bytes)`` pairs; blank lines skipped, bad ones as InputError."""
    loads = orjson.loads
    for line_no, raw in lines:
        try:
            yield line_no, loads(raw)
        except orjson.JSONDecodeError as exc:
            if raw.strip():
                value = well_formed_json(raw, exc)
                yield line_no, json_error(raw.rstrip(b"\r"), exc, line_no) if value is None else value
