"""``--from cline``: a Cline or Roo Code task history, ``api_conversation_history.json``.

The file is a JSON array of Anthropic messages as the extension sent them (``role``,
``content`` blocks), plus Cline's own fields: ``ts`` (epoch milliseconds), ``modelInfo``, ``id``
(the request id), ``metrics``. Blocks map as ``--from anthropic`` maps them
(:mod:`memcli.importers.anthropic`), except for how tools come back:

* Cline writes a tool's result into the next user message as a *text* block that begins with the
  tool's description, ``[read_file for 'src/app.ts'] Result:`` (``[execute_command for 'npm
  test'] Result:``, ``[attempt_completion] Result:``...), then the output; images and the user's
  feedback follow as further blocks. Each such block (with the blocks after it, up to the next
  result or the ``<environment_details>`` block) becomes a ``tool_result`` answering the
  preceding assistant message's unanswered ``tool_use`` blocks *in order* (the first one of the
  same tool name, else the first one). Real ``tool_result`` blocks (native tool calling) are read
  as they are;
* with XML tool calling (no ``tool_use`` blocks), the assistant's text holds the calls as
  ``<read_file><path>x</path></read_file>``: each known tool element becomes a ``tool_call``
  (parameters as ``tool_args``, id ``<message key>-x<n>``), and the text stays as the model wrote it;
* a result that says ``The tool execution failed with the following error:`` or ``The user denied
  this operation.`` is a ``tool_error``;
* user text that only carries Cline's ``<environment_details>`` (or comes with tool results) is
  tagged ``context``: the task (``<task>...</task>``) and the user's own replies open turns.

Ids: ``cl-<key>-<n>`` from a hash chain over the messages, as ``--from anthropic`` does.
"""

from __future__ import annotations

import re
from collections import deque

from memcli.importers._common import (
    Clock,
    KeyChain,
    anthropic_usage,
    decoded,
    nonempty,
    not_format,
    set_fields,
    take_named,
)
from memcli.importers.anthropic_blocks import BlockMapper
from memcli.models import TAG_CONTEXT

RESULT_HEADER = re.compile(r"\[([A-Za-z0-9_.:-]+)(?: for [^\n]*?)?\] Result:[ \t]*\n?")
ERROR_PREFIXES = ("The tool execution failed with the following error:", "The user denied this operation.")
ENVIRONMENT = "<environment_details>"
# tool elements of Cline's and Roo Code's XML tool calling
XML_TOOLS = frozenset({
    "execute_command", "read_file", "write_to_file", "replace_in_file", "search_files", "list_files",
    "list_code_definition_names", "browser_action", "use_mcp_tool", "access_mcp_resource",
    "ask_followup_question", "plan_mode_respond", "attempt_completion", "new_task", "load_mcp_documentation",
    "web_fetch", "condense", "summarize_task", "report_bug", "new_rule", "apply_diff", "insert_content",
    "search_and_replace", "switch_mode", "codebase_search", "fetch_instructions", "update_todo_list",
    "run_slash_command", "generate_image", "use_skill", "focus_chain",
})
_XML_CALL = re.compile(r"<([a-z_]+)>(.*?)</\1>", re.S)
_XML_PARAM = re.compile(r"<([a-z_0-9]+)>(.*?)</\1>", re.S)


def result_header(block) -> re.Match | None:
    if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
        return RESULT_HEADER.match(block["text"])
    return None


def looks_like_history(messages: list) -> bool:
    """Cline's fingerprint: a user text block that is a tool result, or Cline's own fields."""
    for m in messages[:64]:
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            return False
        content = m.get("content")
        if m["role"] == "user" and isinstance(content, list) and any(result_header(b) for b in content):
            return True
        if "modelInfo" in m or ("ts" in m and isinstance(m.get("ts"), int) and "content" in m):
            return True
    return False


def _xml_calls(text: str) -> list[tuple[str, dict]]:
    calls = []
    for m in _XML_CALL.finditer(text):
        if m.group(1) in XML_TOOLS:
            params = {p.group(1): p.group(2).strip("\n") for p in _XML_PARAM.finditer(m.group(2))}
            calls.append((m.group(1), params))
    return calls


