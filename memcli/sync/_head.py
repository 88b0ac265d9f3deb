"""Reading the head of a session file (what ``identify`` needs: ids, working directory) without
reading the rest, and the one way a resume command is written."""

from __future__ import annotations

import shlex
from typing import Iterator

import orjson

HEAD_BYTES = 256 << 10


def head_values(path: str, limit: int = HEAD_BYTES) -> Iterator[dict]:
    """The JSON objects on the complete lines among the first ``limit`` bytes of ``path``."""
    with open(path, "rb") as f:
        data = f.read(limit)
    if len(data) == limit:
        data = data[: data.rfind(b"\n") + 1]
    for raw in data.splitlines():
        if not raw.strip():
            continue
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict):
            yield value


def text(value) -> str | None:
    return value if isinstance(value, str) and value else None


def in_dir(cwd: str | None, command: str) -> str:
    """``cd <cwd> && <command>`` (harnesses resume a session from its project directory)."""
    return f"cd {shlex.quote(cwd)} && {command}" if cwd else command
