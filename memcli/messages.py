"""The canonical message model: what a snapshot (or an export) is before a provider renders it.

A leaf module (standard library and orjson only): the snapshot builds these messages, the
renderers (:mod:`memcli.renderers`) and exports read them, and none of them imports another for it.

A conversation is a sequence of :class:`Message` objects. Invariants every producer keeps and
every renderer relies on:

* ``role`` is ``system``, ``user``, ``assistant`` or ``tool``.
  - ``system``: an instruction kept in the store (a trace tagged ``system``/``developer``);
    ``kind`` says which. The snapshot hoists these into the system prompt; a stream that keeps
    them in place (export) lets each renderer place them (see the renderer docstrings).
  - ``user``: ``kind`` ``ask`` (a user turn), ``context`` (harness-injected context, a foreign
    compaction summary), ``memory`` (the memory bundle), ``orphan`` (a tool result whose call is
    not in the stream) or ``late`` (a result that arrived after its call was given up on).
    ``orphan``/``late`` carry their result in ``results`` and render as plain text
    (:func:`note_text`), never as a provider tool result.
  - ``assistant``: ``kind`` ``reply`` (text parts, then ``tool_calls``) or ``reasoning`` (text
    only; provider renderers never receive these — see memcli.snapshot.build).
  - ``tool``: ``kind`` ``results``: the results of the assistant message immediately before it,
    one per call, in call order, ids matching. A call without a result has a ``pending``
    placeholder result. A ``tool`` message never appears anywhere else.
* Tool call ids are unique in the stream and match ``[A-Za-z0-9_-]{1,40}`` (accepted by every
  provider); names match ``[A-Za-z_][A-Za-z0-9_-]{0,63}``. ``source_id``/``source_name`` keep the
  stored values.
* Messages with nothing to say (no non-blank text, no media, no calls) are never produced.
* ``turn_id`` is the store's turn (``None`` for the memory bundle); the messages of one turn are
  contiguous.

Budget views (memcli.snapshot.views) replace :class:`ToolResult` objects with clipped or stubbed
copies; ``view`` says which and ``full_chars`` keeps the size of the original.
"""

from __future__ import annotations

import mimetypes
import re
from dataclasses import dataclass, field, fields

import orjson

ROLES = ("system", "user", "assistant", "tool")

# statuses of a ToolResult
SUCCESS = "success"
ERROR = "error"
PENDING = "pending"
ORPHAN = "orphan"
LATE = "late"
NOTE_KINDS = frozenset((ORPHAN, LATE))   # message kinds that carry one result, rendered as a note (note_text)

PENDING_TEXT = ("[no result yet: this call was still running, or was never answered, when the snapshot "
                "was taken]")

# media keys of RawTrace.media -> the kind of one item
MEDIA_KINDS = {"images": "image", "image": "image", "audio": "audio", "audios": "audio",
               "video": "video", "videos": "video"}
_DEFAULT_MIME = {"image": "image/png", "audio": "audio/mpeg", "video": "video/mp4"}
_DATA_URL = re.compile(r"data:([^;,]*)((?:;[^;,]*)*),", re.DOTALL)
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")


@dataclass(slots=True)
class Text:
    text: str


@dataclass(slots=True)
class Media:
    """One media item: ``url`` is an http(s)/gs/file URL or a ``data:`` URL."""

    kind: str  # image | audio | video | anything else a store used as a media key
    url: str

    @property
    def is_data(self) -> bool:
        return self.url.startswith("data:")

    @property
    def mime_type(self) -> str:
        """From the data: URL, else guessed from the URL's extension, else a default per kind."""
        if self.is_data:
            m = _DATA_URL.match(self.url)
            if m and m.group(1):
                return m.group(1).lower()
        else:
            guessed, _ = mimetypes.guess_type(self.url.split("?", 1)[0].split("#", 1)[0])
            if guessed:
                return guessed
        return _DEFAULT_MIME.get(self.kind, "application/octet-stream")

    def base64_data(self) -> str | None:
        """The payload of a base64 ``data:`` URL (None for anything else)."""
        if not self.is_data:
            return None
        m = _DATA_URL.match(self.url)
        if not m or ";base64" not in m.group(2).lower():
            return None
        data = self.url[m.end():]
        # a transcript may carry a placeholder ("iVBOR…[redacted-base64]"): no API decodes it
        return data if _BASE64.fullmatch(data) else None

    def describe(self) -> str:
        """A short text form: the URL, or for a data: URL its type and size."""
        if self.is_data:
            return f"{self.mime_type} data, {len(self.url):,} characters"
        return self.url


