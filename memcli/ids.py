"""Record ids: unique within an agent, never reused, time-sortable.

A generated id is ``<prefix>_<32 hex digits>``: 12 digits of milliseconds since the epoch, then
20 digits (80 bits) that start at a random value for each process and millisecond and count up
within it. Ids sort as text in the order they were made (by time across processes, exactly within
one), and two processes writing in the same millisecond differ in their 80 random bits. This
replaces AutoByteus' ``rt_<milliseconds>`` ids, which collide whenever two traces are written in
the same millisecond. (Hex rather than base32 because formatting it is one C call: ingest makes
an id per event.)

Ids given in the input, and ids an importer derives from a transcript, are kept as they are.
"""

from __future__ import annotations

import os
import time

TRACE_PREFIX = "rt"
EPISODIC_PREFIX = "ep"
SEMANTIC_PREFIX = "sem"
COMPACTION_PREFIX = "cmp"

_RANDOM_BITS = 80
_RANDOM_MASK = (1 << _RANDOM_BITS) - 1

_last_ms = -1
_counter = 0


def _forget_after_fork() -> None:
    """A forked child must not count on from its parent's random start."""
    global _last_ms
    _last_ms = -1


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


def _next_value() -> int:
    global _last_ms, _counter
    ms = int(time.time() * 1000)
    if ms > _last_ms:
        _last_ms = ms
        _counter = int.from_bytes(os.urandom(10), "big") >> 1  # headroom to count up
    else:
        _counter = (_counter + 1) & _RANDOM_MASK
    return (_last_ms << _RANDOM_BITS) | _counter


TURN_PREFIX = "turn_"


def format_turn(n: int) -> str:
    """The canonical turn id of turn number ``n``: ``turn_0007``."""
    return f"{TURN_PREFIX}{n:04d}"


def turn_id(value: str) -> str:
    """What ``--turn`` names: ``7`` and ``turn_0007`` are both ``turn_0007``; any other id is
    kept as written (imported turn ids need not follow the pattern). Raises UsageError for ""."""
    text = value.strip()
    if text.isdigit():
        return format_turn(int(text))
    if not text:
        from memcli.errors import UsageError

        raise UsageError("{turn} needs a turn id (e.g. turn_0007 or 7)", param="turn")
    return text


def new_id(prefix: str) -> str:
    return f"{prefix}_{_next_value():032x}"


def new_id_value() -> int:
    """The 128-bit value behind the next generated id (``f"{prefix}_{value:032x}"``)."""
    return _next_value()
