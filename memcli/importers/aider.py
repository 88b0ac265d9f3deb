"""Aider's chat log, ``<project>/.aider.chat.history.md`` (Markdown, not JSON: read by
``memcli sync --source aider`` through :func:`runs` and :func:`run_events`).

Aider appends to the file as it goes (its ``InputOutput.append_chat_history``):

* each run starts with ``# aider chat started at YYYY-MM-DD HH:MM:SS``;
* what the person typed: every line prefixed ``#### `` (and ending in two spaces);
* Aider's own notices (token counts, applied edits, errors, confirmations): ``> `` lines;
* the model's reply: the plain text between them.

Each run is one session. Mapping: the typed lines -> ``user`` (an ``/ask``, ``/code`` or
``/architect`` command's text is the ask; any other ``/command`` is tagged ``context``); the reply
-> ``assistant``; notices are counted, not imported. Ids come from a hash chain over the run's
items seeded with its start time (``ai-<key>``): a run read again gives the same ids.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import NamedTuple

from memcli.importers._common import KeyChain
from memcli.models import TAG_CONTEXT

FILE_NAME = ".aider.chat.history.md"
_START = re.compile(r"^# aider chat started at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\s*$", re.M)
_ASKS = ("/ask", "/code", "/architect")


class Run(NamedTuple):
    started: str     # "YYYY-MM-DD HH:MM:SS"
    line: int        # 1-based line of its header
    text: str


def runs(text: str) -> list[Run]:
    """The runs of a chat history, in order (text before the first header is a run of its own
    only when it holds something)."""
    out = []
    starts = list(_START.finditer(text))
    head = text[: starts[0].start()] if starts else text
    if head.strip():
        out.append(Run("", 1, head))
    for i, m in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
        out.append(Run(m.group(1), text.count("\n", 0, m.start()) + 1, text[m.end():end]))
    return out


def _items(run: Run, skipped: Counter):
    """(line, kind, text) of a run: ``user`` blocks, ``assistant`` blocks; notices counted."""
    kind, lines, first = None, [], 0
    for n, raw in enumerate(run.text.split("\n"), run.line):
        if raw.startswith("#### ") or raw == "####":
            new = "user"
            body = raw[5:].rstrip()
        elif raw.startswith("> ") or raw == ">":
            new = "notice"
            body = raw[2:].rstrip()
        else:
            new = "assistant" if raw.strip() or kind == "assistant" else kind
            body = raw.rstrip()
        if new != kind:
            if kind in ("user", "assistant") and "\n".join(lines).strip():
                yield first, kind, "\n".join(lines).strip()
            elif kind == "notice":
                skipped["Aider notices (> lines)"] += 1
            kind, lines, first = new, [], n
        if new is not None:
            lines.append(body)
    if kind in ("user", "assistant") and "\n".join(lines).strip():
        yield first, kind, "\n".join(lines).strip()
    elif kind == "notice":
        skipped["Aider notices (> lines)"] += 1


def run_events(run: Run, skipped: Counter, *, ts: float | None = None):
    """``(line, event)`` pairs of one run."""
    chain = KeyChain(f"aider:{run.started}")
    for line, kind, text in _items(run, skipped):
        key = chain.next([kind, text])
        event = {"id": f"ai-{key}", "trace_type": kind, "content": text}
        if kind == "user" and text.startswith("/"):
            command, _, rest = text.partition(" ")
            if command in _ASKS and rest.strip():
                event["content"] = rest.strip()
            else:
                event["tags"] = [TAG_CONTEXT]
        if ts is not None:
            event["ts"] = ts
        yield line, event
