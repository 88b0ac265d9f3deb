"""OpenAI Responses API: ``{"instructions": ..., "input": [...]}``.

* ``instructions`` is the system prompt (left out when there is none). A ``system`` message left
  in the stream (export) becomes a ``message`` item with role ``system`` (``developer`` for a
  developer trace) in place.
* User and assistant text become ``{"type": "message", "role", "content"}`` items; user content is
  a string when it is only text, else ``input_text`` and ``input_image`` parts (http(s) URLs and
  base64 JPEG/PNG/GIF/WebP data: URLs; audio and video are left out: the Responses API takes
  neither as message input). Assistant content is text.
* Each call is a ``function_call`` item (``call_id``, ``name``, ``arguments`` as a JSON string)
  after its message's text; each result a ``function_call_output`` item with the same
  ``call_id``, right after the calls of that step. A result with images has a list ``output``
  (``input_text`` + ``input_image``).
* Reasoning messages are left out: reasoning items need the provider's own encrypted content.
"""

from __future__ import annotations

from typing import Iterable, Iterator

from memcli.messages import Media, Message, json_text
from memcli.renderers.base import Renderer, accepts


class OpenAIResponsesRenderer(Renderer):
    name = "openai-responses"
    list_key = "input"
    default_model = "gpt-4o"

    def head(self, system: str) -> dict:
        return {"instructions": system} if system else {}

    def _images(self, media: list[Media], where: str) -> list[dict]:
        out = []
        for item in media:
            if item.kind == "image" and accepts(item):
                out.append({"type": "input_image", "image_url": item.url, "detail": "auto"})
            elif item.kind == "image":
                self.notes.drop("image", f"{where} (only http(s) URLs and base64 JPEG/PNG/GIF/WebP)")
            else:
                self.notes.drop(item.kind, where)
        return out

    def render_messages(self, messages: Iterable[Message]) -> Iterator[dict]:
        for message in messages:
            role = message.role
            if role == "system":
                yield {"type": "message", "role": "developer" if message.kind == "developer" else "system",
                       "content": message.text()}
            elif role == "user":
                text = message.text()
                images = self._images(message.media(), "in user messages")
                if images:
                    content = ([{"type": "input_text", "text": text}] if text else []) + images
                elif text:
                    content = text
                else:
                    continue
                yield {"type": "message", "role": "user", "content": content}
            elif role == "assistant":
                if message.kind == "reasoning":
                    self.notes.drop("reasoning")
                    continue
                for item in message.media():
                    self.notes.drop(item.kind, "in assistant messages")
                text = message.text()
                if text:
                    yield {"type": "message", "role": "assistant", "content": text}
                for call in message.tool_calls:
                    yield {"type": "function_call", "call_id": call.id, "name": call.name,
                           "arguments": json_text(call.arguments)}
            elif role == "tool":
                for result in message.results:
                    images = self._images(result.media, "in tool results")
                    output = ([{"type": "input_text", "text": result.text}] if result.text else []) + images \
                        if images else result.text
                    yield {"type": "function_call_output", "call_id": result.call_id, "output": output}


RENDERER = OpenAIResponsesRenderer
