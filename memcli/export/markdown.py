"""``--format markdown``: the history as a document people read (and diff, and attach to tickets).

Layout::

    # coder — memory export
    (one line on what this is; the filters, when any)
    ## Memory                                   with --with-memory: live episodic summaries and
                                                semantic facts (superseded ones are not shown),
                                                and the working memory files (each path, then
                                                its text fenced), when there are any
    ## turn_0003 · 2026-03-02 09:14 UTC         one heading per turn, the time of its first trace
    **User** · 09:14:03                          user text as a quote
    **Assistant** · 09:14:10 · tokens            assistant text as written (it is markdown)
    🔧 **tool** `{"arg": 1}` · 09:14:11          each call with its arguments (JSON) ...
    **Result** · 0.4 s  / ❌ **Error** · 0.4 s   ... and right below it its result or error
    ---
    *N traces in M turns · ...*                  a closing line with counts

Decisions:

* **Times** are UTC, so the document is the same wherever it is produced.
* **Tool results sit under their call.** Calls and results are paired first-in-first-out by
  ``tool_call_id`` (the rule of :mod:`memcli.pairing`) while streaming: a result that
  arrives later in the file (after the next user message, or after parallel calls) is moved up
  to its call. To keep memory flat, output is held back for at most ``LOOKAHEAD_TRACES`` traces /
  ``LOOKAHEAD_BYTES`` bytes waiting for a result; past that the call is written as "no result
  yet" and its result, when it comes, is written where it is, naming its call. Calls written
  without a result are remembered (slimmed to name, id, time and turn) so a later result still
  finds them — the newest ``MAX_UNANSWERED`` of them; a result for an older one is shown as a
  result without a call. (A store with that many unanswered calls is unusual: they also stop
  compaction.)
* A call whose result is not in the export is marked ⏳ (pending, or — when a filter is used —
  outside the selection). A result whose call is not in the export is an orphan and is marked ⚠️.
  Errors (``tool_error``) are marked ❌.
* Long results (more than ``FOLD_LINES`` lines or ``FOLD_CHARS`` characters) and long arguments
  are folded in ``<details>``. System prompts, developer messages, injected context, earlier
  compaction summaries and reasoning are folded too, so the conversation stays readable.
  Subagent (``sidechain``) traces are labelled as such.
* **Escaping.** Code blocks use a fence longer than any backtick run in their content. In text
  written as markdown (user and assistant messages, folded text), headings are pushed below the
  document's own levels (``# x`` becomes ``#### x``), an unclosed code fence is closed at the end
  of the message, and ``<details>``/``<summary>``/``<!--`` outside code are escaped, so no message
  can break the structure of the rest of the document. Control characters (ANSI colours kept
  from a tool's output, BEL, a lone CR) are shown as Unicode control pictures (``␛``, ``␇``,
  ``␍``) by :func:`memcli.neutral.neutral`, so ``cat export.md`` cannot drive the terminal.
* Where the archive ends and the active traces begin (the compaction boundary) is marked. When
  the history goes back to a turn it left (events with explicit turn ids), the turn gets a
  second heading marked "(continued)".
* Records written by other tools with odd field types (content as a list, tags as a string) are
  rendered as JSON text rather than failing the export.
"""

from __future__ import annotations

import math
import re
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import BinaryIO

import orjson

from memcli.models import (
    TAG_COMPACT_SUMMARY,
    TAG_CONTEXT,
    TAG_DEVELOPER,
    TAG_REASONING,
    TAG_SIDECHAIN,
    TAG_SYSTEM,
    EpisodicItem,
    RawTrace,
    SemanticItem,
    field_names,
    from_record,
    superseded_ids,
)
from memcli.neutral import neutral
from memcli.pairing import pop_open_call
from memcli.sizes import format_size
from memcli.store.harness_items import describe_mark, harness_mark

