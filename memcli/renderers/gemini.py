"""Gemini ``generateContent``: ``{"system_instruction": ..., "contents": [...]}``.

Field spellings follow Google's REST documentation (``system_instruction``, ``functionCall``,
``functionResponse``, ``inline_data``/``file_data`` with ``mime_type``); the API reads snake_case
and camelCase alike.

* ``system_instruction`` is ``{"parts": [{"text": system}]}`` (left out when there is none). A
  ``system`` message left in the stream (export) becomes user text starting with ``[system]``.
* Roles are ``user`` and ``model``. Consecutive messages of one role are merged into one content,
  except that function responses keep a content of their own, right after the model content with
  the calls (the API requires the response turn to follow the call turn and to answer every call).
  When the conversation starts with the model, a short user content comes first.
* Calls are ``functionCall`` parts (``name``, ``args``), results ``functionResponse`` parts
  (``name``, ``response``: ``{"output": text}`` or ``{"error": text}``).
* Gemini 3 and later (the default; choose an older model with ``--model``) match calls by ``id``
  and require a thought signature on the first call of every model step: calls and responses
  carry their ``id``, and the first ``functionCall`` part of each model content carries Google's
  documented placeholder signature for history the model did not produce itself
  (:data:`FOREIGN_SIGNATURE`). Older models reject ``id``, so it is left out for them.
* Media: ``inline_data`` (base64 data: URLs) or ``file_data`` (http(s) and gs:// URLs, MIME type
  from the URL's extension); images, audio and video of the types Gemini documents are kept. Media a tool returned goes into the
  ``functionResponse``'s own ``parts`` (Gemini 3), or follows the responses in the same content.
* Orphan and late results are user text; reasoning messages are left out (thought parts need the
  model's own signatures).
"""

from __future__ import annotations

import base64
import re
from typing import Iterable, Iterator

from memcli.messages import Media, Message, Text
from memcli.renderers.base import WEB_SCHEMES, Renderer, accepts

FOREIGN_SIGNATURE = base64.b64encode(b"skip_thought_signature_validator").decode()
CONTINUATION = "(earlier conversation omitted)"
_LEGACY = re.compile(r"gemini-(?:[12](?:\.\d+)?|exp|(?:pro|flash)(?!-(?:lite-)?latest$))(?:-|$)")
MEDIA = ("image", "audio", "video")
SCHEMES = WEB_SCHEMES + ("gs://",)
# the MIME types Gemini documents for image, audio and video input
MIME_TYPES = frozenset({
    "image/png", "image/jpeg", "image/webp", "image/heic", "image/heif",
    "audio/wav", "audio/x-wav", "audio/mp3", "audio/mpeg", "audio/aiff", "audio/aac", "audio/ogg", "audio/flac",
    "video/mp4", "video/mpeg", "video/mov", "video/quicktime", "video/avi", "video/x-flv", "video/mpg", "video/webm",
    "video/wmv", "video/3gpp"})


def is_legacy_gemini(model: str | None) -> bool:
    """True for Gemini 1.x/2.x (no call ids, no thought signatures); unknown or newer: False."""
    if not model:
        return False
    name = model.rsplit("/", 1)[-1].lower()
    return bool(_LEGACY.match(name))


class GeminiRenderer(Renderer):
    name = "gemini"
    list_key = "contents"

    def __init__(self, model: str | None = None):
        super().__init__(model)
        self.legacy = is_legacy_gemini(model)

    def head(self, system: str) -> dict:
        return {"system_instruction": {"parts": [{"text": system}]}} if system else {}

    def _media(self, item: Media, where: str) -> dict | None:
        if item.kind not in MEDIA:
            self.notes.drop(item.kind, where)
            return None
        if not accepts(item, SCHEMES, MIME_TYPES) or item.mime_type not in MIME_TYPES:
            self.notes.drop(item.kind, f"{where} (only http(s)/gs:// URLs and base64 data: URLs of the types "
                                       "Gemini reads)")
            return None
        if item.is_data:
            return {"inline_data": {"mime_type": item.mime_type, "data": item.base64_data()}}
        return {"file_data": {"mime_type": item.mime_type, "file_uri": item.url}}

    def _texts(self, message: Message) -> list[dict]:
        if message.results and message.role == "user":  # orphan / late note
            return [{"text": message.text()}]
        return [{"text": p.text} for p in message.parts if isinstance(p, Text) and p.text.strip()]

    def _convert(self, message: Message) -> tuple[str, list, bool] | None:
        """(role, parts, is_function_response) or None."""
        role = message.role
        if role == "system":
            return "user", [{"text": "[system]\n" + message.text()}], False
        if role == "user":
            parts = self._texts(message)
            parts += [p for p in (self._media(m, "in user messages") for m in message.media()) if p]
            return ("user", parts, False) if parts else None
        if role == "assistant":
            if message.kind == "reasoning":
                self.notes.drop("reasoning")
                return None
            parts = self._texts(message)
            parts += [p for p in (self._media(m, "in model messages") for m in message.media()) if p]
            for i, call in enumerate(message.tool_calls):
                function_call: dict = {"name": call.name, "args": call.arguments}
                if not self.legacy:
                    function_call["id"] = call.id
                part: dict = {"functionCall": function_call}
                if i == 0 and not self.legacy:
                    part["thoughtSignature"] = FOREIGN_SIGNATURE
                parts.append(part)
            return ("model", parts, False) if parts else None
        if role == "tool":
            parts, trailing = [], []
            for result in message.results:
                response = {"error": result.text} if result.is_error else {"output": result.text}
                function_response: dict = {"name": result.name, "response": response}
                if not self.legacy:
                    function_response["id"] = result.call_id
                media = [p for p in (self._media(m, "in tool results") for m in result.media) if p]
                if media and not self.legacy:
                    function_response["parts"] = media
                elif media:
                    trailing.extend(media)
                parts.append({"functionResponse": function_response})
            return "user", parts + trailing, True
        return None

    def render_messages(self, messages: Iterable[Message]) -> Iterator[dict]:
        held: tuple[str, list, bool] | None = None
        for message in messages:
            converted = self._convert(message)
            if converted is None:
                continue
            role, parts, responses = converted
            if held is not None and held[0] == role and not held[2] and not responses:
                held[1].extend(parts)
                continue
            if held is not None:
                yield {"role": held[0], "parts": held[1]}
            elif role != "user":
                yield {"role": "user", "parts": [{"text": CONTINUATION}]}
            held = (role, parts, responses)
        if held is not None:
            yield {"role": held[0], "parts": held[1]}


RENDERER = GeminiRenderer
