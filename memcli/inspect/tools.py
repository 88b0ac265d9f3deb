"""The tool interaction view (``memcli tools``; docs/design.md §2), filtered.

Pairing is :mod:`memcli.tool_interactions` (FIFO per ``tool_call_id``); interactions come out in
the order of their calls, orphan results at their own position, streamed.

Fast paths, so that the common questions cost the same on a long history as on a short one:

* ``--status pending`` (alone, without ``--archive``) reads the state's unanswered-call map
  (call id -> turn, trace id, byte offset of the call in ``raw_traces.jsonl``) and reads each
  call line at its offset — no scan. Should an offset not hold the call it should (a cache
  out of step), the view falls back to a full pass.
* ``--last N`` pairs the traces of the last N turns, read from the end of the active file.

Filters: ``statuses``, tool ``names``, ``turn``, and a :class:`TraceFilter` whose time bounds
apply to the call's time (the result's for an orphan) and whose tags match either trace.
"""

from __future__ import annotations

from typing import Iterable, Iterator

from memcli.errors import UsageError
from memcli.filters import TraceFilter, split_values
from memcli.models import ToolInteraction, ToolStatus
from memcli.store import jsonl
from memcli.store.agent import AgentStore, trace_from_record
from memcli.tool_interactions import ToolPair, iter_tool_pairs

STATUS_NAMES = {s.value.lower(): s for s in ToolStatus}


def parse_statuses(values: Iterable[str] | None) -> frozenset:
    out = set()
    for name in split_values(values):
        status = STATUS_NAMES.get(name.lower())
        if status is None:
            raise UsageError(f"{{status}}: unknown status {name!r} (expected one of {', '.join(STATUS_NAMES)})", param="status")
        out.add(status)
    return frozenset(out)


def select_tool_interactions(store: AgentStore, *, statuses: frozenset = frozenset(), names: Iterable[str] = (),
                             turn: str | Iterable[str] | None = None, flt: TraceFilter | None = None,
                             last: int | None = None,
                             archive: bool = False) -> Iterator[ToolInteraction]:
    flt = flt or TraceFilter()
    names = frozenset(split_values(names))
    if flt.types:
        raise UsageError("{type} does not apply to tool interactions", param="type")
    if last is not None and last < 1:
        raise UsageError("{last} must be 1 or more", param="last")
    turns = None
    if turn:  # a turn the agent does not have is "not found", not an empty list
        from memcli.inspect.turns import require_turns

        turns = frozenset(require_turns(store, turn, archive=archive))
    if statuses == {ToolStatus.PENDING} and not archive and last is None:
        pairs = _pending_pairs(store)
    elif last is not None:
        from memcli.inspect.turns import recent_turn_traces

        traces = [t for _, _, group in recent_turn_traces(store, last, archive=archive) for t in group]
        pairs = iter_tool_pairs(traces)
    else:
        pairs = _all_pairs(store, archive)
    return _filtered(pairs, statuses, names, turns, flt)


def _filtered(pairs: Iterable[ToolPair], statuses, names, turns, flt: TraceFilter) -> Iterator[ToolInteraction]:
    for pair in pairs:
        interaction = pair.interaction
        if statuses and interaction.status not in statuses:
            continue
        if names and interaction.tool_name not in names:
            continue
        if turns is not None and interaction.turn_id not in turns:
            continue
        if flt.tags and not any(pair.has_tag(tag) for tag in flt.tags):
            continue
        if not flt.in_time(pair.ts):
            continue
        yield interaction


def _unanswered_call_ids(store: AgentStore) -> frozenset:
    state = store.read_state()
    return frozenset(entry[1] for queue in state.pending.values() for entry in queue)


def _all_pairs(store: AgentStore, archive: bool) -> Iterator[ToolPair]:
    # Calls the state knows stay unanswered do not hold back the ones after them (streaming).
    # With the archive the state's map (built from the active file) is not the whole truth.
    never = frozenset() if archive else _unanswered_call_ids(store)
    return iter_tool_pairs((s.trace for s in store.iter_traces(archive=archive)), never_answered=never)


def _pending_pairs(store: AgentStore) -> Iterator[ToolPair]:
    state = store.read_state()
    entries = sorted((entry for queue in state.pending.values() for entry in queue),
                     key=lambda e: (e[2] is None, e[2] or 0))
    path = store.paths.active
    found = []
    for _turn_id, trace_id, offset in entries:
        if offset is None:
            break
        try:
            record = jsonl.read_line_at(path, offset)
        except Exception:  # a stale offset: read it the long way
            break
        if record.get("id") != trace_id or record.get("trace_type") != "tool_call":
            break
        found.append(trace_from_record(path, None, offset, record))
    else:
        return iter([next(iter_tool_pairs([trace])) for trace in found])
    # the cache did not describe the file: pair everything, keep the pending calls
    return (p for p in _all_pairs(store, False) if p.interaction.status is ToolStatus.PENDING)
