"""Which traces (and memory items) an export includes: ``--turn``, ``--since``, ``--until``.

* ``--turn ID`` (repeatable) keeps the traces of those turns. A bare number ``7`` means
  ``turn_0007``. Asking for a turn the agent does not have is "not found" (exit 3).
* ``--since T`` / ``--until T`` keep traces whose ``ts`` is within ``[since, until]`` (both
  inclusive). ``T`` is ISO-8601 (``2026-03-02``, ``2026-03-02T09:14:00Z``, ``...+02:00``; naive
  times are UTC) or epoch seconds (or milliseconds). A date alone given to ``--until`` means
  the end of that day (``--since 2026-03-02 --until 2026-03-02`` is that whole day). A trace
  without a numeric ``ts`` is left out when a time bound is given.
* Filters combine with AND. With ``--with-memory`` they apply to memory items too: an episodic
  item is kept when it covers one of the turns (``turn_ids``) and its ``ts`` is in range; a
  semantic fact likewise with ``source_turn_ids`` (a fact with no source turns is kept for
  ``--turn``, as it may concern any turn).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

from memcli.errors import UsageError


@dataclass
class TraceFilter:
    turns: frozenset | None = None
    since: float | None = None
    until: float | None = None
    matched_turns: set = field(default_factory=set)

    @property
    def active(self) -> bool:
        return self.turns is not None or self.since is not None or self.until is not None

    def _in_range(self, ts) -> bool:
        if self.since is None and self.until is None:
            return True
        if type(ts) not in (int, float):
            return False
        if self.since is not None and ts < self.since:
            return False
        if self.until is not None and ts > self.until:
            return False
        return True

    def matches(self, record: dict) -> bool:
        if self.turns is not None:
            turn_id = record["turn_id"]
            if turn_id not in self.turns:
                return False
            if not self._in_range(record.get("ts")):
                return False
            self.matched_turns.add(turn_id)
            return True
        return self._in_range(record.get("ts"))

    def matches_memory(self, kind: str, record: dict) -> bool:
        if not self._in_range(record.get("ts")):
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


def make_filter(turns=None, since: str | None = None, until: str | None = None) -> TraceFilter:
    from memcli.ids import turn_id

    wanted = frozenset(turn_id(t) for t in turns) if turns else None
    from memcli.inspect.filters import parse_time

    lower = parse_time(since, "--since")
    upper = parse_time(until, "--until", end_of_day=True)
    if lower is not None and upper is not None and lower > upper:
        raise UsageError(f"--since ({format_utc(lower)}) is after --until ({format_utc(upper)})")
    return TraceFilter(wanted, lower, upper)


def format_utc(ts: float, fmt: str = "%Y-%m-%d %H:%M:%S UTC") -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime(fmt)
