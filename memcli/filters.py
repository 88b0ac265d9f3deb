"""The one filter type of every command that selects traces: ``--type``, ``--tag``, ``--turn``,
``--since``, ``--until`` (``show``, ``tools``, ``export``).

* ``--since``/``--until`` take ISO-8601 (``2026-03-02``, ``2026-03-02T09:30:00Z``, with or
  without an offset; a time without one is UTC) or epoch seconds (or milliseconds, as
  JavaScript writes them). Both bounds are inclusive: ``since <= ts <= until``, and a bare
  date given to ``--until`` means the end of that day (as for ``export``).
* ``--type`` and ``--tag`` may be repeated; a trace matches when it has any of the given types
  and any of the given tags.
* ``--turn ID`` (repeatable) keeps the traces of those turns. A bare number ``7`` means
  ``turn_0007``. Asking for a turn the agent does not have is "not found" (exit 3).
* Filters combine with AND. A trace without a numeric ``ts`` is left out when a time bound is
  given. For memory items (``export --with-memory``): an episodic item is kept when it covers one
  of the turns (``turn_ids``) and its ``ts`` is in range; a semantic fact likewise with
  ``source_turn_ids`` (a fact with no source turns is kept for ``--turn``, as it may concern any
  turn).

:class:`TraceFilter` matches a :class:`~memcli.models.RawTrace` or its stored record (a dict).
``TraceFilter.from_options`` builds it from the command options (``show``, ``tools``, ``export``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Iterable

from memcli.errors import InputError, UsageError
from memcli.models import TRACE_TYPES, RawTrace

_DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")


def parse_time(value: str | None, option: str, *, end_of_day: bool = False) -> float | None:
    """Epoch seconds for a ``since``/``until`` value (every command that filters by time uses
    this one); a bad value is a usage error naming the parameter ``option``. With ``end_of_day`` a bare date means the end of
    that day (``--until 2026-03-02`` includes the whole day)."""
    if value is None:
        return None
    from memcli.events import parse_timestamp

    text = value.strip()
    try:
        ts = parse_timestamp(text)
    except InputError as exc:
        raise UsageError(f"{value!r}: {exc.reason} (use ISO-8601 such as 2026-03-02 or "
                         "2026-03-02T09:30:00Z, or epoch seconds)", param=option) from None
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
    turns: frozenset | None = None
    matched_turns: set = field(default_factory=set)   # the ``turns`` some trace matched

    @classmethod
    def from_options(cls, types: Iterable[str] | None = None, tags: Iterable[str] | None = None,
                     since: str | None = None, until: str | None = None,
                     turns: Iterable | None = None) -> "TraceFilter":
        """The filter of the ``--type``/``--tag``/``--since``/``--until``/``--turn`` options
        (``until`` a bare date means the end of that day)."""
        type_list = split_values(types)
        for name in type_list:
            if name not in TRACE_TYPES:
                raise UsageError(f"{{type}}: unknown trace type {name!r} (expected one of {', '.join(TRACE_TYPES)})", param="type")
        wanted = None
        if turns:
            from memcli.ids import turn_id

            wanted = frozenset(turn_id(t) for t in turns)
        flt = cls(frozenset(type_list), frozenset(split_values(tags)),
                  parse_time(since, "since"), parse_time(until, "until", end_of_day=True), wanted)
        if flt.since is not None and flt.until is not None and flt.since > flt.until:
            raise UsageError(f"{{since}} is after {{until}} ({format_utc(flt.since)} > {format_utc(flt.until)}): "
                             "nothing could match", param="since", also=("until",))
        return flt

    @property
    def active(self) -> bool:
        return bool(self.types or self.tags or self.turns is not None
                    or self.since is not None or self.until is not None)

    def in_time(self, ts) -> bool:
        if self.since is None and self.until is None:
            return True
        if type(ts) not in (int, float):
            return False
        return (self.since is None or ts >= self.since) and (self.until is None or ts <= self.until)

    def matches(self, trace: RawTrace | dict) -> bool:
        """Whether a trace (or its stored record) passes; a turn of ``turns`` it belongs to is
        noted in ``matched_turns``."""
        if type(trace) is dict:
            trace_type, tags, turn_id, ts = (trace.get("trace_type"), trace.get("tags") or (),
                                              trace.get("turn_id"), trace.get("ts"))
        else:
            trace_type, tags, turn_id, ts = trace.trace_type, trace.tags, trace.turn_id, trace.ts
        if self.types and trace_type not in self.types:
            return False
        if self.tags and self.tags.isdisjoint(tags):
            return False
        if self.turns is not None and turn_id not in self.turns:
            return False
        if not self.in_time(ts):
            return False
        if self.turns is not None:
            self.matched_turns.add(turn_id)
        return True

    def matches_memory(self, kind: str, record: dict) -> bool:
        if not self.in_time(record.get("ts")):
            return False
        if self.turns is None:
            return True
        covered = record.get("turn_ids" if kind == "episodic" else "source_turn_ids") or ()
        if kind == "semantic" and not covered:
            return True
        return not self.turns.isdisjoint(covered)

    def missing_turns(self) -> list[str]:
        return sorted(self.turns - self.matched_turns) if self.turns is not None else []

    def describe(self) -> str:
        parts = []
        if self.turns is not None:
            parts.append("turns " + ", ".join(sorted(self.turns)))
        if self.since is not None:
            parts.append("since " + format_utc(self.since))
        if self.until is not None:
            parts.append("until " + format_utc(self.until))
        return "; ".join(parts)


def format_utc(ts: float, fmt: str = "%Y-%m-%d %H:%M:%S UTC") -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime(fmt)
