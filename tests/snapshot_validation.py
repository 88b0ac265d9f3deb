"""Checks that a rendered payload is one its provider accepts.

Two layers, both raising AssertionError (or pydantic's ValidationError) with the offending place:

* the official SDK request types (test-only dependencies ``openai``, ``anthropic``,
  ``google-genai``): the whole payload is validated as the SDK's create-params type through a
  pydantic ``TypeAdapter`` (Gemini: ``types.Content`` models, which forbid unknown fields). The
  OpenAI/Anthropic params are TypedDicts, which silently drop unknown keys and validate lists
  lazily, so the validated value is materialized and must equal the payload: an unknown or
  misspelled key fails too;
* the ordering rules no type can express: every call is answered exactly once, right after the
  message that made it; no result without its call; call ids unique; Anthropic roles alternate
  starting with the user, tool results first in their message, no blank text; Gemini roles
  user/model with the response turn answering every call of the call turn, in order.
"""

from __future__ import annotations

import re
from functools import lru_cache

import orjson

ANTHROPIC_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
# an image the OpenAI APIs can fetch: a web URL or a base64 data: URL of a type they read
OPENAI_IMAGE = re.compile(r"https?://\S+|data:image/(jpeg|png|gif|webp);base64,[A-Za-z0-9+/=]*")
GEMINI_URI = re.compile(r"(https?|gs)://\S+")


def _walk(value, key=None):
    """(key, value) for every value in a JSON tree."""
    yield key, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _walk(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v, key)


def _check_openai_images(payload) -> None:
    for key, value in _walk(payload):
        if key == "image_url":
            url = value["url"] if isinstance(value, dict) else value
            assert OPENAI_IMAGE.fullmatch(url), f"an image URL OpenAI cannot read: {url[:60]}"


@lru_cache(maxsize=None)
def _adapter(kind: str):
    from pydantic import TypeAdapter

    if kind == "openai-chat":
        from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming as T
    elif kind == "openai-responses":
        from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming as T
    elif kind == "anthropic":
        from anthropic.types.message_create_params import MessageCreateParamsNonStreaming as T
    else:
        raise ValueError(kind)
    return TypeAdapter(T)


def _materialize(value):
    if isinstance(value, dict):
        return {k: _materialize(v) for k, v in value.items()}
    if isinstance(value, (str, bytes, int, float, bool)) or value is None:
        return value
    try:
        return [_materialize(v) for v in value]
    except TypeError:
        return value


def _typed_dict_check(kind: str, payload: dict, extra: dict) -> None:
    request = {**extra, **payload}
    validated = _materialize(_adapter(kind).validate_python(request))
    assert validated == request, f"{kind}: fields the SDK type does not know: " + _diff(request, validated)


def _diff(a, b, path="$") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in a:
            if key not in b:
                return f"{path}.{key}"
            found = _diff(a[key], b[key], f"{path}.{key}")
            if found:
                return found
        return ""
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b)):
            found = _diff(x, y, f"{path}[{i}]")
            if found:
                return found
        return "" if len(a) == len(b) else path
    return "" if a == b else path


# --------------------------------------------------------------------------- per provider

def check_openai_chat(payload: dict) -> None:
    assert set(payload) == {"messages"}
    _typed_dict_check("openai-chat", payload, {"model": "gpt-4o"})
    _check_openai_images(payload)
    messages = payload["messages"]
    seen_ids = set()
    i = 0
    while i < len(messages):
        m = messages[i]
        assert m["role"] != "tool", f"messages[{i}]: a tool message not right after its assistant message"
        if m["role"] == "assistant" and m.get("tool_calls"):
            ids = [c["id"] for c in m["tool_calls"]]
            assert len(set(ids)) == len(ids) and not seen_ids & set(ids), f"messages[{i}]: call ids reused: {ids}"
            seen_ids.update(ids)
            for c in m["tool_calls"]:
                assert isinstance(orjson.loads(c["function"]["arguments"]), dict)
            answered = []
            j = i + 1
            while j < len(messages) and messages[j]["role"] == "tool":
                answered.append(messages[j]["tool_call_id"])
                j += 1
            assert answered == ids, f"messages[{i}]: calls {ids} answered by {answered}"
            i = j
            continue
        if m["role"] == "assistant":
            assert m.get("content"), f"messages[{i}]: an empty assistant message"
        i += 1


