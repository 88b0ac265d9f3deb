"""One agent's snapshot — memory turned back into the prompt the agent sends next (docs/design.md §5).

Composition, in order:

1. **System prompt**: ``--system`` text, then ``--system-file`` contents, then the instructions
   kept in the store (traces tagged ``system``/``developer``), each distinct text once, in order;
   then every ``--memory-file`` under a ``# Memory file: <path>`` heading; then the agent's
   **working memory** (the ``/memories`` files it edits with the memory tool, memcli.memory_tool)
   under a ``# Working memory`` heading: each file's path as a ``## /memories/…`` heading, then
   its text, in path order, within ``working_memory_tokens`` (default 4,000): a file that does not
   fit is left out and listed by path with a note to ``view`` it, and later, smaller files may
   still fit. Hidden files (a path part starting with ``.``) are left out, as the tool's directory
   view leaves them out. No files, no heading: the prompt is then what it was without working
   memory. ``include_working_memory=False`` (``--no-working-memory``) leaves the section out;
   ``memory_tool=True`` (``--memory-tool``, anthropic only) declares the memory tool in ``tools``.
2. **Memory bundle**: pinned facts, then the last 3 episodic summaries and up to 20 semantic
   facts that are not superseded — or, with ``recall``, the items most relevant to a query within
   ``memory_tokens`` (memcli.snapshot.recall chooses) — as one user message in AutoByteus'
   layout (``[MEMORY:EPISODIC]`` numbered, ``[MEMORY:SEMANTIC]`` bulleted); left out when both
   are empty.
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
from typing import Callable, Iterable

from memcli.bulk import cyclic_gc_paused
from memcli.errors import UsageError
from memcli.messages import Message, Text
from memcli.models import EpisodicItem, RawTrace, SemanticItem
from memcli.snapshot.build import BuildStats, build_messages
from memcli.snapshot.recall import DEFAULT_MEMORY_TOKENS, MAX_EPISODIC, MAX_SEMANTIC, select_bundle  # noqa: F401
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

LEADING_CONTEXT_LIMIT = 1000
DEFAULT_WORKING_MEMORY_TOKENS = 4000
WORKING_MEMORY_HEADING = "# Working memory"
STREAM_MEMO_LIMIT = 10_000   # texts whose count a streaming count remembers (repeated results)


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
    recall: str | None = None       # choose the memory bundle by relevance to this query ("auto": latest ask)
    memory_tokens: int = DEFAULT_MEMORY_TOKENS  # the recalled bundle's budget
    include_working_memory: bool = True   # the /memories files in the system prompt
    working_memory_tokens: int = DEFAULT_WORKING_MEMORY_TOKENS
    memory_tool: bool = False       # declare Anthropic's memory tool in the payload's tools


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
        raise UsageError(f"cannot read {{{flag}}} {path}: {exc.strerror or exc}", param=flag) from None
    except UnicodeDecodeError:
        raise UsageError(f"cannot read {{{flag}}} {path}: not UTF-8 text", param=flag) from None


def working_memory_section(files: list[tuple[str, str]], budget: int, counter: TokenCounter) -> tuple[str, list[str]]:
    """The system prompt's working-memory section for ``files`` (path, text) and the paths left
    out for the budget (module docstring); ``""`` when there are no files."""
    files = [(path, text) for path, text in files if not any(part.startswith(".") for part in path.split("/"))]
    if not files:
        return "", []
    intro = (f"{WORKING_MEMORY_HEADING}\n\nYour memory directory /memories, as it is now "
             "(edit it with the memory tool):")
    used = counter.count(intro)
    blocks, left_out = [], []
    for path, text in files:
        block = f"## {path}\n\n{text.rstrip()}".rstrip()
        cost = counter.count(block) + 2
        if used + cost <= budget:
            blocks.append(block)
            used += cost
        else:
            left_out.append(path)
    parts = [intro] + blocks
    if left_out:
        parts.append(f"Not shown here, to stay within {budget:,} tokens ({len(left_out)} "
                     f"file{'s' if len(left_out) != 1 else ''}; `view` them with the memory tool): "
                     + ", ".join(left_out))
    return "\n\n".join(parts), left_out


def store_working_memory(store: AgentStore, options: SnapshotOptions, counter: TokenCounter) -> tuple[str, list[str]]:
    """The agent's working-memory section as ``options`` ask for it (``""`` when left out or
    empty) and the paths left out for the budget — what :func:`compose_system` takes as
    ``working_memory``; a count of the working snapshot's system prompt includes it the same way."""
    if not options.include_working_memory:
        return "", []
    return working_memory_section(store.memory_tree().sorted_files(), options.working_memory_tokens, counter)


