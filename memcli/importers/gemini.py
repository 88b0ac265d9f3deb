"""``--from gemini``: Gemini ``contents`` — from the API, the Gemini CLI, or a Google ADK session.

Input, any of:

* Gemini API contents: a JSON array (or NDJSON) of ``{"role": "user" | "model", "parts": [...]}``,
  or a request body ``{"contents": [...], "system_instruction" | "systemInstruction": ...}``, or a
  response ``{"candidates": [{"content": ...}], "usageMetadata"}``. Parts in camelCase (REST,
  JavaScript) or snake_case (the Python SDK) alike;
* the Gemini CLI's saved chats: ``/chat save`` checkpoints (``{"history": [contents...]}``, or
  the older bare contents array) and its recorded sessions
  (``~/.gemini/tmp/<project>/chats/session-*.json``: ``{"sessionId", "messages": [{"type":
  "user" | "gemini" | "info" | "error" | "warning", "content", "toolCalls", "thoughts",
  "tokens", "model"}]}``: each tool call record carries its own ``result`` parts and ``status``;
  the ``functionCall`` parts a re-written message's ``content`` holds beside its ``toolCalls``
  records, and the ``functionResponse`` parts of a user message answering a call a record
  answered, are not read again (with ``auto``, a file holding one such session is read by
  :mod:`memcli.importers.gemini_cli`, ids from the message ids));
* a Google ADK session (``{"id", "app_name", "events": [{"author", "content": {role, parts},
  "timestamp"...}]}``; snake_case or camelCase).

Several request bodies / sessions in one file are several conversations (``--split``).

Parts map as follows:

* ``text`` → a ``user`` trace (role ``user``) or an ``assistant`` trace (role ``model``);
  ``thought: true`` text → an ``assistant`` trace tagged ``reasoning`` (in a Gemini CLI record
  with ``thoughts``, those are read instead: a resume writes them again as such parts); a
  ``thoughtSignature`` is kept as ``signature`` on the trace of its part;
* ``functionCall`` → ``tool_call`` (``args`` → ``tool_args``); its ``id`` when it has one, else
  ``gm-<key>-<n>``. ``functionResponse`` → ``tool_result`` for the call with its ``id``, else the
  oldest unanswered call of that ``name``, else the oldest unanswered call without an id of its
  own (Gemini before 3 and ADK write no ids; the API requires responses in call order). A ``response`` of the form
  ``{"output": x}`` gives ``tool_result`` x, ``{"error": x}`` a ``tool_error`` x, anything else is
  kept whole; media in a response's own ``parts`` go to ``media``. A response may sit in a
  ``model`` content (some harnesses write it there): it is read the same;
* ``inlineData`` (base64) → ``media`` as a ``data:`` URL, ``fileData`` → ``media`` by its URI
  (images, audio or video by MIME type);
* ``executableCode`` → ``tool_call`` ``code_execution`` (``code``, ``language``) and
  ``codeExecutionResult`` → its ``tool_result`` (an ``outcome`` other than ``OUTCOME_OK`` is a
  ``tool_error``);
* ``system_instruction`` → a ``user`` trace tagged ``system``; ``usageMetadata`` / the CLI's
  ``tokens`` → ``usage`` (``prompt_tokens`` = prompt/input tokens, ``completion_tokens`` =
  candidates/output tokens) on the response's first trace; ``model`` / ``modelVersion`` →
  ``model``; ADK's ``author`` → ``name`` on model traces. Unknown parts are skipped and counted.

Ids: ``gm-<key>-<n>``: ``<key>`` from a hash chain over the contents, seeded with the session id
where there is one (:mod:`memcli.importers._common`).
"""

from __future__ import annotations

from collections import deque

from memcli.importers._common import (
    Clock,
    KeyChain,
    Media,
    call_event,
    data_url,
    decoded,
    join_texts,
    named_usage,
    nonempty,
    not_format,
    numbered,
    result_event,
    set_fields,
)
from memcli.models import TAG_REASONING, TAG_SYSTEM

ROLES = ("user", "model", "function", "tool", "system")
_PART_KEYS = frozenset({"text", "functionCall", "function_call", "functionResponse", "function_response",
                        "inlineData", "inline_data", "fileData", "file_data", "executableCode", "executable_code",
                        "codeExecutionResult", "code_execution_result", "thought"})
_STRONG_PART_KEYS = _PART_KEYS - {"text"}


def _get(obj: dict, camel: str, snake: str):
    value = obj.get(camel)
    return obj.get(snake) if value is None else value


