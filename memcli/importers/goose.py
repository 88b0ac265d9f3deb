"""``--from goose``: a Goose session — the legacy ``~/.local/share/goose/sessions/<id>.jsonl``
(a first line of session metadata ``{"working_dir", "description", ...}``, then one message per
line), or messages as Goose's ``sessions.db`` stores them (``memcli sync`` reads the database
and hands its rows here; :mod:`memcli.sync.goose`).

A message is ``{"role": "user" | "assistant", "created", "content": [...], "metadata"}``; each
content item is tagged by ``type`` (Goose's ``MessageContent``):

* ``text`` -> ``user`` / ``assistant``; ``image`` -> ``media`` (a data URL); ``thinking`` ->
  ``assistant`` tagged ``reasoning`` (``redactedThinking`` counted);
* ``toolRequest`` / ``frontendToolRequest`` ``{id, toolCall: {status, value: {name,
  arguments}}}`` -> ``tool_call`` (a request Goose could not parse, ``status: error``, is kept as
  a call named ``invalid_tool_call`` with the error as its input);
* ``toolResponse`` ``{id, toolResult: {status, value}}`` -> ``tool_result`` (the value's text
  content joined; ``isError`` or ``status: error`` -> ``tool_error``). A user row that holds only
  tool responses is a tool result, not an ask: it opens no turn;
* ``toolConfirmationRequest``, ``actionRequired``, ``systemNotification`` and unknown types are
  counted by type.

A message with ``metadata.userVisible == false`` (what Goose shows only to the model) is tagged
``context`` — except Goose's own compaction summary: a user message with text and no tool item
(the model's answer, its thinking included) that the person is not shown, followed by the
assistant note Goose writes after it ("Your context was compacted …", not shown either; both
``agentVisible: false`` too once a later compaction replaced them, and still the harness's
compaction then). It is tagged ``compact_summary`` and
carries ``harness_compaction: {"harness": "goose", "trigger": "auto" | "manual"}`` (manual: "…
at the user's request", a ``/compact``), like the other harnesses' compactions: a memory item,
not an ask. The messages it replaced stay what they were (Goose keeps them, hidden from the
model).

Ids: Goose rewrites a session's rows when it compacts or edits one (new row ids), so ids come
from a hash chain over ``(role, content)`` seeded with the session id: ``gs-<key>-<n>``. The
same conversation read again gives the same ids.
"""

from __future__ import annotations

from memcli.importers._common import (
    Clock,
    KeyChain,
    Media,
    call_event,
    data_url,
    decoded,
    harness_compaction,
    join_texts,
    nonempty,
    not_format,
    numbered,
    result_event,
    set_fields,
    string,
)
from memcli.models import TAG_COMPACT_SUMMARY, TAG_CONTEXT, TAG_REASONING

_ROLES = ("user", "assistant")
_ITEM_TYPES = frozenset({"text", "image", "toolRequest", "toolResponse", "thinking", "redactedThinking",
                         "frontendToolRequest", "toolConfirmationRequest", "actionRequired", "systemNotification"})


def is_header(value) -> bool:
    return isinstance(value, dict) and "working_dir" in value and "role" not in value


def is_message(value) -> bool:
    return (isinstance(value, dict) and value.get("role") in _ROLES and isinstance(value.get("content"), list)
            and all(isinstance(c, dict) for c in value["content"]))


def _goose_items(value) -> bool:
    return is_message(value) and any(c.get("type") in ("toolRequest", "toolResponse", "thinking")
                                     for c in value["content"])


def _result_text(value) -> tuple[object, bool]:
    """(what a tool returned, is_error) from a ``toolResult`` ``value``: a ``CallToolResult``
    ``{content, isError}`` or (older Goose) the content list itself."""
    error = False
    if isinstance(value, dict):
        error = value.get("isError") is True
        value = value.get("content")
    if isinstance(value, list):
        texts = [c.get("text") for c in value if isinstance(c, dict) and isinstance(c.get("text"), str)]
        return join_texts(texts), error
    return value if value is not None else "", error


_CONTINUATION = "Your context was compacted"   # how the message after Goose's compaction summary begins


def _not_shown(message: dict) -> bool:
    """Not shown to the person: Goose's ``MessageMetadata::agent_only`` — and, once a later
    compaction hid it from the model too (``agentVisible: false``), ``invisible``."""
    metadata = message.get("metadata")
    return isinstance(metadata, dict) and metadata.get("userVisible") is False


_TOOL_ITEMS = frozenset({"toolRequest", "toolResponse", "frontendToolRequest"})


def _may_summarize(message: dict) -> bool:
    """A user message with text and no tool item that the person is not shown: what Goose's
    compaction writes its summary as — the model's answer, its thinking included when the model
    thinks (the message after it tells which: :func:`_continues_compaction`)."""
    items = message["content"]
    return message["role"] == "user" and _not_shown(message) and any(c.get("type") == "text" for c in items) \
        and not any(c.get("type") in _TOOL_ITEMS for c in items)


