"""Canonical messages from raw traces — from ANY iterator of RawTrace (the active file, a window of
turns, or archive + active for an export), as a stream.

Rules, applied in the order the traces come:

* ``user`` traces become user messages: ``kind`` ``ask``, or ``context`` for traces tagged
  ``context``/``compact_summary``; traces tagged ``system``/``developer`` — instructions
  (:func:`memcli.models.is_instruction`) — become ``role="system"`` messages in place (the
  snapshot hoists them into the system prompt). On an assistant or tool trace those tags change
  nothing.
* Consecutive ``assistant`` and ``tool_call`` traces of one turn form ONE assistant message: its
  text parts, then all its calls (parallel calls stay together). An assistant text that follows
  calls, or a call made after one of the message's results arrived, starts a new message (the
  next step).
* Each assistant message with calls is followed by ONE ``tool`` message holding a result for every
  call, in call order — wherever the results were stored: results are matched to calls by
  ``tool_call_id``, first-in-first-out among the unanswered calls with that id (transcripts reuse
  ids), preferring a call of the result's own turn (:mod:`memcli.pairing`), and a result stored later (after the next user message, say) is still rendered right after
  its call; the messages behind it wait. A call left unanswered gets a placeholder result
  (``status="pending"``, :data:`~memcli.messages.PENDING_TEXT`) — never a dangling call.
* A result with no unanswered call is an ``orphan``: a user message rendered as plain text.
* ``lookahead`` bounds the wait (in traces read) for a late result; when it runs out the call
  gets its placeholder, and a result that still arrives later becomes a ``late`` note at its own
  position. ``None`` (the snapshot's choice: its window is in memory anyway) waits to the end.
* Traces tagged ``reasoning`` are left out unless ``include_reasoning`` (providers accept only
  their own signed reasoning blocks); traces tagged ``sidechain`` (a subagent's own conversation,
  which the main agent never saw) are left out unless ``include_sidechain``.
* Call ids are made unique in the stream and acceptable to every provider: an id that matches
  ``[A-Za-z0-9_-]{1,40}`` and was not used before is kept; otherwise it is cleaned (other
  characters become ``_``, long ids are shortened with a hash) and a reused id gets ``_2``,
  ``_3``... in order of appearance. Tool names are cleaned the same way (64 characters, starting
  with a letter or ``_``). ``id_capacity`` bounds the memory of used ids (an export of millions of
  calls), forgetting the oldest.
* Messages with nothing to say are dropped; :class:`BuildStats` counts everything decided here.

:func:`build_messages` is the streaming form; :class:`MessageBuilder` the push form (``feed`` a
trace, get the messages that became final).
"""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Iterable, Iterator

import orjson

from memcli.messages import (
    ERROR,
    LATE,
    MEDIA_KINDS,
    ORPHAN,
    PENDING,
    PENDING_TEXT,
    SUCCESS,
    Media,
    Message,
    ToolCall,
    ToolResult,
    json_text,
    new_message,
    new_text,
    new_tool_call,
    new_tool_result,
)
from memcli.models import PINNED_TAGS, TAG_COMPACT_SUMMARY, TAG_CONTEXT, TAG_REASONING, TAG_SIDECHAIN, RawTrace
from memcli.pairing import pop_open_call

MAX_ID_CHARS = 40
MAX_NAME_CHARS = 64
_SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,40}")
_SAFE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
_UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9_-]")
UNKNOWN_TOOL = "unknown_tool"


def _hash(text: str, n: int = 8) -> str:
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:n]


def safe_name(name: str | None) -> str:
    """A tool name every provider accepts (unchanged when it already is one)."""
    if not name:
        return UNKNOWN_TOOL
    if _SAFE_NAME.fullmatch(name):
        return name
    cleaned = _UNSAFE_CHARS.sub("_", name)
    if not (cleaned[0].isalpha() and cleaned[0].isascii()) and cleaned[0] != "_":
        cleaned = "_" + cleaned
    if len(cleaned) > MAX_NAME_CHARS:
        cleaned = cleaned[:MAX_NAME_CHARS - 9] + "_" + _hash(name)
    return cleaned


