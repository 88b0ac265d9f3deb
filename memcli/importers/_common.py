"""Pieces the transcript importers share: deterministic ids, timestamps, text, media, tool
arguments, provider usage, and the rules they all follow.

Ids (the invariant that makes re-importing idempotent). Every trace an importer emits has an id
derived only from the source, never from the clock or a counter of the store:

* where the source has a stable id, the trace id is built from it (Claude Code line ``uuid``);
* otherwise from a *hash chain*: ``key_i = BLAKE2b-96(key_{i-1} || canonical JSON of item i)``,
  seeded with the source's session id where it has one. The same file gives the same keys; a
  file that grew keeps the keys of its old items; a different conversation gets different keys
  (two transcripts that begin with the very same items share those items — they are one history
  that forked). Canonical JSON sorts object keys, so re-serializing a file does not change ids.
* one source item can become several traces (text, tool calls, ...): they get ``-0``, ``-1``...

An id that repeats inside one file (hand-edited or concatenated files) gets ``~2``, ``~3``... so
no trace of the file is lost as "already present"; the counting restarts with each import of the
file, so it is deterministic too.

Tool arguments: a JSON object (or a string holding one) becomes ``tool_args``. Anything else —
Codex free-form tool input, a string that is not JSON or not an object — is kept verbatim as
``tool_args = {"input": <the string>}`` with ``tool_args_verbatim: true``, so renderers always
see an object and an exporter can give back the exact original string.

Tool errors: a result the source flags as an error gets ``tool_error`` = its text and no
``tool_result`` (the AutoByteus convention); an error with no text gets ``"(no error message)"``.

Provider usage goes on the first trace of the model response it belongs to (its reasoning or
text; a ``tool_call`` when the response is only tool calls), once per response.

Extra fields the importers write (unknown to AutoByteus, kept verbatim by both): ``message_id``
(the source's message id), ``model``, ``session_id``, ``agent_id`` (Claude Code subagent),
``signature`` (Anthropic thinking), ``phase`` (Codex assistant messages), ``name`` (OpenAI message
name), ``tool_kind`` (``custom``, ``local_shell``, ``server_tool_use``... for calls that are not
plain function calls), ``tool_args_verbatim``, ``local_images`` (Codex image paths).
Importers never set ``turn_id`` or ``seq``: the shared linker does, in the order events come.
"""

from __future__ import annotations

from collections import Counter

import orjson

try:  # the BLAKE2 module alone: ``hashlib`` would also load OpenSSL (~4 ms per memcli start)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - other Python implementations
    from hashlib import blake2b

from memcli.errors import InputError
from memcli.events import json_type, parse_timestamp

NO_ERROR_MESSAGE = "(no error message)"
# with ``context``: a prompt another agent sent (a Codex subagent's, a Copilot CLI ``agent-*`` source)
TAG_INTER_AGENT = "inter_agent"
_CANONICAL = orjson.OPT_SORT_KEYS


class ReadWhole(Exception):
    """Raised by a reader resumed from a carry too short for what it reads (Gemini CLI's: more
    messages were read before it than its carry keeps, and it meets copies of ones it no longer
    knows — a re-recording of the whole history, a compression keeping more than the carry
    holds), before it yields anything: ``memcli sync`` then reads the file again from its start
    with no carry, as one import does (:func:`memcli.sync.engine._read_file`)."""