def _continues_compaction(message: dict) -> str | None:
    """``"manual"`` or ``"auto"`` when ``message`` is the note Goose's compaction puts right after
    its summary (an assistant message the person is not shown: "Your context was compacted …",
    "… at the user's request" for ``/compact``), else None."""
    if message["role"] != "assistant" or not _not_shown(message):
        return None
    text = next((c.get("text") for c in message["content"] if c.get("type") == "text"), None)
    if not isinstance(text, str) or not text.startswith(_CONTINUATION):
        return None
    return "manual" if text.startswith(_CONTINUATION + " at the user's request") else "auto"


class _Session:
    def __init__(self, result, seed: str = ""):
        self.skipped = result.skipped
        self.result = result
        self.clock = Clock(self.skipped)
        self.chain = KeyChain(f"goose:{seed}" if seed else "")
        self.session = seed or None

    def events(self, values):
        first = True
        held: list = []   # the events of a message that may be a compaction summary (_may_summarize)
        for line, value in values:
            if isinstance(value, Exception):
                yield from held
                held = []
                yield line, value
                continue
            if first and is_header(value):
                first = False
                title = nonempty(value.get("description")) or nonempty(value.get("name"))
                if title:
                    self.result.meta["ai_title"] = title
                continue
            first = False
            if not is_message(value):
                yield from held
                yield line, not_format(line, 'a Goose message (an object with "role" and a "content" list)', value,
                                       guess_from="goose")
                return
            events = self.message(value)
            if held:   # the message before it was shown to the model only: its compaction summary?
                trigger = _continues_compaction(value)
                if trigger is not None:
                    for _, event in held:
                        if event["trace_type"] == "user":
                            event["tags"] = [TAG_COMPACT_SUMMARY]
                            event["harness_compaction"] = harness_compaction("goose", {"trigger": trigger})
                yield from held
                held = []
            if _may_summarize(value):
                held = [(line, event) for event in events]
                continue
            for event in events:
                yield line, event
        yield from held

    def message(self, message: dict) -> list[dict]:
        key = self.chain.next([message["role"], message["content"]])
        role = message["role"]
        metadata = message.get("metadata") if isinstance(message.get("metadata"), dict) else {}
        events: list[dict] = []
        texts: list[str] = []
        media = Media()
        for item in message["content"]:
            kind = item.get("type")
            if kind == "text" and isinstance(item.get("text"), str):
                if role == "assistant":
                    if item["text"]:
                        events.append({"trace_type": "assistant", "content": item["text"]})
                else:
                    texts.append(item["text"])
            elif kind == "image":
                url = data_url(item.get("mimeType"), item.get("data"))
                if url:
                    media.images.append(url)
            elif kind == "thinking" and nonempty(item.get("thinking")):
                events.append({"trace_type": "assistant", "content": item["thinking"], "tags": [TAG_REASONING]})
            elif kind in ("toolRequest", "frontendToolRequest") and nonempty(item.get("id")):
                call = item.get("toolCall") if isinstance(item.get("toolCall"), dict) else {}
                value = call.get("value") if isinstance(call.get("value"), dict) else None
                if call.get("status") == "success" and value is not None:
                    events.append(call_event("", item["id"], nonempty(value.get("name")) or "tool",
                                             value.get("arguments")))
                else:
                    events.append(call_event("", item["id"], "invalid_tool_call", string(call.get("error")) or ""))
                    self.skipped["tool requests Goose could not parse (kept as invalid_tool_call)"] += 1
            elif kind == "toolResponse" and nonempty(item.get("id")):
                res = item.get("toolResult") if isinstance(item.get("toolResult"), dict) else {}
                if res.get("status") == "success":
                    text, error = _result_text(res.get("value"))
                else:
                    text, error = res.get("error"), True
                events.append(result_event("", item["id"], text, error=error))
            else:
                self.skipped[f"{str(kind)[:40]} items"] += 1
        text = join_texts(texts)
        if role == "user" and (text or media):
            event = {"trace_type": "user", "content": text}
            set_fields(event, media=media.as_field())
            events.insert(0, event)
        if not events:
            self.skipped[f"empty {role} messages"] += 1
            return []
        context = metadata.get("userVisible") is False
        for event in events:
            if context and event["trace_type"] in ("user", "assistant"):
                event["tags"] = [*event.get("tags", ()), TAG_CONTEXT]
        common: dict = {}
        set_fields(common, ts=self.clock.read(message.get("created")), session_id=self.session,
                   message_id=nonempty(message.get("id")))
        return numbered(events, f"gs-{key}", common)


class GooseImporter:
    name = "goose"
    source_event = "goose"

    def sniff(self, values) -> int:
        items = decoded(values)
        if not items:
            return 0
        if is_header(items[0]) and "description" in items[0]:
            return 95
        messages = [v for v in items if is_message(v)]
        if messages and len(messages) == len(items) and any(_goose_items(v) for v in messages):
            return 93
        return 0

    def events(self, values, result):
        return _Session(result).events(values)

    def session_events(self, messages: list, result, seed: str):
        """The events of one session's messages read from the database (rows in order)."""
        return _Session(result, seed).events(messages)


IMPORTER = GooseImporter()
