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
* ``{"$set": {...}}`` updates the metadata; with ``messages`` it replaces the whole conversation
  (a checkpoint); its ``summary`` (Gemini's one-line summary of the session) becomes the session's
  title (``result.meta``, kept by ``memcli sync``);
* ``{"$rewindTo": "<message id>"}`` removes that message and every later one (an unknown id
  removes all).

Messages map as in :mod:`memcli.importers.gemini` (a ``gemini`` message: thoughts as reasoning,
text, tool calls; the calls' results as tool results), but ids come from the message id, so every
version of a message — in the ``.json``, in the ``.jsonl`` Gemini writes beside it when the
session is resumed, in a later re-write — gives the same trace ids: ``gm-<message id>-u<n>``
(user text), ``-x<n>`` (model text), ``-t<n>`` (thoughts), ``-c<n>`` / ``-r<n>`` (the n-th tool
call and its result). A tool call's result is read only once the call has one (``result``, or a
final status ``success`` / ``error`` / ``cancelled``), so a result is never stored empty before it
exists. ``info`` / ``error`` / ``warning`` messages are the CLI's own notices: skipped and
counted. A ``user`` record's ``functionResponse`` parts (Gemini CLI records each tool response as
a user message too) are counted, not read: the call's record holds that result, and a record of
tool responses only is no ask. A ``user`` message holding ``<state_snapshot>`` is the summary
Gemini CLI's compression (``/compress`` or automatic) put in place of the history it replaced
(``$set`` with ``messages``): tagged ``compact_summary`` with ``harness_compaction: {"harness":
"gemini-cli"}``, never an ask.

``memcli sync`` reads a grown file on from where it stopped: the new lines are replayed among
themselves (a rewind inside them drops what it rewinds); what an earlier sync stored stays
stored (memory is append-only), and a re-written message adds only its new traces.
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
    return isinstance(value, dict) and isinstance(value.get("id"), str) and value.get("type") in _KINDS


class _Session:
    def __init__(self, result, carry: dict | None = None):
        self.result = result
        self.skipped = result.skipped
        self.session_id: str | None = (carry or {}).get("session")
        self.recognized = bool(carry)
        self.messages: dict[str, tuple[int, dict]] = {}   # id -> (line, record), in conversation order

    def _summary(self, record: dict) -> None:
        """Gemini CLI's own one-line summary of the session: its title (``result.meta``)."""
        summary = string(record.get("summary"))
        if summary and summary.strip():
            self.result.meta["ai_title"] = self.result.meta["title"] = summary.strip()

    def checkpoint(self) -> dict | None:
        return {"session": self.session_id} if self.recognized else None

    def _replace_all(self, line, messages) -> None:
        self.messages.clear()
        for m in messages if isinstance(messages, list) else ():
            if is_message(m):
                self.messages[m["id"]] = (line, m)

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
                    self._replace_all(line, update["messages"])
            elif is_message(value):
                previous = self.messages.get(value["id"])
                self.messages[value["id"]] = (previous[0] if previous else line, value)
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
        if isinstance(items[0].get("messages"), list):
            return 0  # a legacy one-document session: --from gemini reads it (and so does this, when named)
        rest = items[1:]
        good = sum(1 for v in rest if is_message(v) or (isinstance(v, dict) and ("$set" in v or "$rewindTo" in v)))
        return 97 if good * 2 >= len(rest) else 0

    def events(self, values, result):
        return _Session(result).events(values)

    def resume(self, result, carry: dict | None):
        """A reader that goes on from ``carry`` (a checkpoint), for ``memcli sync``."""
        return _Session(result, carry)


IMPORTER = GeminiCliImporter()
