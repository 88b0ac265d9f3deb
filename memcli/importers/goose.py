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

After an automatic compaction's note Goose writes a copy of the last user message the model saw
(``compact_messages``: the last agent-visible user message with text and no tool request or
response; the copy is ``Message::user().with_text`` of its text items joined by a line break,
shown to both, so the model carries on with it). That copy is the harness's, not a new ask: a
user message of text alone right after an automatic note, whose text is that message's, is
tagged ``context`` (it opens no turn; it keeps its id, so a session stored before this rule
gains nothing twice). When that message was the conversation's last one (the user's ask Goose
compacted before answering), Goose hides it (``userVisible`` and ``agentVisible`` false, just
before the summary): it is still the ask of its turn, not ``context`` — as it was when
``memcli sync`` read it before the compaction, so one import of the compacted session and a
sync before and after it store the same. A copy's text compared is the last such message before
the summary (a previous summary or copy included: Goose copies a copy again when it compacts
twice on the same ask).

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


def _ask_text(message: dict) -> str | None:
    """What Goose's compaction would copy from ``message`` when it is the last such one: the text
    items of a user message with text and no tool request or response, joined by a line break
    (``has_text_only`` and ``extract_text`` in ``compact_messages``); None for any other."""
    items = message["content"]
    if message["role"] != "user" or any(c.get("type") in ("toolRequest", "toolResponse") for c in items):
        return None
    texts = [c.get("text") for c in items if c.get("type") == "text"]
    if not texts or not all(isinstance(t, str) for t in texts):
        return None
    return "\n".join(texts)


def is_ask_copy(message: dict, copied: str | None) -> bool:
    """Whether ``message``, the one right after an automatic compaction's note, is the copy Goose
    writes there of ``copied`` (the text of the last user message with text alone before the
    summary, :func:`_ask_text`): a user message of text items only, that text."""
    return copied is not None and message["role"] == "user" and bool(message["content"]) \
        and all(c.get("type") == "text" for c in message["content"]) and _ask_text(message) == copied


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


def _retag(events: list[dict], *, add: str | None = None, drop: str | None = None) -> None:
    """``add`` a tag to a message's user trace, or ``drop`` one from it."""
    for event in events:
        if event["trace_type"] != "user":
            continue
        tags = [t for t in event.get("tags", ()) if t != drop and t != add] + ([add] if add else [])
        if tags:
            event["tags"] = tags
        else:
            event.pop("tags", None)


def _flush(held: list):
    """The events of the ``held`` messages, in order (``held`` emptied)."""
    for line, _, events, _ in held:
        for event in events:
            yield line, event
    held.clear()


class _Session:
    def __init__(self, result, seed: str = ""):
        self.skipped = result.skipped
        self.result = result
        self.clock = Clock(self.skipped)
        self.chain = KeyChain(f"goose:{seed}" if seed else "")
        self.session = seed or None

    def events(self, values):
        first = True
        # messages whose events may still change, as (line, message, events, the text a copy would
        # repeat just after it): an agent-only user message (_may_summarize: a summary if the note
        # follows) and the one before it (the ask Goose compacted on and hid, if a summary follows);
        # behind such an ask, its summary and note wait for the copy after them (is_ask_copy)
        held: list[tuple] = []
        last_text = None   # _ask_text of the last user message with text alone: what a compaction copies
        copied = None      # right after an automatic note: the text Goose's copy repeats
        for line, value in values:
            if isinstance(value, Exception):
                yield from _flush(held)
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
                yield from _flush(held)
                yield line, not_format(line, 'a Goose message (an object with "role" and a "content" list)', value,
                                       guess_from="goose")
                return
            events = self.message(value)
            entry = (line, value, events, last_text)
            copy = is_ask_copy(value, copied)
            copied = None
            keep = -1   # how many held messages still wait after this one (-1: none, and not this one)
            if copy:   # the harness's copy of the last ask, not a new one: it opens no turn
                _retag(events, add=TAG_CONTEXT)
                if len(held) == 3 and _ask_text(held[0][1]) == held[1][3]:
                    # the ask Goose compacted on before answering, hidden just before the summary:
                    # still its turn's ask, as a sync before the compaction stored it
                    _retag(held[0][2], drop=TAG_CONTEXT)
            elif held and _may_summarize(held[-1][1]) and (trigger := _continues_compaction(value)) is not None:
                summary = held[-1]   # the message before the note: Goose's summary
                for event in summary[2]:
                    if event["trace_type"] == "user":
                        event["tags"] = [TAG_COMPACT_SUMMARY]
                        event["harness_compaction"] = harness_compaction("goose", {"trigger": trigger})
                if trigger == "auto":   # (a /compact copies nothing)
                    copied = summary[3]
                    if len(held) >= 2 and _ask_text(held[-2][1]) == copied:
                        keep = 2   # the hidden ask?  the message after the note tells
            elif _may_summarize(value):   # a summary if the note follows: wait
                keep = 1 if held and _may_summarize(held[-1][1]) else 0
            if keep < 0:
                yield from _flush(held)
                for event in events:
                    yield line, event
            else:
                yield from _flush(held[:len(held) - keep])
                held = [*held[len(held) - keep:], entry]
            text = _ask_text(value)
            if text is not None:
                last_text = text
        yield from _flush(held)

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
