"""One agent's snapshot — memory turned back into the prompt the agent sends next (docs/design.md §5).

Composition, in order:

1. **System prompt**: ``--system`` text, then ``--system-file`` contents, then the instructions
   kept in the store (traces tagged ``system``/``developer``), each distinct text once, in order;
   then every ``--memory-file`` under a ``# Memory file: <path>`` heading.
2. **Memory bundle**: the last 3 episodic summaries and up to 20 semantic facts that are not
   superseded, as one user message in AutoByteus' layout (``[MEMORY:EPISODIC]`` numbered,
   ``[MEMORY:SEMANTIC]`` bulleted); left out when both are empty.
3. **Raw traces** as canonical messages (memcli.snapshot.build), then the budget views
   (memcli.snapshot.views): clip, expire, and with ``max_tokens`` stub / drop / restore.

Which traces, and how they are read (never the archive):

* neither ``tail_turns`` nor ``max_tokens``: the working snapshot, every active trace (a forward
  read);
* ``tail_turns=N``: the compaction snapshot, the last N turns, read from the end of the file;
* ``max_tokens=T`` alone: turns newest first from the end of the file, counted in their cheapest
  form (older results stubbed), stopping one turn after the budget is exceeded — the turns beyond
  could not be kept anyway, so the result is the same as for the whole file;
* with a window, stored instructions before the first turn (the leading run of context traces,
  at most :data:`LEADING_CONTEXT_LIMIT`) are read from the start of the file too, so a compaction
  snapshot keeps the agent's system prompt; instructions inside the window are kept as well.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from memcli.errors import UsageError
from memcli.messages import Message, Text
from memcli.models import PINNED_TAGS, EpisodicItem, RawTrace, SemanticItem
from memcli.snapshot.build import BuildStats, build_messages
from memcli.snapshot.views import (
    DEFAULT_MAX_TOOL_RESULT_CHARS,
    REPLY_OVERHEAD,
    BudgetStep,
    ExpirePolicy,
    TokenMeter,
    apply_result_views,
    fit_budget,
    stub_all,
)
from memcli.store.agent import AgentStore
from memcli.tokens import TokenCounter

MAX_EPISODIC = 3
MAX_SEMANTIC = 20
LEADING_CONTEXT_LIMIT = 1000


@dataclass
class SnapshotOptions:
    provider: str = "openai-chat"
    system: str | None = None
    system_files: tuple = ()
    memory_files: tuple = ()
    stored_system: bool = True      # include the system/developer traces kept in the store
    include_memory: bool = True     # include the episodic/semantic bundle
    tail_turns: int | None = None
    max_tokens: int | None = None
    max_tool_result_chars: int | None = DEFAULT_MAX_TOOL_RESULT_CHARS  # 0 or None: no clipping
    expire: tuple = ()              # ExpireRule or "TOOL=TURNS[:clip=N|:remove]" strings
    model: str | None = None        # picks the token encoding (and Gemini's generation)


@dataclass
class Snapshot:
    agent_id: str
    provider: str
    system: str
    messages: list[Message]
    payload: object               # dict for JSON providers, str for text
    tokens: int
    token_method: str
    steps: list[BudgetStep] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    turns: int = 0
    traces: int = 0


# --------------------------------------------------------------------------- pieces

def memory_message(episodic: list[EpisodicItem], semantic: list[SemanticItem]) -> Message | None:
    sections = []
    if episodic:
        sections.append("[MEMORY:EPISODIC]\n" + "\n".join(f"{i}) {item.summary}" for i, item in enumerate(episodic, 1)))
    if semantic:
        sections.append("[MEMORY:SEMANTIC]\n" + "\n".join(f"- {item.fact}" for item in semantic))
    if not sections:
        return None
    return Message("user", "memory", [Text(s) for s in sections], turn_id=None,
                   trace_ids=[item.id for item in episodic] + [item.id for item in semantic])


def _read_text(path, flag: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as exc:
        raise UsageError(f"cannot read {flag} {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"cannot read {flag} {path}: not UTF-8 text") from None


def compose_system(options: SnapshotOptions, stored: list[str], memory_files: list[tuple[str, str]]) -> str:
    parts: list[str] = []
    texts = [options.system or ""] + [_read_text(path, "--system-file") for path in options.system_files] + stored
    for text in texts:  # each distinct text once, in order
        text = text.strip()
        if text and text not in parts:
            parts.append(text)
    for name, text in memory_files:
        parts.append(f"# Memory file: {name}\n\n{text.strip()}".rstrip())
    return "\n\n".join(parts)


def _leading_instructions(store: AgentStore) -> list[RawTrace]:
    """Pinned traces in the leading run of context traces of the active file."""
    out = []
    traces = store.iter_active()
    try:
        for n, trace in enumerate(traces):
            if n >= LEADING_CONTEXT_LIMIT or not trace.is_context:
                break
            if not PINNED_TAGS.isdisjoint(trace.tags):
                out.append(trace)
    finally:
        traces.close()
    return out


def _budget_window(store: AgentStore, budget: int, fixed_tokens: int, meter: TokenMeter, *, agent_id: str,
                   max_chars, expire: ExpirePolicy, include_reasoning: bool
                   ) -> tuple[list[tuple[str, list[RawTrace]]], bool]:
    """(turns oldest first, whether older turns were left unread): read newest first, each turn
    counted in its cheapest form, until one turn past the budget."""
    turns = []
    total = fixed_tokens
    over = 0
    stopped = False
    recent = store.iter_recent_turns()
    try:
        for age, (turn_id, traces) in enumerate(recent):
            turns.append((turn_id, traces))
            msgs = list(build_messages(traces, include_reasoning=include_reasoning))
            msgs, _ = apply_result_views(msgs, agent_id=agent_id, max_chars=max_chars, expire=expire, age_offset=age)
            if age:
                msgs = stub_all(msgs, agent_id)
            total += sum(meter.message(m) for m in msgs)
            if total > budget:
                over += 1
                if over > 1:
                    stopped = True
                    break
    finally:
        recent.close()
    turns.reverse()
    return turns, stopped


def describe_counter(counter: TokenCounter, provider: str, model: str | None) -> str:
    if counter.exact and not model and provider in ("anthropic", "gemini"):
        return f"tiktoken {counter.encoding_name} (an approximation: {provider}'s tokenizer is not available offline)"
    return counter.describe()


def _stats_notes(stats: BuildStats) -> list[str]:
    notes = []
    ids_renamed, examples = stats.ids_renamed, stats.id_examples
    if stats.pending:
        notes.append(f"{stats.pending} tool call{'s have' if stats.pending != 1 else ' has'} no result yet: "
                     "each got a placeholder result saying so")
    if stats.orphans:
        notes.append(f"{stats.orphans} tool result{'s' if stats.orphans != 1 else ''} without a matching call "
                     "rendered as plain text")
    if stats.late:
        notes.append(f"{stats.late} late tool result{'s' if stats.late != 1 else ''} rendered as plain text")
    if ids_renamed:
        shown = ", ".join(f"{a or '(none)'} -> {b}" for a, b in examples)
        notes.append(f"renamed {ids_renamed} tool call id{'s' if ids_renamed != 1 else ''} (reused, or not accepted "
                     f"by every provider): {shown}{', ...' if ids_renamed > len(examples) else ''}")
    if stats.reasoning_omitted:
        notes.append(f"left out {stats.reasoning_omitted} reasoning trace{'s' if stats.reasoning_omitted != 1 else ''}: "
                     "providers accept only their own signed reasoning (--provider text shows it)")
    if stats.sidechain_omitted:
        notes.append(sidechain_note(stats))
    return notes


def sidechain_note(stats: BuildStats) -> str | None:
    """What ``snapshot`` and ``export --format openai|anthropic`` say when they leave subagents out."""
    n = stats.sidechain_omitted
    if not n:
        return None
    return f"left out {n} sidechain trace{'s' if n != 1 else ''} (a subagent's own conversation, which the main agent did not see)"


# --------------------------------------------------------------------------- the snapshot

def take_snapshot(memory_dir: str | os.PathLike, agent_id: str, options: SnapshotOptions | None = None) -> Snapshot:
    """Build, view and render one agent's snapshot (module docstring). Nothing is written."""
    from memcli.renderers import get_renderer

    options = options or SnapshotOptions()
    if options.tail_turns is not None and options.tail_turns < 0:
        raise UsageError("--tail-turns must be 0 or more")
    if options.max_tokens is not None and options.max_tokens < 1:
        raise UsageError("--max-tokens must be 1 or more")
    if options.max_tool_result_chars is not None and options.max_tool_result_chars < 0:
        raise UsageError("--max-tool-result-chars must be 0 (no limit) or more")
    renderer = get_renderer(options.provider, options.model)
    expire = ExpirePolicy(options.expire)
    memory_files = [(str(path), _read_text(path, "--memory-file")) for path in options.memory_files]
    compose_system(options, [], memory_files)  # reads --system-file early: a bad path fails before any work
    store = AgentStore(memory_dir, agent_id).require()

    counter = TokenCounter(options.model or renderer.default_model)
    meter = TokenMeter(counter)
    episodic, semantic = store.live_memory(MAX_EPISODIC, MAX_SEMANTIC) if options.include_memory else ([], [])
    memory = memory_message(episodic, semantic)
    include_reasoning = renderer.shows_reasoning
    max_chars = options.max_tool_result_chars or None

    steps: list[BudgetStep] = []
    if options.tail_turns is None and options.max_tokens is None:
        traces = store.iter_active()
    else:
        head = _leading_instructions(store) if options.stored_system else []
        if options.tail_turns is not None:
            turns = store.last_turns(options.tail_turns)
        else:
            prelim = compose_system(options, [t.content for t in head], memory_files)
            fixed = REPLY_OVERHEAD + meter.system(prelim) + (meter.message(memory) if memory else 0)
            turns, stopped = _budget_window(store, options.max_tokens, fixed, meter, agent_id=store.agent_id,
                                            max_chars=max_chars, expire=expire, include_reasoning=include_reasoning)
            if stopped:
                steps.append(BudgetStep("window", len(turns), 0, 0,
                                        f"read the {len(turns)} newest turns from the end of the active file: "
                                        "older turns cannot fit, even with their tool results stubbed"))
        in_window = {t.id for _, turn in turns for t in turn}
        traces = [t for t in head if t.id not in in_window] + [t for _, turn in turns for t in turn]

    stats = BuildStats()
    conversation = []
    stored_instructions = []
    for message in build_messages(traces, include_reasoning=include_reasoning, stats=stats):
        if message.role == "system":
            stored_instructions.append(message.text())
        else:
            conversation.append(message)
    system = compose_system(options, stored_instructions if options.stored_system else [], memory_files)
    messages = ([memory] if memory else []) + conversation

    budget = options.max_tokens
    before = meter.total(system, messages) if budget else 0
    messages, counts = apply_result_views(messages, agent_id=store.agent_id, max_chars=max_chars, expire=expire)
    if budget:
        after = meter.total(system, messages)
        if counts:
            what = []
            expired = counts.expired_removed + counts.expired_clipped
            if expired:
                what.append(f"expired {expired} tool result{'s' if expired != 1 else ''} (--expire)")
            if counts.clipped:
                what.append(f"clipped {counts.clipped} tool result{'s' if counts.clipped != 1 else ''} "
                            f"to {max_chars:,} characters")
            steps.append(BudgetStep("clip", counts.clipped, before, after, " and ".join(what)))
        messages, more = fit_budget(system, messages, budget, meter, store.agent_id)
        steps.extend(more)

    payload = renderer.render(system, messages)
    notes = _stats_notes(stats) + renderer.notes.lines()
    return Snapshot(
        agent_id=store.agent_id, provider=renderer.name, system=system, messages=messages, payload=payload,
        tokens=meter.total(system, messages), token_method=describe_counter(counter, renderer.name, options.model),
        steps=steps, notes=notes, turns=len({m.turn_id for m in messages if m.turn_id is not None}),
        traces=stats.traces)