def compose_system(options: SnapshotOptions, stored: list[str], memory_files: list[tuple[str, str]],
                   working_memory: str = "") -> str:
    parts: list[str] = []
    texts = [options.system or ""] + [_read_text(path, "system_files") for path in options.system_files] + stored
    for text in texts:  # each distinct text once, in order
        text = text.strip()
        if text and text not in parts:
            parts.append(text)
    for name, text in memory_files:
        parts.append(f"# Memory file: {name}\n\n{text.strip()}".rstrip())
    if working_memory:
        parts.append(working_memory)
    return "\n\n".join(parts)


def _leading_instructions(store: AgentStore) -> list[RawTrace]:
    """Pinned traces in the leading run of context traces of the active file."""
    out = []
    traces = store.iter_active()
    try:
        for n, trace in enumerate(traces):
            if n >= LEADING_CONTEXT_LIMIT or not trace.is_context:
                break
            if trace.is_instruction:
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


# --------------------------------------------------------------------------- the one token count

def working_counter(model: str | None = None) -> TokenCounter:
    """The counter of the working snapshot: ``model``'s encoding, else the default provider's."""
    from memcli.renderers import get_renderer

    return TokenCounter(model or get_renderer(SnapshotOptions.provider).default_model)


def count_working(store: AgentStore, meter: TokenMeter, traces: Iterable[RawTrace] | None = None,
                  on_message: Callable[[Message, int], None] | None = None) -> int:
    """Tokens of the working snapshot (default options: every active trace, the memory bundle
    with pinned facts first, the stored instructions and the working-memory files as the system prompt, tool results clipped as rendered, reasoning
    and sidechains left out) — what :func:`take_snapshot` reports as ``tokens`` for it.

    The messages stream through (not in render order: the messages after a call still waiting
    for its result come before it — :func:`build_messages` with ``ordered=False``):
    ``on_message(message, tokens)`` sees each conversation message with its own count (system messages go to the system prompt, counted once at the end), so a
    caller can attribute the total to the traces behind it. ``traces`` defaults to the active
    file; the compaction planner passes the traces it is reading anyway."""
    if traces is None:
        traces = store.iter_active()
    defaults = SnapshotOptions()
    bundle = select_bundle(store, recall=None, memory_tokens=defaults.memory_tokens, count=meter.text)
    memory = memory_message(bundle.episodic, bundle.semantic)
    working_memory, _ = store_working_memory(store, defaults, meter.counter)
    total = REPLY_OVERHEAD + (meter.message(memory) if memory else 0)
    instructions: list[str] = []
    count, clip_at = meter.message, DEFAULT_MAX_TOOL_RESULT_CHARS
    for message in build_messages(traces, ordered=False):   # a sum: order does not matter, memory does
        if message.role == "system":
            instructions.append(message.text())
            continue
        for result in message.results:
            if len(result.text) > clip_at:  # clipped, as rendered
                (message,), _ = apply_result_views([message], agent_id=store.agent_id,
                                                   max_chars=DEFAULT_MAX_TOOL_RESULT_CHARS)
                break
        tokens = count(message)
        total += tokens
        if on_message is not None:
            on_message(message, tokens)
    return total + meter.system(compose_system(defaults, instructions, [], working_memory))


@cyclic_gc_paused()
def working_tokens(store: AgentStore, model: str | None = None, counter: TokenCounter | None = None) -> int:
    """THE token count of memcli (docs/design.md §4): ``stats``, the compaction trigger, ``compact
    --dry-run``, the compaction result and ``snapshot`` all count the working snapshot this way.
    ``counter`` (else :func:`working_counter` of ``model``) lets a caller read how it counted."""
    return count_working(store, TokenMeter(counter or working_counter(model), memo_limit=STREAM_MEMO_LIMIT))


# --------------------------------------------------------------------------- the snapshot

