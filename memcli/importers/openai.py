"""``--from openai``: an OpenAI Chat Completions message list.

Input: a JSON array of messages, NDJSON with one message per line, or a document holding the
list as ``messages`` (a whole request body; ``model`` is kept), ``history`` (a SWE-agent
trajectory) or ``traj`` (a tau-bench record). Several documents in a row (one conversation per
NDJSON line, or tau-bench's array of records) are several conversations: refused unless
``--split`` (:mod:`memcli.importers.conversations`), which reads each on its own.

Mapping:

* ``system`` / ``developer`` → a ``user`` trace tagged ``system`` / ``developer``: kept for
  export and snapshots, never a turn of its own;
* ``user`` → a ``user`` trace (opens a turn). Content parts: ``text`` parts joined by newlines,
  ``image_url`` → ``media.images``, ``input_audio`` → ``media.audio`` as a ``data:`` URL; other
  parts (``file``...) are skipped and counted;
* ``assistant`` → an ``assistant`` trace for its text (or its ``refusal``, tagged ``refusal``),
  a ``reasoning`` trace for ``reasoning_content`` (DeepSeek, vLLM) when present, then one
  ``tool_call`` per entry of ``tool_calls``. ``function.arguments`` is a JSON string: parsed into
  ``tool_args``; a string that is not a JSON object is kept verbatim (``tool_args =
  {"input": ...}``, ``tool_args_verbatim: true``). An assistant message with nothing in it is
  skipped and counted;
* ``tool`` → a ``tool_result`` for ``tool_call_id`` (SWE-agent's ``tool_call_ids`` list gives one
  result per id), ``name`` → ``tool_name``. Chat Completions has no error flag, so results are
  never errors unless the message says ``is_error: true`` (memcli does not guess from the text);
* the legacy ``function_call`` / ``role: "function"`` form has no ids: each call gets the id
  ``fc-<key>`` and a ``function`` message answers the oldest unanswered legacy call with its
  name (else the oldest one) — pairing by position;
* ``name`` on a message is kept as ``name``, ``model`` as ``model``, ``usage`` as ``usage``,
  a ``timestamp`` / ``created_at`` / ``created`` as ``ts``; roles the importer does not know are
  skipped and counted.

Ids: chat messages have no ids, so each message gets the next key of a hash chain over the
messages (:mod:`memcli.importers._common`) and its traces are ``oa-<key>-0``, ``oa-<key>-1``...
Re-importing a file adds nothing; importing it again after it grew adds only the new messages;
another conversation gets other ids (unless it starts with the very same messages).
"""

from __future__ import annotations

from collections import deque

from memcli.errors import InputError
from memcli.importers._common import (
    CallNames,
    Clock,
    KeyChain,
    Media,
    call_event,
    data_url,
    decoded,
    join_texts,
    nonempty,
    not_format,
    numbered,
    openai_usage,
    result_event,
    set_fields,
    string,
    take_named,
)
from memcli.models import TAG_DEVELOPER, TAG_REASONING, TAG_SYSTEM

ROLES = ("system", "developer", "user", "assistant", "tool", "function")
_OPENAI_ONLY_ROLES = frozenset({"system", "developer", "tool", "function"})
_OPENAI_PARTS = frozenset({"image_url", "input_audio", "file", "refusal"})
TAG_REFUSAL = "refusal"


def _looks_like_message(value) -> bool:
    return isinstance(value, dict) and value.get("role") in ROLES and (
        "content" in value or "tool_calls" in value or "function_call" in value)


def _strong(messages) -> bool:
    for m in messages:
        if not isinstance(m, dict):
            continue
        if string(m.get("role")) in _OPENAI_ONLY_ROLES or "tool_calls" in m or "function_call" in m:
            return True
        content = m.get("content")
        if isinstance(content, list) and any(isinstance(p, dict) and string(p.get("type")) in _OPENAI_PARTS for p in content):
            return True
    return False


CONTAINER_KEYS = ("messages", "history", "traj")  # request bodies, SWE-agent, tau-bench records


def _messages_of(doc: dict):
    for key in CONTAINER_KEYS:
        if isinstance(doc.get(key), list):
            return doc[key]
    return None


