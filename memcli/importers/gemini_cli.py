"""``--from gemini-cli``: a Gemini CLI recorded session, as a replay log
(``~/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl``, written since March 2026) or as
the legacy one-document ``session-*.json``.

The JSONL file is a log its ``chatRecordingService`` appends to, replayed in order:

* a header line ``{"sessionId", "projectHash", "startTime", "lastUpdated", "kind"?,
  "directories"?}`` (a legacy record written on one line also carries ``messages``);
* message records ``{"id", "timestamp", "type": "user" | "gemini" | "info" | "error" |
  "warning", "content", "toolCalls", "thoughts", "tokens", "model"}``: a record whose ``id`` was
  seen before replaces that message in place (the last version wins; Gemini CLI re-writes a
  message when its tool calls finish or its thoughts and tokens arrive);
* ``{"$set": {...}}`` updates the metadata; its ``summary`` (Gemini's one-line summary of the
  session) becomes the session's title (``result.meta``, kept by ``memcli sync``). With
  ``messages`` Gemini CLI wrote its history again (``updateMessagesFromHistory``: on initialize
  and resume, after the rollback of an aborted prompt, a compression, tool-output masking); each
  kept message is its record with ``content`` set to its history parts. Memory is append-only
  and a harness compaction is an item beside the history it summarized, so only a rollback
  removes messages (see ``_Session._set_messages``): a list that brings a ``<state_snapshot>``
  summary never read before is a compression and removes nothing; otherwise the messages after
  the last one the list holds are dropped (all of them when it holds none: the whole
  conversation again). Held messages are updated in place and the list's new ones (the summary,
  the model's acknowledgement) go after every message read, so one import of a file gives what
  a sync across the compression stored: the same traces in the same order;
* ``{"$rewindTo": "<message id>"}`` removes that message and every later one (an unknown id
  removes all).

Messages map as in :mod:`memcli.importers.gemini` (a ``gemini`` message: thoughts as reasoning,
text, tool calls; the calls' results as tool results), but ids come from the message id, so every
version of a message — in the ``.json``, in the ``.jsonl`` Gemini writes beside it when the
session is resumed, in a later re-write — gives the same trace ids: ``gm-<message id>-u<n>``
(user text), ``-x<n>`` (model text), ``-t<n>`` (thoughts), ``-c<n>`` / ``-r<n>`` (the n-th tool
call and its result). A tool call's result is read only once the call has one (``result``, or a
final status ``success`` / ``error`` / ``cancelled``), so a result is never stored empty before it
exists. A re-written ``gemini`` message's ``functionCall`` parts that its ``toolCalls`` records
hold are read from the records only (each call stored once). Memory keeps what the agent saw
first: a result that tool-output masking replaced by its ``<tool_output_masked>`` preview keeps
the output read before it in the same import (a sync that stored the original keeps it too; a
masked result with nothing before it is stored as it is). ``info`` / ``error`` / ``warning``
messages are the CLI's own notices: skipped and counted. A ``user`` record's ``functionResponse``
parts (Gemini CLI records each tool response as a user message too) are counted, not read: the
call's record holds that result, and a record of tool responses only is no ask. A ``user``
message holding ``<state_snapshot>`` is the summary Gemini CLI's compression (``/compress`` or
automatic) put first in the history it kept (``$set`` with ``messages``): tagged
``compact_summary`` with ``harness_compaction: {"harness": "gemini-cli"}``, never an ask.

``memcli sync`` reads a grown file on from where it stopped: the new lines are replayed among
themselves (a rewind inside them drops what it rewinds); what an earlier sync stored stays
stored (memory is append-only), and a re-written message adds only its new traces. Its carry
holds the session id and the ids of the compression summaries read (so a later ``$set`` that
carries a known summary is not taken for a new compression).

Detection: a JSONL log (a header, then records) and a legacy session document (one header
carrying ``messages`` of Gemini CLI message records) are claimed above ``--from gemini``, so
``auto`` reads a legacy ``.json`` as ``--from gemini-cli`` and ``memcli sync`` do; a file of
several session documents is left to ``--from gemini`` (which splits them).
"""

from __future__ import annotations

from memcli.importers._common import decoded, harness_compaction, not_format, string
from memcli.importers.gemini import _Reader as _ContentReader
from memcli.models import TAG_COMPACT_SUMMARY

_KINDS = frozenset({"user", "gemini", "info", "error", "warning"})
_FINAL = frozenset({"success", "error", "cancelled"})
_PREFIX = {"user": "u", "assistant": "x", "reasoning": "t", "tool_call": "c", "tool_result": "r"}
_RESPONSE_KEYS = ("functionResponse", "function_response")
_SNAPSHOT = "<state_snapshot>"   # how Gemini CLI itself recognizes its compression summary
_MASKED = "<tool_output_masked"   # how tool-output masking marks the preview it puts in a result's place