class _Pairing:
    """Rewrites Cline's messages into plain Anthropic blocks: text results → tool_result blocks."""

    def __init__(self):
        self.pending: deque = deque()   # (tool_use id, name) of the last assistant message, unanswered

    def assistant(self, content: list, key: str) -> list:
        uses = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_use"
                and isinstance(b.get("id"), str) and b["id"]]
        if not uses:
            n = 0
            extra = []
            for block in content:
                if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                    for name, params in _xml_calls(block["text"]):
                        extra.append({"type": "tool_use", "id": f"{key}-x{n}", "name": name, "input": params})
                        n += 1
            content = content + extra
            uses = extra
        self.pending = deque((b["id"], b.get("name")) for b in uses)
        return content

    def _answer(self, name: str) -> str | None:
        return take_named(self.pending, name)

    def user(self, content: list, key: str) -> tuple[list, bool]:
        """(blocks, whether it answered tools)."""
        out: list = []
        current: dict | None = None
        answered = False
        for n, block in enumerate(content):
            header = result_header(block)
            if header is not None:
                text = block["text"][header.end():]
                call_id = self._answer(header.group(1)) or f"{key}-orphan{n}"
                current = {"type": "tool_result", "tool_use_id": call_id, "content": [{"type": "text", "text": text}],
                           "is_error": text.lstrip().startswith(ERROR_PREFIXES)}
                out.append(current)
                answered = True
                continue
            if isinstance(block, dict) and block.get("type") == "tool_result":
                tool_use_id = block.get("tool_use_id")
                self.pending = deque(p for p in self.pending if p[0] != tool_use_id)
                out.append(block)
                answered = True
                current = None
                continue
            is_environment = (isinstance(block, dict) and block.get("type") == "text"
                              and nonempty(block.get("text")) is not None and block["text"].lstrip().startswith(ENVIRONMENT))
            if current is not None and not is_environment and isinstance(block, dict) and block.get("type") in ("text", "image"):
                current["content"].append(block)
                continue
            current = None
            out.append(block)
        return out, answered


class ClineImporter:
    name = "cline"
    source_event = "cline"

    def sniff(self, values) -> int:
        items = decoded(values)
        if items and isinstance(items[0], dict) and "role" in items[0] and looks_like_history(items):
            return 96
        return 0

    def events(self, values, result):
        skipped = result.skipped
        chain = KeyChain()
        clock = Clock(skipped)
        mapper = BlockMapper(skipped)
        pairing = _Pairing()
        for line, message in values:
            if isinstance(message, Exception):
                yield line, message
                continue
            if not isinstance(message, dict) or not isinstance(message.get("role"), str):
                yield line, not_format(line, 'a Cline message (an object with "role" and "content")', message,
                                       guess_from=self.name)
                continue
            key = chain.next(message)
            role, content = message["role"], message.get("content")
            if role not in ("user", "assistant"):
                skipped[f"messages with role {role[:40]!r}"] += 1
                continue
            if isinstance(content, str):
                content = [{"type": "text", "text": content}]
            elif isinstance(content, dict):
                content = [content]
            elif not isinstance(content, list):
                yield line, not_format(line, "message content as a string or a list of blocks", content)
                continue
            user_tags = ()
            if role == "assistant":
                content = pairing.assistant(content, f"cl-{key}")
            else:
                content, answered = pairing.user(content, f"cl-{key}")
                texts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
                first = next((t for t in texts if isinstance(t, str) and t.strip()), "")
                if answered or first.lstrip().startswith(ENVIRONMENT):
                    user_tags = (TAG_CONTEXT,)
            common: dict = {}
            model_info = message.get("modelInfo")
            model = model_info.get("modelId") if isinstance(model_info, dict) else None
            set_fields(common, ts=clock.read(message.get("ts")), model=nonempty(model),
                       message_id=nonempty(message.get("id")))
            usage = anthropic_usage(message.get("usage")) if role == "assistant" else None
            events = mapper.message(role, content, f"cl-{key}", common, user_tags=user_tags, usage=usage)
            if not events:
                skipped[f"empty {role} messages"] += 1
            for event in events:
                yield line, event


IMPORTER = ClineImporter()
