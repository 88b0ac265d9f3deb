"""``--from openai-responses``: OpenAI Responses API items.

Input: a JSON array (or NDJSON) of items, a request body ``{"instructions", "input": [...]}``
(``input`` may also be one string: a user message), or a response object ``{"object":
"response", "output": [...], "usage"}``. Several bodies or responses in one file are several
conversations (refused unless ``--split``).

Items map as the Codex importer maps a rollout's ``response_item`` payloads
(:mod:`memcli.importers.codex`, which reads the same items): ``message`` (also the short form
``{"role", "content"}`` without ``type``) by role, ``reasoning`` → an ``assistant`` trace tagged
``reasoning`` with its summary (encrypted-only reasoning is counted, there is nothing to keep),
``function_call`` / ``custom_tool_call`` → ``tool_call`` and ``function_call_output`` /
``custom_tool_call_output`` → ``tool_result`` by ``call_id``. Items the API runs itself are a
call and its result at once:

* ``web_search_call`` → ``tool_call`` ``web_search`` (``tool_args`` = its ``action``) answered by
  a ``tool_result`` holding its ``status`` (a ``failed`` search is a ``tool_error``);
* ``file_search_call`` (``queries`` / ``results``), ``code_interpreter_call`` (``code`` /
  ``outputs``), ``image_generation_call`` (``result`` image → ``media``), ``mcp_call``
  (``name``, ``arguments`` / ``output`` or ``error``) likewise, with ``tool_kind`` the item type;
* ``computer_call`` → ``tool_call`` ``computer`` (its ``action``) and ``computer_call_output`` →
  ``tool_result`` with the screenshot in ``media``; ``local_shell_call(_output)`` by ``call_id``.

``instructions`` becomes a ``user`` trace tagged ``system``; a response's ``usage`` goes on its
first assistant trace, ``model`` on the model's traces. Other item types (``item_reference``,
``mcp_list_tools``, ``mcp_approval_request``...) are skipped and counted.

Ids: ``cx-<key>-<n>``, ``<key>`` from a hash chain over the items (as for Codex); the system
prompt's id is a hash of its text.
"""

from __future__ import annotations

from memcli.importers._common import (
    decoded,
    item_key,
    nonempty,
    not_format,
    openai_usage,
    result_event,
    set_fields,
)
from memcli.importers.codex import ITEM_TYPES, _Rollout
from memcli.models import TAG_SYSTEM

# items the API runs itself: (tool name, where the arguments are, where the output is)
HOSTED = {
    "web_search_call": ("web_search", "action", None),
    "file_search_call": ("file_search", "queries", "results"),
    "code_interpreter_call": ("code_interpreter", "code", "outputs"),
    "image_generation_call": ("image_generation", None, "result"),
    "mcp_call": (None, "arguments", "output"),
}
_EXTRA_TYPES = frozenset(HOSTED) | {"computer_call", "computer_call_output", "local_shell_call_output",
                                    "item_reference", "mcp_list_tools", "mcp_approval_request",
                                    "mcp_approval_response"}
ALL_ITEM_TYPES = ITEM_TYPES | _EXTRA_TYPES
_STRONG = frozenset({"function_call", "function_call_output", "reasoning", "custom_tool_call",
                     "custom_tool_call_output", "web_search_call", "computer_call", "mcp_call",
                     "file_search_call", "code_interpreter_call", "image_generation_call"})


def is_item(value) -> bool:
    if not isinstance(value, dict) or "payload" in value:
        return False
    kind = value.get("type")
    if nonempty(kind) in ALL_ITEM_TYPES:
        return True
    return kind is None and value.get("role") in ("user", "assistant", "system", "developer") and "content" in value


def _document_items(value):
    """The item list of a request body or response object, else None."""
    if not isinstance(value, dict) or "role" in value or "type" in value and value.get("type") != "response":
        return None
    if isinstance(value.get("input"), (list, str)):
        return value["input"]
    if isinstance(value.get("output"), list) and (value.get("object") == "response" or "status" in value or "id" in value):
        return value["output"]
    return None


def _strong(items) -> bool:
    return any(isinstance(i, dict) and (nonempty(i.get("type")) in _STRONG or i.get("type") == "message") for i in items)