def is_content(value) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("parts"), list)
            and (value.get("role") in ROLES or "role" not in value))


def _strong(contents) -> bool:
    for c in contents:
        if isinstance(c, dict) and c.get("role") == "model":
            return True
        parts = c.get("parts") if isinstance(c, dict) else None
        for part in parts if isinstance(parts, list) else ():
            if isinstance(part, dict) and not _STRONG_PART_KEYS.isdisjoint(part):
                return True
    return False


def _adk_events(value) -> list | None:
    events = value.get("events")
    if isinstance(events, list) and any(isinstance(e, dict) and ("author" in e or isinstance(e.get("content"), dict))
                                        for e in events[:16]):
        return events
    return None if events is None or events else ([] if "app_name" in value or "appName" in value else None)


def _cli_session(value) -> bool:
    messages = value.get("messages")
    return (isinstance(messages, list) and ("sessionId" in value or "projectHash" in value)
            and all(isinstance(m, dict) and "type" in m for m in messages[:16]))


def document_kind(value) -> str | None:
    """Which kind of Gemini document ``value`` is: contents, adk, cli, checkpoint, response."""
    if not isinstance(value, dict) or "parts" in value:
        return None
    if isinstance(value.get("contents"), list):
        return "contents"
    if _adk_events(value) is not None:
        return "adk"
    if _cli_session(value):
        return "cli"
    history = value.get("history")
    if isinstance(history, list) and all(is_content(c) for c in history[:16]):
        return "checkpoint"
    if isinstance(value.get("candidates"), list):
        return "response"
    return None


def conversation_key(value) -> str | None:
    for field in ("sessionId", "session_id", "id"):
        if isinstance(value.get(field), str) and value[field]:
            return value[field]
    return None


def gemini_usage(meta) -> dict | None:
    """``usageMetadata`` (API) or ``tokens`` (Gemini CLI) → memcli ``usage``."""
    return named_usage(meta, ("promptTokenCount", "prompt_token_count", "input"),
                       ("candidatesTokenCount", "candidates_token_count", "output"))


def _without_recorded_calls(parts: list, calls: list[dict]) -> tuple[list, dict[int, str]]:
    """``parts`` of a ``gemini`` message without the ``functionCall`` parts its ``toolCalls``
    records hold, and the ``thoughtSignature`` of each removed part by the index of its record.

    Gemini CLI re-writes a message's ``content`` as the model's history parts whenever it syncs
    the history (``updateMessagesFromHistory``: resume, rollback, compression, tool-output
    masking): those hold the message's ``functionCall`` parts as well, while its ``toolCalls``
    records are kept. The records are what is read (they carry the result), so a call is stored
    once. A part is a record's when their ids match, else when their name and args do (a call
    the model sent without an id has a ``synth_...`` id in the history, not the record's). The
    part's signature is kept on the call read from the record."""
    found = [(n, call) for n, part in enumerate(parts) if isinstance(part, dict)
             for call in [_get(part, "functionCall", "function_call")] if isinstance(call, dict)]
    if not calls or not found:
        return parts, {}
    free = list(range(len(calls)))   # records not matched to a part yet
    owner: dict[int, int] = {}       # part index -> record index

    def by_id(call, record):
        return nonempty(call.get("id")) is not None and record.get("id") == call.get("id")

    def by_name_and_args(call, record):
        return record.get("name") == call.get("name") and record.get("args") == call.get("args")

    for same in (by_id, by_name_and_args):   # every id match first: a name match must not take its record
        for n, call in found:
            if n in owner:
                continue
            match = next((i for i in free if same(call, calls[i])), None)
            if match is not None:
                free.remove(match)
                owner[n] = match
    signatures = {}
    for n, match in owner.items():
        signature = nonempty(_get(parts[n], "thoughtSignature", "thought_signature"))
        if signature:
            signatures[match] = signature
    return [p for n, p in enumerate(parts) if n not in owner], signatures


def _recorded_response(part, recorded: set[str]) -> bool:
    """A ``functionResponse`` part answering a call whose ``toolCalls`` record was read."""
    response = _get(part, "functionResponse", "function_response") if isinstance(part, dict) else None
    return isinstance(response, dict) and nonempty(response.get("id")) in recorded


