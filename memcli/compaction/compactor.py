"""``compact()``: one compaction of one agent, end to end (docs/design.md §3–§4).

1. ``--if-needed``: the budget trigger (:func:`memcli.compaction.policy.budget_status`) decides,
   and the circuit breaker (:mod:`memcli.compaction.breaker`) may refuse to call the model.
2. A per-agent *compaction lock* (``.locks/<agent>.compact.lock``, non-blocking) keeps two
   compactions of one agent from summarizing the same window; ingest is not blocked by it.
3. Under the agent lock, the window is planned (:mod:`memcli.compaction.window`); the lock is
   released.
4. Without any lock, the window's traces are read back and summarized — one request, or chunks
   of whole turns summarized concurrently and merged into one episodic item (the merge is
   deterministic: the chunk summaries in order under their turn ranges, facts de-duplicated).
   Ingest keeps appending meanwhile.
5. Under the agent lock again, the plan is checked against the file (only appends happened),
   the items are built against the live memory (rollup, fact merge), and the journaled commit
   of :mod:`memcli.store.journal` runs. Appends made since step 3 are carried over by the
   rewrite, which reads the active file as it is at that moment, under the lock.

Items written: one EPISODIC item per compaction (``tags`` ``["compaction"]``, ``model`` the
summarizer, ``trace_ids`` listed up to ``MAX_LISTED_TRACE_IDS`` — beyond that ``trace_count``
says how many and ``turn_ids`` still names every turn). When the live (not superseded) episodic
items would exceed ``max_episodic_items``, all live items older than the new one roll up into one
item (``tags`` ``["compaction", "rollup"]``) that supersedes them, written before the new one, so
the live items stay in chronological file order. A new fact identical (case and whitespace
aside) to a live one is merged: one item with the live fact's text, the union of tags and source
turns and the higher confidence replaces (supersedes) the live one, so one copy stays live and it
moves to the newest position. ``sliding-window`` archives the window with no items at all.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterable

import orjson

from memcli.compaction import breaker
from memcli.compaction.policy import BudgetStatus, CompactionPolicy, budget_status
from memcli.compaction.summarizer import Fact, MemoryContext, Summary, Turn, normalize_fact
from memcli.compaction.window import WindowPlan, check_plan, iter_window_turns, plan_window
from memcli.errors import CompactionBusy, CompactionError, UsageError
from memcli.ids import COMPACTION_PREFIX, EPISODIC_PREFIX, SEMANTIC_PREFIX, new_id
from memcli.models import EpisodicItem, SemanticItem, to_record
from memcli.store import jsonl
from memcli.store.agent import AgentStore
from memcli.store.journal import Journal, commit
from memcli.store.lock import agent_lock, compaction_lock
from memcli.tokens import TokenCounter

STRATEGIES = ("summarize", "sliding-window")
MAX_LISTED_TRACE_IDS = 5_000
MAX_SOURCE_TURNS = 50
ROLLUP_CHARS = 12_000
PROMPT_FACTS = 50                 # live facts shown to the summarizer
EST_SUMMARY_TOKENS_PER_CHUNK = 400


class CompactionConflict(CompactionError):
    """The active file changed under the compaction in a way appends cannot explain."""


@dataclass
class CompactResult:
    agent_id: str
    compacted: bool = False
    dry_run: bool = False
    reason: str = ""                 # why nothing was compacted, when nothing was
    strategy: str = "summarize"
    summarizer: str | None = None
    compaction_id: str | None = None
    episodic_id: str | None = None
    rollup_id: str | None = None
    turns: int = 0
    turn_range: str = ""
    turn_ids: list = field(default_factory=list)
    traces: int = 0
    pinned_kept: int = 0
    kept_turns: int = 0
    stop_reason: str = ""
    chunks: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    tokens_after_estimated: bool = False
    window_tokens: int = 0
    facts_added: int = 0
    facts_merged: int = 0
    summary: str | None = None
    facts: list = field(default_factory=list)
    seconds: float = 0.0
    budget: BudgetStatus | None = None
    notes: list = field(default_factory=list)

    def describe(self) -> str:
        if not self.compacted and not self.dry_run:
            return self.reason
        verb = "would compact" if self.dry_run else "compacted"
        s = "s" if self.turns != 1 else ""
        text = (f"{verb} {self.turns} turn{s} ({self.turn_range}, {self.traces} trace{'s' if self.traces != 1 else ''}) "
                f"of {self.agent_id!r}")
        if self.strategy == "sliding-window":
            text += " without a summary (sliding-window)"
        elif self.episodic_id:
            text += f" into {self.episodic_id}"
        if self.facts_added or self.facts_merged:
            text += f", {self.facts_added} new fact{'s' if self.facts_added != 1 else ''}"
            if self.facts_merged:
                text += f" ({self.facts_merged} merged)"
        approx = "≈" if self.tokens_after_estimated else ""
        text += f"; tokens {self.tokens_before:,} → {approx}{self.tokens_after:,}"
        if self.chunks > 1:
            text += f"; {self.chunks} chunks"
        text += f"; {self.seconds:.2f}s"
        return text


def _note(result: CompactResult, on_note: Callable[[str], None] | None, message: str) -> None:
    result.notes.append(message)
    if on_note is not None:
        on_note(message)


def recover(store: AgentStore) -> list[str]:
    """Finish an interrupted ingest or compaction, if there is one; notes saying what was done."""
    paths = store.paths
    if not (paths.ingest_marker.exists() or paths.compaction_journal.exists()):
        return []
    with store.writer(create=False) as session:
        return list(session.recovered) + [r.describe() for r in session.repairs]


def plan(store: AgentStore, tail_turns: int, on_note: Callable[[str], None] | None = None) -> WindowPlan:
    """The window, planned under the agent lock after any pending recovery (writes nothing else)."""
    for _ in range(5):
        for message in recover(store):
            if on_note is not None:
                on_note(message)
        with agent_lock(store.paths):
            if store.paths.ingest_marker.exists() or store.paths.compaction_journal.exists():
                continue  # someone crashed in between: recover first
            return plan_window(store.paths.active, store.agent_id, tail_turns)
    raise CompactionError(f"agent {store.agent_id!r} keeps needing recovery; run `memcli doctor {store.agent_id}`")


def _memory_tokens(store: AgentStore, counter: TokenCounter, policy: CompactionPolicy) -> int:
    episodic, semantic = store.live_memory(policy.max_episodic_items, policy.max_semantic_items)
    return sum(counter.count(e.summary) + 4 for e in episodic) + sum(counter.count(f.fact) + 4 for f in semantic)


def _record_text(record: dict) -> str:
    """:func:`memcli.compaction.policy.trace_text` of a stored record, without building the model."""
    parts = [record.get("content") or ""]
    if record.get("tool_args") is not None:
        parts.append(orjson.dumps(record["tool_args"]).decode())
    if record.get("tool_error"):
        parts.append(record["tool_error"])
    elif record.get("tool_result") is not None:
        value = record["tool_result"]
        parts.append(value if isinstance(value, str) else orjson.dumps(value).decode())
    return "\n".join(p for p in parts if p)


def _count_tokens(store: AgentStore, plan_: WindowPlan, counter: TokenCounter) -> tuple[int, int, list, int]:
    """(window tokens, kept tokens, moved ids up to the listing cap, moved count) in one pass."""
    path = store.paths.active
    runs = plan_.runs
    r = 0
    window = kept = moved = 0
    ids: list = []
    for _, offset, record in jsonl.iter_records(path, end=plan_.active_size, first_line_no=None):
        while r < len(runs) and runs[r][1] <= offset:
            r += 1
        inside = r < len(runs) and runs[r][0] <= offset < runs[r][1]
        tokens = counter.count(_record_text(record)) + 4
        if inside:
            window += tokens
            moved += 1
            if len(ids) < MAX_LISTED_TRACE_IDS:
                ids.append(record["id"])
        else:
            kept += tokens
    return window, kept, ids, moved


def _turns(store: AgentStore, plan_: WindowPlan) -> Iterable[Turn]:
    for turn_id, traces in iter_window_turns(store.paths.active, plan_):
        yield Turn(turn_id, traces)


def merge_summaries(parts: list[tuple[list, Summary]]) -> Summary:
    """One summary from chunk summaries, in order (module docstring, step 4)."""
    if len(parts) == 1:
        return parts[0][1]
    sections = []
    facts: list[Fact] = []
    by_key: dict[str, Fact] = {}
    for turns, summary in parts:
        span = turns[0].turn_id if len(turns) == 1 else f"{turns[0].turn_id}–{turns[-1].turn_id}"
        sections.append(f"[{span}]\n{summary.episodic_summary}")
        for fact in summary.semantic_facts:
            key = normalize_fact(fact.fact)
            if key in by_key:
                known = by_key[key]
                known.tags = list(dict.fromkeys(known.tags + fact.tags))
                known.confidence = max(known.confidence, fact.confidence)
                known.supersedes = list(dict.fromkeys(known.supersedes + fact.supersedes))
            else:
                copy = Fact(fact.fact, list(fact.tags), fact.confidence, list(fact.supersedes),
                            list(fact.source_turn_ids))
                by_key[key] = copy
                facts.append(copy)
    first, last = parts[0][0][0].turn_id, parts[-1][0][-1].turn_id
    header = f"{first}–{last}, summarized in {len(parts)} parts:"
    return Summary(header + "\n\n" + "\n\n".join(sections), facts)


def _rollup_text(items: list[EpisodicItem]) -> str:
    turn_ids = [t for item in items for t in item.turn_ids]
    span = f"{turn_ids[0]}–{turn_ids[-1]}" if turn_ids else "earlier turns"
    header = f"Earlier history ({span}), rolled up from {len(items)} summaries:"
    budget = max((ROLLUP_CHARS - len(header)) // max(len(items), 1) - 40, 200)
    from memcli.compaction.offline import clip

    sections = []
    for item in items:
        ids = item.turn_ids
        part = ids[0] if len(ids) == 1 else (f"{ids[0]}–{ids[-1]}" if ids else item.id)
        body = item.summary if len(item.summary) <= budget else clip(item.summary, budget)
        sections.append(f"[{part}] {body}")
    return header + "\n" + "\n".join(sections)


def build_items(store: AgentStore, plan_: WindowPlan, summary: Summary | None, *, compaction_id: str,
                trace_ids: list, moved: int, model: str | None, policy: CompactionPolicy,
                strategy: str) -> tuple[list[EpisodicItem], list[SemanticItem], dict]:
    """The items a compaction appends (rollup first, then the new episodic item; facts)."""
    if summary is None:
        return [], [], {"added": 0, "merged": 0}
    now = time.time()
    live_episodic, live_facts = store.live_memory(None, None)
    extra = {} if len(trace_ids) >= moved else {"trace_count": moved}
    item = EpisodicItem(
        id=new_id(EPISODIC_PREFIX), ts=now, turn_ids=plan_.turn_ids, summary=summary.episodic_summary,
        tags=["compaction"], salience=0.5, trace_ids=list(trace_ids) if not extra else [],
        compaction_id=compaction_id, supersedes=[], model=model, extra=extra,
    )
    episodic: list[EpisodicItem] = []
    if len(live_episodic) + 1 > max(policy.max_episodic_items, 1) and live_episodic:
        rolled = live_episodic
        episodic.append(EpisodicItem(
            id=new_id(EPISODIC_PREFIX), ts=now, turn_ids=[t for e in rolled for t in e.turn_ids],
            summary=_rollup_text(rolled), tags=["compaction", "rollup"], salience=0.5,
            compaction_id=compaction_id, supersedes=[e.id for e in rolled], model="rollup",
        ))
    episodic.append(item)

    live_by_key = {normalize_fact(f.fact): f for f in live_facts}
    semantic: list[SemanticItem] = []
    merged = 0
    for fact in summary.semantic_facts:
        key = normalize_fact(fact.fact)
        known = live_by_key.get(key)
        salience = 0.9 if "preference" in fact.tags else 0.5
        if known is not None:
            merged += 1
            sources = list(dict.fromkeys(list(known.source_turn_ids) + (fact.source_turn_ids or plan_.turn_ids)))
            if len(sources) > MAX_SOURCE_TURNS:
                sources = sources[:1] + sources[-(MAX_SOURCE_TURNS - 1):]
            semantic.append(SemanticItem(
                id=new_id(SEMANTIC_PREFIX), ts=now, fact=known.fact, tags=list(dict.fromkeys(known.tags + fact.tags)),
                confidence=max(known.confidence, fact.confidence), salience=max(known.salience, salience),
                source_turn_ids=sources, compaction_id=compaction_id,
                supersedes=list(dict.fromkeys([known.id, *fact.supersedes])),
            ))
        else:
            sources = fact.source_turn_ids or plan_.turn_ids
            if len(sources) > MAX_SOURCE_TURNS:
                sources = sources[:1] + sources[-(MAX_SOURCE_TURNS - 1):]
            semantic.append(SemanticItem(
                id=new_id(SEMANTIC_PREFIX), ts=now, fact=fact.fact, tags=list(fact.tags), confidence=fact.confidence,
                salience=salience, source_turn_ids=list(sources), compaction_id=compaction_id,
                supersedes=list(fact.supersedes),
            ))
    return episodic, semantic, {"added": len(semantic) - merged, "merged": merged}


def _summarize(summarizer, store: AgentStore, plan_: WindowPlan, memory: MemoryContext, concurrency: int,
               on_progress) -> tuple[Summary, int]:
    """(summary, chunks): one pass for a summarizer without a context limit, else chunks of whole
    turns summarized concurrently and merged."""
    split = getattr(summarizer, "split", None)
    if summarizer.context_tokens() is None or split is None:
        if on_progress:
            on_progress(0, 1)
        summary = summarizer.summarize(_turns(store, plan_), memory)
        if on_progress:
            on_progress(1, 1)
        return summary, 1
    chunks = split(list(_turns(store, plan_)), memory)
    total = len(chunks)
    if on_progress:
        on_progress(0, total)
    results: list = [None] * total
    done = 0
    with ThreadPoolExecutor(max_workers=max(1, min(concurrency, total))) as pool:
        futures = {pool.submit(summarizer.summarize, chunk, memory): i for i, chunk in enumerate(chunks)}
        pending = set(futures)
        while pending:
            finished, pending = wait(pending, return_when=FIRST_EXCEPTION)
            for future in finished:
                error = future.exception()
                if error is not None:
                    for other in pending:
                        other.cancel()
                    raise error
                results[futures[future]] = future.result()
                done += 1
                if on_progress:
                    on_progress(done, total)
    return merge_summaries(list(zip(chunks, results))), total


def compact(memory_dir: str | os.PathLike, agent_id: str, *, summarizer=None, strategy: str = "summarize",
            policy: CompactionPolicy | None = None, if_needed: bool = False, force: bool = False,
            dry_run: bool = False, model: str | None = None, max_context_tokens: int | None = None,
            concurrency: int = 4, on_progress: Callable[[int, int], None] | None = None,
            on_note: Callable[[str], None] | None = None) -> CompactResult:
    """Compact ``agent_id`` (module docstring). ``summarizer`` defaults to the offline one.

    Raises CompactionError (exit 1) when no valid summary could be had — nothing is written then
    but the circuit breaker's count — and AgentNotFoundError / UsageError as usual."""
    started = time.monotonic()
    policy = policy or CompactionPolicy()
    if strategy not in STRATEGIES:
        raise UsageError(f"unknown strategy {strategy!r} (expected {' or '.join(STRATEGIES)})")
    if concurrency < 1:
        raise UsageError("--concurrency must be at least 1")
    if policy.tail_turns < 0:
        raise UsageError("--tail-turns must be 0 or more")
    store = AgentStore(memory_dir, agent_id).require()
    if summarizer is None and strategy == "summarize":
        from memcli.compaction.offline import OfflineSummarizer

        summarizer = OfflineSummarizer(max_facts=policy.max_semantic_items)
    result = CompactResult(store.agent_id, dry_run=dry_run, strategy=strategy,
                           summarizer=summarizer.name if summarizer is not None and strategy == "summarize" else None)

    if if_needed:
        status = budget_status(store, model=model, max_context_tokens=max_context_tokens, policy=policy)
        result.budget = status
        # not due: the final line ("nothing to do: ...") says it; printing it here too would repeat it
        _note(result, on_note if status.due else None, status.explain())
        if not status.due:
            result.reason = "nothing to do: " + status.explain()
            result.seconds = time.monotonic() - started
            return result
        state = breaker.read_breaker(store.paths)
        if state.open and not force and not dry_run:
            raise CompactionError(
                f"circuit breaker open for agent {store.agent_id!r}: {state.describe()}; "
                "--if-needed does not call the summarizer again until a compaction succeeds",
                hint=f"run `memcli compact {store.agent_id}` without --if-needed, or add --force",
            )

    lock = compaction_lock(store) if not dry_run else _no_lock()
    try:
        with lock:
            return _run(store, result, summarizer, strategy, policy, dry_run, model, concurrency,
                        on_progress, on_note, started)
    except CompactionBusy as exc:
        if if_needed:
            result.reason = f"skipped: {exc}"
            result.seconds = time.monotonic() - started
            return result
        raise


