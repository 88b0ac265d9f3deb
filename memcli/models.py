"""Record models of the store (docs/design.md §1) and the one generic (de)serializer they share.

Field names and types follow AutoByteus' ``RawTraceItem`` / ``EpisodicItem`` / ``SemanticItem`` so
that either tool reads what the other writes. Serialization rules, applied by :func:`to_record`
for every model alike (no per-class ``to_dict``):

* fields are written in declaration order, then any unknown fields the record arrived with
  (kept verbatim in ``extra``, in their original order);
* a field without a default is always written; a field with a default is written unless it is
  ``None`` or an empty list/dict — except fields marked ``always`` (e.g. ``salience``), which are
  always written, as AutoByteus does.

:func:`from_record` is the inverse: known keys become fields, the rest go to ``extra``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, TypeVar

TRACE_TYPES = ("user", "assistant", "tool_call", "tool_result")

# Tags with a meaning to memcli itself. A ``user`` trace carrying one of the NON_OPENING_TAGS is
# context, not a user ask: it never opens a turn (docs/design.md §2; the linker is memcli.store.state).
TAG_SYSTEM = "system"            # a system prompt message kept from a transcript
TAG_DEVELOPER = "developer"      # an OpenAI developer message
TAG_CONTEXT = "context"          # context injected by the agent harness (AGENTS.md, env info)
TAG_COMPACT_SUMMARY = "compact_summary"  # summary written by an earlier (foreign) compaction
TAG_SIDECHAIN = "sidechain"      # a subagent's message (Claude Code sidechain)
TAG_REASONING = "reasoning"      # model reasoning / thinking, kept as an assistant trace
# a trace's field (and an episodic item's mark) for an agent harness's own compaction summary
# (memcli.store.harness_items): {"harness", "trigger"?, "pre_tokens"?}
HARNESS_COMPACTION = "harness_compaction"
NON_OPENING_TAGS = frozenset({TAG_SYSTEM, TAG_DEVELOPER, TAG_CONTEXT, TAG_COMPACT_SUMMARY, TAG_SIDECHAIN})
# context that is part of the instructions, kept active across compactions and rendered as system
PINNED_TAGS = frozenset({TAG_SYSTEM, TAG_DEVELOPER})


def _always(default: Any) -> Any:
    return field(default=default, metadata={"always": True})


def _always_list() -> Any:
    return field(default_factory=list, metadata={"always": True})


@dataclass
class RawTrace:
    id: str
    ts: float
    turn_id: str
    seq: int
    trace_type: str
    content: str
    source_event: str
    media: dict | None = None
    tool_name: str | None = None
    tool_call_id: str | None = None
    tool_args: dict | None = None
    tool_result: Any = None
    tool_error: str | None = None
    correlation_id: str | None = None
    tags: list = field(default_factory=list)
    tool_result_ref: str | None = None
    usage: dict | None = None
    tokens: int | None = None
    extra: dict = field(default_factory=dict)

    def has_tag(self, tag: str) -> bool:
        return tag in self.tags

    @property
    def is_context(self) -> bool:
        """A user-role trace that is not a user ask (system/developer/injected context)."""
        return self.trace_type == "user" and not NON_OPENING_TAGS.isdisjoint(self.tags)


@dataclass
class EpisodicItem:
    id: str
    ts: float
    turn_ids: list
    summary: str
    tags: list = _always_list()
    salience: float = _always(0.0)
    trace_ids: list = field(default_factory=list)
    compaction_id: str | None = None
    supersedes: list = field(default_factory=list)
    model: str | None = None
    extra: dict = field(default_factory=dict)


@dataclass
class SemanticItem:
    id: str
    ts: float
    fact: str
    tags: list = _always_list()
    confidence: float = _always(0.0)
    salience: float = _always(0.0)
    source_turn_ids: list = field(default_factory=list)
    compaction_id: str | None = None
    supersedes: list = field(default_factory=list)
    extra: dict = field(default_factory=dict)


class ToolStatus(str, Enum):
    PENDING = "PENDING"
    SUCCESS = "SUCCESS"
    ERROR = "ERROR"
    ORPHAN = "ORPHAN"


@dataclass
class ToolInteraction:
    """A tool call with its result (docs/design.md §2). Derived from traces, never stored.

    ``status`` is PENDING (call without result yet), SUCCESS, ERROR (result with ``tool_error``)
    or ORPHAN (a result whose call is not in the traces looked at).
    """

    tool_call_id: str
    turn_id: str | None
    tool_name: str | None
    arguments: Any
    result: Any
    error: str | None
    status: ToolStatus
    call_trace_id: str | None = None
    result_trace_id: str | None = None
    call_ts: float | None = None
    result_ts: float | None = None
    extra: dict = field(default_factory=dict)


# --------------------------------------------------------------------------- generic codec

_T = TypeVar("_T")
# per class: tuple of (name, has_default, always)
_SCHEMA_CACHE: dict[type, tuple[tuple[str, bool, bool], ...]] = {}
_NAMES_CACHE: dict[type, frozenset[str]] = {}
_SHAPE_CACHE: dict[type, tuple[frozenset[str], bool, bool]] = {}   # names, has content, has tags


def _schema(cls: type) -> tuple[tuple[str, bool, bool], ...]:
    schema = _SCHEMA_CACHE.get(cls)
    if schema is None:
        items = []
        for f in dataclasses.fields(cls):
            if f.name == "extra":
                continue
            has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
            items.append((f.name, has_default, bool(f.metadata.get("always"))))
        schema = _SCHEMA_CACHE[cls] = tuple(items)
    return schema


def field_names(cls: type) -> frozenset[str]:
    names = _NAMES_CACHE.get(cls)
    if names is None:
        names = _NAMES_CACHE[cls] = frozenset(name for name, _, _ in _schema(cls))
    return names


def to_record(obj: Any) -> dict:
    """The JSON object for a model instance (rules in the module docstring)."""
    out: dict = {}
    for name, has_default, always in _schema(type(obj)):
        value = getattr(obj, name)
        if has_default and not always and (value is None or value == [] or value == {}):
            continue
        if isinstance(value, Enum):
            value = value.value
        out[name] = value
    extra = getattr(obj, "extra", None)
    if extra:
        for key, value in extra.items():
            if key not in out:
                out[key] = value
    return out


def from_record(cls: type[_T], data: dict) -> _T:
    """Build a model from a JSON object; unknown keys are kept in ``extra``.

    Missing required fields raise ``KeyError``/``TypeError``; callers that read stores turn these
    into :class:`memcli.errors.CorruptStoreError` with file and line.
    """
    shape = _SHAPE_CACHE.get(cls)
    if shape is None:
        names = field_names(cls)
        shape = _SHAPE_CACHE[cls] = (names, "content" in names, "tags" in names)
    names, has_content, has_tags = shape
    if names.issuperset(data) and not (has_content and data.get("content") is None) and not (
            has_tags and "tags" in data and data["tags"] is None):
        return cls(**data)   # the common case: only known keys, nothing to fill in (stores are read a line at a time)
    extra: dict = {}
    if names.issuperset(data):
        kwargs = dict(data)
    else:
        kwargs = {}
        for key, value in data.items():
            if key in names:
                kwargs[key] = value
            else:
                extra[key] = value
    if "content" in names and kwargs.get("content") is None:
        kwargs["content"] = ""  # AutoByteus: content may be absent
    if "tags" in names and kwargs.get("tags") is None:
        kwargs["tags"] = []
    obj = cls(**kwargs)
    if extra:
        obj.extra = extra  # type: ignore[attr-defined]
    return obj


# ------------------------------------------------------------------ superseding (one rule)

def supersedes_of(item) -> list[str]:
    """The ids a memory item (a model or its stored record) supersedes: the strings of its
    ``supersedes`` list; anything else there is ignored."""
    value = item.get("supersedes") if isinstance(item, dict) else getattr(item, "supersedes", None)
    if not isinstance(value, list):
        return []
    return [old for old in value if isinstance(old, str)]


def superseded_ids(items) -> dict[str, str]:
    """THE superseding rule: an item is superseded when a *later* item of the same tier lists its
    id in ``supersedes`` — or when it lists its own id (a tombstone: ``memcli forget`` withdraws
    an item and itself). ``items`` are one tier's items (models or records) in file order; the
    result maps each superseded id to the id of the first item that supersedes it. (Reading a
    tier from its end, the same rule is: skip an item whose id it or a newer item listed.)"""
    seen: set = set()
    out: dict[str, str] = {}
    for item in items:
        item_id = item.get("id") if isinstance(item, dict) else getattr(item, "id", None)
        for old in supersedes_of(item):
            if old in seen or old == item_id:
                out.setdefault(old, str(item_id))
        seen.add(item_id)
    return out
