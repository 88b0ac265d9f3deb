"""Budget views: lossless, render-time transformations of canonical messages. Nothing in the store
changes; every shortened tool result names the trace id and the ``memcli get`` command that shows
it in full. All functions return new message lists (messages they change are copies).

* **clip** (``--max-tool-result-chars``, default 10,000): a result longer than N characters keeps
  its first three quarters and last quarter of N around a note — the end of a tool's output
  (the error, the summary line) is usually what matters.
* **expire** (``--expire TOOL=TURNS[:clip=N|:remove|:summary]``, repeatable, ``*`` for every
  tool): results of TOOL more than TURNS turns old (the newest turn is 0 turns old) are clipped to
  N characters, replaced by a one-line stub (``:remove``, the default), or by the summary
  ``memcli summarize-results`` stored for them (``:summary``, with a note naming the original's
  size and the ``memcli get`` command that expands it; a result with no stored summary is clipped
  to :data:`SUMMARY_FALLBACK_CHARS` instead, and the note says so). The call stays. A result already
  no longer than its stub stays as it is (a stub must save something). A rule naming a tool
  wins over ``*``; for the same tool the last rule wins.
* **budget** (``--max-tokens``, :func:`fit_budget`): stub tool results oldest first, sparing the
  newest turn, until the payload fits; if even that is not enough, drop the oldest whole turns
  (the memory bundle and the system prompt stay), then restore the newest stubbed results while
  they still fit. A budget that even the newest turn alone does not fit stubs that turn's results
  too, and says so.

Turns are the runs of consecutive messages with one ``turn_id`` (:func:`turn_blocks`); dropping
whole turns keeps every call with its results. Placeholders of pending calls are never shortened.

Token counts (:class:`TokenMeter`) are taken on the canonical messages, so every provider gets
the same window: text tokens plus a fixed framing overhead per message, call and result, and a
flat estimate per media item.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from memcli.errors import UsageError
from memcli.messages import NOTE_KINDS, PENDING, Media, Message, Text, ToolResult, json_text, note_text
from memcli.sizes import counted
from memcli.tokens import TokenCounter

DEFAULT_MAX_TOOL_RESULT_CHARS = 10_000
REPLY_OVERHEAD = 3          # the assistant reply's priming
MESSAGE_OVERHEAD = 4        # role and framing of one message
PART_OVERHEAD = 4           # one tool call or one tool result
MEDIA_TOKENS = {"image": 1_500, "audio": 1_000, "video": 5_000}
OTHER_MEDIA_TOKENS = 1_000

_EXPIRE_RE = re.compile(r"(?P<tool>[^=]+)=(?P<turns>\d+)(?::(?P<action>remove|summary|clip=(?P<clip>\d+)))?")
SUMMARY_FALLBACK_CHARS = 2_000   # ":summary" for a result that has no stored summary: clipped to this


# --------------------------------------------------------------------------- expire rules

@dataclass(frozen=True)
class ExpireRule:
    tool: str                 # a tool name as stored, or "*"
    turns: int                # results more than this many turns old expire
    clip_chars: int | None = None  # None: replace by a stub (or by the stored summary)
    summary: bool = False          # ":summary": the stored summary (memcli summarize-results)

    @property
    def action(self) -> str:
        if self.summary:
            return "summary"
        return "remove" if self.clip_chars is None else f"clip={self.clip_chars}"

    def __str__(self) -> str:
        return f"{self.tool}={self.turns}:{self.action}"


def parse_expire(spec: str) -> ExpireRule:
    """``TOOL=TURNS[:clip=N|:remove|:summary]`` -> ExpireRule (UsageError, exit 2, when malformed)."""
    m = _EXPIRE_RE.fullmatch(spec.strip())
    if not m or not m.group("tool").strip():
        raise UsageError(f"{{expire}} {spec!r}: expected TOOL=TURNS[:clip=N|:remove|:summary], e.g. "
                         "read_file=3:clip=200, '*=10:remove' or Read=2:summary", param="expire")
    clip = m.group("clip")
    return ExpireRule(m.group("tool").strip(), int(m.group("turns")), int(clip) if clip is not None else None,
                      summary=m.group("action") == "summary")


class ExpirePolicy:
    """The ``--expire`` rules; ``summaries`` (trace id -> stored summary text) serve ``:summary``."""

    def __init__(self, rules=(), summaries: dict[str, str] | None = None):
        self.summaries: dict[str, str] = summaries or {}
        self.rules: dict[str, ExpireRule] = {}
        for rule in rules:
            rule = parse_expire(rule) if isinstance(rule, str) else rule
            self.rules[rule.tool] = rule

    def __bool__(self) -> bool:
        return bool(self.rules)

    @property
    def wants_summaries(self) -> bool:
        return any(rule.summary for rule in self.rules.values())

    def rule_for(self, *names: str | None) -> ExpireRule | None:
        for name in names:
            if name and name in self.rules:
                return self.rules[name]
        return self.rules.get("*")


# --------------------------------------------------------------------------- result forms

def get_command(agent_id: str, trace_id: str | None) -> str:
    return f"memcli get {agent_id} {trace_id}" if trace_id else ""


def _what(result: ToolResult) -> str:
    return "tool error" if result.error else "tool result"


def summary_result(result: ToolResult, summary: str, agent_id: str) -> ToolResult:
    """``result`` replaced by its stored summary and a note naming the original's size and the
    command that expands it (the result structure stays: every provider gets a valid payload)."""
    command = get_command(agent_id, result.trace_id)
    note = f"[summary of {result.full_chars:,} characters" + (f"; `{command}` expands it]" if command else "]")
    return replace(result, text=f"{summary}\n{note}", view="expired")


def clip_result(result: ToolResult, limit: int, agent_id: str, *, view: str = "clipped",
                why: str | None = None) -> ToolResult:
    """``result`` with its text cut to ``limit`` characters around a note (unchanged if short)."""
    text = result.text
    if len(text) <= limit or result.status == PENDING:
        return result
    head = limit - limit // 4
    tail = limit - head
    command = get_command(agent_id, result.trace_id)
    note = f"[... {len(text) - limit:,} of {len(text):,} characters clipped" + (f", {why}" if why else "")
    note += f"; `{command}` shows the full {_what(result)} ...]" if command else " ...]"
    pieces = [text[:head], note, text[len(text) - tail:]]
    return replace(result, text="\n".join(p for p in pieces if p), view=view)


def stub_result(result: ToolResult, agent_id: str, *, reason: str, view: str) -> ToolResult:
    """A one-line stand-in for ``result`` that names its trace id and how to read it; ``result``
    itself when it is a pending placeholder or already no longer than its stub."""
    if result.status == PENDING:
        return result
    command = get_command(agent_id, result.trace_id)
    size = f"{result.full_chars:,} characters" if result.full_chars != 1 else "1 character"
    if result.media:
        kinds = sorted({m.kind for m in result.media})
        size += f" and {len(result.media)} {'/'.join(kinds)} item{'s' if len(result.media) != 1 else ''}"
    stub = f"[{_what(result)} {reason}: {result.source_name or result.name}, {size}"
    stub += f"; `{command}` shows it]" if command else "]"
    if len(stub) >= len(result.text) and not result.media:
        return result
    return replace(result, text=stub, media=[], view=view)


def _with_result(message: Message, index: int, result: ToolResult) -> Message:
    results = list(message.results)
    results[index] = result
    return replace(message, results=results)


def _map_results(message: Message, fn) -> Message:
    if not message.results:
        return message
    changed = False
    results = []
    for result in message.results:
        new = fn(result)
        changed |= new is not result
        results.append(new)
    return replace(message, results=results) if changed else message


# --------------------------------------------------------------------------- turns

@dataclass
class TurnBlock:
    turn_id: str
    start: int
    end: int  # exclusive


def turn_blocks(messages: list[Message]) -> list[TurnBlock]:
    """Runs of consecutive messages with one turn_id, in order (messages without one are left out)."""
    blocks: list[TurnBlock] = []
    for i, message in enumerate(messages):
        if message.turn_id is None:
            continue
        if blocks and blocks[-1].turn_id == message.turn_id and blocks[-1].end == i:
            blocks[-1].end = i + 1
        else:
            blocks.append(TurnBlock(message.turn_id, i, i + 1))
    return blocks


# --------------------------------------------------------------------------- clip and expire

@dataclass
class ViewCounts:
    clipped: int = 0
    expired_clipped: int = 0
    expired_removed: int = 0
    expired_summarized: int = 0
    summary_missing: int = 0       # ":summary" results that had no stored summary (clipped instead)

    def __bool__(self) -> bool:
        return bool(self.clipped or self.expired_clipped or self.expired_removed or self.expired_summarized
                    or self.summary_missing)


def apply_result_views(messages: list[Message], *, agent_id: str, max_chars: int | None = DEFAULT_MAX_TOOL_RESULT_CHARS,
                       expire: ExpirePolicy | None = None, age_offset: int = 0) -> tuple[list[Message], ViewCounts]:
    """Clip and expire tool results (module docstring). Ages count turn blocks from the newest;
    ``age_offset`` adds to every age (for a window that is not the newest)."""
    counts = ViewCounts()
    if not max_chars and not expire:
        return messages, counts
    ages: dict[int, int] = {}
    blocks = turn_blocks(messages)
    for b, block in enumerate(blocks):
        for i in range(block.start, block.end):
            ages[i] = len(blocks) - 1 - b + age_offset
    out = []
    for i, message in enumerate(messages):
        if not message.results:
            out.append(message)
            continue
        age = ages.get(i, 0)

        def view(result: ToolResult, age: int = age) -> ToolResult:
            if result.status == PENDING:
                return result
            rule = expire.rule_for(result.source_name, result.name) if expire else None
            if rule is not None and age > rule.turns:
                if rule.summary:
                    stored = expire.summaries.get(result.trace_id or "")
                    if stored is not None:
                        counts.expired_summarized += 1
                        return summary_result(result, stored, agent_id)
                    new = clip_result(result, SUMMARY_FALLBACK_CHARS, agent_id, view="expired",
                                      why="no stored summary (memcli summarize-results makes one)")
                    if new is not result:
                        counts.summary_missing += 1
                        return new
                elif rule.clip_chars is None:
                    new = stub_result(result, agent_id, reason=f"expired ({counted(age, 'turn')} old)", view="expired")
                    if new is not result:
                        counts.expired_removed += 1
                        return new
                else:
                    new = clip_result(result, rule.clip_chars, agent_id, view="expired")
                    if new is not result:
                        counts.expired_clipped += 1
                        return new
            if max_chars and len(result.text) > max_chars:
                counts.clipped += 1
                return clip_result(result, max_chars, agent_id)
            return result

        out.append(_map_results(message, view))
    return out, counts


def stub_all(messages: list[Message], agent_id: str) -> list[Message]:
    """Every result stubbed (pending placeholders and earlier stubs kept): the cheapest form."""
    def stub(result: ToolResult) -> ToolResult:
        if result.status == PENDING or result.view in ("expired", "stubbed"):
            return result
        return stub_result(result, agent_id, reason="omitted to fit the token budget", view="stubbed")
    return [_map_results(m, stub) for m in messages]


# --------------------------------------------------------------------------- tokens

class TokenMeter:
    """Token counts of canonical messages (module docstring), memoized per text."""

    def __init__(self, counter: TokenCounter, memo_limit: int | None = None):
        self.counter = counter
        self.memo_limit = memo_limit       # None: remember every text; a streaming count bounds it
        self._memo: dict[str, int] = {}
        self._known = self._memo.get

    def text(self, text: str) -> int:
        n = self._memo.get(text)
        return n if n is not None else self._count(text)

    def _count(self, text: str) -> int:
        """The tokens of a text the memo does not hold (remembered while the memo has room)."""
        if not text:
            return 0
        n = self.counter.count(text)
        if self.memo_limit is None or len(self._memo) < self.memo_limit:
            self._memo[text] = n
        return n

    @staticmethod
    def media(item: Media) -> int:
        return MEDIA_TOKENS.get(item.kind, OTHER_MEDIA_TOKENS)

    def message(self, message: Message) -> int:
        n = MESSAGE_OVERHEAD
        known, new = self._known, self._count   # the memo's answer first: most texts were counted before
        if message.kind in NOTE_KINDS:
            for result in message.results:
                n += self.text(note_text(result))
                if result.media:
                    n += sum(self.media(m) for m in result.media)
            return n
        for part in message.parts:
            if isinstance(part, Text):
                tokens = known(part.text)
                n += tokens if tokens is not None else new(part.text)
            else:
                n += self.media(part)
        for call in message.tool_calls:
            name, arguments = call.name, json_text(call.arguments)
            tokens, more = known(name), known(arguments)
            n += PART_OVERHEAD + (tokens if tokens is not None else new(name)) \
                + (more if more is not None else new(arguments))
        for result in message.results:
            tokens = known(result.text)
            n += PART_OVERHEAD + (tokens if tokens is not None else new(result.text))
            if result.media:
                n += sum(self.media(m) for m in result.media)
        return n

    def system(self, system: str) -> int:
        return MESSAGE_OVERHEAD + self.text(system) if system else 0

    def total(self, system: str, messages: list[Message]) -> int:
        return REPLY_OVERHEAD + self.system(system) + sum(self.message(m) for m in messages)


# --------------------------------------------------------------------------- budget

@dataclass
class BudgetStep:
    action: str   # clip | stub | drop | restore | stub-newest | over
    count: int
    before: int
    after: int
    detail: str = ""

    def describe(self) -> str:
        n = self.count
        change = f"{self.before:,} -> {self.after:,} tokens"
        if self.action == "clip":
            return f"{self.detail}: {change}"
        if self.action == "stub":
            return f"stubbed {n} older tool result{'s' if n != 1 else ''}: {change}"
        if self.action == "drop":
            return f"dropped the {n} oldest turn{'s' if n != 1 else ''}: {change}"
        if self.action == "restore":
            return f"restored {n} stubbed result{'s' if n != 1 else ''} that fit again: {change}"
        if self.action == "stub-newest":
            return f"stubbed {n} tool result{'s' if n != 1 else ''} of the newest turn: {change}"
        return self.detail


def fit_budget(system: str, messages: list[Message], budget: int, meter: TokenMeter, agent_id: str
               ) -> tuple[list[Message], list[BudgetStep]]:
    """The messages shortened (stub, drop, restore) to fit ``budget`` tokens (module docstring)."""
    msgs = list(messages)
    tokens = [meter.message(m) for m in msgs]
    total = REPLY_OVERHEAD + meter.system(system) + sum(tokens)
    steps: list[BudgetStep] = []
    if total <= budget:
        return msgs, steps
    blocks = turn_blocks(msgs)
    older = blocks[:-1]

    def stub_in(block_list, budget_reason: str) -> list[tuple[int, int, ToolResult]]:
        nonlocal total
        done = []
        for block in block_list:
            for i in range(block.start, block.end):
                for j, result in enumerate(msgs[i].results):
                    if total <= budget:
                        return done
                    if result.status == PENDING or result.view in ("expired", "stubbed"):
                        continue
                    stub = stub_result(result, agent_id, reason=budget_reason, view="stubbed")
                    if stub is result:
                        continue
                    candidate = _with_result(msgs[i], j, stub)
                    t = meter.message(candidate)
                    if t >= tokens[i]:
                        continue  # the stub would not save a token
                    msgs[i] = candidate
                    total += t - tokens[i]
                    tokens[i] = t
                    done.append((i, j, result))
        return done

    before = total
    stubbed = stub_in(older, "omitted to fit the token budget")
    if stubbed:
        steps.append(BudgetStep("stub", len(stubbed), before, total))
    dropped_until = 0
    if total > budget and older:
        before = total
        dropped = 0
        for block in older:
            if total <= budget:
                break
            total -= sum(tokens[block.start:block.end])
            dropped += 1
            dropped_until = block.end
        steps.append(BudgetStep("drop", dropped, before, total))
        before = total
        restored = 0
        for i, j, original in reversed([s for s in stubbed if s[0] >= dropped_until]):
            candidate = _with_result(msgs[i], j, original)
            t = meter.message(candidate)
            if total + t - tokens[i] > budget:
                break
            msgs[i] = candidate
            total += t - tokens[i]
            tokens[i] = t
            restored += 1
        if restored:
            steps.append(BudgetStep("restore", restored, before, total))
    if total > budget and blocks:
        before = total
        newest = stub_in([blocks[-1]], "omitted to fit the token budget")
        if newest:
            steps.append(BudgetStep("stub-newest", len(newest), before, total))
    if total > budget:
        steps.append(BudgetStep("over", 0, total, total,
                                f"the payload is still {total:,} tokens, over the budget of {budget:,}: the system "
                                "prompt, the memory bundle and the newest turn alone do not fit"))
    if dropped_until:
        gone = {i for block in older if block.end <= dropped_until for i in range(block.start, block.end)}
        msgs = [m for i, m in enumerate(msgs) if i not in gone]
    return msgs, steps


def count_results(messages: list[Message]) -> int:
    return sum(1 for m in messages for r in m.results if r.status != PENDING)