@cyclic_gc_paused()   # a long session's read makes millions of short-lived objects: memcli.bulk
def take_snapshot(memory_dir: str | os.PathLike, agent_id: str, options: SnapshotOptions | None = None) -> Snapshot:
    """Build, view and render one agent's snapshot (module docstring). Nothing is written."""
    from memcli.renderers import get_renderer

    options = options or SnapshotOptions()
    if options.tail_turns is not None and options.tail_turns < 0:
        raise UsageError("{tail_turns} must be 0 or more", param="tail_turns")
    if options.max_tokens is not None and options.max_tokens < 1:
        raise UsageError("{max_tokens} must be 1 or more", param="max_tokens")
    if options.recall is not None and not options.recall.strip():
        raise UsageError("{recall}: give a query, or 'auto' for the latest user ask", param="recall")
    if options.memory_tokens < 0:
        raise UsageError("{memory_tokens} must be 0 or more", param="memory_tokens")
    if options.max_tool_result_chars is not None and options.max_tool_result_chars < 0:
        raise UsageError("{max_tool_result_chars} must be 0 (no limit) or more", param="max_tool_result_chars")
    if options.working_memory_tokens < 0:
        raise UsageError("{working_memory_tokens} must be 0 or more", param="working_memory_tokens")
    renderer = get_renderer(options.provider, options.model)
    if options.memory_tool and renderer.name != "anthropic":
        raise UsageError(f"{{memory_tool}} declares Anthropic's memory tool (memory_20250818), which only the "
                         f"anthropic payload carries, not {renderer.name}; use -p anthropic", param="memory_tool")
    expire = ExpirePolicy(options.expire)
    memory_files = [(str(path), _read_text(path, "memory_files")) for path in options.memory_files]
    compose_system(options, [], memory_files)  # reads --system-file early: a bad path fails before any work
    store = AgentStore(memory_dir, agent_id).require()
    if expire.wants_summaries:     # ":summary": the summaries memcli summarize-results stored
        from memcli.store.result_summaries import read_result_summaries

        expire.summaries = {trace_id: record.get("summary") or "" for trace_id, record
                            in read_result_summaries(store.paths.result_summaries).items()}

    counter = TokenCounter(options.model or renderer.default_model)
    meter = TokenMeter(counter)
    notes: list[str] = []
    working_memory, left_out = store_working_memory(store, options, counter)
    if left_out:
        notes.append(f"working memory: {len(left_out)} file{'s' if len(left_out) != 1 else ''} over the "
                     f"{options.working_memory_tokens:,}-token budget listed by path only (--working-memory-tokens)")
    if options.include_memory:
        bundle = select_bundle(store, recall=options.recall, memory_tokens=options.memory_tokens, count=meter.text)
        episodic, semantic = bundle.episodic, bundle.semantic
        notes.extend(bundle.notes)
    else:
        episodic, semantic = [], []
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
            prelim = compose_system(options, [t.content for t in head], memory_files, working_memory)
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
    system = compose_system(options, stored_instructions if options.stored_system else [], memory_files,
                            working_memory)
    messages = ([memory] if memory else []) + conversation

    budget = options.max_tokens
    before = meter.total(system, messages) if budget else 0
    messages, counts = apply_result_views(messages, agent_id=store.agent_id, max_chars=max_chars, expire=expire)
    if counts.summary_missing:
        notes.append(f"--expire :summary: {counts.summary_missing} tool result{'s' if counts.summary_missing != 1 else ''} "
                     f"had no stored summary and {'were' if counts.summary_missing != 1 else 'was'} clipped instead "
                     "(memcli summarize-results stores them)")
    if budget:
        after = meter.total(system, messages)
        if counts:
            what = []
            expired = counts.expired_removed + counts.expired_clipped + counts.expired_summarized + counts.summary_missing
            if expired:
                what.append(f"expired {expired} tool result{'s' if expired != 1 else ''} (--expire)")
            if counts.clipped:
                what.append(f"clipped {counts.clipped} tool result{'s' if counts.clipped != 1 else ''} "
                            f"to {max_chars:,} characters")
            steps.append(BudgetStep("clip", counts.clipped, before, after, " and ".join(what)))
        messages, more = fit_budget(system, messages, budget, meter, store.agent_id)
        steps.extend(more)

    payload = renderer.render(system, messages)
    if options.memory_tool:
        from memcli.memory_tool import TOOL_DEFINITION

        payload["tools"] = [dict(TOOL_DEFINITION)]
    notes = notes + _stats_notes(stats) + renderer.notes.lines()
    return Snapshot(
        agent_id=store.agent_id, provider=renderer.name, system=system, messages=messages, payload=payload,
        tokens=meter.total(system, messages), token_method=describe_counter(counter, renderer.name, options.model),
        steps=steps, notes=notes, turns=len({m.turn_id for m in messages if m.turn_id is not None}),
        traces=stats.traces)
