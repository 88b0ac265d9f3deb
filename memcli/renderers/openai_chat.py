"""OpenAI Chat Completions: ``{"messages": [...]}``.

* The system prompt is the first message, ``{"role": "system"}`` (every OpenAI-compatible server
  accepts it; OpenAI maps it to ``developer`` for reasoning models). A ``system`` message left in
  the stream (export) is rendered in place as ``system``, or ``developer`` for a developer trace.
* User messages: ``content`` is a string when it is only text, else a list of ``text``,
  ``image_url`` (http(s) URLs and base64 data: URLs of JPEG/PNG/GIF/WebP) and ``input_audio``
  (base64 data: URLs of WAV/MP3) parts. Video and other media are left out. Orphan and late results are user messages with their note as text.
* Assistant messages: ``content`` (``null`` when there are only calls) and ``tool_calls``
  (``type: "function"``, ``arguments`` a JSON string). Media in assistant messages is left out.
* Each result is a ``{"role": "tool", "tool_call_id", "content"}`` message, right after the
  assistant message that made the call; tool messages carry text only, so images a tool returned
  follow all the tool messages of that step in one user message that names the call.
* Reasoning messages are left out (and counted).
"""

from __future__ import annotations

from typing import Iterable, Iterator

from memcli.messages import Media, Message, json_text
from memcli.renderers.base import Renderer, accepts

_AUDIO_FORMATS = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/wave": "wav", "audio/mpeg": "mp3",
                  "audio/mp3": "mp3"}


class OpenAIChatRenderer(Renderer):
    name = "openai-chat"
    default_model = "gpt-4o"

    def lead_items(self, system: str) -> list:
        return [{"role": "system", "content": system}] if system else []

    def _media_part(self, item: Media, where: str) -> dict | None:
        if item.kind == "image":
            if accepts(item):
                return {"type": "image_url", "image_url": {"url": item.url}}
            self.notes.drop("image", f"{where} (only http(s) URLs and base64 JPEG/PNG/GIF/WebP)")
            return None
        if item.kind == "audio":
            data = item.base64_data()
            fmt = _AUDIO_FORMATS.get(item.mime_type)
            if data is not None and fmt:
                return {"type": "input_audio", "input_audio": {"data": data, "format": fmt}}
            self.notes.drop("audio", f"{where} (only base64 WAV/MP3 data: URLs are accepted)")
            return None
        self.notes.drop(item.kind, where)
        return None

    def _user_content(self, text: str, media: list[Media], where: str):
        parts = [p for p in (self._media_part(m, where) for m in media) if p is not None]
        if not parts:
            return text
        return ([{"type": "text", "text": text}] if text else []) + parts

    def render_messages(self, messages: Iterable[Message]) -> Iterator[dict]:
        for message in messages:
            role = message.role
            if role == "system":
                yield {"role": "developer" if message.kind == "developer" else "system", "content": message.text()}
            elif role == "user":
                content = self._user_content(message.text(), message.media(), "in user messages")
                if content:
                    yield {"role": "user", "content": content}
            elif role == "assistant":
                if message.kind == "reasoning":
                    self.notes.drop("reasoning")
                    continue
                for item in message.media():
                    self.notes.drop(item.kind, "in assistant messages")
                out: dict = {"role": "assistant", "content": message.text() or None}
                if message.tool_calls:
                    out["tool_calls"] = [
                        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json_text(c.arguments)}}
                        for c in message.tool_calls]
                elif out["content"] is None:
                    continue
                yield out
            elif role == "tool":
                media_parts: list = []
                for result in message.results:
                    yield {"role": "tool", "tool_call_id": result.call_id, "content": result.text}
                    if result.media:
                        parts = [p for p in (self._media_part(m, "in tool results") for m in result.media) if p]
                        if parts:
                            media_parts.append({"type": "text", "text": f"[media returned by {result.name}, "
                                                                        f"call {result.call_id}]"})
                            media_parts.extend(parts)
                if media_parts:
                    yield {"role": "user", "content": media_parts}


RENDERER = OpenAIChatRenderer
