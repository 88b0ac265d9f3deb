"""One summary per turn (``memcli turns``), and grouping a stream of traces into turns.

A turn's traces are normally together in the file, except a tool result that arrives after a
newer turn has opened: it joins its call's turn (docs/design.md §2). The full listing therefore groups
by ``turn_id`` over a sliding window: a turn is written out once :data:`TURN_WINDOW` newer turns
have started, so memory holds at most that many turns however long the history is. A trace for a
turn already written out (only possible with more than :data:`TURN_WINDOW` turns in between, i.e.
foreign data with explicit turn ids) starts a second row with the same ``turn_id``.

A group of only system/developer traces (instructions that compaction kept while archiving the
rest of their turn) is not a turn and is not listed.

``--last N`` reads from the end of the active file (:meth:`AgentStore.iter_recent_turns`): the
cost depends on N, not on the length of the history. With ``--archive`` the archive is read only
when the active file has fewer than N turns.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Iterable, Iterator

from memcli.models import RawTrace, ToolStatus
from memcli.neutral import readable_text
from memcli.store.agent import AgentStore, StoredTrace
from memcli.tool_interactions import iter_tool_interactions

TURN_WINDOW = 256


@dataclass
class TurnSummary:
    turn_id: str
    tier: str               # "active", "archive" (or "archive+active" for a turn split across both)
    started: float | None   # ts of its first trace
    ended: float | None     # ts of its last trace
    traces: int
    ask: str | None         # the user's ask: the first user trace that is not context
    answer: str | None      # the last assistant message
    tool_calls: int
    tools: list             # tool names, in order of first use
    errors: int             # tool results with a tool_error
    pending: int            # calls without a result in this turn
    orphans: int            # results without a call in this turn


def summarize_turn(turn_id: str, traces: list[RawTrace], tier: str) -> TurnSummary:
    ask = answer = None
    tools: list[str] = []
    calls = 0
    for trace in traces:
        kind = trace.trace_type
        if kind == "user" and ask is None and not trace.is_context:
            ask = readable_text(trace.content) if trace.content else trace.content  # /name args
        elif kind == "assistant" and trace.content and "reasoning" not in trace.tags:
            answer = trace.content
        elif kind == "tool_call":
            calls += 1
            if trace.tool_name and trace.tool_name not in tools:
                tools.append(trace.tool_name)
    counts = {ToolStatus.ERROR: 0, ToolStatus.PENDING: 0, ToolStatus.ORPHAN: 0}
    if calls or any(t.trace_type == "tool_result" for t in traces):
        for interaction in iter_tool_interactions(traces, ordered=False):
            if interaction.status in counts:
                counts[interaction.status] += 1
    timestamps = [t.ts for t in traces if isinstance(t.ts, (int, float))]
    return TurnSummary(
        turn_id=turn_id, tier=tier,
        started=min(timestamps) if timestamps else None, ended=max(timestamps) if timestamps else None,
        traces=len(traces), ask=ask, answer=answer, tool_calls=calls, tools=tools,
        errors=counts[ToolStatus.ERROR], pending=counts[ToolStatus.PENDING], orphans=counts[ToolStatus.ORPHAN],
    )


def group_turns(stored: Iterable[StoredTrace], window: int = TURN_WINDOW) -> Iterator[tuple[str, str, list[RawTrace]]]:
    """(turn_id, tier, traces) in order of each turn's first trace (see the module docstring)."""
    groups: OrderedDict[str, list] = OrderedDict()
    for item in stored:
        trace = item.trace
        group = groups.get(trace.turn_id)
        if group is None:
            groups[trace.turn_id] = [item.tier, [trace]]
            while len(groups) > window:
                turn_id, (tier, traces) = groups.popitem(last=False)
                yield turn_id, tier, traces
        else:
            if group[0] != item.tier and item.tier not in group[0].split("+"):
                group[0] = f"{group[0]}+{item.tier}"
            group[1].append(trace)
    for turn_id, (tier, traces) in groups.items():
        yield turn_id, tier, traces