def item_key(previous: str, item) -> str:
    """The next key of a hash chain: 24 hex digits (96 bits)."""
    h = blake2b(previous.encode("utf-8", "surrogatepass"), digest_size=12)
    h.update(b"\x00")
    try:
        h.update(orjson.dumps(item, option=_CANONICAL))
    except TypeError:  # not JSON-serializable cannot come from a parser; be safe anyway
        h.update(repr(item).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


class KeyChain:
    """Deterministic keys for items that have no id of their own (see the module docstring)."""

    __slots__ = ("key",)

    def __init__(self, seed: str = ""):
        self.key = seed

    def next(self, item) -> str:
        self.key = item_key(self.key, item)
        return self.key


class UniqueKeys:
    """Makes keys unique within one import: the n-th repeat of a key becomes ``key~n``."""

    __slots__ = ("seen",)

    def __init__(self):
        self.seen: dict[str, int] = {}

    def unique(self, key: str) -> str:
        n = self.seen.get(key, 0) + 1
        self.seen[key] = n
        return key if n == 1 else f"{key}~{n}"


class Clock:
    """Timestamps of a transcript as epoch seconds. A timestamp that cannot be read is replaced by
    the previous readable one (so traces keep their order) and counted; a missing one is left out
    (memcli then stamps the import time)."""

    __slots__ = ("last", "skipped")

    def __init__(self, skipped: Counter):
        self.last: float | None = None
        self.skipped = skipped

    def read(self, value) -> float | None:
        if value is None:
            return None
        if isinstance(value, (int, float, str)) and not isinstance(value, bool):
            try:
                ts = parse_timestamp(value)
            except InputError:
                pass
            else:
                self.last = ts
                return ts
        self.skipped["unreadable timestamps (the previous one was used)"] += 1
        return self.last


def describe(value) -> str:
    """How a JSON value looks, for error messages: ``array``, ``an object with keys a, b``..."""
    if isinstance(value, dict):
        if not value:
            return "an empty object"
        keys = list(value)[:5]
        return "an object with keys " + ", ".join(str(k) for k in keys) + (", ..." if len(value) > 5 else "")
    return json_type(value)


def not_format(line: int, expected: str, value, hint: str | None = None, *, guess_from: str | None = None) -> InputError:
    """``line N: expected X, got Y``; with ``guess_from`` (the format that was asked for) it adds
    which other format the value looks like, if any."""
    message = f"expected {expected}, got {describe(value)}"
    if guess_from is not None:
        other = guess_format(line, value, exclude=guess_from)
        if other is not None:
            from memcli.importers import title

            message += f"; it looks like {title(other)} (--from {other})"
    return InputError(message, line=line, hint=hint)


def guess_format(line: int, value, exclude: str) -> str | None:
    from memcli.errors import UsageError
    from memcli.importers import FORMATS, get_importer

    best, best_score = None, 49
    for name in FORMATS:
        if name == exclude:
            continue
        try:
            score = get_importer(name).sniff([(line, value)])
        except UsageError:
            continue
        if score > best_score:
            best, best_score = name, score
    return best


def data_url(media_type, data) -> str | None:
    if not isinstance(data, str) or not data:
        return None
    if not isinstance(media_type, str) or not media_type:
        media_type = "application/octet-stream"
    return f"data:{media_type};base64,{data}"


class Media:
    """Collects AutoByteus-shaped media: ``{"images": [...], "audio": [...], "video": [...]}``."""

    __slots__ = ("images", "audio", "video")

    def __init__(self):
        self.images: list[str] = []
        self.audio: list[str] = []
        self.video: list[str] = []

    def __bool__(self) -> bool:
        return bool(self.images or self.audio or self.video)

    def as_field(self) -> dict | None:
        out = {}
        if self.images:
            out["images"] = self.images
        if self.audio:
            out["audio"] = self.audio
        if self.video:
            out["video"] = self.video
        return out or None


def tool_arguments(raw) -> tuple[dict, bool]:
    """(``tool_args``, verbatim) for a call's arguments as the source gives them (module docstring)."""
    if isinstance(raw, dict):
        return raw, False
    if raw is None:
        return {}, False
    if isinstance(raw, str):
        if not raw.strip():
            return {}, False
        if raw.lstrip()[:1] == "{":
            try:
                parsed = orjson.loads(raw)
            except orjson.JSONDecodeError:
                parsed = None
            if isinstance(parsed, dict):
                return parsed, False
        return {"input": raw}, True
    return {"input": orjson.dumps(raw).decode()}, True


def call_event(trace_id: str, call_id: str, name: str, raw_args, **fields) -> dict:
    args, verbatim = tool_arguments(raw_args)
    event = {"id": trace_id, "trace_type": "tool_call", "content": "", "tool_call_id": call_id,
             "tool_name": name, "tool_args": args}
    if verbatim:
        event["tool_args_verbatim"] = True
    event.update(fields)
    return event


def result_event(trace_id: str, call_id: str, text, *, error: bool = False, **fields) -> dict:
    """A tool_result event; ``text`` is what the tool returned (any JSON, usually a string)."""
    event = {"id": trace_id, "trace_type": "tool_result", "content": "", "tool_call_id": call_id}
    if error:
        event["tool_error"] = _error_text(text)
    else:
        event["tool_result"] = text
    event.update(fields)
    return event


def _error_text(value) -> str:
    if isinstance(value, str):
        return value if value.strip() else NO_ERROR_MESSAGE
    if value is None or value == [] or value == {}:
        return NO_ERROR_MESSAGE
    return orjson.dumps(value).decode()


def harness_compaction(harness: str, metadata) -> dict:
    """What a compact-summary trace says of the harness compaction that wrote it (kept in the
    trace's ``harness_compaction`` field): the harness, and when the transcript says them, the
    trigger (``auto``/``manual``), the prompt tokens before it and after it, and what the user
    told the compaction (Claude Code's ``userContext``: a manual ``/compact``'s instructions, a
    summarize-from-here note) as ``user_context``."""
    out: dict = {"harness": harness}
    if isinstance(metadata, dict):
        trigger = metadata.get("trigger")
        if isinstance(trigger, str) and trigger:
            out["trigger"] = trigger
        for key, camel, snake in (("pre_tokens", "preTokens", "pre_tokens"), ("post_tokens", "postTokens", "post_tokens")):
            tokens = metadata.get(camel, metadata.get(snake))
            if _int(tokens) is not None:
                out[key] = tokens
        context = metadata.get("userContext", metadata.get("user_context"))
        if isinstance(context, str) and context.strip():
            out["user_context"] = context
    return out


def set_fields(event: dict, **fields) -> dict:
    """Set the fields that have a value (``None``, empty lists and dicts are left out)."""
    for key, value in fields.items():
        if value is None or value == [] or value == {}:
            continue
        event[key] = value
    return event


def _int(value) -> int | None:
    return value if type(value) is int and value >= 0 else None


def anthropic_usage(usage) -> dict | None:
    """Anthropic ``usage`` → memcli ``usage``: ``prompt_tokens`` = input + cache_creation_input +
    cache_read_input tokens (everything the model read), ``completion_tokens`` = output tokens;
    the provider's own integer fields are kept alongside."""
    if not isinstance(usage, dict):
        return None
    raw = {k: v for k, v in usage.items() if _int(v) is not None}
    if "input_tokens" not in raw and "output_tokens" not in raw:
        return None
    out = {}
    if "input_tokens" in raw:
        out["prompt_tokens"] = (raw["input_tokens"] + raw.get("cache_creation_input_tokens", 0)
                                + raw.get("cache_read_input_tokens", 0))
    if "output_tokens" in raw:
        out["completion_tokens"] = raw["output_tokens"]
    out.update(raw)
    return out


def openai_usage(usage) -> dict | None:
    """OpenAI ``usage`` (Chat Completions or Responses names) → memcli ``usage``."""
    return named_usage(usage, ("prompt_tokens", "input_tokens"), ("completion_tokens", "output_tokens"))


def named_usage(usage, prompt_keys: tuple, completion_keys: tuple) -> dict | None:
    """A provider's usage object → memcli ``usage``: ``prompt_tokens`` / ``completion_tokens``
    from the first of their keys present, the provider's other token counts kept beside them."""
    if not isinstance(usage, dict):
        return None
    raw = {k: v for k, v in usage.items() if _int(v) is not None}
    out = {}
    prompt = next((raw[k] for k in prompt_keys if k in raw), None)
    completion = next((raw[k] for k in completion_keys if k in raw), None)
    if prompt is not None:
        out["prompt_tokens"] = prompt
    if completion is not None:
        out["completion_tokens"] = completion
    if not out:
        return None
    for k, v in raw.items():
        out.setdefault(k, v)
    return out


def hold_torn_tail(values, skipped: Counter):
    """Pass ``(line, value)`` pairs through, except that a line that is not JSON *at the very end*
    of the input is skipped and counted: a transcript that is still being written ends in a
    half-written line, and the next import picks it up once complete. A bad line anywhere else
    is passed on (and rejects the input as usual)."""
    held = None
    for item in values:
        if held is not None:
            yield held
            held = None
        if isinstance(item[1], InputError):
            held = item
            continue
        yield item
    if held is not None:
        skipped["incomplete last line (still being written?)"] += 1


def numbered(events: list[dict], base: str, common: dict) -> list[dict]:
    """The traces one source item became, with their ids ``<base>-0``, ``<base>-1``... and the
    item's ``common`` fields where a trace does not set them itself."""
    for n, event in enumerate(events):
        event["id"] = f"{base}-{n}"
        for field, value in common.items():
            event.setdefault(field, value)
    return events


def take_named(pending, name: str | None) -> str | None:
    """The id a result that names only its tool answers: of the unanswered ``(call id, tool
    name)`` pairs in ``pending`` (a deque, oldest first), the oldest with that name, else the
    oldest; it is removed. None when nothing is pending (an orphan)."""
    for i, (call_id, pending_name) in enumerate(pending):
        if pending_name == name:
            del pending[i]
            return call_id
    return pending.popleft()[0] if pending else None


def decoded(values) -> list:
    """The values of the ``(line, value)`` pairs a sniffer is shown that parsed (a value that
    did not parse is its exception): what every ``sniff`` scores."""
    return [v for _, v in values if not isinstance(v, Exception)]


def string(value) -> str | None:
    """``value`` if it is a string, else None: for fields whose type the input may get wrong
    (a list where a string belongs would make a set lookup raise)."""
    return value if isinstance(value, str) else None


def join_texts(texts: list[str]) -> str:
    return "\n".join(t for t in texts if t)


class CallNames:
    """The tool name of each unanswered call, by call id, first-in-first-out (transcripts reuse
    ids): a result that does not repeat its tool's name gets it from its call."""

    def __init__(self) -> None:
        self._names: dict = {}

    def add(self, call_id: str, name) -> None:
        from collections import deque

        self._names.setdefault(call_id, deque()).append(name)

    def to_json(self) -> list:
        return [[call_id, list(names)] for call_id, names in self._names.items()]

    @classmethod
    def from_json(cls, value) -> "CallNames":
        out = cls()
        for call_id, names in value if isinstance(value, list) else ():
            for name in names:
                out.add(call_id, name)
        return out

    def take(self, call_id):
        queue = self._names.get(call_id)
        if not queue:
            return None
        name = queue.popleft()
        if not queue:
            del self._names[call_id]
        return name


def nonempty(value) -> str | None:
    """``value`` if it is a non-empty string, else None: for ids and names, where ``""`` means
    absent (an empty id is not a valid trace id)."""
    return value if isinstance(value, str) and value else None


class ExportImporter:
    """An importer of a data export's ``conversations.json`` (ChatGPT, Claude.ai): a JSON array of
    conversation objects, one agent each with ``--split``. A subclass names its format
    (``name``, ``source_event``), what a conversation looks like (``is_conversation``,
    ``conversation_id``, ``expected`` for the error, ``title_key``) and maps one conversation
    (:meth:`conversation_events`); detection, splitting and the title are the same for both."""

    name = ""
    source_event = ""
    expected = ""
    title_key = "title"

    @staticmethod
    def is_conversation(value) -> bool:
        raise NotImplementedError

    @staticmethod
    def conversation_id(conversation: dict) -> str | None:
        raise NotImplementedError

    def conversation_events(self, line: int, conversation: dict, skipped):
        raise NotImplementedError

    def sniff(self, values) -> int:
        items = decoded(values)
        return 97 if items and self.is_conversation(items[0]) else 0

    def conversations(self, values):
        from memcli.importers.conversations import by_document

        return by_document(values, self.is_conversation, self.conversation_id)

    def events(self, values, result):
        for line, value in values:
            if isinstance(value, Exception):
                yield line, value
                continue
            if not self.is_conversation(value):
                yield line, not_format(line, self.expected, value, guess_from=self.name)
                continue
            title = nonempty(value.get(self.title_key))
            if title:
                result.meta["ai_title"] = title
            yield from self.conversation_events(line, value, result.skipped)
