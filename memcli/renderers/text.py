"""Plain text, for models without a chat API and for people: a deterministic layout.

```
[SYSTEM]
<system prompt, or (none)>

[MEMORY:EPISODIC]
1) <summary>            (or (none))

[MEMORY:SEMANTIC]
- <fact>                (or (none))

[RECENT TURNS]
(turn_0001) USER: <text>
(turn_0001) ASSISTANT: <text>
(turn_0001) TOOL CALL read_file [call_1]: {"path":"a.py"}
(turn_0001) TOOL RESULT read_file [call_1]: <result>
```

Every section is always present. One line per message part, prefixed with its turn; lines after
the first of a multi-line text are indented by two spaces. Results say ``TOOL RESULT``,
``TOOL ERROR``, ``TOOL PENDING`` (the placeholder of an unanswered call) or ``TOOL RESULT
(no matching call)`` / ``(late)``. Reasoning is shown (``ASSISTANT (reasoning)``), and media as
``[image: URL]`` lines (a data: URL by its type and size). The memory sections use AutoByteus'
``[MEMORY:EPISODIC]`` / ``[MEMORY:SEMANTIC]`` format (numbered summaries, bulleted facts).
"""

from __future__ import annotations

from typing import Iterable, Iterator

from memcli.messages import ERROR, LATE, NOTE_KINDS, PENDING, Message, Text, ToolResult, json_text
from memcli.renderers.base import Renderer

EPISODIC_HEADER = "[MEMORY:EPISODIC]"
SEMANTIC_HEADER = "[MEMORY:SEMANTIC]"
TURNS_HEADER = "[RECENT TURNS]"
NONE = "(none)"


def _indent(text: str) -> str:
    return text.rstrip().replace("\n", "\n  ")


class TextRenderer(Renderer):
    name = "text"
    is_json = False
    shows_reasoning = True

    def _line(self, message: Message, label: str, text: str) -> str:
        return f"({message.turn_id or '-'}) {label}: {_indent(text)}\n"

    def _media_lines(self, message: Message, media) -> str:
        return "".join(self._line(message, "MEDIA", f"[{m.kind}: {m.describe()}]") for m in media)

    def _result(self, message: Message, result: ToolResult, label: str | None = None) -> str:
        if label is None:
            label = {ERROR: "TOOL ERROR", PENDING: "TOOL PENDING"}.get(result.status, "TOOL RESULT")
        ident = f"{result.name} [{result.call_id or result.source_call_id or '?'}]"
        return self._line(message, f"{label} {ident}", result.text) + self._media_lines(message, result.media)

    def _memory(self, message: Message | None) -> str:
        texts = [p.text for p in message.parts if isinstance(p, Text)] if message else []
        out = []
        for header in (EPISODIC_HEADER, SEMANTIC_HEADER):
            section = next((t for t in texts if t.startswith(header)), None)
            out.append((section or f"{header}\n{NONE}").rstrip("\n") + "\n\n")
        return "".join(out)

    def _message(self, message: Message) -> str:
        role, kind = message.role, message.kind
        if role == "system":
            return self._line(message, "DEVELOPER" if kind == "developer" else "SYSTEM", message.text())
        if role == "user":
            if kind in NOTE_KINDS:
                result = message.results[0]
                what = "late" if kind == LATE else "no matching call"
                status = "TOOL ERROR" if result.is_error else "TOOL RESULT"
                return self._result(message, result, f"{status} ({what})")
            label = "CONTEXT" if kind == "context" else "USER"
            return self._line(message, label, message.text()) + self._media_lines(message, message.media())
        if role == "assistant":
            label = "ASSISTANT (reasoning)" if kind == "reasoning" else "ASSISTANT"
            out = self._line(message, label, message.text()) if message.text() else ""
            out += self._media_lines(message, message.media())
            for call in message.tool_calls:
                out += self._line(message, f"TOOL CALL {call.name} [{call.id}]", json_text(call.arguments))
            return out
        if role == "tool":
            return "".join(self._result(message, r) for r in message.results)
        return ""

    def render_messages(self, messages: Iterable[Message]) -> Iterator[str]:
        started = False
        for message in messages:
            if message.kind == "memory" and not started:
                yield self._memory(message) + TURNS_HEADER + "\n"
                started = True
                continue
            if not started:
                yield self._memory(None) + TURNS_HEADER + "\n"
                started = True
            yield self._message(message)
        if not started:
            yield self._memory(None) + TURNS_HEADER + "\n" + NONE + "\n"

    def _system(self, system: str) -> str:
        return f"[SYSTEM]\n{system.rstrip() if system else NONE}\n\n"

    def payload(self, system: str, items: list) -> str:
        return self._system(system) + "".join(items)

    def iter_chunks(self, system: str, messages: Iterable[Message]) -> Iterator[bytes]:
        yield self._system(system).encode()
        for item in self.render_messages(messages):
            yield item.encode()


RENDERER = TextRenderer
