"""``--from cursor``: a Cursor agent transcript,
``~/.cursor/projects/<workspace slug>/agent-transcripts/<id>/<id>.jsonl`` (or ``<id>.jsonl``).

Each line is ``{"role": "user" | "assistant", "message": {"content": [blocks]}}`` with
Anthropic-style blocks (``text``, ``thinking``, ``tool_use {name, input}``, ``tool_result``),
mapped as :mod:`memcli.importers.anthropic_blocks` maps them; a ``tool_use`` without ``id`` gets
``cu-<key>-c<n>`` and a ``tool_result`` without ``tool_use_id`` answers the oldest unanswered call
of its name (:func:`memcli.importers.claude_ai.blocks_with_ids`). A user text that wraps the
ask in ``<user_query>...</user_query>`` is the text inside; the rest of such a text (workspace
info, attached files) becomes a ``user`` trace tagged ``context``. Other line shapes
(``turn_ended`` markers...) are counted by their ``type`` / ``role``.

Format facts that decide correctness: the writer leaves the last line without its newline
(``memcli sync`` reads it when it parses: ``complete_tail``), and lines carry neither ids nor
timestamps, and two byte-identical lines are two real records. So ids come from a hash chain
over the lines (``cu-<key>-<n>``; each key hashes the previous one): identical lines at two
positions get two ids (never de-duplicated by content), and a transcript read again gives the
same ids.

Cursor's editor keeps its chats (composers) in SQLite instead: ``memcli sync`` reads them from
``state.vscdb`` (:mod:`memcli.sync.cursor`) and hands each composer here
(:func:`composer_events`): a ``composerData:<id>`` value (``fullConversationHeadersOnly``: the
bubble ids in order; older versions hold the bubbles inline in ``conversation``) and its
``bubbleId:<composer id>:<bubble id>`` values. A bubble of ``type`` 1 is the user's: its ``text``
is the ask; ``type`` 2 is the model's: ``thinking.text`` (``assistant`` tagged ``reasoning``),
``text`` (``assistant``), and ``toolFormerData`` — ``name``, ``rawArgs`` / ``params`` (a JSON
string), ``toolCallId`` (else the bubble id), and once it ran (a ``result``) its ``tool_result``
(``status: "error"`` -> ``tool_error``). Times: the bubble's ``createdAt`` (ISO text or epoch
milliseconds). Ids: ``cud-<bubble id>-<n>`` (Cursor's own ids: a composer read again adds only
its new bubbles).
"""

from __future__ import annotations

import re
from collections import deque

from memcli.importers._common import (
    Clock,
    KeyChain,
    call_event,
    decoded,
    nonempty,
    not_format,
    numbered,
    result_event,
    set_fields,
)
from memcli.importers.anthropic_blocks import BlockMapper
from memcli.importers.claude_ai import blocks_with_ids
from memcli.models import TAG_CONTEXT, TAG_REASONING

_QUERY = re.compile(r"<user_query>\s*(.*?)\s*</user_query>", re.S)


def is_record(value) -> bool:
    return (isinstance(value, dict) and value.get("role") in ("user", "assistant") and "type" not in value
            and isinstance(value.get("message"), dict) and isinstance(value["message"].get("content"), (list, str)))


def _split_query(content: list) -> tuple[list, str | None]:
    """The blocks with a ``<user_query>`` text reduced to the ask, and the rest of that text."""
    out, context = [], None
    for block in content:
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            m = _QUERY.search(block["text"])
            if m:
                rest = (block["text"][:m.start()] + block["text"][m.end():]).strip()
                context = rest or None
                block = dict(block, text=m.group(1))
        out.append(block)
    return out, context


