"""Reading the head of a session file (what ``identify`` needs: ids, working directory) without
reading the rest, reading a session file whole (plain or zstd-compressed: Codex compresses cold
rollouts to ``rollout-*.jsonl.zst``), and the one way a resume command is written."""

from __future__ import annotations

import io
import shlex
from typing import Iterator

import orjson

from memcli.json_input import loads

HEAD_BYTES = 256 << 10


ZSTD_SUFFIX = ".zst"


def is_compressed(path: str) -> bool:
    """A zstd-compressed session file (``*.jsonl.zst``): read whole, never read on from an offset."""
    return str(path).endswith(ZSTD_SUFFIX)


def read_bytes(path: str, limit: int = -1) -> bytes:
    """The bytes of a session file (decompressed when :func:`is_compressed`), at most ``limit``."""
    with open(path, "rb") as f:
        if not is_compressed(path):
            return f.read(limit)
        try:
            from compression import zstd  # Python 3.14+
        except ImportError:
            zstd = None
        if zstd is not None:
            try:
                with zstd.ZstdFile(f) as z:
                    return z.read(limit)
            except zstd.ZstdError as exc:
                raise OSError(f"not a valid zstd file ({exc})") from None
        try:
            import zstandard
        except ImportError:  # pragma: no cover - a runtime dependency below 3.14
            raise OSError(f"{path}: reading a .zst file needs the zstandard package") from None
        try:
            with zstandard.ZstdDecompressor().stream_reader(f, read_across_frames=True) as z:
                return z.read() if limit < 0 else _read_upto(z, limit)
        except zstandard.ZstdError as exc:
            raise OSError(f"not a valid zstd file ({exc})") from None


def _read_upto(stream, limit: int) -> bytes:
    out = io.BytesIO()
    while out.tell() < limit:
        chunk = stream.read(limit - out.tell())
        if not chunk:
            break
        out.write(chunk)
    return out.getvalue()


def head_values(path: str, limit: int = HEAD_BYTES) -> Iterator[dict]:
    """The JSON objects on the complete lines among the first ``limit`` bytes of ``path``."""
    data = read_bytes(path, limit)
    if len(data) == limit:
        data = data[: data.rfind(b"\n") + 1]
    for raw in data.splitlines():
        if not raw.strip():
            continue
        try:
            value = loads(raw)   # a lone surrogate, replaced (memcli.json_input)
        except orjson.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            yield value


def text(value) -> str | None:
    return value if isinstance(value, str) and value else None


def in_dir(cwd: str | None, command: str) -> str:
    """``cd <cwd> && <command>`` (harnesses resume a session from its project directory)."""
    return f"cd {shlex.quote(cwd)} && {command}" if cwd else command