class CallIds:
    """Unique, provider-safe call ids, assigned in order of appearance (rules in the module doc)."""

    def __init__(self, capacity: int | None = None):
        self.capacity = capacity
        # in order of assignment; an OrderedDict only when the oldest must be forgotten
        self._used: dict[str, None] = OrderedDict() if capacity is not None else {}

    def _base(self, source_id: str, trace_id: str | None) -> str:
        if _SAFE_ID.fullmatch(source_id):
            return source_id
        if not source_id:
            return "call_" + _hash(trace_id or "", 12)
        cleaned = _UNSAFE_CHARS.sub("_", source_id)
        if len(cleaned) > MAX_ID_CHARS:
            cleaned = cleaned[:MAX_ID_CHARS - 9] + "_" + _hash(source_id)
        return cleaned

    def assign(self, source_id: str, trace_id: str | None = None) -> str:
        used = self._used
        if source_id not in used and _SAFE_ID.fullmatch(source_id):   # kept as it is (the usual case)
            used[source_id] = None
            if self.capacity is not None and len(used) > self.capacity:
                used.popitem(last=False)
            return source_id
        base = self._base(source_id, trace_id)
        candidate, n = base, 1
        while candidate in self._used:
            n += 1
            suffix = f"_{n}"
            candidate = base[:MAX_ID_CHARS - len(suffix)] + suffix
        self._used[candidate] = None
        if self.capacity is not None and len(self._used) > self.capacity:
            self._used.popitem(last=False)
        return candidate


def call_arguments(trace: RawTrace) -> dict:
    """The call's arguments as a JSON object (providers require one)."""
    args = trace.tool_args
    if isinstance(args, dict):
        return args
    if args is None:
        return {}
    if isinstance(args, str):
        try:
            value = orjson.loads(args)
        except orjson.JSONDecodeError:
            return {"input": args}
        return value if isinstance(value, dict) else {"input": value}
    return {"input": args}


def result_text(trace: RawTrace) -> str:
    """What a tool_result trace says: its error, its result (JSON as text), else its content."""
    value = trace.tool_result
    if value is not None and not trace.tool_error:   # the usual case: the result alone
        return value if isinstance(value, str) else json_text(value)
    parts = []
    if trace.tool_error:
        parts.append(trace.tool_error)
    if value is not None:
        parts.append(value if isinstance(value, str) else json_text(value))
    elif not trace.tool_error and trace.content:
        parts.append(trace.content)
    if not parts and trace.tool_result_ref:
        parts.append(f"[result stored at {trace.tool_result_ref}]")
    return "\n".join(parts)


def trace_media(trace: RawTrace) -> list[Media]:
    media = trace.media
    if not media or not isinstance(media, dict):
        return []
    out = []
    for key, urls in media.items():
        kind = MEDIA_KINDS.get(key, key)
        if isinstance(urls, str):
            urls = [urls]
        if isinstance(urls, list):
            out.extend(Media(kind, url) for url in urls if isinstance(url, str) and url)
    return out


def says_something(trace: RawTrace) -> bool:
    """Whether a trace gives its message anything to say: a text not blank, or media (what
    :meth:`MessageBuilder._parts` renders). An assistant trace that does not is dropped: it
    neither opens nor ends a message (the compaction planner cuts steps by the same rule)."""
    content = trace.content
    return bool(content and not content.isspace()) or bool(trace.media and trace_media(trace))


@dataclass
class BuildStats:
    traces: int = 0
    reasoning_omitted: int = 0
    sidechain_omitted: int = 0
    empty_skipped: int = 0
    unknown_skipped: int = 0
    pending: int = 0
    orphans: int = 0
    late: int = 0
    calls: int = 0
    results: int = 0
    ids_renamed: int = 0
    id_examples: list = field(default_factory=list)  # the first few (stored id, rendered id)