def _user_parts(message: dict, skipped) -> dict | None:
    """A ``user`` record without its ``functionResponse`` parts (None when nothing is left).
    Gemini CLI records each tool response as a ``user`` message too (since May 2026), beside the
    result it keeps on the call's ``ToolCallRecord``: the call's record is what is read, so a
    result is stored once and a tool response never opens a turn as an ask."""
    content = message.get("content")
    if not isinstance(content, list):
        return message
    kept = [p for p in content if not (isinstance(p, dict) and any(k in p for k in _RESPONSE_KEYS))]
    if len(kept) == len(content):
        return message
    skipped["tool responses (read from their call's record)"] += len(content) - len(kept)
    return dict(message, content=kept) if kept else None


def is_header(value) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("sessionId"), str)
            and "projectHash" in value and "type" not in value)


def is_message(value) -> bool:
    if not isinstance(value, dict):
        return False
    kind = value.get("type")   # any JSON value: a list would not hash
    return isinstance(value.get("id"), str) and isinstance(kind, str) and kind in _KINDS


def _messages_are_cli(messages: list) -> bool:
    """The first messages of a legacy session document are Gemini CLI message records."""
    return all(is_message(m) for m in messages[:16])


def _text_of(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))


def _is_snapshot(message: dict) -> bool:
    """A compression summary: a ``user`` message holding ``<state_snapshot>``."""
    return message.get("type") == "user" and _SNAPSHOT in _text_of(message)


