"""Record models of the store (docs/design.md §1) and the one generic (de)serializer they share.

Field names and types follow AutoByteus' ``RawTraceItem`` / ``EpisodicItem`` / ``SemanticItem`` so
that either tool reads what the other writes. Serialization rules, applied by :func:`to_record`
for every model alike (no per-class ``to_dict``):

* fields are written in declaration order, then any unknown fields the record arrived with
  (kept verbatim in ``extra``, in their original order);
* a field without a default is always written; a field with a default is written unless it is
  ``None`` or an empty list/dict — except fields marked ``always`` (e.g. ``salience``), which are
  always written, as AutoByteus does.

:func:`from_record` is the inverse: known keys become fields, the rest go to ``extra``. It is one
rule (:func:`_from_record_general`) with a fast path: per class and per key order of the records
read, a builder generated from the dataclass's fields that makes the very same object (same field
values, fresh lists/dicts per instance, attributes set in declaration order as ``__init__`` does).
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
# a semantic fact's tag: always in the snapshot's memory bundle, first (``remember --pin``); only
# the person or agent that remembers a fact sets it, never a summary of a transcript
PINNED_TAG = "pinned"


def is_pinned(record_or_item) -> bool:
    """Whether a semantic fact (its record or its item) is pinned."""
    tags = record_or_item.get("tags") if isinstance(record_or_item, dict) else getattr(record_or_item, "tags", None)
    return isinstance(tags, list) and PINNED_TAG in tags


def is_instruction(trace_type, tags) -> bool:
    """Whether a trace of this type and tags is an *instruction*: a ``user`` trace tagged
    ``system``/``developer`` (PINNED_TAGS). The one rule: the snapshot renders it as system text
    (memcli.snapshot.build), a compaction never moves it (memcli.compaction.window), and a turn
    of instructions alone is no turn (memcli.inspect). On an assistant or tool trace those tags
    are only tags: it is rendered, and moves, as any other."""
    return trace_type == "user" and type(tags) is list and not PINNED_TAGS.isdisjoint(tags)


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

    @property
    def is_instruction(self) -> bool:
        """A system/developer instruction (:func:`is_instruction`)."""
        return is_instruction(self.trace_type, self.tags)


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

    The rule is :func:`_from_record_general`; records whose keys (in their order) were seen before
    are built by that key order's builder (:func:`record_builders`), which gives the same object.
    """
    if type(data) is dict:
        build = record_builder(cls, tuple(data))  # the key order: stores written by to_record hold a handful
        if build is not None:
            return build(data)
    return _from_record_general(cls, data)


def _from_record_general(cls: type[_T], data: dict) -> _T:
    """THE codec rule, read: known keys become fields, the rest go to ``extra`` (in their order);
    ``content`` and ``tags`` that are absent or None become ``""`` and ``[]``; a missing required
    field raises the dataclass's own ``TypeError``."""
    names = field_names(cls)
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


# Builders of records with one key order, per class and checked fields (stores hold a handful of
# orders: records are written in declaration order by to_record). Bounded: a file of ever-new key
# orders falls back to the general rule after _MAX_SHAPES of them.
_BUILDERS: dict[tuple, dict[tuple, Any]] = {}
_MAX_SHAPES = 256


def record_builders(cls: type, strings: tuple = ()) -> dict[tuple, Any]:
    """``cls``'s key order -> builder map: ``record_builders(cls).get(tuple(record))``, when not
    None, is ``from_record(cls, record)`` for a dict ``record`` (it never raises). Filled by
    :func:`record_builder`. With ``strings`` (field names), a builder returns None instead when
    the record's value of one of them is not a ``str``."""
    shapes = _BUILDERS.get((cls, strings))
    if shapes is None:
        shapes = _BUILDERS[(cls, strings)] = {}
    return shapes


def record_builder(cls: type, key: tuple, strings: tuple = ()):
    """The builder of ``record_builders(cls, strings)`` for key order ``key``, made on first use,
    or None: that order always fails (a required field missing), or too many orders were seen."""
    shapes = record_builders(cls, strings)
    build = shapes.get(key)
    if build is None and len(shapes) < _MAX_SHAPES:
        build = _compile_builder(cls, key, strings)
        if build is not None:
            shapes[key] = build
    return build


def _compile_builder(cls: type, keys: tuple, strings: tuple = ()):
    """A constructor equivalent to :func:`_from_record_general` for dicts with exactly ``keys`` in
    this order, or None when that order always fails (a required field missing) or the class is
    not a plain dataclass. It sets every field in declaration order, as the dataclass's
    ``__init__`` does (same instance layout), from the record (its values unpacked in their
    order: no lookup per key), the field's default (a fresh list/dict per instance for a
    ``default_factory``) or the content/tags rule. It returns None, building nothing, when the
    value of one of the fields named in ``strings`` is not a ``str``."""
    fields = dataclasses.fields(cls)
    if hasattr(cls, "__post_init__") or any(not f.init for f in fields) or any(type(k) is not str for k in keys):
        return None
    if not set(strings) <= set(keys):
        return None   # (one of them missing: a required one, or None — not a str)
    names = field_names(cls)
    present = set(keys)
    unknown = tuple(k for k in keys if k not in names)
    if unknown and "extra" not in {f.name for f in fields}:
        return None
    ns: dict[str, Any] = {"_new": object.__new__, "_cls": cls, "_unknown": unknown}
    body = ["def build(r):"]
    value = {key: f"v{i}" for i, key in enumerate(keys)}   # the record's values, unpacked in its key order
    if keys:
        body.append(f"    {', '.join(value.values())}, = r.values()")
    if strings:
        body.append(f"    if {' or '.join(f'type({value[name]}) is not str' for name in strings)}:")
        body.append("        return None")
    body.append("    o = _new(_cls)")
    for f in fields:
        name = f.name
        if name == "extra":
            pairs = ", ".join(f"_unknown[{i}]: {value[key]}" for i, key in enumerate(unknown))
            body.append(f"    o.extra = {{{pairs}}}")
            continue
        filled = {"content": "''", "tags": "[]"}.get(name)
        if name in present:
            if filled:
                body.append(f"    o.{name} = {filled} if {value[name]} is None else {value[name]}")
            else:
                body.append(f"    o.{name} = {value[name]}")
        elif filled:
            body.append(f"    o.{name} = {filled}")
        elif f.default_factory is list:
            body.append(f"    o.{name} = []")
        elif f.default_factory is dict:
            body.append(f"    o.{name} = {{}}")
        elif f.default_factory is not dataclasses.MISSING:
            ns[f"_factory_{name}"] = f.default_factory
            body.append(f"    o.{name} = _factory_{name}()")
        elif f.default is None:
            body.append(f"    o.{name} = None")
        elif f.default is not dataclasses.MISSING:
            ns[f"_default_{name}"] = f.default
            body.append(f"    o.{name} = _default_{name}")
        else:
            return None  # a required field missing: the general rule raises the dataclass's error
    body.append("    return o")
    exec("\n".join(body), ns)  # the source names only the dataclass's fields; record keys stay data
    return ns["build"]


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
