"""``--from inspect``: inspect_ai eval logs (the JSON log format; convert a binary ``.eval`` log
with ``inspect log convert --to json`` first).

Input: a whole log ``{"version", "eval", "samples": [...]}`` — each sample is one conversation,
so a log of several samples (or epochs) is refused unless ``--split``, which names the agents by
sample ``id`` (``<id>.<epoch>`` when there are several epochs) — or one sample (an object with
``messages``), or a bare message list in Inspect's shape.

Messages (``ChatMessage``): ``system`` → ``user`` trace tagged ``system``; ``user`` → ``user``
trace; ``assistant`` → ``assistant`` trace for its text, an ``assistant`` trace tagged
``reasoning`` for each ``reasoning`` content part (its ``signature`` kept; ``redacted`` reasoning
is counted, not kept), then one ``tool_call`` per entry of ``tool_calls`` (``{id, function,
arguments}``: ``function`` is the tool name, ``arguments`` an object; a ``parse_error`` is kept as
``parse_error``); ``tool`` → ``tool_result`` for ``tool_call_id`` with ``function`` →
``tool_name``; an ``error`` object (``{type, message}``) makes it a ``tool_error`` with that
message (its type kept as ``error_type``). Content parts: ``text`` joined, ``image`` →
``media.images``, ``audio`` / ``video`` → ``media`` (a ``data:`` URL or path as Inspect wrote it);
other parts are counted. A message's ``model`` is kept as ``model`` (else the sample output's or
the eval's model, on the model's traces); the sample's ``output.usage`` goes on the first trace of
its last assistant message.

Ids: a message's own ``id`` when it has one (``in-<id>-<n>``), else a hash chain over the
messages seeded with the sample id and epoch.
"""

from __future__ import annotations

import orjson

from memcli.importers._common import (
    CallNames,
    KeyChain,
    Media,
    UniqueKeys,
    call_event,
    decoded,
    join_texts,
    nonempty,
    not_format,
    numbered,
    openai_usage,
    result_event,
    set_fields,
)
from memcli.models import TAG_REASONING, TAG_SYSTEM

ROLES = ("system", "user", "assistant", "tool")


def is_log(value) -> bool:
    return isinstance(value, dict) and isinstance(value.get("samples"), list) and (
        "eval" in value or "version" in value or "plan" in value)


def is_sample(value) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("messages"), list)
            and ("epoch" in value or "target" in value or "input" in value and "id" in value))


def _inspect_message(m) -> bool:
    """A message only Inspect writes: tool calls whose ``function`` is a name, a tool message
    with ``function`` or an ``error`` object, or typed content parts Inspect uses."""
    if not isinstance(m, dict) or m.get("role") not in ROLES:
        return False
    calls = m.get("tool_calls")
    if isinstance(calls, list) and any(isinstance(c, dict) and isinstance(c.get("function"), str) for c in calls):
        return True
    if m.get("role") == "tool" and (isinstance(m.get("function"), str) or isinstance(m.get("error"), dict)):
        return True
    content = m.get("content")
    return isinstance(content, list) and any(isinstance(p, dict) and p.get("type") == "reasoning" and "reasoning" in p
                                             for p in content)


class _Sample:
    def __init__(self, skipped, seed: str):
        self.skipped = skipped
        self.chain = KeyChain(seed)
        self.unique = UniqueKeys()
        self.call_names = CallNames()

    def content(self, content, media: Media, reasoning: list):
        if isinstance(content, str):
            return content
        if not isinstance(content, list):
            return ""
        texts = []
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif kind == "reasoning":
                if part.get("redacted") is True:
                    self.skipped["redacted reasoning parts"] += 1
                elif isinstance(part.get("reasoning"), str) and part["reasoning"]:
                    reasoning.append(part)
            elif kind in ("image", "audio", "video") and isinstance(part.get(kind), str) and part[kind]:
                {"image": media.images, "audio": media.audio, "video": media.video}[kind].append(part[kind])
            else:
                self.skipped[f"{kind or 'untyped'} content parts"] += 1
        return join_texts(texts)

    def message(self, line, message, where, usage=None):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            yield line, not_format(line, f'{where}an Inspect chat message (an object with "role")', message)
            return
        own = nonempty(message.get("id"))
        key = self.unique.unique(own) if own else self.chain.next(message)
        base = f"in-{key}"
        role = message["role"]
        if role not in ROLES:
            self.skipped[f"messages with role {role[:40]!r}"] += 1
            return
        media = Media()
        reasoning: list = []
        text = self.content(message.get("content"), media, reasoning)
        events: list[dict] = []
        if role in ("system", "user"):
            event = {"trace_type": "user", "content": text}
            if role == "system":
                event["tags"] = [TAG_SYSTEM]
            events.append(set_fields(event, media=media.as_field()))
        elif role == "assistant":
            for part in reasoning:
                events.append(set_fields({"trace_type": "assistant", "content": part["reasoning"], "tags": [TAG_REASONING]},
                                         signature=nonempty(part.get("signature"))))
            if text or media:
                events.append(set_fields({"trace_type": "assistant", "content": text}, media=media.as_field()))
            calls = message.get("tool_calls")
            for j, call in enumerate(calls if isinstance(calls, list) else ()):
                if not isinstance(call, dict):
                    yield line, not_format(line, f"{where}tool_calls[{j}] as an object", call)
                    return
                spec = call.get("function")
                name = nonempty(spec) or (nonempty(spec.get("name")) if isinstance(spec, dict) else None)
                if not name:
                    yield line, not_format(line, f"{where}tool_calls[{j}] with a function name", call)
                    return
                raw = call.get("arguments", spec.get("arguments") if isinstance(spec, dict) else None)
                call_id = nonempty(call.get("id")) or f"{base}-c{j}"
                self.call_names.add(call_id, name)
                events.append(set_fields(call_event("", call_id, name, raw), parse_error=nonempty(call.get("parse_error"))))
            if not events:
                self.skipped["empty assistant messages"] += 1
                return
            if usage:
                events[0]["usage"] = usage
        else:
            call_id = nonempty(message.get("tool_call_id"))
            if not call_id:
                yield line, not_format(line, f"{where}a tool message with a tool_call_id", message)
                return
            called = self.call_names.take(call_id)   # taken either way: the call is answered
            name = nonempty(message.get("function")) or called
            error = message.get("error")
            if isinstance(error, dict):
                error_text = nonempty(error.get("message")) or nonempty(error.get("type"))
                event = result_event("", call_id, error_text, error=True)
                set_fields(event, error_type=nonempty(error.get("type")))
            else:
                event = result_event("", call_id, text)
            events.append(set_fields(event, tool_name=name, media=media.as_field()))
        common = set_fields({}, model=nonempty(message.get("model")), message_id=own)
        for event in numbered(events, base, common):
            yield line, event


