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

Status: PENDING (no result yet), SUCCESS, ERROR (the result failed: :func:`result_failure`, the
one rule for it — a ``tool_error``, a non-zero exit code in the result or kept by its importer, or
one the harness wrote into the output text, as Codex, Copilot CLI, Gemini CLI and Cline do; the
offline summary's "failed" and ``tools``/``stats``/``turns``/``view`` agree). A result whose
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

import re
from collections import deque
from dataclasses import dataclass
from typing import Collection, Iterable, Iterator

import orjson

from memcli.messages import value_text
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
                interaction.status = ToolStatus.ERROR if result_failure(trace)[0] else ToolStatus.SUCCESS
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


# the exit status a harness writes around a command's output: first (Codex ``Exit code: 1`` /
# ``Process exited with code 1`` after ``Chunk ID``/``Wall time`` lines; Cline and Roo Code after
# ``Command executed in terminal within working directory '…'.``) or last (Copilot CLI
# ``<exited with exit code 1>``, Gemini CLI ``Exit Code: 1`` before its Signal/PIDs lines)
_EXIT_HEAD = re.compile(r"\A(?:(?:Chunk ID|Wall time|Command|Directory): [^\n]*\n"
                        r"|Command executed in terminal[^\n]*?(?:\n|\. (?=Exit code))){0,3}"   # (Cline, Roo Code)
                        r"(?:Exit code:? |Process exited with code )(-?\d+)[ \t]*$", re.MULTILINE)
_EXIT_TAIL = re.compile(r"^(?:<exited with exit code (-?\d+)>|Exit Code: (-?\d+))[ \t]*$", re.MULTILINE)
def stated_exit(text: str) -> int | None:
    """The exit status a harness wrote into a command's output text (see :data:`_EXIT_HEAD`,
    :data:`_EXIT_TAIL`), None when it states none."""
    m = _EXIT_HEAD.match(text[:300])
    if m:
        return int(m.group(1))
    tail = text[-300:]
    if "xit" not in tail:
        return None
    found = _EXIT_TAIL.findall(tail)
    return int(found[-1][0] or found[-1][1]) if found else None


def _output_text(result) -> str | None:
    """A command's output as a string: the result itself, or its ``output``/``stdout``/``content``."""
    if isinstance(result, str):
        return result
    if isinstance(result, dict):
        for key in ("output", "stdout", "content"):
            if isinstance(result.get(key), str):
                return result[key]
    return None


def exec_output(text: str) -> str:
    """A command's output as a text: an older Codex rollout recorded each exec result as JSON,
    ``{"output": "...", "metadata": {"exit_code": 1, "duration_seconds": 0.1}}`` (the importer
    reads the exit code; the model read the output): its ``output``; any other text as it is."""
    if text.startswith('{"output"'):
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            return text
        if isinstance(value, dict) and isinstance(value.get("output"), str) and isinstance(value.get("metadata"), dict):
            return value["output"]
    return text


# a tool that says in its answer that it failed, where no status says so (an OpenAI chat ``tool``
# message is text only: tau-bench's environments answer ``Error: <the exception>``, MCP clients
# ``Error executing tool …``; a code tool's uncaught exception is its traceback)
_SAYS_FAILED = re.compile(r"\s*(?:(?:Error|ERROR|error)(?::| (?:executing|calling|running) tool\b)"
                          r"|Traceback \(most recent call last\):)")


def result_failure(trace) -> tuple[bool, str]:
    """(failed, error text) of a tool result: a ``tool_error``, an exit code other than 0 (a
    result's field, the ``exit_code`` an importer kept, or the status the harness wrote into the
    output: :func:`stated_exit`), or, where no exit code is known, an answer that begins by
    saying it failed (:data:`_SAYS_FAILED`, after leading whitespace: ``Error: not enough seats``)."""
    if trace.tool_error:
        return True, exec_output(trace.tool_error)
    result = trace.tool_result
    exited = False   # an exit code 0 in the result
    if isinstance(result, dict):
        for key in ("exit_code", "exitCode", "returncode"):
            code = result.get(key)
            if code is not None and isinstance(code, int) and not isinstance(code, bool):
                if code != 0:
                    text = result.get("stderr") or result.get("output") or result.get("stdout") or ""
                    return True, f"exit code {code}" + (f"\n{value_text(text)}" if text else "")
                exited = True
        if result.get("is_error") is True or result.get("success") is False:
            return True, value_text(result.get("error") or result.get("message") or result)
    text = _output_text(result)
    extra = getattr(trace, "extra", None)
    code = extra.get("exit_code") if extra else None
    if not (isinstance(code, int) and not isinstance(code, bool)):
        code = stated_exit(text) if text else None
    if code:
        return True, f"exit code {code}" + (f"\n{text}" if text else "")
    if code is None and not exited and text and _SAYS_FAILED.match(text):
        return True, text
    return False, ""
