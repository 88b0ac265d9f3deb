"""Filters shared by ``show`` and ``tools``: ``--type``, ``--tag``, ``--since``, ``--until``.

* ``--since``/``--until`` take ISO-8601 (``2026-03-02``, ``2026-03-02T09:30:00Z``, with or
  without an offset; a time without one is UTC) or epoch seconds (or milliseconds, as
  JavaScript writes them). Both bounds are inclusive: ``since <= ts <= until``, and a bare
  date given to ``--until`` means the end of that day (as for ``export``).
* ``--type`` and ``--tag`` may be repeated; a trace matches when it has any of the given types
  and any of the given tags.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from memcli.errors import InputError, UsageError
from memcli.models import TRACE_TYPES, RawTrace


_DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")


def parse_time(value: str | None, option: str, *, end_of_day: bool = False) -> float | None:
    """Epoch seconds for a ``--since``/``--until`` value (every command that filters by time uses
    this one); a bad value is a usage error. With ``end_of_day`` a bare date means the end of
    that day (``--until 2026-03-02`` includes the whole day)."""
    if value is None:
        return None
    from memcli.events import parse_timestamp

    text = value.strip()
    try:
        ts = parse_timestamp(text)
    except InputError as exc:
        raise UsageError(f"{option} {value!r}: {exc.reason} (use ISO-8601 such as 2026-03-02 or "
                         "2026-03-02T09:30:00Z, or epoch seconds)") from None
    if end_of_day and _DATE_ONLY.fullmatch(text):
        ts += 86400 - 1e-6
    return ts


def split_values(values: Iterable[str] | None) -> list[str]:
    """Repeated and comma-separated option values, flattened: ``-x a,b -x c`` -> [a, b, c]."""
    out: list[str] = []
    for value in values or ():
        out.extend(part.strip() for part in value.split(",") if part.strip())
    return out


@dataclass
class TraceFilter:
    types: frozenset = frozenset()
    tags: frozenset = frozenset()
    since: float | None = None
    until: float | None = None

    @classmethod
    def from_options(cls, types: Iterable[str] | None = None, tags: Iterable[str] | None = None,
                     since: str | None = None, until: str | None = None) -> "TraceFilter":
        type_list = split_values(types)
        for name in type_list:
            if name not in TRACE_TYPES:
                raise UsageError(f"--type: unknown trace type {name!r} (expected one of {', '.join(TRACE_TYPES)})")
        flt = cls(frozenset(type_list), frozenset(split_values(tags)),
                  parse_time(since, "--since"), parse_time(until, "--until", end_of_day=True))
        if flt.since is not None and flt.until is not None and flt.since > flt.until:
            raise UsageError("--since is after --until: nothing could match")
        return flt

    @property
    def active(self) -> bool:
        return bool(self.types or self.tags or self.since is not None or self.until is not None)

    def in_time(self, ts: float | None) -> bool:
        if self.since is None and self.until is None:
            return True
        if ts is None:
            return False
        return (self.since is None or ts >= self.since) and (self.until is None or ts <= self.until)

    def matches(self, trace: RawTrace) -> bool:
        if self.types and trace.trace_type not in self.types:
            return False
        if self.tags and self.tags.isdisjoint(trace.tags):
            return False
        return self.in_time(trace.ts)
