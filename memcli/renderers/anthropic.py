"""Anthropic Messages API: ``{"system": ..., "messages": [...]}``.

* ``system`` is the system prompt (left out when there is none). A ``system`` message left in the
  stream (export) becomes user text starting with ``[system]`` in place: the Messages API takes
  instructions only at the top level.
* Roles alternate and the first message is from the user: consecutive messages of one role are
  merged into one (one message of lookahead); when the conversation starts with the assistant (its
  first turn was dropped), a short user message :data:`CONTINUATION` comes first.
* Assistant messages: ``text`` blocks, then ``tool_use`` blocks (``id``, ``name``, ``input``).
* Results: ``tool_result`` blocks (``tool_use_id``, ``content``, ``is_error: true`` for errors)
  in the user message right after the call; in a merged user message they come first, before any
  text, as the API requires. Images a tool returned go inside its ``tool_result``.
* Images: ``url`` sources for http(s) URLs, ``base64`` sources for data: URLs of JPEG, PNG, GIF or
  WebP. Audio, video and other images are left out (counted). Blank text is never sent (the API
  rejects it); a ``content`` that is a single text block is written as a plain string.
* Orphan and late results are user text; reasoning messages are left out (Anthropic accepts only
  its own signed thinking blocks).
"""

from __future__ import annotations

from typing import Iterable, Iterator

from memcli.messages import Media, Message, Text
from memcli.renderers.base import Renderer, accepts

CONTINUATION = "(earlier conversation omitted)"


class AnthropicRenderer(Renderer):
    name = "anthropic"

    def head(self, system: str) -> dict:
        return {"system": system} if system else {}

    def _image(self, item: Media, where: str) -> dict | None:
        if item.kind == "image" and accepts(item):
            if item.is_data:
                return {"type": "image", "source": {"type": "base64", "media_type": item.mime_type,
                                                    "data": item.base64_data()}}
            return {"type": "image", "source": {"type": "url", "url": item.url}}
        if item.kind == "image":
            self.notes.drop("image", f"{where} (only http(s) URLs and base64 JPEG/PNG/GIF/WebP)")
            return None
        self.notes.drop(item.kind, where)
        return None

    def _texts(self, message: Message) -> list[dict]:
        if message.results and message.role == "user":  # orphan / late note
            return [{"type": "text", "text": message.text()}]
        return [{"type": "text", "text": p.text} for p in message.parts if isinstance(p, Text) and p.text.strip()]

    def _convert(self, message: Message) -> tuple[str, list] | None:
        role = message.role
        if role == "system":
            return "user", [{"type": "text", "text": "[system]\n" + message.text()}]
        if role == "user":
            blocks = self._texts(message)
            blocks += [b for b in (self._image(m, "in user messages") for m in message.media()) if b]
            return ("user", blocks) if blocks else None
        if role == "assistant":
            if message.kind == "reasoning":
                self.notes.drop("reasoning")
                return None
            for item in message.media():
                self.notes.drop(item.kind, "in assistant messages")
            blocks = self._texts(message)
            blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
                       for c in message.tool_calls]
            return ("assistant", blocks) if blocks else None
        if role == "tool":
            blocks = []
            for result in message.results:
                block: dict = {"type": "tool_result", "tool_use_id": result.call_id}
                images = [b for b in (self._image(m, "in tool results") for m in result.media) if b]
                if images:
                    block["content"] = ([{"type": "text", "text": result.text}] if result.text.strip() else []) + images
                elif result.text.strip():
                    block["content"] = result.text
                if result.is_error:
                    block["is_error"] = True
                blocks.append(block)
            return "user", blocks
        return None

    @staticmethod
    def _message(role: str, blocks: list) -> dict:
        if len(blocks) == 1 and blocks[0]["type"] == "text":
            return {"role": role, "content": blocks[0]["text"]}
        return {"role": role, "content": blocks}

    def render_messages(self, messages: Iterable[Message]) -> Iterator[dict]:
        held: tuple[str, list] | None = None
        for message in messages:
            converted = self._convert(message)
            if converted is None:
                continue
            role, blocks = converted
            if held is not None and held[0] == role:
                held[1].extend(blocks)
                continue
            if held is not None:
                yield self._message(*held)
            elif role != "user":
                yield {"role": "user", "content": CONTINUATION}
            held = (role, blocks)
        if held is not None:
            yield self._message(*held)


RENDERER = AnthropicRenderer