def _masked(value) -> bool:
    """Whether a tool call's ``result`` is the preview tool-output masking put in its place
    (walked without recursion: the input may nest deeper than Python's stack allows)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _MASKED in item:
                return True
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    return False


def _first_results(previous: dict, record: dict) -> dict:
    """``record`` (a new version of ``previous``) with each tool call's result as first read where
    the new version's is only tool-output masking's preview: memory keeps what the agent saw."""
    calls, before = record.get("toolCalls"), previous.get("toolCalls")
    if not isinstance(calls, list) or not isinstance(before, list):
        return record
    first = {c["id"]: c["result"] for c in before
             if isinstance(c, dict) and isinstance(c.get("id"), str) and c.get("result") is not None
             and not _masked(c["result"])}
    if not first:
        return record
    kept = [dict(c, result=first[c["id"]]) if isinstance(c, dict) and c.get("id") in first and _masked(c.get("result"))
            else c for c in calls]
    return dict(record, toolCalls=kept) if kept != calls else record


class _Session:
    def __init__(self, result, carry: dict | None = None):
        self.result = result
        self.skipped = result.skipped
        self.session_id: str | None = (carry or {}).get("session")
        self.recognized = bool(carry)
        self.messages: dict[str, tuple[int, dict]] = {}   # id -> (line, record), in conversation order
        # ids of the compression summaries read so far (kept in the carry: a sync that reads on
        # tells a summary it stored before from a new compression, see _set_messages)
        snapshots = (carry or {}).get("snapshots")
        self.snapshots: list[str] = [s for s in snapshots if isinstance(s, str)] if isinstance(snapshots, list) else []

    def _summary(self, record: dict) -> None:
        """Gemini CLI's own one-line summary of the session: its title (``result.meta``)."""
        summary = string(record.get("summary"))
        if summary and summary.strip():
            self.result.meta["ai_title"] = self.result.meta["title"] = summary.strip()

    def checkpoint(self) -> dict | None:
        if not self.recognized:
            return None
        carry = {"session": self.session_id}
        if self.snapshots:
            carry["snapshots"] = list(self.snapshots)
        return carry

    def _seen(self, message: dict) -> None:
        if _is_snapshot(message) and message["id"] not in self.snapshots:
            self.snapshots.append(message["id"])

    def _put(self, line, message: dict) -> None:
        """Read ``message``: a new one at the end, a known id replaced in place."""
        previous = self.messages.get(message["id"])
        if previous:
            self.messages[message["id"]] = (previous[0], _first_results(previous[1], message))
        else:
            self.messages[message["id"]] = (line, message)
        self._seen(message)

    def _replace_all(self, line, messages) -> None:
        self.messages.clear()
        for m in messages if isinstance(messages, list) else ():
            if is_message(m):
                self.messages[m["id"]] = (line, m)
                self._seen(m)

    def _set_messages(self, line, messages: list) -> None:
        """``{"$set": {"messages": [...]}}``: Gemini CLI wrote its history again
        (``updateMessagesFromHistory``): on initialize and resume (the same messages), after a
        rollback of an aborted prompt (the newest ones gone), a compression (the oldest gone; a
        new ``<state_snapshot>`` summary and the model's acknowledgement first) or tool-output
        masking (results shortened). memcli memory is append-only and a harness compaction is an
        item beside the history it summarized, so only a rollback removes messages:

        * a list that brings a summary never read before is a compression: every message read
          stays (it may hold only the environment context Gemini CLI puts first, and copies of
          the messages it kept under new ids);
        * else the messages after the last one the list holds are dropped (a rollback), those
          before it stay; a list holding none of them is the whole conversation (it replaces them);
        * held messages are updated in place, the list's new ones go after all others (the
          summary and its acknowledgement after the history they summarized) — so one import of
          a file gives what a sync across the compression stored."""
        records = [m for m in messages if is_message(m)]
        compression = any(_is_snapshot(m) and m["id"] not in self.messages and m["id"] not in self.snapshots
                          for m in records)
        if not compression:
            held = {m["id"] for m in records}
            ids = list(self.messages)
            last = max((n for n, mid in enumerate(ids) if mid in held), default=-1)
            for mid in ids[last + 1:]:   # the newest messages the history no longer has (all: none held)
                del self.messages[mid]
        for m in records:
            self._put(line, m)

    def events(self, values):
        for line, value in values:
            if isinstance(value, Exception):
                yield line, value
                continue
            if not self.recognized:
                if not is_header(value):
                    yield line, not_format(line, 'a Gemini CLI session header (an object with "sessionId" and '
                                                 '"projectHash")', value, guess_from="gemini-cli")
                    return
                self.recognized = True
            if not isinstance(value, dict):
                self.skipped["lines that are not objects"] += 1
            elif is_header(value):
                self.session_id = self.session_id or string(value.get("sessionId"))
                self._summary(value)
                if isinstance(value.get("messages"), list):
                    self._replace_all(line, value["messages"])
            elif "$rewindTo" in value:
                target = value["$rewindTo"]
                ids = list(self.messages)
                cut = ids.index(target) if target in self.messages else 0
                for mid in ids[cut:]:
                    del self.messages[mid]
            elif "$set" in value:
                update = value["$set"]
                if isinstance(update, dict):
                    self._summary(update)
                if isinstance(update, dict) and isinstance(update.get("messages"), list):
                    self._set_messages(line, update["messages"])
            elif is_message(value):
                self._put(line, value)
            else:
                self.skipped["lines that are not Gemini CLI records"] += 1
        yield from self._emit()

    def _emit(self):
        reader = _ContentReader(self.result)
        reader.seed(self.session_id)
        for line, message in self.messages.values():
            kind = message.get("type")
            if kind not in ("user", "gemini"):
                self.skipped[f"{kind} messages (the CLI's own notices)"] += 1
                continue
            if kind == "user":
                message = _user_parts(message, self.skipped)
                if message is None:
                    continue
            if kind == "gemini":
                calls = message.get("toolCalls")
                if isinstance(calls, list):
                    message = dict(message, toolCalls=[c for c in calls if isinstance(c, dict)])
            counts: dict[str, int] = {}
            mid = message["id"]
            for ln, event in reader.cli_message(line, message, ""):
                if isinstance(event, Exception):
                    yield ln, event
                    continue
                if event["trace_type"] == "tool_result" and not self._has_result(message, event):
                    continue
                if kind == "user" and event["trace_type"] == "user" and _SNAPSHOT in (string(event.get("content")) or ""):
                    event["tags"] = [*(event.get("tags") or ()), TAG_COMPACT_SUMMARY]
                    event["harness_compaction"] = harness_compaction("gemini-cli", None)
                kind_of = "reasoning" if "reasoning" in (event.get("tags") or ()) else event["trace_type"]
                prefix = _PREFIX[kind_of]
                n = counts.get(prefix, 0)
                counts[prefix] = n + 1
                event["id"] = f"gm-{mid}-{prefix}{n}"
                if self.session_id:
                    event.setdefault("session_id", self.session_id)
                yield ln, event

    @staticmethod
    def _has_result(message: dict, event: dict) -> bool:
        for call in message.get("toolCalls") or ():
            if call.get("id") == event.get("tool_call_id"):
                return call.get("result") is not None or call.get("status") in _FINAL
        return True


class GeminiCliImporter:
    name = "gemini-cli"
    source_event = "gemini-cli"

    def sniff(self, values) -> int:
        items = decoded(values)
        if not items or not is_header(items[0]):
            return 0
        rest = items[1:]
        if isinstance(items[0].get("messages"), list):
            # a legacy one-document session (or its record written on one line, replayed on): read
            # here, above --from gemini's 95, so auto-detection gives what --from gemini-cli and
            # memcli sync give (ids from the message ids, the compression summary tagged, tool
            # responses read once); several documents in one file are for --from gemini (--split)
            if not rest:
                return 96 if _messages_are_cli(items[0]["messages"]) else 0
            if any(is_header(v) for v in rest):
                return 0
        good = sum(1 for v in rest if is_message(v) or (isinstance(v, dict) and ("$set" in v or "$rewindTo" in v)))
        return 97 if good * 2 >= len(rest) else 0

    def events(self, values, result):
        return _Session(result).events(values)

    def resume(self, result, carry: dict | None):
        """A reader that goes on from ``carry`` (a checkpoint), for ``memcli sync``."""
        return _Session(result, carry)


IMPORTER = GeminiCliImporter()
