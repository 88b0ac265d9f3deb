"""``--from anthropic``: an Anthropic Messages API conversation.

Input: a JSON array of messages, NDJSON with one message per line, or a document
``{"system": ..., "messages": [...]}`` (a whole Messages API request; ``model`` is kept). Messages
may be API responses (``{"id": "msg_...", "type": "message", "role": "assistant", "usage": ...}``).

Mapping, block by block in order:

* ``system`` (string or text blocks) → a ``user`` trace tagged ``system`` (never opens a turn);
* user ``text`` (+ ``image``) blocks → one ``user`` trace, texts joined by newlines, images in
  ``media.images`` (base64 sources as ``data:`` URLs, URL sources as they are). A user message
  that holds only ``tool_result`` blocks is no new turn: it gives only ``tool_result`` traces;
* assistant ``text`` → one ``assistant`` trace per block; ``thinking`` → an ``assistant`` trace
  tagged ``reasoning`` (its ``signature`` kept, Anthropic needs it back); ``tool_use`` (and
  ``server_tool_use`` / ``mcp_tool_use``) → ``tool_call`` with ``tool_args`` = ``input``;
* ``tool_result`` (and server ``*_tool_result`` blocks) → ``tool_result``: string content, or the
  text blocks joined (images → ``media``); ``is_error: true`` → ``tool_error`` with that text and
  no ``tool_result``;
* the message's ``id`` → ``message_id``, ``model`` → ``model``, ``usage`` → ``usage`` on its
  first trace (``prompt_tokens`` = input + cache creation + cache read tokens).

Blocks the importer does not map (``redacted_thinking``, ``document``, ``search_result``, images
given as file ids, ...) are skipped and counted. Claude Code records (a session file, or the
SDK's ``stream-json`` output, which wrap Anthropic messages) are read by the Claude Code importer
(:mod:`memcli.importers.claude_code`), with a note saying so.

Ids: ``an-<key>-<n>`` where ``<key>`` is the message's key in a hash chain over the messages
(``memcli.importers._common``): the same file always gives the same ids, a grown file keeps them.
"""

from __future__ import annotations

from itertools import chain

from memcli.importers._common import (
    CallNames,
    Clock,
    KeyChain,
    Media,
    anthropic_usage,
    call_event,
    data_url,
    join_texts,
    not_format,
    result_event,
    set_fields,
    string,
)
from memcli.models import TAG_REASONING, TAG_SYSTEM

_ROLES = ("user", "assistant")
_STRONG_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking", "server_tool_use",
                            "web_search_tool_result", "document", "mcp_tool_use", "mcp_tool_result"})


def _is_call_block(kind: str) -> bool:
    return kind == "tool_use" or kind.endswith("_tool_use")


def _is_result_block(kind: str) -> bool:
    return kind == "tool_result" or kind.endswith("_tool_result")