@contextmanager
def _no_lock():
    yield


def _run(store, result: CompactResult, summarizer, strategy, policy, dry_run, model, concurrency,
         on_progress, on_note, started) -> CompactResult:
    plan_ = plan(store, policy.tail_turns, lambda m: _note(result, on_note, m))
    result.turns = len(plan_.turns)
    result.turn_range = plan_.describe_range()
    result.turn_ids = plan_.turn_ids
    result.traces = plan_.moved
    result.pinned_kept = plan_.pinned_kept
    result.kept_turns = plan_.kept_turns
    result.stop_reason = plan_.stop_reason
    if plan_.empty:
        result.reason = (f"nothing to compact in {store.agent_id!r}: {plan_.conversation_turns} turn"
                         f"{'s' if plan_.conversation_turns != 1 else ''} in the active file and {plan_.stop_reason}")
        result.seconds = time.monotonic() - started
        return result
    if plan_.pinned_kept:
        one = plan_.pinned_kept == 1
        # --dry-run's plan shows it already ("N system/developer traces stay")
        _note(result, None if dry_run else on_note, f"{plan_.pinned_kept} system/developer trace{'' if one else 's'} of the window "
                               f"stay{'s' if one else ''} in the active file (instructions are never compacted)")

    counter = TokenCounter(model)
    memory_before = _memory_tokens(store, counter, policy)
    window_tokens, kept_tokens, trace_ids, moved = _count_tokens(store, plan_, counter)
    result.window_tokens = window_tokens
    result.tokens_before = memory_before + window_tokens + kept_tokens

    live_episodic, live_facts = store.live_memory(policy.max_episodic_items, PROMPT_FACTS)
    memory = MemoryContext(live_episodic, live_facts)
    summary: Summary | None = None
    if strategy == "summarize":
        is_offline = summarizer.context_tokens() is None
        if dry_run and not is_offline:
            split = getattr(summarizer, "split", None)
            result.chunks = len(split(list(_turns(store, plan_)), memory)) if split else 1
            result.tokens_after = memory_before + kept_tokens + EST_SUMMARY_TOKENS_PER_CHUNK * result.chunks
            result.tokens_after_estimated = True
            result.seconds = time.monotonic() - started
            return result
        try:
            summary, result.chunks = _summarize(summarizer, store, plan_, memory, concurrency, on_progress)
        except CompactionError as exc:
            if not dry_run:
                with agent_lock(store.paths):
                    breaker.record_failure(store.paths, str(exc))
            raise
        result.summary = summary.episodic_summary
        result.facts = [f.fact for f in summary.semantic_facts]
    if dry_run:
        after = memory_before + kept_tokens
        if summary is not None:
            after += counter.count(summary.episodic_summary) + 4
            after += sum(counter.count(f.fact) + 4 for f in summary.semantic_facts[: policy.max_semantic_items])
        result.tokens_after = min(after, result.tokens_before) if summary is None else after
        result.seconds = time.monotonic() - started
        return result

    compaction_id = new_id(COMPACTION_PREFIX)
    with store.writer(create=False) as session:
        problem = check_plan(store.paths.active, plan_)
        if problem is not None:
            raise CompactionConflict(f"the active file of {store.agent_id!r} changed while summarizing: {problem}; "
                                     "nothing was written", hint="run the compaction again")
        model_name = summarizer.name if summarizer is not None else None
        episodic, semantic, counts = build_items(
            store, plan_, summary, compaction_id=compaction_id, trace_ids=trace_ids, moved=moved,
            model=model_name, policy=policy, strategy=strategy)
        paths = store.paths
        journal = Journal(
            compaction_id=compaction_id, agent_id=store.agent_id,
            active={"ino": plan_.active_ino, "size": jsonl.file_size(paths.active)},
            runs=plan_.runs, run_ids=plan_.run_ids, moved=moved, first_id=plan_.first_id, last_id=plan_.last_id,
            archive_size=jsonl.file_size(paths.archive), episodic_size=jsonl.file_size(paths.episodic),
            semantic_size=jsonl.file_size(paths.semantic),
            episodic=[to_record(e) for e in episodic], semantic=[to_record(s) for s in semantic],
        )
        commit(session, journal)
        breaker.record_success(paths, compaction_id)
    result.compacted = True
    result.compaction_id = compaction_id
    new_items = [e for e in episodic if "rollup" not in e.tags]
    result.episodic_id = new_items[0].id if new_items else None
    rollups = [e for e in episodic if "rollup" in e.tags]
    result.rollup_id = rollups[0].id if rollups else None
    result.facts_added, result.facts_merged = counts["added"], counts["merged"]
    result.tokens_after = _memory_tokens(store, counter, policy) + kept_tokens
    result.seconds = time.monotonic() - started
    if result.rollup_id:
        _note(result, on_note, f"rolled up {len(rollups[0].supersedes)} older episodic summaries into {result.rollup_id}")
    return result


def result_record(result: CompactResult) -> dict:
    """The result as one JSON-able object (``--json``)."""
    data = {k: v for k, v in result.__dict__.items() if k != "budget"}
    if result.budget is not None:
        data["budget"] = dict(result.budget.__dict__)
    return orjson.loads(orjson.dumps(data))