def check_openai_responses(payload: dict) -> None:
    assert set(payload) <= {"instructions", "input"}
    _typed_dict_check("openai-responses", payload, {"model": "gpt-4o"})
    _check_openai_images(payload)
    items = payload["input"]
    seen = set()
    open_calls: list[str] = []
    for i, item in enumerate(items):
        t = item.get("type")
        if t == "function_call":
            assert item["call_id"] not in seen, f"input[{i}]: call id reused"
            assert isinstance(orjson.loads(item["arguments"]), dict)
            seen.add(item["call_id"])
            open_calls.append(item["call_id"])
        elif t == "function_call_output":
            assert open_calls and open_calls[0] == item["call_id"], \
                f"input[{i}]: output for {item['call_id']} but the open calls are {open_calls}"
            open_calls.pop(0)
        else:
            assert t == "message", f"input[{i}]: unexpected item type {t}"
            assert not open_calls, f"input[{i}]: a message between calls {open_calls} and their outputs"
    assert not open_calls, f"calls without output at the end: {open_calls}"


def check_anthropic(payload: dict) -> None:
    assert set(payload) <= {"system", "messages", "tools"}  # tools: `snapshot --memory-tool`
    if "system" in payload:
        assert payload["system"].strip()
    _typed_dict_check("anthropic", payload, {"model": "claude-sonnet-4-5", "max_tokens": 1024})
    for key, value in _walk(payload):
        if key == "source" and value.get("type") == "url":
            assert re.fullmatch(r"https?://\S+", value["url"]), f"an image URL Anthropic cannot read: {value['url']}"
    messages = payload["messages"]
    seen = set()
    previous_calls: list[str] = []
    for i, m in enumerate(messages):
        assert m["role"] == ("user" if i % 2 == 0 else "assistant"), f"messages[{i}]: roles must alternate from user"
        blocks = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        assert blocks, f"messages[{i}]: empty content"
        for b in blocks:
            if b["type"] == "text":
                assert b["text"].strip(), f"messages[{i}]: blank text"
        results = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
        if m["role"] == "user":
            leading = [b["tool_use_id"] for b in blocks[:len(results)] if b["type"] == "tool_result"]
            assert leading == results, f"messages[{i}]: tool_result blocks must come first"
            assert results == previous_calls, f"messages[{i}]: calls {previous_calls} answered by {results}"
            previous_calls = []
        else:
            assert not results
            calls = [b["id"] for b in blocks if b["type"] == "tool_use"]
            for c in calls:
                assert ANTHROPIC_ID.fullmatch(c) and c not in seen, f"messages[{i}]: bad or reused id {c}"
                seen.add(c)
            types = [b["type"] for b in blocks]
            assert "tool_use" not in types or types.index("tool_use") == len(types) - len(calls)
            previous_calls = calls
    assert not previous_calls, f"calls without results at the end: {previous_calls}"


def check_gemini(payload: dict) -> None:
    from google.genai import types

    assert set(payload) <= {"system_instruction", "contents"}
    for key, value in _walk(payload):
        if key == "file_uri":
            assert GEMINI_URI.fullmatch(value), f"a file URI Gemini cannot read: {value}"
    if "system_instruction" in payload:
        types.Content.model_validate_json(orjson.dumps(payload["system_instruction"]))
    contents = payload["contents"]
    seen = set()
    previous_calls: list[tuple[str, str | None]] = []
    for i, c in enumerate(contents):
        content = types.Content.model_validate_json(orjson.dumps(c))
        assert c["role"] in ("user", "model")
        assert c["parts"], f"contents[{i}]: no parts"
        if i == 0:
            assert c["role"] == "user", "contents[0] must be from the user"
        calls = [(p.function_call.name, p.function_call.id) for p in content.parts if p.function_call]
        responses = [(p.function_response.name, p.function_response.id) for p in content.parts if p.function_response]
        if previous_calls:
            assert c["role"] == "user" and responses == previous_calls, \
                f"contents[{i}]: calls {previous_calls} answered by {responses}"
        else:
            assert not responses, f"contents[{i}]: function responses without a call turn before"
        if calls:
            assert c["role"] == "model"
            for _, call_id in calls:
                if call_id is not None:
                    assert call_id not in seen
                    seen.add(call_id)
        for p in content.parts:
            if p.text is not None:
                assert p.text.strip(), f"contents[{i}]: blank text"
        previous_calls = calls
    assert not previous_calls, f"calls without responses at the end: {previous_calls}"


CHECKS = {"openai-chat": check_openai_chat, "openai-responses": check_openai_responses,
          "anthropic": check_anthropic, "gemini": check_gemini}


def check_payload(provider: str, payload) -> None:
    if provider == "text":
        assert isinstance(payload, str)
        for header in ("[SYSTEM]\n", "[MEMORY:EPISODIC]\n", "[MEMORY:SEMANTIC]\n", "[RECENT TURNS]\n"):
            assert payload.count(header) == 1 or header == "[MEMORY:EPISODIC]\n" and header in payload
        return
    CHECKS[provider](payload)
