"""The tool interaction view of DESIGN.md §2: each tool call with its result, derived from traces.

Pairing is by ``tool_call_id``, first-in-first-out among the calls with that id that are still
unanswered (transcripts reuse ids), in store order. Status: PENDING (no result yet), SUCCESS,
ERROR (the result has a ``tool_error``). A result whose call is not among the traces given is an
ORPHAN and is listed at its own position — never dropped. Interactions come out in the order of
their calls (orphans at their result's position). Nothing here is stored.
"""

from __future__ import annotations

from collections import deque
from typing import Iterable

from memcli.models import RawTrace, ToolInteraction, ToolStatus


def pair_tool_traces(traces: Iterable[RawTrace]) -> list[ToolInteraction]:
    out: list[ToolInteraction] = []
    open_calls: dict[str, deque[ToolInteraction]] = {}
    for trace in traces:
        if trace.trace_type == "tool_call":
            interaction = ToolInteraction(
                tool_call_id=trace.tool_call_id or "", turn_id=trace.turn_id, tool_name=trace.tool_name,
                arguments=trace.tool_args, result=None, error=None, status=ToolStatus.PENDING,
                call_trace_id=trace.id, call_ts=trace.ts,
            )
            out.append(interaction)
            open_calls.setdefault(interaction.tool_call_id, deque()).append(interaction)
        elif trace.trace_type == "tool_result":
            queue = open_calls.get(trace.tool_call_id or "")
            if queue:
                interaction = queue.popleft()
                if not queue:
                    del open_calls[trace.tool_call_id or ""]
            else:
                interaction = ToolInteraction(
                    tool_call_id=trace.tool_call_id or "", turn_id=trace.turn_id, tool_name=trace.tool_name,
                    arguments=trace.tool_args, result=None, error=None, status=ToolStatus.ORPHAN,
                )
                out.append(interaction)
            interaction.result = trace.tool_result
            interaction.error = trace.tool_error
            interaction.result_trace_id = trace.id
            interaction.result_ts = trace.ts
            if interaction.tool_name is None:
                interaction.tool_name = trace.tool_name
            if interaction.status is not ToolStatus.ORPHAN:
                interaction.status = ToolStatus.ERROR if trace.tool_error else ToolStatus.SUCCESS
    return out
