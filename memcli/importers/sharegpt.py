"""``--from sharegpt``: ShareGPT-style datasets, as LLaMA-Factory and most fine-tuning sets use.

Input: a JSON array (or NDJSON) of records, each one conversation (so a dataset of several
records is refused unless ``--split``; a record's ``id`` names its agent). A record holds its
turns in ``conversations`` (or ``messages``); each turn names its speaker in ``from`` (or
``role``) and its text in ``value`` (or ``content``; content parts carry ``text`` or ``value``).
A record may have ``system`` (the system prompt) and ``tools`` (a JSON string or list).

Speakers: ``human`` / ``user`` → ``user`` trace; ``gpt`` / ``assistant`` / ``model`` / ``bot`` →
``assistant`` trace; ``system`` → ``user`` trace tagged ``system``; ``function_call`` /
``tool_call`` → one ``tool_call`` per call in its value (``{"name", "arguments"}``, or a list of
them; a value that is not such JSON is kept verbatim as ``tool_args = {"input": ...}`` under the
name ``function_call``); ``observation`` / ``tool`` / ``function`` → a ``tool_result`` answering
the oldest unanswered call of the record (pairing by position: the format has no ids), or an
orphan result when no call is waiting (datasets where the model wrote the call as prose). The
record's ``tools`` are kept (parsed) as ``tools`` on its first trace. Other speakers are skipped
and counted.

Ids: ``sg-<key>-<n>`` from a hash chain over the record's turns, seeded with its ``id``.
"""

from __future__ import annotations

from collections import deque

import orjson

from memcli.importers._common import (
    KeyChain,
    call_event,
    decoded,
    join_texts,
    nonempty,
    not_format,
    result_event,
    set_fields,
)
from memcli.models import TAG_SYSTEM

USER = frozenset({"human", "user"})
ASSISTANT = frozenset({"gpt", "assistant", "model", "bot", "chatgpt"})
CALL = frozenset({"function_call", "tool_call", "function_calls", "tool_calls"})
RESULT = frozenset({"observation", "tool", "function", "tool_response", "ipython"})
SYSTEM = frozenset({"system"})
SPEAKERS = USER | ASSISTANT | CALL | RESULT | SYSTEM
TURN_KEYS = ("conversations", "messages")


def _turns(record) -> list | None:
    if not isinstance(record, dict):
        return None
    for key in TURN_KEYS:
        if isinstance(record.get(key), list):
            return record[key]
    return None


def _speaker(turn: dict):
    return nonempty(turn.get("from")) if "from" in turn else nonempty(turn.get("role"))


def is_sharegpt_turn(turn) -> bool:
    """A turn in ShareGPT's own spelling (``from`` or ``value`` somewhere): plain OpenAI
    ``{role, content}`` messages are left to the OpenAI importer."""
    if not isinstance(turn, dict):
        return False
    if "from" in turn and ("value" in turn or "content" in turn):
        return True
    if "role" in turn and "value" in turn:
        return True
    content = turn.get("content")
    return "role" in turn and isinstance(content, list) and any(isinstance(p, dict) and "value" in p for p in content)


def is_record(value) -> bool:
    turns = _turns(value)
    return turns is not None and bool(turns) and is_sharegpt_turn(turns[0])


def _text(turn: dict) -> str:
    value = turn.get("value", turn.get("content"))
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = []
        for part in value:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict):
                text = part.get("text", part.get("value"))
                if isinstance(text, str):
                    texts.append(text)
        return join_texts(texts)
    if value is None:
        return ""
    return orjson.dumps(value).decode()


def _calls(text: str):
    """[(name, arguments)] of a function_call turn, or None when it is not call JSON."""
    try:
        parsed = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    items = parsed if isinstance(parsed, list) else [parsed]
    out = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
            return None
        out.append((item["name"], item.get("arguments", item.get("parameters", item.get("args")))))
    return out or None


class ShareGPTImporter:
    name = "sharegpt"
    source_event = "sharegpt"

    def sniff(self, values) -> int:
        items = decoded(values)
        if not items:
            return 0
        records = [v for v in items[:20] if is_record(v)]
        if records and len(records) == len(items[:20]):
            return 95
        return 0

    def conversations(self, values):
        from memcli.importers.conversations import by_document

        return by_document(values, is_record)

    def events(self, values, result):
        for line, value in values:
            if isinstance(value, Exception):
                yield line, value
                continue
            turns = _turns(value)
            if turns is None:
                yield line, not_format(line, 'a ShareGPT record (an object with "conversations")', value,
                                       guess_from=self.name)
                continue
            yield from self._record(line, value, turns, result.skipped)

    def _record(self, line, record, turns, skipped):
        record_id = nonempty(record.get("id")) or (str(record["id"]) if type(record.get("id")) is int else "")
        chain = KeyChain(f"sharegpt:{record_id}" if record_id else "")
        pending: deque = deque()
        tools = record.get("tools")
        if isinstance(tools, str):
            try:
                tools = orjson.loads(tools) if tools.strip() else None
            except orjson.JSONDecodeError:
                pass
        first = True
        system = record.get("system")
        prelude = [{"from": "system", "value": system}] if isinstance(system, str) and system.strip() else []
        for i, turn in enumerate(prelude + list(turns)):
            where = f"turns[{i - len(prelude)}]: " if i >= len(prelude) else "system: "
            if not isinstance(turn, dict):
                yield line, not_format(line, f"{where}a ShareGPT turn (an object with \"from\" and \"value\")", turn)
                return
            speaker = _speaker(turn)
            key = chain.next(turn)
            base = f"sg-{key}"
            text = _text(turn)
            events: list[dict] = []
            if speaker in USER:
                events.append({"trace_type": "user", "content": text})
            elif speaker in SYSTEM:
                events.append({"trace_type": "user", "content": text, "tags": [TAG_SYSTEM]})
            elif speaker in ASSISTANT:
                if text:
                    events.append({"trace_type": "assistant", "content": text})
                for j, call in enumerate(turn.get("tool_calls") or ()):   # OpenAI-style calls on the turn
                    if isinstance(call, dict):
                        spec = call.get("function") if isinstance(call.get("function"), dict) else call
                        name = nonempty(spec.get("name"))
                        if name:
                            call_id = nonempty(call.get("id")) or f"{base}-c{j}"
                            pending.append(call_id)
                            events.append(call_event("", call_id, name, spec.get("arguments")))
            elif speaker in CALL:
                calls = _calls(text)
                if calls is None:
                    calls = [("function_call", text)]
                    skipped["function_call turns that are not call JSON (kept verbatim)"] += 1
                for j, (name, arguments) in enumerate(calls):
                    call_id = f"{base}-c{j}"
                    pending.append(call_id)
                    events.append(call_event("", call_id, name, arguments))
            elif speaker in RESULT:
                call_id = nonempty(turn.get("tool_call_id")) or (pending.popleft() if pending else f"{base}-orphan")
                if call_id in pending:
                    pending.remove(call_id)
                events.append(result_event("", call_id, text))
            else:
                skipped[f"turns from {str(speaker)[:40]!r}"] += 1
                continue
            for n, event in enumerate(events):
                event["id"] = f"{base}-{n}"
                if first:
                    set_fields(event, tools=tools if isinstance(tools, (list, dict)) else None)
                    first = False
                yield line, event


IMPORTER = ShareGPTImporter()