FOLD_LINES = 20
FOLD_CHARS = 2000
INLINE_ARGS_CHARS = 100
LOOKAHEAD_TRACES = 2000
LOOKAHEAD_BYTES = 4 << 20
MAX_UNANSWERED = 10000
RECENT_TURNS = 256

_SPECIAL_TAGS = {TAG_SYSTEM, TAG_DEVELOPER, TAG_CONTEXT, TAG_COMPACT_SUMMARY, TAG_SIDECHAIN, TAG_REASONING}
_FOLDED_USER = ((TAG_SYSTEM, "System prompt"), (TAG_DEVELOPER, "Developer message"),
                (TAG_COMPACT_SUMMARY, "Summary of earlier conversation"), (TAG_CONTEXT, "Context"))


# ------------------------------------------------------------------------------ text helpers

def _utc(ts) -> datetime | None:
    if type(ts) not in (int, float):
        return None
    try:
        return datetime.fromtimestamp(ts, timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None


def _clock(ts) -> str:
    if type(ts) not in (int, float) or not math.isfinite(ts):
        return "?"
    seconds = int(ts) % 86400  # UTC time of day (epoch days are 86400 s: no leap seconds)
    return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def _day_minute(ts) -> str:
    dt = _utc(ts)
    return dt.strftime("%Y-%m-%d %H:%M UTC") if dt else "time unknown"


_BACKTICKS = re.compile(r"`+")


def _longest_run(text: str) -> int:
    """The longest run of backticks in ``text``."""
    if "`" not in text:
        return 0
    return max(map(len, _BACKTICKS.findall(text)))


def fenced(text: str, lang: str = "") -> str:
    """A fenced code block that ``text`` cannot close early."""
    fence = "`" * max(3, _longest_run(text) + 1)
    body = text if text.endswith("\n") else text + "\n"
    return f"{fence}{lang}\n{body}{fence}"


def inline_code(text: str) -> str:
    if "`" not in text and text.strip():
        return f"`{text}`"
    ticks = "`" * (_longest_run(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


_FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^( {0,3})(#{1,6})(?=\s|$)")
_HTML_BREAKERS = re.compile(r"<(/?)(details|summary)\b|<!--", re.IGNORECASE)


def prose(text: str) -> str:
    """Message text as markdown that cannot break the document (module docstring)."""
    out = []
    fence: str | None = None
    for line in text.split("\n"):
        m = _FENCE_LINE.match(line)
        if fence is None:
            if m:
                fence = m.group(1)
            else:
                line = _HEADING.sub(lambda h: h.group(1) + "#" * min(6, len(h.group(2)) + 3), line)
                line = _HTML_BREAKERS.sub(lambda h: "&lt;" + h.group(0)[1:], line)
        elif m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(m.group(1)):].strip():
            fence = None
        out.append(line)
    if fence is not None:
        out.append(fence)  # close what the message left open
    return "\n".join(out).strip("\n")


def quote(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in prose(text).split("\n"))


def _value_text(value) -> tuple[str, str]:
    """(text, language) for a tool result or argument value."""
    if isinstance(value, str):
        return value, "text"
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode(), "json"
    except TypeError:
        return str(value), "text"


def _block(text: str, lang: str, label: str) -> str:
    """``label`` then the text in a code block, folded when long."""
    lines = text.count("\n") + 1
    if lines > FOLD_LINES or len(text) > FOLD_CHARS:
        summary = f"{_strip_markup(label) or 'Content'} · {lines} lines · {format_size(len(text.encode()))}"
        return f"<details><summary>{_html(summary)}</summary>\n\n{fenced(text, lang)}\n\n</details>"
    return f"{label}\n\n{fenced(text, lang)}" if label else fenced(text, lang)


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _strip_markup(text: str) -> str:
    # for <summary> text: markdown is not rendered there
    return text.replace("**", "").replace("`", "")


def _folded(summary: str, body_markdown: str) -> str:
    return f"<details><summary>{_html(_strip_markup(summary))}</summary>\n\n{body_markdown}\n\n</details>"


# ------------------------------------------------------------------------------ rendering items

@dataclass(eq=False)
class _Call:
    trace: RawTrace
    size: int
    result: RawTrace | None = None
    written: bool = False      # written before its result came (lookahead exceeded)


def _call_turn(call: _Call) -> str | None:
    return call.trace.turn_id


@dataclass
class _Stats:
    traces: int = 0
    turns: int = 0
    calls: int = 0
    errors: int = 0
    pending: int = 0
    orphans: int = 0


@dataclass
class MarkdownWriter:
    out: BinaryIO
    agent_id: str
    filter_description: str = ""
    stats: _Stats = field(default_factory=_Stats)

    def __post_init__(self):
        self._queue: deque = deque()          # items waiting to be written, in order
        self._queued_bytes = 0
        self._open_calls: dict[str, deque[_Call]] = {}
        self._written_unanswered: deque[_Call] = deque()
        self._parts: list[str] = []
        self._recent_turns: dict[str, None] = {}  # insertion-ordered, bounded
        self._turn: str | None = None
        self._turns_seen_count = 0
        self._last_tier: str | None = None
        self._archive_seen = False

    # ---------------------------------------------------------------- public
    def begin(self) -> None:
        lines = [f"# {self.agent_id} — memory export", ""]
        what = ("Complete history, oldest first: traces already compacted (archived), then the active "
                "ones. Times are UTC.")
        if self.filter_description:
            what = f"History filtered to {self.filter_description}, oldest first. Times are UTC."
        lines.append(what)
        self._write("\n".join(lines) + "\n")
        self._drain()

    def memory(self, episodic: list[EpisodicItem], semantic: list[SemanticItem],
               hidden_episodic: int = 0, hidden_semantic: int = 0, files: list[tuple[str, str]] = ()) -> None:
        sections = ["## Memory"]
        items = []
        for item in episodic:
            turns = item.turn_ids if isinstance(item.turn_ids, list) else []
            span = ""
            if turns:
                span = f"**{turns[0]}**" if len(turns) == 1 else f"**{turns[0]} – {turns[-1]}** ({len(turns)} turns)"
            mark = harness_mark(item)   # an imported harness compaction (memcli.store.harness_items)
            by = f"by the harness: {inline_code(describe_mark(mark))}" if mark is not None else ""
            head = " · ".join(p for p in (span, _day_minute(item.ts), by) if p)
            items.append(f"- {head}  \n  " + prose(str(item.summary)).replace("\n", "\n  "))
        if hidden_episodic:
            items.append(f"\n*{hidden_episodic} older summar{'y' if hidden_episodic == 1 else 'ies'} "
                         "rolled up into these not shown.*")
        sections.append("### Episodic summaries\n\n" + ("\n".join(items) if items else "*None.*"))
        items = []
        for fact in semantic:
            meta = [f"confidence {fact.confidence:g}" if isinstance(fact.confidence, (int, float)) else "confidence ?"]
            if fact.tags:
                meta.append("tags: " + ", ".join(map(str, fact.tags)))
            if fact.source_turn_ids:
                meta.append("from " + ", ".join(map(str, fact.source_turn_ids)))
            items.append(f"- {prose(str(fact.fact)).replace(chr(10), chr(10) + '  ')} *({'; '.join(meta)})*")
        if hidden_semantic:
            items.append(f"\n*{hidden_semantic} superseded fact{'s' if hidden_semantic != 1 else ''} not shown.*")
        sections.append("### Semantic facts\n\n" + ("\n".join(items) if items else "*None.*"))
        if files:
            sections.append("### Working memory files\n\n" + "\n\n".join(
                f"{inline_code(path)}\n\n{fenced(text)}" for path, text in files))
        self._write("\n" + "\n\n".join(sections) + "\n")

    def add(self, trace: RawTrace, tier: str, size: int = 0) -> None:
        """Take the next trace of the history (``size``: its stored line's length, for the
        lookahead bound)."""
        self.stats.traces += 1
        if trace.trace_type == "tool_result":
            call = pop_open_call(self._open_calls, trace.tool_call_id or "", trace.turn_id, _call_turn)
            if call is not None:  # the one pairing rule (memcli.pairing)
                if not call.written:
                    call.result = trace
                    call.size += size
                    self._queued_bytes += size
                    self._flush()
                    return
                self._enqueue(("late", trace, call.trace), tier, size)
                return
            self._enqueue(("orphan", trace), tier, size)
            return
        if trace.trace_type == "tool_call":
            call = _Call(trace, size)
            self._open_calls.setdefault(trace.tool_call_id or "", deque()).append(call)
            self._enqueue(("call", call), tier, size)
            return
        self._enqueue(("trace", trace), tier, size)

    def finish(self, filtered: bool) -> None:
        self._flush(final=True, filtered=filtered)
        s = self.stats
        s.pending = sum(len(q) for q in self._open_calls.values())
        facts = [f"{s.traces} trace{'s' if s.traces != 1 else ''} in {s.turns} turn{'s' if s.turns != 1 else ''}",
                 f"{s.calls} tool call{'s' if s.calls != 1 else ''}"]
        if s.errors:
            facts.append(f"{s.errors} error{'s' if s.errors != 1 else ''}")
        if s.pending:
            facts.append(f"{s.pending} without a result")
        if s.orphans:
            facts.append(f"{s.orphans} result{'s' if s.orphans != 1 else ''} without a call")
        self._write("\n---\n\n*" + " · ".join(facts) + "*\n")
        self._drain()

    # ---------------------------------------------------------------- queue
    def _enqueue(self, item: tuple, tier: str, size: int) -> None:
        self._queue.append((item, tier, size))
        self._queued_bytes += size
        self._flush()

    def _flush(self, final: bool = False, filtered: bool = False) -> None:
        """Write queued items up to the first call still waiting for its result (all of them
        when ``final``, or when the lookahead bound is exceeded)."""
        queue = self._queue
        while queue:
            item, tier, size = queue[0]
            if item[0] == "call":
                call = item[1]
                size = call.size
                if call.result is None and not final:
                    if len(queue) <= LOOKAHEAD_TRACES and self._queued_bytes <= LOOKAHEAD_BYTES:
                        return
                    call.written = True
            queue.popleft()
            self._queued_bytes -= size
            self._render(item, tier, final=final, filtered=filtered)
            if item[0] == "call" and item[1].written:
                self._remember_unanswered(item[1])

    def _remember_unanswered(self, call: _Call) -> None:
        t = call.trace
        call.trace = RawTrace(t.id, t.ts, t.turn_id, t.seq, t.trace_type, "", t.source_event,
                              tool_name=t.tool_name, tool_call_id=t.tool_call_id)
        self._written_unanswered.append(call)
        if len(self._written_unanswered) > MAX_UNANSWERED:
            old = self._written_unanswered.popleft()
            queue = self._open_calls.get(old.trace.tool_call_id or "")
            if queue:
                try:
                    queue.remove(old)
                except ValueError:
                    return  # answered meanwhile
                if not queue:
                    del self._open_calls[old.trace.tool_call_id or ""]

    # ---------------------------------------------------------------- rendering
    def _write(self, text: str) -> None:
        self._parts.append(text)
        if len(self._parts) >= 512:
            self._drain()

    def _drain(self) -> None:
        if self._parts:
            self.out.write(neutral("".join(self._parts)).encode("utf-8", "surrogatepass"))
            self._parts.clear()

    def _enter(self, turn_id: str, tier: str, ts) -> None:
        if tier != self._last_tier:
            if tier == "active" and self._archive_seen:
                self._write("\n---\n\n*Active traces from here on; the ones above were compacted (archived).*\n")
                self._turn = None
            self._archive_seen = self._archive_seen or tier == "archive"
            self._last_tier = tier
        if turn_id != self._turn:
            self._turn = turn_id
            if turn_id in self._recent_turns:  # the history went back to a turn (explicit turn ids)
                self._write(f"\n## {turn_id} (continued) · {_day_minute(ts)}\n")
                return
            self._recent_turns[turn_id] = None
            if len(self._recent_turns) > RECENT_TURNS:
                del self._recent_turns[next(iter(self._recent_turns))]
            self.stats.turns += 1
            self._write(f"\n## {turn_id} · {_day_minute(ts)}\n")

    def _section(self, text: str) -> None:
        self._write("\n" + text.rstrip("\n") + "\n")

    def _render(self, item: tuple, tier: str, *, final: bool, filtered: bool) -> None:
        kind = item[0]
        if kind == "trace":
            trace = item[1]
            self._enter(trace.turn_id, tier, trace.ts)
            self._render_message(trace)
        elif kind == "call":
            call: _Call = item[1]
            self._enter(call.trace.turn_id, tier, call.trace.ts)
            self.stats.calls += 1
            self._section(self._call_text(call.trace))
            if call.result is not None:
                self._section(self._result_text(call.result, call.trace))
            elif final:
                if filtered:
                    self._section("⏳ **No result in this export** (pending, or outside the selection)")
                else:
                    self._section("⏳ **No result** — the call is still pending")
            else:
                self._section("⏳ **No result yet** — if one comes later in the history, it is shown there")
        elif kind == "late":
            result, call_trace = item[1], item[2]
            self._enter(result.turn_id, tier, result.ts)
            label = (f"↩ Result of {inline_code(call_trace.tool_name or 'tool')} · {inline_code(call_trace.tool_call_id or '')}"
                     f" called at {_clock(call_trace.ts)} in {call_trace.turn_id}")
            self._section(label)
            self._section(self._result_text(result, call_trace))
        elif kind == "orphan":
            result = item[1]
            self._enter(result.turn_id, tier, result.ts)
            self.stats.orphans += 1
            name = inline_code(result.tool_name) + " · " if result.tool_name else ""
            self._section(f"⚠️ **Result without a call** · {name}{inline_code(result.tool_call_id or '')} · {_clock(result.ts)}")
            self._section(self._result_text(result, None, heading=False))

    def _meta(self, trace: RawTrace) -> str:
        parts = [_clock(trace.ts)]
        other = [t for t in trace.tags if t not in _SPECIAL_TAGS]
        if other:
            parts.append("tags: " + ", ".join(map(str, other)))
        return " · ".join(parts)

    def _media(self, trace: RawTrace) -> str:
        if not trace.media:
            return ""
        lines = []
        for kind, urls in trace.media.items():
            for url in (urls if isinstance(urls, list) else [urls]):
                lines.append(f"- 📎 {kind}: {media_text(kind, str(url), self.agent_id, trace.id)}")
        return "\n".join(lines)

    def _render_message(self, trace: RawTrace) -> None:
        subagent = "Subagent " if TAG_SIDECHAIN in trace.tags else ""
        media = self._media(trace)
        content = trace.content or ""
        if trace.trace_type == "user":
            for tag, label in _FOLDED_USER:
                if tag in trace.tags:
                    self._section(_folded(f"{subagent}{label} · {self._meta(trace)}", prose(content) or "*(empty)*"))
                    if media:
                        self._section(media)
                    return
            if subagent:
                self._section(_folded(f"Subagent prompt · {self._meta(trace)}", prose(content) or "*(empty)*"))
                return
            self._section(f"**User** · {self._meta(trace)}")
            if content.strip():
                self._section(quote(content))
            if media:
                self._section(media)
            return
        # assistant
        if TAG_REASONING in trace.tags:
            if content.strip():
                self._section(_folded(f"{subagent}Reasoning · {self._meta(trace)}", prose(content)))
            return
        if not content.strip() and not media:
            return  # an assistant turn that only made tool calls: the calls speak for it
        meta = self._meta(trace)
        usage = trace.usage or {}
        if isinstance(usage.get("prompt_tokens"), int):
            tokens = f"{usage['prompt_tokens']:,} prompt"
            if isinstance(usage.get("completion_tokens"), int):
                tokens += f" / {usage['completion_tokens']:,} completion"
            meta += f" · {tokens} tokens"
        self._section(f"**{subagent}Assistant** · {meta}")
        if content.strip():
            self._section(prose(content))
        if media:
            self._section(media)

    def _call_text(self, trace: RawTrace) -> str:
        subagent = "subagent · " if TAG_SIDECHAIN in trace.tags else ""
        head = f"🔧 {inline_code(trace.tool_name or '(unnamed tool)')}"
        tail = f" · {subagent}{self._meta(trace)} · {inline_code(trace.tool_call_id or '')}"
        args = trace.tool_args
        compact = _compact_json(args) if args is not None else ""
        parts = []
        if args is None:
            parts.append(head + tail)
        elif len(compact) <= INLINE_ARGS_CHARS and "\n" not in compact:
            parts.append(f"{head} {inline_code(compact)}{tail}")
        else:
            parts.append(head + tail)
            text, lang = _value_text(args)
            parts.append(_block(text, lang, ""))
        if trace.content.strip():
            parts.append(prose(trace.content))
        return "\n\n".join(parts)

    def _result_text(self, result: RawTrace, call: RawTrace | None, heading: bool = True) -> str:
        took = ""
        if call is not None and type(result.ts) in (int, float) and type(call.ts) in (int, float):
            took = f" · {_duration(result.ts - call.ts)}"
        parts = []
        value = result.tool_result
        if value is None and result.content:
            value = result.content
        if result.tool_error:
            self.stats.errors += 1
            parts.append(_block(result.tool_error, "text", f"❌ **Error**{took}"))
            if value is not None and value != "":
                text, lang = _value_text(value)
                parts.append(_block(text, lang, "Output"))
        elif value is None or value == "":
            parts.append(f"**Result**{took} · *(empty)*")
        else:
            text, lang = _value_text(value)
            parts.append(_block(text, lang, f"**Result**{took}" if heading else ""))
        media = self._media(result)
        if media:
            parts.append(media)
        return "\n\n".join(parts)


def _duration(seconds: float) -> str:
    if seconds < 0:
        return "result before call?"
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _compact_json(value) -> str:
    import json

    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def _trace(record: dict, names=field_names(RawTrace)) -> RawTrace:  # noqa: B008  (computed once, on purpose)
    """``from_record(RawTrace, record)``, normalized for rendering.

    Stores written by other tools may hold odd types (content as a list, tags as a string...):
    they are normalized here so that rendering never fails on them (the usual record, known keys
    only with text content and list tags, is left as it is)."""
    trace = from_record(RawTrace, record)
    if not (record.keys() <= names and type(record.get("content")) is str
            and type(record.get("tags", ())) in (list, tuple)):
        if not isinstance(trace.content, str):
            trace.content = _value_text(trace.content)[0]
        if not isinstance(trace.tags, list):
            trace.tags = [trace.tags] if isinstance(trace.tags, str) else []
    if trace.usage is not None and not isinstance(trace.usage, dict):
        trace.usage = None
    if trace.media is not None and not isinstance(trace.media, dict):
        trace.media = {"media": [trace.media]}
    for name in ("tool_name", "tool_call_id", "tool_error"):
        value = getattr(trace, name)
        if value is not None and not isinstance(value, str):
            setattr(trace, name, _value_text(value)[0])
    return trace


@dataclass
class LiveMemory:
    episodic: list
    semantic: list
    superseded_episodic: int
    superseded_semantic: int


def live_memory(history, flt, progress=None) -> LiveMemory:
    """The memory items of ``history`` that the filter selects and no later item supersedes."""
    everything: dict[str, list] = {"episodic": [], "semantic": []}
    for kind, record in history.iter_memory(progress):
        everything[kind].append(record)
    items = {kind: [r for r in records if flt.matches_memory(kind, r)] for kind, records in everything.items()}
    superseded = {kind: superseded_ids(records) for kind, records in everything.items()}
    live = {kind: [r for r in records if r["id"] not in superseded[kind]] for kind, records in items.items()}
    return LiveMemory([from_record(EpisodicItem, r) for r in live["episodic"]],
                      [from_record(SemanticItem, r) for r in live["semantic"]],
                      len(items["episodic"]) - len(live["episodic"]),
                      len(items["semantic"]) - len(live["semantic"]))


def write_markdown(history, out: BinaryIO, flt, *, with_memory: bool, result, progress=None) -> None:
    """Render ``history`` (a :class:`memcli.export.reader.History`) as the document above."""
    writer = MarkdownWriter(out, history.store.agent_id, flt.describe())
    writer.begin()
    if with_memory:
        memory = live_memory(history, flt, progress)
        files = history.memory_tree(progress).sorted_files()
        writer.memory(memory.episodic, memory.semantic, memory.superseded_episodic, memory.superseded_semantic,
                      files)
        result.memory_files = len(files)
        result.episodic = len(memory.episodic)
        result.semantic = len(memory.semantic)
    add = writer.add
    split_turn, ask = _split_turn_ask(history.store, flt)
    for batch in history.iter_trace_blocks(progress, select=flt.matches if flt.active else None,
                                           keep_records=True):
        tier = batch.tier
        for line, record in zip(batch.lines, batch.records):
            if ask is not None and record.get("turn_id") == split_turn:
                if tier == "archive":  # a turn compacted in steps: its ask, still active, comes first
                    add(ask, tier, 0)
                    split_turn = ask.id
                    ask = None
            elif ask is None and record.get("id") == split_turn and tier == "active":
                split_turn = None  # the ask already written above its archived steps
                continue
            add(_trace(record), tier, len(line))
    writer.finish(filtered=flt.active)
    result.traces = writer.stats.traces


def _split_turn_ask(store, flt) -> tuple[str | None, RawTrace | None]:
    """(turn id, ask) of the active file's first turn when its ask is its first user trace: a
    turn whose older steps a compaction archived keeps its ask active (docs/compaction.md), so
    the export writes that ask before the archived steps. Reads the active file only up to the
    ask (the first few lines)."""
    from memcli.store import jsonl

    first_turn = None
    for offset, line in jsonl.iter_lines(store.paths.active):
        record = jsonl.parse_line(store.paths.active, line, None, offset)
        turn = record.get("turn_id")
        if first_turn is None:
            first_turn = turn
            if turn is None:
                return None, None
        elif turn != first_turn:
            return None, None
        if record.get("trace_type") == "user":
            trace = _trace(record)
            if trace.is_context or (flt.active and not flt.matches(record)):
                continue
            return first_turn, trace
    return None, None


def media_text(kind: str, url: str, agent_id: str, trace_id: str) -> str:
    """A media item as markdown: a URL as code; a ``data:`` URL (a whole image inline, often
    megabytes on one line) as a short placeholder naming its media type and size, and where
    the full record is."""
    from memcli.messages import Media

    media = Media(kind, url)
    if not media.is_data:
        return inline_code(url)
    payload = media.base64_data()
    size = format_size(len(payload) * 3 // 4 - payload[-2:].count("=")) if payload is not None \
        else f"{len(url):,} characters"
    return f"*{media.mime_type} data, {size}, not inlined* (`memcli get {agent_id} {trace_id}` has it)"
