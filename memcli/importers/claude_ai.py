"""``--from claude-ai``: a Claude.ai data export, ``conversations.json`` (Settings -> Privacy ->
Export data; the file inside the zip).

The file is a JSON array of conversations ``{"uuid", "name", "summary", "created_at",
"updated_at", "account", "chat_messages"}``. ``chat_messages`` is in conversation order; each is
``{"uuid", "sender": "human" | "assistant", "text", "content", "created_at", "attachments",
"files"}`` (``parent_message_uuid`` in newer exports). ``content`` is a list of Anthropic-style
blocks (``text``, ``thinking``, ``tool_use``, ``tool_result`` — the app runs its tools itself, so
results sit in the assistant's own message), mapped as :mod:`memcli.importers.anthropic_blocks`
maps them; a message without ``content`` blocks is read from ``text``. A ``tool_use`` without an
``id`` gets ``ca-<message uuid>-c<n>``, and a ``tool_result`` without ``tool_use_id`` answers the
oldest unanswered call of its ``name``.

When every message names its parent, the conversation is the chain that ends at the last
message (a retried answer leaves its old branch in the file: counted as passed over); otherwise
the file order is kept. ``human`` -> ``user``; an attachment's ``extracted_content`` is a
further ``user`` trace tagged ``context`` (``[attachment <file_name>]`` and the text); files
without extracted text are counted.

Ids: ``ca-<message uuid>-<n>`` (the export's own ids): a later export of the same conversation
adds only its new messages. ``session_id`` is the conversation ``uuid``.
"""

from __future__ import annotations

from collections import deque

from memcli.importers._common import (
    Clock,
    ExportImporter,
    nonempty,
    set_fields,
    string,
    take_named,
)
from memcli.importers.anthropic_blocks import BlockMapper
from memcli.models import TAG_CONTEXT

_ROLES = {"human": "user", "user": "user", "assistant": "assistant"}


def _list(value) -> list:
    return value if isinstance(value, list) else []


def is_conversation(value) -> bool:
    return isinstance(value, dict) and isinstance(value.get("chat_messages"), list)


def conversation_id(conv: dict) -> str | None:
    return nonempty(conv.get("uuid")) or nonempty(conv.get("id"))


def _ordered(messages: list, skipped) -> list:
    items = [m for m in messages if isinstance(m, dict)]
    if len(items) != len(messages):
        skipped["chat messages that are not objects"] += len(messages) - len(items)
    by_id = {m.get("uuid"): m for m in items if nonempty(m.get("uuid"))}
    if not items or not all(nonempty(m.get("parent_message_uuid")) for m in items):
        return items
    chain, seen = [], set()
    node = items[-1]
    while isinstance(node, dict) and id(node) not in seen:
        seen.add(id(node))
        chain.append(node)
        node = by_id.get(nonempty(node.get("parent_message_uuid")))
    chain.reverse()
    if len(chain) < len(items):
        skipped["messages on other branches (retries, edits)"] += len(items) - len(chain)
    return chain


def _blocks(message: dict, key: str, pending: deque) -> list:
    content = message.get("content")
    if not isinstance(content, list) or not content:
        text = message.get("text")
        return [{"type": "text", "text": text}] if isinstance(text, str) and text else []
    return blocks_with_ids(content, key, pending)


def blocks_with_ids(content: list, key: str, pending: deque) -> list:
    """Anthropic-style blocks with an id on every ``tool_use`` (``<key>-c<n>`` when it has none)
    and every ``tool_result`` paired (without ``tool_use_id``: the oldest unanswered call of its
    ``name``); ``pending`` holds the unanswered calls across messages."""
    out = []
    for n, block in enumerate(content):
        if isinstance(block, dict) and block.get("type") == "tool_use":
            if not nonempty(block.get("id")):
                block = dict(block, id=f"{key}-c{n}")
            pending.append((block["id"], block.get("name")))
        elif isinstance(block, dict) and block.get("type") == "tool_result":
            if nonempty(block.get("tool_use_id")):
                pending_ids = [p for p in pending if p[0] == block["tool_use_id"]]
                for p in pending_ids[:1]:
                    pending.remove(p)
            else:
                block = dict(block, tool_use_id=take_named(pending, block.get("name")) or f"{key}-orphan{n}")
        out.append(block)
    return out


class ClaudeAiImporter(ExportImporter):
    name = "claude-ai"
    source_event = "claude-ai"
    expected = 'a Claude.ai conversation (an object with "chat_messages")'
    title_key = "name"
    is_conversation = staticmethod(is_conversation)
    conversation_id = staticmethod(conversation_id)

    def conversation_events(self, line, conversation, skipped):
        return self._conversation(line, conversation, skipped)

    def _conversation(self, line, conv, skipped):
        session = conversation_id(conv)
        clock = Clock(skipped)
        mapper = BlockMapper(skipped)
        pending: deque = deque()
        for i, message in enumerate(_ordered(conv["chat_messages"], skipped)):
            role = _ROLES.get(string(message.get("sender")))
            if role is None:
                skipped[f"messages from {str(message.get('sender'))[:40]!r}"] += 1
                continue
            mid = nonempty(message.get("uuid")) or f"{session}-{i}"
            base = f"ca-{mid}"
            common: dict = {}
            set_fields(common, ts=clock.read(message.get("created_at")), message_id=nonempty(message.get("uuid")),
                       session_id=session)
            events = mapper.message(role, _blocks(message, base, pending), base, common)
            n = len(events)
            for attachment in _list(message.get("attachments")):
                if not isinstance(attachment, dict):
                    continue
                text = nonempty(attachment.get("extracted_content"))
                if text is None:
                    skipped["attachments without extracted text"] += 1
                    continue
                name = nonempty(attachment.get("file_name")) or "file"
                event = {"id": f"{base}-{n}", "trace_type": "user", "content": f"[attachment {name}]\n{text}",
                         "tags": [TAG_CONTEXT]}
                events.append(dict(common, **event))
                n += 1
            if _list(message.get("files")):
                skipped["files without their content (names only)"] += len(message["files"])
            if not events:
                skipped[f"empty {role} messages"] += 1
            for event in events:
                yield line, event


IMPORTER = ClaudeAiImporter()
