"""Anthropic message content blocks → native events, shared by the Anthropic Messages importer
(:mod:`memcli.importers.anthropic`) and the Claude Code importer
(:mod:`memcli.importers.claude_code`), whose records wrap Anthropic messages.

:class:`BlockMapper` maps the blocks of one message (the mapping is described in
:mod:`memcli.importers.anthropic`); :func:`system_text` reads a ``system`` prompt given as a
string or as text blocks. This module imports neither importer, so neither imports the other.
"""

from __future__ import annotations

from memcli.importers._common import (
    CallNames,
    Media,
    call_event,
    data_url,
    join_texts,
    nonempty,
    result_event,
    set_fields,
)
from memcli.models import TAG_REASONING


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
                name = nonempty(block.get("name")) or kind
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