class _Conversation:
    def __init__(self, result):
        self.skipped = result.skipped
        self.chain = KeyChain()
        self.clock = Clock(self.skipped)
        self.call_names = CallNames()     # tool_call_id -> names of unanswered calls
        self.legacy_calls: deque = deque()          # (call_id, name) of unanswered function_calls

    # ------------------------------------------------------------------ content
    def content(self, content, line, where):
        """(text, Media) of a message's content; InputError when it is neither a string nor parts."""
        media = Media()
        if content is None:
            return "", media
        if isinstance(content, str):
            return content, media
        if isinstance(content, dict):
            content = [content]
        if not isinstance(content, list):
            raise not_format(line, f"{where}message content as a string or a list of parts", content)
        texts = []
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind in ("text", "input_text", "output_text", "refusal"):
                text = part.get(kind if kind == "refusal" else "text")
                if isinstance(text, str):
                    texts.append(text)
                else:
                    self.skipped[f"{kind} parts without text"] += 1
            elif kind in ("image_url", "input_image"):
                image = part.get("image_url")
                url = image.get("url") if isinstance(image, dict) else image
                if isinstance(url, str) and url:
                    media.images.append(url)
                else:
                    self.skipped["image parts without a URL"] += 1
            elif kind == "input_audio":
                audio = part.get("input_audio") if isinstance(part.get("input_audio"), dict) else {}
                fmt = audio.get("format") if isinstance(audio.get("format"), str) else "wav"
                url = data_url(f"audio/{fmt}", audio.get("data"))
                if url:
                    media.audio.append(url)
                else:
                    self.skipped["audio parts without data"] += 1
            elif isinstance(part, str):
                self.skipped["content parts that are not objects"] += 1
            else:
                self.skipped[f"{kind or 'untyped'} parts"] += 1
        return join_texts(texts), media


    # ------------------------------------------------------------------ messages
    def message(self, line, message, where, model=None):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            yield line, not_format(line, f'{where}an OpenAI chat message (an object with "role")', message)
            return
        key = self.chain.next(message)
        base = f"oa-{key}"
        role = message["role"]
        if role not in ROLES:
            self.skipped[f"messages with role {role[:40]!r}"] += 1
            return
        try:
            text, media = self.content(message.get("content"), line, where)
        except InputError as exc:
            yield line, exc
            return
        common: dict = {}
        ts = None
        for field in ("timestamp", "created_at", "created", "ts"):
            if message.get(field) is not None:
                ts = self.clock.read(message[field])
                break
        set_fields(common, ts=ts, model=message.get("model") if isinstance(message.get("model"), str) else model,
                   message_id=message.get("id") if isinstance(message.get("id"), str) else None,
                   name=message.get("name") if isinstance(message.get("name"), str) and role not in ("tool", "function") else None)
        events: list[dict] = []
        if role in ("system", "developer", "user"):
            event = {"trace_type": "user", "content": text}
            if role != "user":
                event["tags"] = [TAG_SYSTEM if role == "system" else TAG_DEVELOPER]
            events.append(set_fields(event, media=media.as_field()))
        elif role == "assistant":
            reasoning = message.get("reasoning_content")
            if isinstance(reasoning, str) and reasoning:
                events.append({"trace_type": "assistant", "content": reasoning, "tags": [TAG_REASONING]})
            refusal = message.get("refusal")
            if not text and isinstance(refusal, str) and refusal:
                events.append({"trace_type": "assistant", "content": refusal, "tags": [TAG_REFUSAL]})
            elif text or media:
                events.append(set_fields({"trace_type": "assistant", "content": text}, media=media.as_field()))
            error = self._calls(message, key, events, line, where)
            if error is not None:
                yield line, error
                return
            if not events:
                self.skipped["empty assistant messages"] += 1
                return
            usage = openai_usage(message.get("usage"))
            if usage:
                events[0]["usage"] = usage
        elif role == "tool":
            ids = message.get("tool_call_id")
            ids = [ids] if isinstance(ids, str) and ids else message.get("tool_call_ids")
            if not isinstance(ids, list) or not ids or not all(isinstance(i, str) and i for i in ids):
                yield line, not_format(line, f"{where}a tool message with a tool_call_id", message)
                return
            error = message.get("is_error") is True
            for call_id in ids:
                name = self.call_names.take(call_id)
                if isinstance(message.get("name"), str) and message["name"]:
                    name = message["name"]
                event = result_event("", call_id, text, error=error)
                events.append(set_fields(event, tool_name=name, media=media.as_field()))
        else:  # legacy "function" result: answers the oldest unanswered function_call (by name)
            name = message.get("name") if isinstance(message.get("name"), str) else None
            call_id = take_named(self.legacy_calls, name)
            if call_id is None:
                call_id = f"fc-{key}"  # nobody called it: an orphan result
            events.append(set_fields(result_event("", call_id, text), tool_name=name))
        for event in numbered(events, base, common):
            yield line, event

    def _calls(self, message, key, events, line, where):
        calls = message.get("tool_calls")
        if calls is not None:
            if not isinstance(calls, list):
                return not_format(line, f"{where}tool_calls as a list", calls)
            for j, call in enumerate(calls):
                if not isinstance(call, dict):
                    return not_format(line, f"{where}tool_calls[{j}] as an object", call)
                call_id = nonempty(call.get("id")) or f"call-{key}-{j}"
                if call.get("type") == "custom" or isinstance(call.get("custom"), dict):
                    spec = call.get("custom") if isinstance(call.get("custom"), dict) else {}
                    raw, kind = spec.get("input"), "custom"
                else:
                    spec = call.get("function") if isinstance(call.get("function"), dict) else {}
                    raw, kind = spec.get("arguments"), None
                name = spec.get("name")
                if not isinstance(name, str) or not name:
                    return not_format(line, f"{where}tool_calls[{j}] with a function name", call)
                self.call_names.add(call_id, name)
                event = call_event("", call_id, name, raw)
                if kind == "custom":
                    event["tool_kind"] = "custom"
                    if not event.get("tool_args_verbatim") and isinstance(raw, str):
                        event["tool_args"], event["tool_args_verbatim"] = {"input": raw}, True
                events.append(event)
        legacy = message.get("function_call")
        if legacy is not None:
            if not isinstance(legacy, dict) or not isinstance(legacy.get("name"), str) or not legacy["name"]:
                return not_format(line, f"{where}function_call with a name", legacy)
            call_id = f"fc-{key}"
            self.legacy_calls.append((call_id, legacy["name"]))
            events.append(call_event("", call_id, legacy["name"], legacy.get("arguments")))
        return None


