"""memcli's native event format, and the validation every ingested event goes through.

A leaf module (it imports only :mod:`memcli.errors` and :mod:`memcli.models`): the ingest
pipeline and every importer share it, so neither package imports the other for it.

A native event is a JSON object with ``trace_type`` (``user``, ``assistant``, ``tool_call`` or
``tool_result``) and any of the fields of a RAW_TRACE (docs/design.md §1):

    content str (default "")   id str        ts number or ISO-8601 string   turn_id str
    seq int >= 1               source_event str                           media {str: [str]}
    tool_name str              tool_call_id str   tool_args object         tool_result any JSON
    tool_error str             correlation_id str tags [str]              tool_result_ref str
    usage {prompt_tokens: int, completion_tokens: int, ...}               tokens int >= 0
    harness_compaction {"harness": str, "trigger"?, "pre_tokens"?, "post_tokens"?, "user_context"?, "kept_from"?}
                       (with the tag compact_summary; kept_from: the first trace it kept as it was)

``tool_call`` needs ``tool_call_id`` and ``tool_name``; ``tool_result`` needs ``tool_call_id``.
A trace with ``harness_compaction`` is the summary an agent harness's own compaction wrote; its
ingest also writes it as a memory item (memcli.store.harness_items). A field set to ``null`` counts as absent. Unknown fields are kept as they are. memcli fills
``id``, ``ts``, ``turn_id``, ``seq`` and ``source_event`` when they are absent.

:func:`validate_event` checks one event and returns it normalized (the same dict, with ``null``
fields dropped and an ISO ``ts`` turned into epoch seconds); a problem raises
:class:`~memcli.errors.InputError` naming the line and the field. Importers emit native events,
so their output goes through the same check.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone

from memcli.errors import InputError
from memcli.models import HARNESS_COMPACTION, TAG_COMPACT_SUMMARY, TRACE_TYPES

MAX_ID_LENGTH = 512
DEFAULT_SOURCE_EVENT = "memcli.ingest"   # ``source_event`` of native events that name none

_JSON_TYPE = {dict: "object", list: "array", str: "string", int: "integer", float: "number",
              bool: "boolean", type(None): "null"}


def json_type(value) -> str:
    return _JSON_TYPE.get(type(value), type(value).__name__)


def _fail(line, field, message):
    raise InputError(message, line=line, field=field)


def parse_timestamp(value, line=None, field="ts") -> float:
    """Epoch seconds from a number or an ISO-8601 string (naive times are taken as UTC)."""
    if isinstance(value, bool):
        _fail(line, field, "expected a number (epoch seconds) or an ISO-8601 string, got boolean")
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            _fail(line, field, "expected a finite number")
        value = float(value)
        if value > 1e11:  # milliseconds, as JavaScript writes them
            value /= 1000.0
        return value
    if isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:
            try:
                return parse_timestamp(float(text), line, field)
            except ValueError:
                _fail(line, field, f"not an ISO-8601 time or epoch seconds: {value[:40]!r}")
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        return dt.timestamp()
    _fail(line, field, f"expected a number (epoch seconds) or an ISO-8601 string, got {json_type(value)}")


_STR_FIELDS = ("source_event", "tool_name", "tool_error", "correlation_id", "tool_result_ref")
_ID_FIELDS = ("id", "turn_id", "tool_call_id")
def _id_ok(value: str) -> bool:
    return 0 < len(value) <= MAX_ID_LENGTH


def _usage_ok(usage: dict) -> bool:
    for key in ("prompt_tokens", "completion_tokens"):
        value = usage.get(key)
        if value is not None and (type(value) is not int or value < 0):
            return False
    return True


# The fast path: a field is fine as it is when its value has exactly this type and passes the
# value check (if any). Anything else — another type, null, media, a failed check — goes through
# _check_fields, which normalizes what it can and names the problem otherwise.
_FAST_TYPES = {
    "trace_type": str, "content": str, "id": str, "turn_id": str, "tool_call_id": str,
    "source_event": str, "tool_name": str, "tool_error": str, "correlation_id": str,
    "tool_result_ref": str, "ts": float, "tool_args": dict, "seq": int, "tokens": int, "tags": list,
    "usage": dict,
}
_VALUE_CHECKS = {
    "id": _id_ok, "turn_id": _id_ok, "tool_call_id": _id_ok, "ts": math.isfinite,
    "seq": lambda v: v >= 1, "tokens": lambda v: v >= 0,
    "tags": lambda v: all(type(t) is str for t in v), "usage": _usage_ok,
}
_SLOW_FIELDS = frozenset({"media", HARNESS_COMPACTION})
_FAST_RULES = {key: (expected, _VALUE_CHECKS.get(key)) for key, expected in _FAST_TYPES.items()}


def validate_event(event, line: int | None = None) -> dict:
    if type(event) is not dict:
        _fail(line, None, f"expected a JSON object, got {json_type(event)}")
    fast = event.get("trace_type") in TRACE_TYPES
    if fast:
        for key, value in event.items():
            rule = _FAST_RULES.get(key)
            if rule is None:
                if value is None or key in _SLOW_FIELDS:
                    fast = False
                    break
                continue  # an unknown field: kept as it is
            if type(value) is not rule[0] or (rule[1] is not None and not rule[1](value)):
                fast = False
                break
    if not fast:
        _check_fields(event, line)
    elif "content" not in event:
        event["content"] = ""
    trace_type = event["trace_type"]
    if trace_type == "tool_call":
        if "tool_call_id" not in event:
            _fail(line, "tool_call_id", "required for a tool_call (its result is matched by it)")
        if "tool_name" not in event:
            _fail(line, "tool_name", "required for a tool_call")
    elif trace_type == "tool_result" and "tool_call_id" not in event:
        _fail(line, "tool_call_id", "required for a tool_result (it names the call it answers)")
    return event


def _check_fields(event: dict, line: int | None) -> None:
    trace_type = event.get("trace_type")
    if trace_type is None:
        _fail(line, "trace_type", "missing (expected one of user, assistant, tool_call, tool_result)")
    if trace_type not in TRACE_TYPES:
        shown = trace_type if isinstance(trace_type, str) else json_type(trace_type)
        _fail(line, "trace_type", f"unknown value {str(shown)[:40]!r} (expected one of user, assistant, tool_call, tool_result)")

    # drop explicit nulls: null means absent
    if None in event.values():
        for key in [k for k, v in event.items() if v is None]:
            del event[key]

    content = event.get("content")
    if content is None:
        event["content"] = ""
    elif type(content) is not str:
        _fail(line, "content", f"expected a string, got {json_type(content)}")

    for key in _ID_FIELDS:
        value = event.get(key)
        if value is not None:
            if type(value) is not str:
                _fail(line, key, f"expected a string, got {json_type(value)}")
            if not value or len(value) > MAX_ID_LENGTH:
                _fail(line, key, f"must be 1-{MAX_ID_LENGTH} characters")
    for key in _STR_FIELDS:
        value = event.get(key)
        if value is not None and type(value) is not str:
            _fail(line, key, f"expected a string, got {json_type(value)}")

    if "ts" in event:
        ts = event["ts"]
        if type(ts) is not float:
            event["ts"] = parse_timestamp(ts, line)
        elif not math.isfinite(ts):
            _fail(line, "ts", "expected a finite number")
    if "seq" in event:
        seq = event["seq"]
        if type(seq) is not int:
            _fail(line, "seq", f"expected an integer, got {json_type(seq)}")
        if seq < 1:
            _fail(line, "seq", "must be 1 or more")
    if "tokens" in event:
        tokens = event["tokens"]
        if type(tokens) is not int or tokens < 0:
            _fail(line, "tokens", f"expected a non-negative integer, got {json_type(tokens)}")
    if "tool_args" in event and type(event["tool_args"]) is not dict:
        _fail(line, "tool_args", f"expected an object, got {json_type(event['tool_args'])}")
    if "tags" in event:
        tags = event["tags"]
        if type(tags) is not list or any(type(t) is not str for t in tags):
            _fail(line, "tags", "expected an array of strings")
    if "media" in event:
        media = event["media"]
        if type(media) is not dict or any(
            type(v) is not list or any(type(u) is not str for u in v) for v in media.values()
        ):
            _fail(line, "media", 'expected an object of string arrays, e.g. {"images": ["https://..."]}')
    if HARNESS_COMPACTION in event:
        mark = event[HARNESS_COMPACTION]
        if type(mark) is not dict or type(mark.get("harness")) is not str or not mark["harness"]:
            _fail(line, HARNESS_COMPACTION, 'expected an object with a "harness" name (the harness that compacted)')
        if TAG_COMPACT_SUMMARY not in event.get("tags", ()):
            _fail(line, HARNESS_COMPACTION, f"a harness compaction's summary must be tagged {TAG_COMPACT_SUMMARY!r}")
    if "usage" in event:
        usage = event["usage"]
        if type(usage) is not dict:
            _fail(line, "usage", f"expected an object, got {json_type(usage)}")
        for key in ("prompt_tokens", "completion_tokens"):
            value = usage.get(key)
            if value is not None and (type(value) is not int or value < 0):
                _fail(line, f"usage.{key}", f"expected a non-negative integer, got {json_type(value)}")