# A tool message's results are ToolResult objects (always true) or None where one is missing:
# ``all(results)`` says none is, without the ``==`` that ``None in results`` calls per result.
#
# An unanswered call is the tuple (call, its tool message, the index of its result there). A call
# given up on (``lookahead`` ran out) has its placeholder in that place already: a result that
# still comes finds the place taken and becomes a ``late`` note.


def _slot_turn(slot: tuple) -> str | None:
    return slot[1].turn_id  # the turn of the call's assistant message


_NAME_MEMO = 1024   # distinct tool names remembered per build (a store has a few; a hostile one, any number)


class MessageBuilder:
    """Push traces in with :meth:`feed`, take the messages that are final; :meth:`finish` at the end."""

    def __init__(self, *, include_reasoning: bool = False, include_sidechain: bool = False,
                 lookahead: int | None = None, id_capacity: int | None = None, ordered: bool = True):
        self.include_reasoning = include_reasoning
        self.include_sidechain = include_sidechain
        self.lookahead = lookahead
        self.ordered = ordered
        self._aside: dict[int, Message] = {}   # unordered: tool messages still waiting for a result
        self._ready: list[Message] = []        # unordered: ... whose last result came (one list, kept)
        self.ids = CallIds(id_capacity)
        self.stats = BuildStats()
        self._current: Message | None = None
        self._current_tools: Message | None = None
        self._queue: deque[Message] = deque()
        # messages final, to hand out in this order (a message goes here at once when nothing is
        # queued or ready ahead of it; else it queues, and _drain moves it here)
        self._out: list[Message] = []
        # id(tool message) -> (the calls it answers, queued at), while one of its results is missing
        self._waiting: dict[int, tuple[list[ToolCall], int]] = {}
        # source call id -> its unanswered call (a slot), or a list of them, oldest first, when several
        self._open: dict[str, tuple | list[tuple]] = {}
        self._names: dict[str | None, str] = {}   # tool name -> safe_name(name)

    # ------------------------------------------------------------------ input
    def feed(self, trace: RawTrace) -> list[Message]:
        return list(self._stream((trace,)))

    def _stream(self, traces: Iterable[RawTrace], end: bool = False) -> Iterator[Message]:
        """The rules of each trace (by kind, below), yielding the messages that became final; with
        ``end``, what :meth:`finish` gives after the last trace."""
        stats = self.stats
        include_sidechain = self.include_sidechain
        user, assistant, tool_call, tool_result = self._user, self._assistant, self._tool_call, self._tool_result
        queue, ready, drain, out = self._queue, self._ready, self._drain, self._out
        for trace in traces:
            stats.traces += 1   # also the clock of the lookahead
            tags = trace.tags
            kind = trace.trace_type
            if tags and TAG_SIDECHAIN in tags and not include_sidechain:
                stats.sidechain_omitted += 1
            elif kind == "tool_call":
                tool_call(trace)
            elif kind == "tool_result":
                tool_result(trace)
            elif kind == "assistant":
                assistant(trace)
            elif kind == "user":
                user(trace)
            else:
                stats.unknown_skipped += 1
            if queue or ready:   # something became final (or, with a lookahead, may have)
                drain(out)
            if out:
                yield from out
                out.clear()
        if end:
            yield from self.finish()

    def finish(self) -> list[Message]:
        if self._aside:   # the tool messages set aside go first (then what is queued, and the open message)
            self._queue.extendleft(reversed(list(self._aside.values())))
            self._aside.clear()
        self._close()
        self._drain(self._out, force=True)  # every call still unanswered gets its placeholder
        self._open.clear()
        out = self._out[:]
        self._out.clear()
        return out

    # ------------------------------------------------------------------ trace kinds
    def _user(self, trace: RawTrace) -> None:
        self._close()
        tags = trace.tags
        if tags and trace.is_instruction:   # (no tags, the usual ask: no call)
            role, kind = "system", next(t for t in tags if t in PINNED_TAGS)
        elif tags and (TAG_CONTEXT in tags or TAG_COMPACT_SUMMARY in tags or TAG_SIDECHAIN in tags):
            role, kind = "user", "context"
        else:
            role, kind = "user", "ask"
        parts = self._parts(trace)
        if not parts:
            self.stats.empty_skipped += 1
            return
        queue = self._queue
        (queue if queue or self._ready else self._out).append(
            new_message(role, kind, parts, [], [], trace.turn_id, [trace.id]))

    def _assistant(self, trace: RawTrace) -> None:
        if trace.tags and TAG_REASONING in trace.tags:
            if not self.include_reasoning:
                self.stats.reasoning_omitted += 1
                return
            self._close()
            parts = self._parts(trace)
            if parts:
                self._queue.append(Message("assistant", "reasoning", parts, turn_id=trace.turn_id,
                                           trace_ids=[trace.id]))
            return
        parts = self._parts(trace)
        if not parts:   # it says nothing (says_something): it neither opens nor ends a message
            self.stats.empty_skipped += 1
            return
        current = self._current
        if current is not None and (current.tool_calls or current.turn_id != trace.turn_id):
            self._close()
            current = None
        if current is None:
            self._current = new_message("assistant", "reply", parts, [], [], trace.turn_id, [trace.id])
        else:
            current.parts.extend(parts)
            current.trace_ids.append(trace.id)

    def _tool_call(self, trace: RawTrace) -> None:
        current = self._current
        turn_id = trace.turn_id
        if current is not None and current.turn_id != turn_id:
            self._close()
            current = None
        source_id = trace.tool_call_id or ""
        trace_id = trace.id
        stats = self.stats
        call_id = self.ids.assign(source_id, trace_id)
        if call_id != source_id:
            stats.ids_renamed += 1
            if len(stats.id_examples) < 3:
                stats.id_examples.append((source_id, call_id))
        name = trace.tool_name
        names = self._names
        rendered_name = names.get(name)
        if rendered_name is None:
            rendered_name = safe_name(name)
            if len(names) < _NAME_MEMO:
                names[name] = rendered_name
        args = trace.tool_args
        if args.__class__ is not dict:
            args = call_arguments(trace)
        call = new_tool_call(call_id, rendered_name, args, trace_id, source_id, name)
        content = trace.content
        if current is None:   # the call opens an assistant message, and its tool message
            parts = [new_text(content)] if content and content.strip() else []
            self._current = new_message("assistant", "reply", parts, [call], [], turn_id, [trace_id])
            tools = self._current_tools = new_message("tool", "results", [], [], [None], turn_id, [])
            slot = (call, tools, 0)
        else:
            if content and content.strip():
                current.parts.append(new_text(content))
            current.tool_calls.append(call)
            current.trace_ids.append(trace_id)
            tools = self._current_tools
            if tools is None:
                tools = self._current_tools = new_message("tool", "results", [], [], [], turn_id, [])
            results = tools.results
            results.append(None)
            slot = (call, tools, len(results) - 1)
        open_calls = self._open
        other = open_calls.setdefault(source_id, slot)
        if other is not slot:   # the id is reused by a call still unanswered
            if other.__class__ is tuple:
                open_calls[source_id] = [other, slot]
            else:
                other.append(slot)
        stats.calls += 1

    def _tool_result(self, trace: RawTrace) -> None:
        source_id = trace.tool_call_id or ""
        open_calls = self._open
        slot = open_calls.pop(source_id, None)
        if slot is not None and slot.__class__ is not tuple:   # several unanswered calls have this id
            open_calls[source_id] = slot
            slot = pop_open_call(open_calls, source_id, trace.turn_id, _slot_turn)  # the one pairing rule
        text = result_text(trace)
        error = bool(trace.tool_error)
        if slot is not None:
            call, tools, index = slot
            results = tools.results
            if results[index] is None:   # else the call was given up on: the result is late
                results[index] = new_tool_result(
                    call.id, call.name, ERROR if error else SUCCESS, text, trace_media(trace) if trace.media else [],
                    trace.id, source_id, error, len(text), None, call.source_name or trace.tool_name)
                tools.trace_ids.append(trace.id)
                self.stats.results += 1
                if self._aside and id(tools) in self._aside and all(results):
                    self._ready.append(self._aside.pop(id(tools)))
                if tools is self._current_tools:
                    self._close()  # a call made after this result is the next step, not a parallel call
                return
        self._close()
        status = LATE if slot is not None else ORPHAN
        name = slot[0].name if slot is not None else safe_name(trace.tool_name)
        result = ToolResult("", name, status, text, trace_media(trace), trace.id, source_id, error, len(text),
                            source_name=trace.tool_name or (slot[0].source_name if slot is not None else None))
        if status == LATE:
            self.stats.late += 1
        else:
            self.stats.orphans += 1
        self._queue.append(Message("user", status, results=[result], turn_id=trace.turn_id, trace_ids=[trace.id]))

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _parts(trace: RawTrace) -> list:
        """A trace's text (unless blank), then its media, as message parts."""
        content = trace.content
        parts: list = [new_text(content)] if content and not content.isspace() else []
        if trace.media:
            parts.extend(trace_media(trace))
        return parts

    def _close(self) -> None:
        current = self._current
        if current is None:
            return
        queue = self._queue
        final = self._out if not queue and not self._ready else queue   # nothing ahead of it: final now
        final.append(current)
        tools = self._current_tools
        if tools is not None:
            if not all(tools.results):   # a result still to come (read by _drain only then)
                self._waiting[id(tools)] = (current.tool_calls, self.stats.traces)
                queue.append(tools)
            else:
                final.append(tools)
            self._current_tools = None
        self._current = None

    def _fill_pending(self, call: ToolCall, tools: Message, index: int) -> None:
        tools.results[index] = ToolResult(call.id, call.name, PENDING, PENDING_TEXT, source_call_id=call.source_id,
                                          source_name=call.source_name)
        self.stats.pending += 1

    def _drain(self, out: list, force: bool = False) -> None:
        ready = self._ready
        if ready:
            waiting = self._waiting
            for message in ready:
                waiting.pop(id(message), None)
            out.extend(ready)
            ready.clear()
        queue = self._queue
        popleft = queue.popleft
        waiting = self._waiting
        while queue:
            head = queue[0]
            if head.role == "tool":
                results = head.results
                if not all(results):   # a result missing
                    now = self.stats.traces
                    calls, queued_at = waiting.get(id(head), ((), now))
                    if force or (self.lookahead is not None and now - queued_at > self.lookahead):
                        pass   # given up on: placeholders (a result that still comes is late)
                    elif not self.ordered:   # the messages behind it need not wait
                        self._aside[id(head)] = queue.popleft()
                        continue
                    else:
                        return
                    for index, call in enumerate(calls):
                        if results[index] is None:
                            self._fill_pending(call, head, index)
                if waiting:
                    waiting.pop(id(head), None)
            out.append(popleft())


def build_messages(traces: Iterable[RawTrace], *, include_reasoning: bool = False, include_sidechain: bool = False,
                   lookahead: int | None = None, id_capacity: int | None = None,
                   stats: BuildStats | None = None, ordered: bool = True) -> Iterator[Message]:
    """Canonical messages from traces, as a stream (rules in the module docstring).

    Pass ``stats`` to read what was decided (omitted traces, placeholders, orphans) afterwards.
    ``ordered=False`` (for a consumer to whom order does not matter: counting tokens) yields the
    messages behind a call still waiting for its result without waiting with it; the call's
    message comes when its last result does (or at the end, with its placeholders): the same
    messages, so memory does not hold everything after an unanswered call.
    """
    builder = MessageBuilder(include_reasoning=include_reasoning, include_sidechain=include_sidechain,
                             lookahead=lookahead, id_capacity=id_capacity, ordered=ordered)
    if stats is not None:
        builder.stats = stats
    return builder._stream(traces, end=True)