def _is_document(value) -> bool:
    return isinstance(value, dict) and "role" not in value and _messages_of(value) is not None


class OpenAIImporter:
    name = "openai"
    source_event = "openai.chat"

    def conversations(self, values):
        """One conversation per document (request body, trajectory, tau-bench record); a run of
        bare messages is one conversation."""
        from memcli.importers.conversations import by_document

        return by_document(values, _is_document)

    def sniff(self, values) -> int:
        items = decoded(values)
        if not items:
            return 0
        first = items[0]
        if isinstance(first, dict) and "role" not in first and _messages_of(first) is not None:
            if "system" in first and "messages" in first:
                return 0  # Anthropic keeps the system prompt outside the messages
            messages = _messages_of(first)
            if not messages or not all(_looks_like_message(m) for m in messages[:20]):
                return 0
            return 91 if _strong(messages[:50]) else 55
        if not all(_looks_like_message(v) for v in items[:20]):
            return 0
        return 91 if _strong(items) else 55

    def events(self, values, result):
        conversation = _Conversation(result)
        started = False
        for line, value in values:
            if isinstance(value, Exception):
                yield line, value
                continue
            messages = _messages_of(value) if isinstance(value, dict) and "role" not in value else None
            if not started and messages is None and not (isinstance(value, dict) and isinstance(value.get("role"), str)):
                # the input does not start like a message list: one error, not one per line
                yield line, not_format(line, 'an OpenAI chat message (an object with "role")', value, guess_from=self.name)
                return
            started = True
            if messages is not None:
                model = value.get("model") if isinstance(value.get("model"), str) else None
                field = next(k for k in CONTAINER_KEYS if isinstance(value.get(k), list))
                for i, message in enumerate(messages):
                    yield from conversation.message(line, message, f"{field}[{i}]: ", model)
            else:
                yield from conversation.message(line, value, "")


IMPORTER = OpenAIImporter()
