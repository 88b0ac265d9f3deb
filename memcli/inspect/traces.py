"""The traces themselves (``memcli show``), filtered.

Which traces: every active trace (with ``archive``, every archived one before them), or one turn
(``turn``), or the last N turns (``last``, read from the end of the active file). Then the
:class:`~memcli.filters.TraceFilter` keeps those of the asked types, tags and times.
Traces come out as stored (store order), so ``show --ndjson`` output can be ingested again.
"""

from __future__ import annotations

from typing import Iterable, Iterator

from memcli.errors import UsageError
from memcli.filters import TraceFilter
from memcli.inspect.turns import recent_turn_traces, require_turn, require_turns
from memcli.models import RawTrace
from memcli.store.agent import AgentStore


def select_traces(store: AgentStore, *, flt: TraceFilter | None = None, turn: str | Iterable[str] | None = None,
                  last: int | None = None, archive: bool = False) -> Iterator[RawTrace]:
    """The traces ``show`` prints: of one turn, or of every turn ``turn`` names (repeatable
    ``--turn``, in store order). Raises RecordNotFoundError (before yielding anything) when
    ``turn`` names a turn the agent does not have."""
    flt = flt or TraceFilter()
    if isinstance(turn, str):
        turn = [turn]
    turn = list(turn) if turn else None
    if turn is not None and last is not None:
        raise UsageError("{turn} and {last} cannot be used together", param="turn", also=("last",))
    if last is not None and last < 1:
        raise UsageError("{last} must be 1 or more", param="last")
    if turn is not None and len(turn) == 1:
        _, _, found = require_turn(store, turn[0], archive=archive)
        source: Iterator[RawTrace] = iter(found)
    elif turn is not None:
        wanted = frozenset(require_turns(store, turn, archive=archive))
        source = (s.trace for s in store.iter_traces(archive=archive) if s.trace.turn_id in wanted)
    elif last is not None:
        source = (t for _, _, traces in recent_turn_traces(store, last, archive=archive) for t in traces)
    else:
        source = (s.trace for s in store.iter_traces(archive=archive))
    return _filtered(source, flt)


def _filtered(source: Iterator[RawTrace], flt: TraceFilter) -> Iterator[RawTrace]:
    if not flt.active:
        yield from source
        return
    for trace in source:
        if flt.matches(trace):
            yield trace