class BlockMapper:
    """Turns the content of one Anthropic message into native events. Shared with Claude Code.

    ``call_names`` remembers the tool name of each call id (first-in-first-out, ids can repeat)
    so that results, which carry only the id, get ``tool_name`` too.
    """

    def __init__(self, skipped):
        self.skipped = skipped
        self.call_names = CallNames()

    # ------------------------------------------------------------------ helpers
    def _image(self, block: dict, media: Media) -> None:
        source = block.get("source")
        url = None
        if isinstance(source, dict):
            kind = source.get("type")
            if kind == "base64":
                url = data_url(source.get("media_type"), source.get("data"))
            elif kind == "url" and isinstance(source.get("url"), str):
                url = source["url"]
        if url:
            media.images.append(url)
        else:
            self.skipped["images without inline data or URL"] += 1

    def result_content(self, content, media: Media):
        """What a tool result returned: a string, or its text blocks joined (images → media)."""
        if content is None:
            return ""
        if isinstance(content, str):
            return content
        if isinstance(content, dict):
            content = [content]
        if not isinstance(content, list):
            return content
        texts = []
        for block in content:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif kind == "image":
                self._image(block, media)
            else:
                self.skipped[f"tool result {kind or 'non-object'} blocks"] += 1
        return join_texts(texts)


    # ------------------------------------------------------------------ messages
    def message(self, role: str, content, base: str, common: dict, *, user_tags=(),
                usage=None) -> list[dict]:
        """Events for one message. ``base`` is the id prefix (``<prefix>-<key>``), ``common`` the
        fields every event gets (ts, tags, message_id...); ``user_tags`` tag the user trace."""
        events: list[dict] = []
        n = 0

        def add(event: dict) -> None:
            nonlocal n
            event["id"] = f"{base}-{n}"
            n += 1
            for key, value in common.items():
                if key == "tags":
                    event["tags"] = list(value) + [t for t in event.get("tags", ()) if t not in value]
                else:
                    event.setdefault(key, value)
            events.append(event)

        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        elif isinstance(content, dict):
            content = [content]
        texts: list[str] = []
        media = Media()
        for block in content:
            if not isinstance(block, dict):
                self.skipped["content items that are not blocks"] += 1
                continue
            kind = block.get("type")
            if not isinstance(kind, str):
                self.skipped["content blocks without a type"] += 1
                continue
            if kind == "text":
                text = block.get("text")
                if not isinstance(text, str):
                    self.skipped["text blocks without text"] += 1
                elif role == "assistant":
                    if text:
                        add({"trace_type": "assistant", "content": text})
                else:
                    texts.append(text)
            elif kind == "image":
                self._image(block, media)
            elif kind == "thinking" and role == "assistant":
                thinking = block.get("thinking")
                if isinstance(thinking, str) and thinking:
                    event = {"trace_type": "assistant", "content": thinking, "tags": [TAG_REASONING]}
                    set_fields(event, signature=block.get("signature") or None)
                    add(event)
            elif _is_call_block(kind) and isinstance(block.get("id"), str) and block["id"]:
                name = block.get("name") if isinstance(block.get("name"), str) and block.get("name") else kind
                self.call_names.add(block["id"], name)
                event = call_event("", block["id"], name, block.get("input"))
                if kind != "tool_use":
                    event["tool_kind"] = kind
                add(event)
            elif _is_result_block(kind) and isinstance(block.get("tool_use_id"), str) and block["tool_use_id"]:
                call_id = block["tool_use_id"]
                result_media = Media()
                if kind == "tool_result" or "is_error" in block:  # tool_result, mcp_tool_result
                    value = self.result_content(block.get("content"), result_media)
                    error = block.get("is_error") is True
                else:  # server tool results (web search, code execution): results, or an error object
                    value = block.get("content")
                    error = isinstance(value, dict) and str(value.get("type", "")).endswith("_error")
                    if error:
                        value = value.get("error_code") or value
                event = result_event("", call_id, value, error=error)
                set_fields(event, tool_name=self.call_names.take(call_id), media=result_media.as_field())
                if kind != "tool_result":
                    event["tool_kind"] = kind
                add(event)
            else:
                self.skipped[f"{kind} blocks"] += 1
        text = join_texts(texts)
        if role != "assistant" and (text or media):
            event = {"trace_type": "user", "content": text}
            if user_tags:
                event["tags"] = list(user_tags)
            set_fields(event, media=media.as_field())
            add(event)
        elif role == "assistant" and media:
            self.skipped["images in assistant messages"] += len(media.images)
        if usage is not None and events:
            events[0]["usage"] = usage
        return events


def system_text(system, skipped) -> str | None:
    """The text of a ``system`` prompt given as a string or as text blocks."""
    if isinstance(system, str):
        return system
    if isinstance(system, dict):
        system = [system]
    if isinstance(system, list):
        texts = []
        for block in system:
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif isinstance(block, str):
                texts.append(block)
            else:
                skipped["system blocks that are not text"] += 1
        return join_texts(texts)
    return None


def _looks_like_message(value) -> bool:
    return isinstance(value, dict) and value.get("role") in _ROLES and "content" in value


def _strong(messages) -> bool:
    for m in messages:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict):
                    kind = string(block.get("type"))
                    if kind in _STRONG_BLOCKS:
                        return True
                    if kind == "image" and isinstance(block.get("source"), dict):
                        return True
        if isinstance(m, dict) and m.get("type") == "message" and m.get("role") == "assistant":
            return True
    return False


def _claude_code_records(value) -> bool:
    from memcli.importers.claude_code import looks_like_line

    return looks_like_line(value)


