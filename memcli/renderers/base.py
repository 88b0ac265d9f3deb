"""What every renderer shares: the interface, the streaming JSON writer, and the notes collector.

A renderer turns canonical messages (memcli.messages) into one provider's request payload:

* ``render_messages(messages) -> iterator of items`` — the streaming transform: canonical
  messages in (any iterable, consumed lazily), provider messages/items out. Renderers that must
  merge neighbours (anthropic, gemini) hold one message of lookahead, nothing more.
* ``payload(system, items) -> dict`` — wraps items into the full request payload.
* ``render(system, messages)`` — both at once, in memory.
* ``iter_chunks(system, messages) -> iterator of bytes`` — the same payload serialized as it is
  produced (constant memory): ``{<head keys>, "<list key>": [`` then one item per line, then
  ``]}``. ``b"".join(...)`` parses to exactly ``render(system, messages)``.

``system`` is the system prompt text ("" for none). Things a provider cannot take (audio for
Anthropic, reasoning, ...) are counted in ``renderer.notes`` and never fail the render.
"""

from __future__ import annotations

from collections import Counter
from itertools import chain
from typing import Any, Iterable, Iterator

import orjson

from memcli.messages import Media, Message


class Notes:
    """What a renderer left out or changed, counted, for stderr."""

    def __init__(self, provider: str):
        self.provider = provider
        self.dropped: Counter = Counter()  # (kind, where) -> count
        self.other: list[str] = []

    def drop(self, kind: str, where: str = "", n: int = 1) -> None:
        self.dropped[(kind, where)] += n

    def lines(self) -> list[str]:
        out = []
        for (kind, where), n in sorted(self.dropped.items()):
            what = f"{n} {kind} item{'s' if n != 1 else ''}"
            if kind == "reasoning":
                what = f"{n} reasoning message{'s' if n != 1 else ''}"
            out.append(f"left out {what}{' ' + where if where else ''}: {self.provider} does not accept "
                       f"{'them' if n != 1 else 'it'} there")
        return out + self.other


class Renderer:
    name = ""
    list_key = "messages"
    is_json = True
    shows_reasoning = False
    default_model: str | None = None

    def __init__(self, model: str | None = None):
        self.model = model
        self.notes = Notes(self.name)

    # -- to implement
    def render_messages(self, messages: Iterable[Message]) -> Iterator[Any]:
        raise NotImplementedError

    def head(self, system: str) -> dict:
        """Top-level keys written before the list."""
        return {}

    def lead_items(self, system: str) -> list:
        """Items written at the start of the list (openai-chat's system message)."""
        return []

    # -- shared
    def payload(self, system: str, items: list) -> dict:
        return {**self.head(system), self.list_key: self.lead_items(system) + list(items)}

    def render(self, system: str, messages: Iterable[Message]):
        return self.payload(system, list(self.render_messages(messages)))

    def iter_chunks(self, system: str, messages: Iterable[Message]) -> Iterator[bytes]:
        head = self.head(system)
        opening = orjson.dumps(head)[:-1] + (b"," if head else b"")
        yield opening + orjson.dumps(self.list_key) + b":["
        first = True
        for item in chain(self.lead_items(system), self.render_messages(messages)):
            yield (b"\n" if first else b",\n") + orjson.dumps(item)
            first = False
        yield b"\n]}\n" if not first else b"]}\n"


WEB_SCHEMES = ("https://", "http://")
IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")  # OpenAI and Anthropic


def accepts(item: Media, schemes: tuple = WEB_SCHEMES, data_types: Iterable[str] = IMAGE_TYPES) -> bool:
    """True when ``item`` is a URL with one of ``schemes``, or a base64 data: URL of one of
    ``data_types``. Anything else (file:// URLs, local paths, other types) no API can fetch."""
    if item.is_data:
        return item.base64_data() is not None and item.mime_type in data_types
    return item.url.lower().startswith(schemes)
