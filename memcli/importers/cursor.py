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
"""

from __future__ import annotations

import re
from collections import deque

from memcli.importers._common import KeyChain, decoded, not_format
from memcli.importers.anthropic_blocks import BlockMapper
from memcli.importers.claude_ai import blocks_with_ids
from memcli.models import TAG_CONTEXT

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


IMPORTER = CursorImporter()