def _as_claude_code(values, result):
    """Claude Code records (a session, or the SDK's stream-json) hold Anthropic messages: read
    them with the Claude Code importer, which knows their wrapper, and say so."""
    from memcli.importers.claude_code import IMPORTER as claude_code

    result.notes.append("the input is Claude Code records (Anthropic messages inside): read as --from claude-code")
    for line, event in claude_code.events(values, result):
        if isinstance(event, dict):
            event.setdefault("source_event", claude_code.source_event)
        yield line, event


def _is_document(value) -> bool:
    return isinstance(value, dict) and "role" not in value and isinstance(value.get("messages"), list)


class AnthropicImporter:
    name = "anthropic"
    source_event = "anthropic.messages"

    def conversations(self, values):
        """One conversation per request document; a run of bare messages is one conversation."""
        from memcli.importers.conversations import by_document

        return by_document(values, _is_document)

    def sniff(self, values) -> int:
        items = [v for _, v in values if not isinstance(v, Exception)]
        if not items:
            return 0
        first = items[0]
        if isinstance(first, dict) and "role" not in first and isinstance(first.get("messages"), list):
            messages = first["messages"]
            if "system" in first and isinstance(first["system"], (str, list)):
                return 92 if all(_looks_like_message(m) for m in messages[:20]) else 0
            if messages and all(_looks_like_message(m) for m in messages[:20]):
                return 93 if _strong(messages[:50]) else 50
            return 0
        if not all(_looks_like_message(v) for v in items[:20]):
            return 0
        return 93 if _strong(items) else 50

    def events(self, values, result):
        values = iter(values)
        head = []
        for item in values:   # look at the first value: Claude Code records are read as such
            head.append(item)
            if not isinstance(item[1], Exception):
                break
        if head and _claude_code_records(head[-1][1]):
            yield from _as_claude_code(chain(head, values), result)
            return
        yield from self._events(chain(head, values), result)

    def _events(self, values, result):
        skipped = result.skipped
        chain = KeyChain()
        clock = Clock(skipped)
        mapper = BlockMapper(skipped)
        started = False
        for line, value in values:
            if isinstance(value, Exception):
                yield line, value
                continue
            is_doc = isinstance(value, dict) and "role" not in value and isinstance(value.get("messages"), list)
            if not started and not is_doc and not (isinstance(value, dict) and isinstance(value.get("role"), str)):
                # the input does not start like a message list: one error, not one per line
                yield line, not_format(line, 'an Anthropic message (an object with "role" and "content")', value,
                                       guess_from=self.name)
                return
            started = True
            if is_doc:
                model = value.get("model") if isinstance(value.get("model"), str) else None
                system = value.get("system")
                if system is not None:
                    text = system_text(system, skipped)
                    key = chain.next({"role": "system", "content": system})
                    if text:
                        event = {"id": f"an-{key}-0", "trace_type": "user", "content": text,
                                 "tags": [TAG_SYSTEM]}
                        yield line, set_fields(event, model=model)
                for i, message in enumerate(value["messages"]):
                    yield from self._message(line, message, chain, clock, mapper, model, f"messages[{i}]: ")
            else:
                yield from self._message(line, value, chain, clock, mapper, None, "")

    def _message(self, line, message, chain, clock, mapper, model, where):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            yield line, not_format(line, f'{where}an Anthropic message (an object with "role" and "content")', message)
            return
        key = chain.next(message)
        role = message["role"]
        content = message.get("content")
        if role == "system":
            text = system_text(content, mapper.skipped)
            if text:
                yield line, {"id": f"an-{key}-0", "trace_type": "user", "content": text, "tags": [TAG_SYSTEM]}
            return
        if role not in _ROLES:
            mapper.skipped[f"messages with role {role[:40]!r}"] += 1
            return
        if content is None:
            content = []
        if not isinstance(content, (str, list, dict)):
            yield line, not_format(line, f"{where}message content as a string or a list of blocks", content)
            return
        common = {}
        ts = clock.read(message.get("timestamp", message.get("created_at")))
        set_fields(common, ts=ts, message_id=message.get("id") if isinstance(message.get("id"), str) else None,
                   model=message.get("model") if isinstance(message.get("model"), str) else model)
        usage = anthropic_usage(message.get("usage")) if role == "assistant" else None
        events = mapper.message(role, content, f"an-{key}", common, usage=usage)
        if not events:
            mapper.skipped[f"empty {role} messages"] += 1
        for event in events:
            yield line, event


IMPORTER = AnthropicImporter()