def sample_key(sample: dict) -> str | None:
    sample_id = sample.get("id")
    if isinstance(sample_id, str) and sample_id or type(sample_id) is int:
        return str(sample_id)
    return None


class InspectImporter:
    name = "inspect"
    source_event = "inspect_ai"

    def sniff(self, values) -> int:
        items = decoded(values)
        if not items:
            return 0
        first = items[0]
        if is_log(first):
            return 97
        if is_sample(first):
            return 90
        if all(isinstance(v, dict) and v.get("role") in ROLES for v in items[:20]) and any(_inspect_message(v) for v in items[:64]):
            return 94
        return 0

    def conversations(self, values):
        from memcli.importers.conversations import Conversation

        out = []
        run: list = []
        for line, value in values:
            if not isinstance(value, Exception) and is_log(value):
                samples = value["samples"]
                epochs = {orjson.dumps(s.get("epoch")) for s in samples if isinstance(s, dict)}
                for sample in samples:
                    key = sample_key(sample) if isinstance(sample, dict) else None
                    if key is not None and len(epochs) > 1:
                        key = f"{key}.{sample.get('epoch')}"
                    out.append(Conversation(len(out) + 1, key, line, [(line, {"__log__": value, "__sample__": sample})]))
            elif not isinstance(value, Exception) and is_sample(value):
                out.append(Conversation(len(out) + 1, sample_key(value), line, [(line, value)]))
            else:
                run.append((line, value))
        if run:
            out.insert(0, Conversation(1, None, run[0][0], run))
            out = [c._replace(index=i) for i, c in enumerate(out, 1)]
        return out

    def events(self, values, result):
        skipped = result.skipped
        bare: _Sample | None = None
        for line, value in values:
            if isinstance(value, Exception):
                yield line, value
                continue
            if isinstance(value, dict) and "__sample__" in value:
                yield from self._sample(line, value["__sample__"], value["__log__"], skipped)
            elif is_log(value):
                for sample in value["samples"]:
                    yield from self._sample(line, sample, value, skipped)
            elif is_sample(value):
                yield from self._sample(line, value, None, skipped)
            elif isinstance(value, dict) and isinstance(value.get("role"), str):
                bare = bare or _Sample(skipped, "")
                yield from bare.message(line, value, "")
            else:
                yield line, not_format(line, "an Inspect eval log, sample or chat message", value, guess_from=self.name)
                if bare is None:
                    return

    def _sample(self, line, sample, log, skipped):
        if not isinstance(sample, dict) or not isinstance(sample.get("messages"), list):
            yield line, not_format(line, 'an Inspect sample (an object with "messages")', sample)
            return
        key = sample_key(sample) or ""
        reader = _Sample(skipped, f"inspect:{key}:{sample.get('epoch')}")
        output = sample.get("output") if isinstance(sample.get("output"), dict) else {}
        usage = openai_usage(output.get("usage"))
        messages = sample["messages"]
        last_assistant = max((i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "assistant"),
                             default=None)
        model = nonempty(output.get("model"))
        if model is None and isinstance(log, dict) and isinstance(log.get("eval"), dict):
            model = nonempty(log["eval"].get("model"))
        for i, message in enumerate(messages):
            for item in reader.message(line, message, f"messages[{i}]: ", usage if i == last_assistant else None):
                if model and isinstance(item[1], dict) and item[1].get("trace_type") in ("assistant", "tool_call"):
                    item[1].setdefault("model", model)
                yield item


IMPORTER = InspectImporter()