class _Reader:
    def __init__(self, result):
        self.skipped = result.skipped
        self.clock = Clock(self.skipped)
        self.chain = KeyChain()
        self.pending: deque = deque()   # (call id, name, has its own id) not answered yet, in call order
        self.code_calls: deque = deque()
        self.recorded: set[str] = set()   # ids of the Gemini CLI calls whose result a toolCalls record gave

    def seed(self, session_id: str | None) -> None:
        if session_id and not self.chain.key:
            self.chain = KeyChain(f"gemini:{session_id}")

    # ------------------------------------------------------------------ pairing
    def _answer(self, call_id, name) -> str | None:
        if call_id:
            for i, (pending_id, _, _) in enumerate(self.pending):
                if pending_id == call_id:
                    del self.pending[i]
                    return call_id
            return call_id
        for i, (pending_id, pending_name, _) in enumerate(self.pending):
            if pending_name == name:
                del self.pending[i]
                return pending_id
        # the oldest call that has no id of its own (those are answered by their id)
        for i, (pending_id, _, own) in enumerate(self.pending):
            if not own:
                del self.pending[i]
                return pending_id
        return self.pending.popleft()[0] if self.pending else None

    def _media(self, part, media: Media) -> bool:
        inline = _get(part, "inlineData", "inline_data")
        file = _get(part, "fileData", "file_data")
        if isinstance(inline, dict):
            mime = nonempty(_get(inline, "mimeType", "mime_type")) or "application/octet-stream"
            url = data_url(mime, inline.get("data"))
        elif isinstance(file, dict):
            mime = nonempty(_get(file, "mimeType", "mime_type")) or ""
            url = nonempty(_get(file, "fileUri", "file_uri"))
        else:
            return False
        if not url:
            self.skipped["media parts without data"] += 1
            return True
        kind = mime.split("/", 1)[0]
        target = {"image": media.images, "audio": media.audio, "video": media.video}.get(kind)
        if target is None:
            self.skipped[f"{mime or 'untyped'} media parts"] += 1
        else:
            target.append(url)
        return True

    def _response_value(self, response, media: Media):
        """(value, is_error) of a functionResponse's ``response``."""
        if isinstance(response, dict):
            if set(response) == {"error"} or ("error" in response and "output" not in response
                                               and response.get("error") not in (None, "", {})):
                return response["error"], True
            if "output" in response and len(response) == 1:
                return response["output"], False
            if "result" in response and len(response) == 1:
                return response["result"], False
            if "content" in response and len(response) == 1 and isinstance(response["content"], list):
                texts = [p.get("text") for p in response["content"] if isinstance(p, dict) and isinstance(p.get("text"), str)]
                if texts:
                    return join_texts(texts), False
        return ({} if response is None else response), False

    # ------------------------------------------------------------------ contents
    def content(self, line, content, where, common: dict, usage=None):
        if not isinstance(content, dict):
            yield line, not_format(line, f"{where}a Gemini content (an object with \"parts\")", content)
            return
        key = self.chain.next(content)
        base = f"gm-{key}"
        role = content.get("role", "user")
        parts = content.get("parts")
        if not isinstance(role, str) or role not in ROLES:
            self.skipped[f"contents with role {str(role)[:40]!r}"] += 1
            return
        if isinstance(parts, dict):
            parts = [parts]
        if not isinstance(parts, list):
            yield line, not_format(line, f"{where}parts as a list", parts)
            return
        events: list[dict] = []
        texts: list[str] = []
        media = Media()
        model = role == "model"
        for n, part in enumerate(parts):
            if isinstance(part, str):
                part = {"text": part}
            if not isinstance(part, dict):
                self.skipped["parts that are not objects"] += 1
                continue
            signature = nonempty(_get(part, "thoughtSignature", "thought_signature"))
            call = _get(part, "functionCall", "function_call")
            response = _get(part, "functionResponse", "function_response")
            code = _get(part, "executableCode", "executable_code")
            code_result = _get(part, "codeExecutionResult", "code_execution_result")
            if isinstance(part.get("text"), str):
                text = part["text"]
                if part.get("thought") is True:
                    if text:
                        events.append(set_fields({"trace_type": "assistant", "content": text, "tags": [TAG_REASONING]},
                                                 signature=signature))
                elif model:
                    if text:
                        events.append(set_fields({"trace_type": "assistant", "content": text}, signature=signature))
                else:
                    texts.append(text)
            elif isinstance(call, dict):
                name = nonempty(call.get("name"))
                if not name:
                    yield line, not_format(line, f"{where}parts[{n}].functionCall with a name", call)
                    return
                own = nonempty(call.get("id"))
                call_id = own or f"{base}-c{n}"
                self.pending.append((call_id, name, own is not None))
                events.append(set_fields(call_event("", call_id, name, call.get("args")), signature=signature))
            elif isinstance(response, dict):
                name = nonempty(response.get("name"))
                call_id = self._answer(nonempty(response.get("id")), name) or f"{base}-r{n}"
                result_media = Media()
                value, error = self._response_value(response.get("response"), result_media)
                for inner in response.get("parts") if isinstance(response.get("parts"), list) else ():
                    if isinstance(inner, dict):
                        self._media(inner, result_media)
                events.append(set_fields(result_event("", call_id, value, error=error), tool_name=name,
                                         media=result_media.as_field()))
            elif isinstance(code, dict):
                call_id = f"{base}-c{n}"
                self.code_calls.append(call_id)
                args = {k: v for k, v in code.items() if k in ("code", "language")}
                events.append(set_fields(call_event("", call_id, "code_execution", args), tool_kind="code_execution"))
            elif isinstance(code_result, dict):
                call_id = self.code_calls.popleft() if self.code_calls else f"{base}-r{n}"
                outcome = nonempty(code_result.get("outcome"))
                error = outcome not in (None, "OUTCOME_OK")
                output = code_result.get("output", "")
                events.append(set_fields(result_event("", call_id, output if not error or output else outcome, error=error),
                                         tool_name="code_execution", tool_kind="code_execution"))
            elif self._media(part, media):
                pass
            else:
                keys = [k for k in part if k not in ("thought", "thoughtSignature", "thought_signature")]
                self.skipped[f"{keys[0][:40] if keys else 'empty'} parts"] += 1
        text = join_texts(texts)
        if text or (media and not model):
            event = {"trace_type": "user", "content": text}
            if role == "system":
                event["tags"] = [TAG_SYSTEM]
            events.insert(0, set_fields(event, media=media.as_field()))
        elif model and media:
            events.append(set_fields({"trace_type": "assistant", "content": ""}, media=media.as_field()))
        if not events:
            self.skipped[f"empty {role} contents"] += 1
            return
        if usage:
            events[0]["usage"] = usage
        for event in numbered(events, base, common):
            yield line, event

    def system(self, line, instruction):
        if isinstance(instruction, str):
            instruction = {"parts": [{"text": instruction}]}
        if isinstance(instruction, dict):
            yield from self.content(line, {"role": "system", "parts": instruction.get("parts", [])}, "system_instruction: ", {})

    # ------------------------------------------------------------------ documents
    def document(self, line, value, kind):
        model = nonempty(value.get("model")) or nonempty(value.get("modelVersion"))
        common = set_fields({}, model=model)
        if kind == "contents":
            system = _get(value, "systemInstruction", "system_instruction")
            if system is not None:
                yield from self.system(line, system)
            for i, content in enumerate(value["contents"]):
                yield from self.content(line, content, f"contents[{i}]: ", common)
        elif kind == "checkpoint":
            for i, content in enumerate(value["history"]):
                yield from self.content(line, content, f"history[{i}]: ", common)
        elif kind == "response":
            usage = gemini_usage(_get(value, "usageMetadata", "usage_metadata"))
            for i, candidate in enumerate(value["candidates"][:1]):
                content = candidate.get("content") if isinstance(candidate, dict) else None
                yield from self.content(line, content, f"candidates[{i}].content: ", common, usage)
        elif kind == "adk":
            self.seed(conversation_key(value))
            for i, event in enumerate(_adk_events(value)):
                if not isinstance(event, dict):
                    self.skipped["ADK events that are not objects"] += 1
                    continue
                content = event.get("content")
                if not isinstance(content, dict):
                    self.skipped["ADK events without content"] += 1
                    continue
                author = nonempty(event.get("author"))
                fields = set_fields({}, ts=self.clock.read(event.get("timestamp")),
                                    message_id=nonempty(event.get("id")),
                                    name=author if author and author != "user" else None,
                                    model=nonempty(_get(event, "modelVersion", "model_version")))
                usage = gemini_usage(_get(event, "usageMetadata", "usage_metadata"))
                yield from self.content(line, content, f"events[{i}].content: ", fields, usage)
        elif kind == "cli":
            self.seed(conversation_key(value))
            for i, message in enumerate(value["messages"]):
                yield from self.cli_message(line, message, f"messages[{i}]: ")

    def cli_message(self, line, message, where):
        if not isinstance(message, dict):
            self.skipped["messages that are not objects"] += 1
            return
        kind = message.get("type")
        common = set_fields({}, ts=self.clock.read(message.get("timestamp")), message_id=nonempty(message.get("id")),
                            model=nonempty(message.get("model")))
        content = message.get("content")
        parts = [{"text": content}] if isinstance(content, str) else content if isinstance(content, list) else []
        parts = [p if isinstance(p, dict) else {"text": p} if isinstance(p, str) else p for p in parts]
        if kind == "user":
            # Gemini CLI also records a tool response as a user message (and a history re-write
            # puts the responses in one): the call's record gave that result already
            kept = [p for p in parts if not _recorded_response(p, self.recorded)]
            if len(kept) < len(parts):
                self.skipped["tool responses (read from their call's record)"] += len(parts) - len(kept)
                if not kept:
                    return
            yield from self.content(line, {"role": "user", "parts": kept}, where, common)
            return
        if kind != "gemini":
            self.skipped[f"{str(kind)[:40]} messages" if kind else "messages without a type"] += 1
            return
        thoughts = []
        for t in message.get("thoughts") if isinstance(message.get("thoughts"), list) else ():
            if isinstance(t, dict):
                text = ": ".join(x for x in (nonempty(t.get("subject")), nonempty(t.get("description"))) if x)
                if text:
                    thoughts.append({"text": text, "thought": True})
        if thoughts:   # a history re-write (a resume) renders them again as thought parts: read once, from the records
            parts = [p for p in parts if not (isinstance(p, dict) and p.get("thought") is True)]
        calls = [c for c in message.get("toolCalls", []) if isinstance(c, dict)] if isinstance(message.get("toolCalls"), list) else []
        parts, signatures = _without_recorded_calls(parts, calls)
        model_parts = thoughts + parts + [set_fields({"functionCall": {"id": c.get("id"), "name": c.get("name"),
                                                                      "args": c.get("args")}},
                                                     thoughtSignature=signatures.get(i))
                                          for i, c in enumerate(calls)]
        yield from self.content(line, {"role": "model", "parts": model_parts}, where, common,
                                gemini_usage(message.get("tokens")))
        responses = []
        for c in calls:
            result = c.get("result")
            response = None
            for part in result if isinstance(result, list) else [result] if isinstance(result, dict) else ():
                inner = _get(part, "functionResponse", "function_response") if isinstance(part, dict) else None
                if isinstance(inner, dict):
                    response = inner.get("response")
                    break
            if response is None:
                display = c.get("resultDisplay")
                response = {"output": display if isinstance(display, str) else ""}
            if c.get("status") in ("error", "cancelled") and isinstance(response, dict) and "error" not in response:
                response = {"error": response.get("output") or c.get("status")}
            responses.append({"functionResponse": {"id": c.get("id"), "name": c.get("name"), "response": response}})
            if nonempty(c.get("id")) and (c.get("result") is not None or c.get("status") in ("success", "error", "cancelled")):
                self.recorded.add(c["id"])
        if responses:
            yield from self.content(line, {"role": "user", "parts": responses}, where, {"ts": common.get("ts")} if "ts" in common else {})