class CursorImporter:
    name = "cursor"
    source_event = "cursor"

    def sniff(self, values) -> int:
        items = decoded(values)
        records = [v for v in items if is_record(v)]
        return 91 if records and len(records) * 2 > len(items) and is_record(items[0]) else 0

    def events(self, values, result):
        skipped = result.skipped
        chain = KeyChain()
        mapper = BlockMapper(skipped)
        pending: deque = deque()
        first = True
        for line, value in values:
            if isinstance(value, Exception):
                yield line, value
                continue
            if not is_record(value):
                if first:
                    yield line, not_format(line, 'a Cursor transcript line (an object with "role" and "message")',
                                           value, guess_from=self.name)
                    return
                kind = value.get("type") if isinstance(value, dict) else None
                skipped[f"{str(kind)[:40]} lines" if isinstance(kind, str) else "lines that are not messages"] += 1
                continue
            first = False
            key = chain.next(value)
            base = f"cu-{key}"
            role = value["role"]
            content = value["message"]["content"]
            if isinstance(content, str):
                content = [{"type": "text", "text": content}]
            content = blocks_with_ids(content, base, pending)
            context = None
            if role == "user":
                content, context = _split_query(content)
            events = mapper.message(role, content, base, {})
            if context:
                events.append({"id": f"{base}-{len(events)}", "trace_type": "user", "content": context,
                               "tags": [TAG_CONTEXT]})
            if not events:
                skipped[f"empty {role} messages"] += 1
            for event in events:
                yield line, event


def composer_bubble_ids(composer: dict) -> list:
    """The composer's bubbles in order: ids (``fullConversationHeadersOnly``), or the inline
    bubbles of older versions (``conversation``)."""
    headers = composer.get("fullConversationHeadersOnly")
    if isinstance(headers, list) and headers:
        return [h["bubbleId"] for h in headers if isinstance(h, dict) and isinstance(h.get("bubbleId"), str)]
    inline = composer.get("conversation")
    return [b for b in inline if isinstance(b, dict)] if isinstance(inline, list) else []


def _tool(bubble_id: str, tool: dict, skipped) -> list[dict]:
    call_id = nonempty(tool.get("toolCallId")) or bubble_id
    name = nonempty(tool.get("name")) or "tool"
    raw = tool.get("rawArgs") if tool.get("rawArgs") not in (None, "") else tool.get("params")
    out = [call_event("", call_id, name, raw)]
    if "result" in tool and tool["result"] is not None:
        out.append(result_event("", call_id, tool["result"], error=tool.get("status") == "error"))
    elif tool.get("status") == "error":
        error = tool.get("error")
        out.append(result_event("", call_id, error if error is not None else "", error=True))
    else:
        skipped["tool calls without a result yet"] += 1
    return out


def composer_events(composer: dict, bubbles: dict, result) -> list[tuple[int, dict]]:
    """``(n, event)`` of one composer: ``bubbles`` maps bubble id -> bubble (module docstring)."""
    skipped = result.skipped
    clock = Clock(skipped)
    out = []
    for n, ref in enumerate(composer_bubble_ids(composer), 1):
        bubble = ref if isinstance(ref, dict) else bubbles.get(ref)
        if not isinstance(bubble, dict):
            skipped["bubbles missing from the database"] += 1
            continue
        bubble_id = nonempty(bubble.get("bubbleId")) or (ref if isinstance(ref, str) else str(n))
        text = bubble.get("text") if isinstance(bubble.get("text"), str) else ""
        events = []
        if bubble.get("type") == 1:
            if text.strip():
                events.append({"trace_type": "user", "content": text})
        elif bubble.get("type") == 2:
            thinking = bubble.get("thinking")
            reasoning = thinking.get("text") if isinstance(thinking, dict) else None
            if isinstance(reasoning, str) and reasoning.strip():
                events.append({"trace_type": "assistant", "content": reasoning, "tags": [TAG_REASONING]})
            if text.strip():
                events.append({"trace_type": "assistant", "content": text})
            tool = bubble.get("toolFormerData")
            if isinstance(tool, dict) and (tool.get("name") or tool.get("toolCallId")):
                events.extend(_tool(bubble_id, tool, skipped))
        else:
            skipped[f"bubbles of type {str(bubble.get('type'))[:20]}"] += 1
            continue
        if not events:
            skipped["bubbles without text or tool call"] += 1
            continue
        common: dict = {}
        set_fields(common, ts=clock.read(bubble.get("createdAt")))
        out.extend((n, event) for event in numbered(events, f"cud-{bubble_id}", common))
    return out


IMPORTER = CursorImporter()