@dataclass(slots=True)
class ToolCall:
    id: str
    name: str
    arguments: dict
    trace_id: str | None = None
    source_id: str = ""
    source_name: str | None = None


@dataclass(slots=True)
class ToolResult:
    """The answer to one call (``tool`` message) or a result without a call (``orphan``/``late``)."""

    call_id: str            # the ToolCall.id it answers ("" when there is no call)
    name: str
    status: str             # success | error | pending | orphan | late
    text: str               # what the model sees: the result, or a clipped/stub/placeholder form
    media: list = field(default_factory=list)
    trace_id: str | None = None
    source_call_id: str = ""
    error: bool = False     # the tool reported an error (orphans keep this too)
    full_chars: int = 0     # length of the full text, before any view
    view: str | None = None  # None | "clipped" | "expired" | "stubbed"
    source_name: str | None = None  # the tool name as stored (``name`` is the provider-safe form)

    @property
    def is_error(self) -> bool:
        return self.error


@dataclass(slots=True)
class Message:
    role: str
    kind: str
    parts: list = field(default_factory=list)       # Text | Media
    tool_calls: list = field(default_factory=list)  # assistant
    results: list = field(default_factory=list)     # tool; one for orphan/late
    turn_id: str | None = None
    trace_ids: list = field(default_factory=list)

    def text(self, sep: str = "\n\n") -> str:
        """The message's text parts joined (orphan/late notes give their note)."""
        if self.kind in NOTE_KINDS and self.results:
            return note_text(self.results[0])
        return sep.join(p.text for p in self.parts if isinstance(p, Text) and p.text.strip())

    def media(self) -> list:
        if self.kind in NOTE_KINDS and self.results:
            return list(self.results[0].media)
        return [p for p in self.parts if isinstance(p, Media)]



def all_fields_constructor(cls):
    """A maker of ``cls`` (a dataclass of this module) from every field, in order, positionally:
    the object its ``__init__`` makes from them, without the class call and the checks of its
    defaults (in CPython 3.11 those are a third of what making a small object costs). For a
    producer that makes many (memcli.snapshot.build)."""
    names = [f.name for f in fields(cls)]
    source = (f"def new({', '.join(names)}):\n    o = _new(_cls)\n"
              + "".join(f"    o.{name} = {name}\n" for name in names) + "    return o\n")
    namespace = {"_new": object.__new__, "_cls": cls}
    exec(source, namespace)  # the source names only the dataclass's fields
    return namespace["new"]


new_text = all_fields_constructor(Text)
new_message = all_fields_constructor(Message)
new_tool_call = all_fields_constructor(ToolCall)
new_tool_result = all_fields_constructor(ToolResult)

def note_text(result: ToolResult) -> str:
    """The plain-text form of a result rendered outside a tool message (orphan or late)."""
    what = "tool error" if result.error else "tool result"
    ident = f"{result.source_name or result.name}, call id {result.source_call_id or '?'}"
    if result.trace_id:
        ident += f", trace {result.trace_id}"
    if result.status == LATE:
        head = f"[{what} that arrived after its call was shown as unanswered ({ident})]"
    else:
        head = f"[{what} without a matching call in this conversation ({ident})]"
    return f"{head}\n{result.text}" if result.text else head


def value_text(value) -> str:
    """A stored value as text: nothing for None, a string as it is, anything else as its JSON
    (:func:`json_text`)."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json_text(value)


def json_text(value) -> str:
    """Compact JSON text of any stored value (non-ASCII kept)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:  # integers beyond 64 bits and the like
        import json

        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


