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
    Clock,
    KeyChain,
    anthropic_usage,
    decoded,
    not_format,
    set_fields,
    string,
)
from memcli.importers.anthropic_blocks import BlockMapper, system_text
from memcli.models import TAG_SYSTEM

_ROLES = ("user", "assistant")
_STRONG_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking", "server_tool_use",
                            "web_search_tool_result", "document", "mcp_tool_use", "mcp_tool_result"})


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
        items = decoded(values)
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