class GeminiImporter:
    name = "gemini"
    source_event = "gemini"

    def sniff(self, values) -> int:
        items = decoded(values)
        if not items:
            return 0
        first = items[0]
        kind = document_kind(first)
        if kind == "contents":
            contents = first["contents"]
            return 95 if contents and all(is_content(c) for c in contents[:20]) else 0
        if kind in ("adk", "cli", "checkpoint"):
            return 95
        if kind == "response":
            return 90 if all(isinstance(c, dict) and is_content(c.get("content")) for c in first["candidates"][:4]) else 0
        if all(is_content(v) for v in items[:20]):
            return 92 if _strong(items[:64]) else 60
        return 0

    def conversations(self, values):
        from memcli.importers.conversations import by_document

        return by_document(values, lambda v: document_kind(v) is not None, conversation_key)

    def events(self, values, result):
        reader = _Reader(result)
        started = False
        for line, value in values:
            if isinstance(value, Exception):
                yield line, value
                continue
            kind = document_kind(value)
            if kind is not None:
                started = True
                yield from reader.document(line, value, kind)
            elif is_content(value) or (started and isinstance(value, dict)):
                started = True
                yield from reader.content(line, value, "", {})
            else:
                yield line, not_format(line, 'a Gemini content (an object with "role" and "parts")', value,
                                       guess_from=self.name)
                if not started:
                    return


IMPORTER = GeminiImporter()
