"""The tool interaction view of docs/design.md §2: each tool call with its result, derived from traces,
and THE pairing rule every view uses.

Pairing is by ``tool_call_id``, first-in-first-out among the calls with that id that are still
unanswered (transcripts reuse ids), in store order — refined by the result's turn: a result
answers the oldest unanswered call with its id *in the result's own turn* when there is one, else
the oldest overall. For traces memcli linked itself the two rules pick the same call (a result
joins the turn of the call it answers); for foreign data with explicit turn ids it is the better
match. :func:`memcli.pairing.pop_open_call` is the one implementation: the state cache's unanswered-call map
(:mod:`memcli.store.state`, the ``tools --status pending`` fast path), this view (``tools``,
``stats``, ``doctor``), the snapshot (:mod:`memcli.snapshot.build`) and the markdown export
(:mod:`memcli.export.markdown`) all call it, so they pair a reused id the same way.

Status: PENDING (no result yet), SUCCESS, ERROR (the result has a ``tool_error``). A result whose
call is not among the traces given is an ORPHAN and is listed at its own position — never
dropped. Nothing here is stored.

Everything streams: :func:`iter_tool_pairs` yields interactions while reading the traces.

* ``ordered=True`` (the default) yields them in the order of their calls (orphans at their
  result's position). An interaction waits until it is complete, and so do the ones after it;
  memory therefore holds what follows the oldest unanswered call. Calls known never to be
  answered (``never_answered``: call trace ids, e.g. from the state's unanswered-call map) are
  let through at once, so a long history with an old stale call still streams.
* ``ordered=False`` yields each interaction as soon as it is complete (orphans at once), and the
  still-unanswered calls at the end: memory holds only the open calls. For counting.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Collection, Iterable, Iterator

from memcli.models import RawTrace, ToolInteraction, ToolStatus
from memcli.pairing import pop_open_call, take_open_call  # noqa: F401  (take_open_call: old name)


@dataclass(slots=True)
class ToolPair:
    """An interaction with the traces it was made from (``call`` is None for an orphan,
    ``result`` None while pending) — for filters that look at trace fields such as tags."""

    interaction: ToolInteraction
    call: RawTrace | None
    result: RawTrace | None
    position: int = 0  # index of the call (or orphan result) among the traces read

    def has_tag(self, tag: str) -> bool:
        return (self.call is not None and tag in self.call.tags) or (
            self.result is not None and tag in self.result.tags)

    @property
    def ts(self) -> float | None:
        """When the interaction happened: its call's time (its result's for an orphan)."""
        i = self.interaction
        return i.call_ts if i.call_ts is not None else i.result_ts


def _pair_turn(pair: ToolPair) -> str | None:
    return pair.interaction.turn_id


def iter_tool_pairs(traces: Iterable[RawTrace], *, ordered: bool = True,
                    never_answered: Collection[str] = ()) -> Iterator[ToolPair]:
    open_calls: dict[str, list[ToolPair]] = {}
    waiting: deque[ToolPair] = deque()  # ordered mode: interactions not yet yielded, in order
    for position, trace in enumerate(traces):
        trace_type = trace.trace_type
        if trace_type == "tool_call":
            pair = ToolPair(ToolInteraction(
                tool_call_id=trace.tool_call_id or "", turn_id=trace.turn_id, tool_name=trace.tool_name,
                arguments=trace.tool_args, result=None, error=None, status=ToolStatus.PENDING,
                call_trace_id=trace.id, call_ts=trace.ts,
            ), trace, None, position)
            open_calls.setdefault(pair.interaction.tool_call_id, []).append(pair)
            if ordered:
                waiting.append(pair)
        elif trace_type == "tool_result":
            call_id = trace.tool_call_id or ""
            pair = pop_open_call(open_calls, call_id, trace.turn_id, _pair_turn)
            if pair is not None:
                interaction = pair.interaction
                interaction.status = ToolStatus.ERROR if trace.tool_error else ToolStatus.SUCCESS
                if interaction.tool_name is None:
                    interaction.tool_name = trace.tool_name
            else:
                interaction = ToolInteraction(
                    tool_call_id=call_id, turn_id=trace.turn_id, tool_name=trace.tool_name,
                    arguments=trace.tool_args, result=None, error=None, status=ToolStatus.ORPHAN,
                )
                pair = ToolPair(interaction, None, None, position)
                if ordered:
                    waiting.append(pair)
            pair.result = trace
            interaction.result = trace.tool_result
            interaction.error = trace.tool_error
            interaction.result_trace_id = trace.id
            interaction.result_ts = trace.ts
            if not ordered:
                yield pair
        else:
            continue
        while waiting and (waiting[0].interaction.status is not ToolStatus.PENDING
                           or waiting[0].interaction.call_trace_id in never_answered):
            yield waiting.popleft()
    if ordered:
        yield from waiting
    else:
        rest = [pair for queue in open_calls.values() for pair in queue]
        rest.sort(key=lambda pair: pair.position)
        yield from rest


def iter_tool_interactions(traces: Iterable[RawTrace], *, ordered: bool = True,
                           never_answered: Collection[str] = ()) -> Iterator[ToolInteraction]:
    for pair in iter_tool_pairs(traces, ordered=ordered, never_answered=never_answered):
        yield pair.interaction


def pair_tool_traces(traces: Iterable[RawTrace]) -> list[ToolInteraction]:
    """Every interaction, in call order (orphans at their result's position)."""
    return list(iter_tool_interactions(traces))