class _Reader(_Rollout):
    def item(self, line, item):
        self.recognized = True
        kind = item.get("type")
        if kind is not None and not isinstance(kind, str):
            self._key(item)
            self.skipped["items whose type is not a string"] += 1
            return
        if kind is None:
            item = {"type": "message", **item}
            kind = "message"
        if kind in HOSTED:
            yield from self._hosted(line, item, kind)
        elif kind == "computer_call":
            yield from self._own_call(line, item, "computer", item.get("action"), "computer_call")
        elif kind in ("computer_call_output", "local_shell_call_output"):
            yield from self._own_output(line, item, kind)
        elif kind in _EXTRA_TYPES:
            self._key(item)
            self.skipped[f"{kind} items"] += 1
        else:
            if kind == "reasoning" and not self._content(item.get("summary"))[0] and not self._content(item.get("content"))[0]:
                self.skipped["reasoning items with only encrypted content"] += 1
            yield from self._item(line, item, self.clock.read(item.get("created_at")), False)

    def _own_call(self, line, item, name, args, tool_kind):
        from memcli.importers._common import call_event

        key = self._key(item)
        call_id = nonempty(item.get("call_id")) or nonempty(item.get("id")) or f"call-{key}"
        self.call_names.add(call_id, name)
        event = call_event(f"cx-{key}-0", call_id, name, args if isinstance(args, dict) else {"input": args} if args is not None else None)
        event["tool_kind"] = tool_kind
        self.step.append((line, self._common(event, None, model=True)))
        return ()

    def _own_output(self, line, item, kind):
        key = self._key(item)
        yield from self._close_step()
        call_id = nonempty(item.get("call_id"))
        if not call_id:
            self.skipped[f"{kind} items without a call_id"] += 1
            return
        output = item.get("output")
        value, media, _ = self._output(output)
        if isinstance(output, dict) and output.get("type") == "computer_screenshot":
            url = nonempty(output.get("image_url"))
            value = ""
            if url:
                media.images.append(url)
        event = result_event(f"cx-{key}-0", call_id, value)
        set_fields(event, tool_name=self.call_names.take(call_id), media=media.as_field())
        yield line, self._common(event, None)

    def _hosted(self, line, item, kind):
        from memcli.importers._common import Media, call_event

        name, args_field, output_field = HOSTED[kind]
        if name is None:
            name = nonempty(item.get("name")) or kind
        key = self._key(item)
        call_id = nonempty(item.get("id")) or f"{kind}-{key}"
        args = item.get(args_field) if args_field else None
        if args_field == "code":
            args = {"code": args} if isinstance(args, str) else args
        elif args_field == "queries":
            args = {"queries": args} if isinstance(args, list) else args
        event = call_event(f"cx-{key}-0", call_id, name, args)
        event["tool_kind"] = kind
        set_fields(event, server_label=nonempty(item.get("server_label")))
        self.step.append((line, self._common(event, None, model=True)))
        yield from self._close_step()
        status = nonempty(item.get("status"))
        error = item.get("error")
        media = Media()
        if error not in (None, "", {}):
            value, failed = error, True
        elif status == "failed":
            value, failed = "failed", True
        else:
            value = item.get(output_field) if output_field else None
            failed = False
            if kind == "image_generation_call" and isinstance(value, str) and value:
                media.images.append(f"data:image/png;base64,{value}")
                value = ""
            elif value is None:
                value = {"status": status} if status else ""
        result = result_event(f"cx-{key}-1", call_id, value, error=failed)
        set_fields(result, tool_name=name, tool_kind=kind, media=media.as_field())
        yield line, self._common(result, None)


class OpenAIResponsesImporter:
    name = "openai-responses"
    source_event = "openai.responses"

    def sniff(self, values) -> int:
        items = decoded(values)
        if not items:
            return 0
        first = items[0]
        inner = _document_items(first)
        if inner is not None:
            if isinstance(inner, str):
                return 70
            if inner and all(is_item(i) for i in inner[:20]) and _strong(inner[:64]):
                return 95 if any(isinstance(i, dict) and "type" in i for i in inner[:64]) else 60
            return 60 if inner and all(is_item(i) for i in inner[:20]) else 0
        if all(is_item(v) for v in items[:20]) and any(isinstance(v, dict) and nonempty(v.get("type")) in _STRONG for v in items):
            return 85
        return 0

    def conversations(self, values):
        from memcli.importers.conversations import by_document

        return by_document(values, lambda v: _document_items(v) is not None)

    def events(self, values, result):
        reader = _Reader(result)
        started = False
        for line, value in values:
            if isinstance(value, Exception):
                yield line, value
                continue
            inner = _document_items(value)
            if inner is None:
                if not is_item(value):
                    if not started:
                        yield line, not_format(line, "an OpenAI Responses item (an object with \"type\")", value,
                                               guess_from=self.name)
                        return
                    reader.skipped["values that are not Responses items"] += 1
                    continue
                started = True
                yield from reader.item(line, value)
                continue
            started = True
            reader.model = nonempty(value.get("model")) or reader.model
            instructions = value.get("instructions")
            if isinstance(instructions, str) and instructions.strip():
                trace_id = f"cx-sys-{item_key('', instructions)}"
                if trace_id not in reader.system_prompts:
                    reader.system_prompts.add(trace_id)
                    yield line, {"id": trace_id, "trace_type": "user", "content": instructions, "tags": [TAG_SYSTEM]}
            if isinstance(inner, str):
                inner = [{"type": "message", "role": "user", "content": inner}]
            for item in inner:
                if not isinstance(item, dict):
                    reader.skipped["items that are not objects"] += 1
                    continue
                yield from reader.item(line, item)
            usage = openai_usage(value.get("usage")) if "output" in value and inner is value.get("output") else None
            yield from reader._close_step(usage)
        yield from reader.finish()


IMPORTER = OpenAIResponsesImporter()