def instructions_only(traces: list[RawTrace]) -> bool:
    """True for a group of only system/developer traces: what compaction leaves of a turn whose
    conversation it archived. It is not listed as a turn (no ghost turns)."""
    return all(t.is_instruction for t in traces)


def in_range(turn: TurnSummary, flt) -> bool:
    """Whether a turn has time in ``flt``'s ``--since``/``--until`` range (it overlaps it)."""
    if flt.since is None and flt.until is None:
        return True
    started = turn.started if turn.started is not None else turn.ended
    ended = turn.ended if turn.ended is not None else turn.started
    if started is None:
        return False
    return (flt.since is None or ended >= flt.since) and (flt.until is None or started <= flt.until)


def iter_turns(store: AgentStore, *, archive: bool = False) -> Iterator[TurnSummary]:
    """Every turn, oldest first (archived turns first with ``archive``)."""
    for turn_id, tier, traces in group_turns(store.iter_traces(archive=archive)):
        if not instructions_only(traces):
            yield summarize_turn(turn_id, traces, tier)


def recent_turn_traces(store: AgentStore, n: int, *, archive: bool = False) -> list[tuple[str, str, list[RawTrace]]]:
    """The last ``n`` turns as (turn_id, tier, traces), oldest first; read from the end of the
    active file, and from the archive only when ``archive`` is set and the active file has fewer."""
    if n <= 0:
        return []
    out = [(turn_id, "active", traces) for turn_id, traces in store.last_turns(n)]
    if archive and len(out) < n:
        older: deque = deque(maxlen=n - len(out))
        for group in group_turns(store.iter_traces(archive=True, active=False)):
            older.append(group)
        out = list(older) + out
    return out


def recent_turns(store: AgentStore, n: int, *, archive: bool = False) -> list[TurnSummary]:
    return [summarize_turn(turn_id, traces, tier) for turn_id, tier, traces in recent_turn_traces(store, n, archive=archive)
            if not instructions_only(traces)]


def require_turn(store: AgentStore, turn: str, *, archive: bool = False) -> tuple[str, str, list[RawTrace]]:
    """(turn id, tier, traces) of the turn ``--turn`` names (``7`` or ``turn_0007``); raises
    TurnNotFoundError, the message every command gives, when the agent does not have it."""
    from memcli.errors import TurnNotFoundError
    from memcli.ids import turn_id

    wanted = turn_id(turn)
    found = find_turn(store, wanted, archive=archive)
    if found is None:
        raise TurnNotFoundError(store.agent_id, [wanted], archive_searched=archive)
    return wanted, found[0], found[1]


def require_turns(store: AgentStore, turns, *, archive: bool = False) -> list[str]:
    """The turn ids a (repeatable) ``--turn`` names (a str or several; ``7`` means ``turn_0007``),
    in the order given, each once; raises TurnNotFoundError naming every one the agent does not have."""
    from memcli.errors import TurnNotFoundError
    from memcli.ids import turn_id

    wanted = list(dict.fromkeys(turn_id(t) for t in ([turns] if isinstance(turns, str) else turns)))
    missing = [t for t in wanted if find_turn(store, t, archive=archive) is None]
    if missing:
        raise TurnNotFoundError(store.agent_id, missing, archive_searched=archive)
    return wanted


def find_turn(store: AgentStore, turn_id: str, *, archive: bool = False) -> tuple[str, list[RawTrace]] | None:
    """(tier, traces) of one turn, or None. Active turns are read from the end of the file (a
    recent turn is found at once); the archive is scanned only with ``archive``."""
    for found_id, traces in store.iter_recent_turns():
        if found_id == turn_id:
            return "active", traces
    if archive:
        traces = [s.trace for s in store.iter_traces(archive=True, active=False) if s.trace.turn_id == turn_id]
        if traces:
            return "archive", traces
    return None
