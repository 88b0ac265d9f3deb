"""``compact()``: one compaction of one agent, end to end (docs/design.md §3–§4).

1. ``--if-needed``: the budget trigger (:func:`memcli.compaction.policy.budget_status`) decides,
   and the circuit breaker (:mod:`memcli.compaction.breaker`) may refuse to call the model. The
   provider's reported usage decides at once; without it, the working snapshot's count does —
   the one the plan (step 3) takes anyway, so the window is planned first (under the agent lock
   only) and the active file is read once for both; a store that is not due is only read. The
   plan is used under the compaction lock if the file still holds it (else planned again).
2. A per-agent *compaction lock* (``.locks/<agent>.compact.lock``, non-blocking) keeps two
   compactions of one agent from summarizing the same window; ingest is not blocked by it.
3. Under the agent lock, the window is planned (:mod:`memcli.compaction.window`); the lock is
   released. For the offline summary of a large store, a child process forked as the plan opens
   the active file summarizes the turns certain to move meanwhile (:class:`_ReadAhead`).
4. Without any lock, the rest of the window's traces are read back and summarized — one
   request, or chunks of whole turns summarized concurrently and merged into one episodic item
   (the merge is deterministic: the chunk summaries in order under their turn ranges, facts
   de-duplicated). Ingest keeps appending meanwhile.
5. Under the agent lock again, the plan is checked against the file (only appends happened),
   the items are built against the live memory (rollup, fact merge), and the journaled commit
   of :mod:`memcli.store.journal` runs. Appends made since step 3 are carried over by the
   rewrite, which reads the active file as it is at that moment, under the lock.

A file the working snapshot reads (active, episodic, semantic, memory files) that ends in a
record without its newline stops a compaction that would write, dry run alike, before anything is
summarized or written (:func:`_unterminated`): readers do not count that record, the commit's
write would make it count, and the result would not be the one planned. A line of the ledger
that is not a record stops it too, at the same point (:func:`memcli.store.ledger.check_ledger`):
the commit appends there, and ``uncompact`` could not read past that line.

The commit also appends the compaction's ledger record (:func:`ledger_record`, format in
:mod:`memcli.store.ledger`): what moved and from where, tokens before/after, the items written
and what they superseded, and a model's tokens and cost — what ``memcli compactions`` lists and
``memcli uncompact`` (:mod:`memcli.compaction.undo`) reads. A model is told a summary budget
within a quarter of the window (:func:`memcli.compaction.window.summary_room`); its summary that
would not leave the snapshot smaller is asked to shrink, and when nothing is written for that
(never worse) after a model was paid, what it cost is said and appended to the ledger
(``unwritten-compaction``, :func:`_unwritten_spend`). With a model, ``--dry-run`` and
``--max-cost`` first take the model's estimate for the window (:func:`_check_cost`): ``--max-cost``
refuses before the first request when it is above the limit or has no price; ``--dry-run`` shows
it with the window's offline digest.

Items written: one EPISODIC item per compaction (``tags`` ``["compaction"]``, ``model`` the
summarizer, ``trace_ids`` listed up to ``MAX_LISTED_TRACE_IDS`` — beyond that ``trace_count``
says how many and ``turn_ids`` still names every turn). When the live (not superseded) episodic
items would exceed ``max_episodic_items``, all live items older than the new one roll up into one
item (``tags`` ``["compaction", "rollup"]``) that supersedes them, written before the new one, so
the live items stay in chronological file order; a rollup among them gives back its sections, so
a rollup of rollups is flat (:func:`_rollup_text`), and each run of offline summaries among them
merges into one (:func:`_merged_parts`). They roll up too, whatever their number, when
the target presses: when the window's summary would get less than its usual room
(:func:`memcli.compaction.window.summary_reserve`) and less than half of what the target leaves
the summaries, the earlier ones roll up into the rest (:meth:`_Bundle.rollup_size`); what must
stay then counts them at their smallest rollup (not with a sliding window, which writes none, nor
when the default target is out of reach anyway: they keep their size). A new fact identical
(case and whitespace aside) to a live one is merged: one item with the live fact's text, the union of tags and source
turns and the higher confidence replaces (supersedes) the live one, so one copy stays live and it
moves to the newest position. ``sliding-window`` archives the window with no items at all.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import pickle
import queue
import re
import signal
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable, Iterator

import orjson

from memcli.bulk import cyclic_gc_paused, usable_cpus
from memcli.compaction import breaker
from memcli.compaction.policy import BudgetStatus, CompactionPolicy, budget_status, input_budget, target_tokens
from memcli.compaction.summarizer import Fact, MemoryContext, Summarizer, Summary, Turn, normalize_fact, turn_span
from memcli.compaction.window import (
    WindowPlan,
    WindowTurn,
    check_feed,
    check_plan,
    feed_scan,
    in_window_order,
    iter_window_traces,
    newest_steps,
    plan_window,
    summary_reserve,
    summary_room,
)
from memcli.errors import CompactionBusy, CompactionError, UsageError, as_flag
from memcli.ids import COMPACTION_PREFIX, EPISODIC_PREFIX, SEMANTIC_PREFIX, new_id
from memcli.models import EpisodicItem, RawTrace, SemanticItem, is_pinned, to_record
from memcli.sizes import counted, what_moved
from memcli.store import jsonl
from memcli.store.agent import AgentStore
from memcli.store.journal import Journal, commit
from memcli.store.ledger import COMPACTION, UNWRITTEN, UNWRITTEN_PREFIX, append_ledger, check_ledger, run_places
from memcli.store.lock import agent_lock, compaction_lock

STRATEGIES = ("summarize", "sliding-window")
MAX_LISTED_TRACE_IDS = 5_000
READ_AHEAD_MIN_BYTES = 1 << 20    # an active file smaller than this is summarized without a child process
READ_AHEAD_PATIENCE = 4           # a read-ahead child is given up after this many times the plan's own time ...
READ_AHEAD_MIN_WAIT = 30.0        # ... and at least this many seconds from its fork (_ReadAhead.finish)
MAX_SOURCE_TURNS = 50
ROLLUP_CHARS = 12_000
PROMPT_FACTS = 50                 # live facts shown to the summarizer
EST_SUMMARY_TOKENS_PER_CHUNK = 400
MIN_SUMMARY_TOKENS = 80           # the smallest budget a summary is given
# of the texts a compaction counts for the first time, the counts the cache keeps: the newest, so
# those of what stays (the result is counted last) and not those of the archived window
NEW_COUNTS_KEPT = 20_000


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
    turns: int = 0                   # turns touched (whole or some of their steps)
    whole_turns: int = 0
    steps: int = 0                   # steps moved out of turns whose ask stays
    abandoned: int = 0               # unanswered calls moved with their step
    turn_range: str = ""
    turn_ids: list = field(default_factory=list)
    traces: int = 0
    pinned_kept: int = 0
    kept_turns: int = 0
    stop_reason: str = ""
    chunks: int = 0
    tokens_before: int | None = 0    # None: not counted (--if-needed, not due by the provider's usage)
    tokens_after: int | None = 0
    tokens_after_estimated: bool = False
    window_tokens: int = 0
    target_tokens: int = 0
    threshold: int = 0               # the trigger threshold the result is measured against
    minimum_tokens: int = 0          # what can never move
    never_worse: bool = False        # nothing written: it would not have shrunk the snapshot
    shortfall: str | None = None     # why the result is still above the threshold
    facts_added: int = 0
    facts_merged: int = 0
    summary: str | None = None
    facts: list = field(default_factory=list)
    llm: dict | None = None          # a model's tokens and cost (the ledger's ``llm``; see memcli.store.ledger)
    estimate: dict | None = None     # --dry-run / --max-cost with a model: what it would send and cost
    seconds: float = 0.0
    budget: BudgetStatus | None = None
    notes: list = field(default_factory=list)

    def to_dict(self) -> dict:
        """The result as one JSON-able object (``compact --json``)."""
        return result_record(self)

    def what(self) -> str:
        """"4 turns", "2 turns and 120 steps", "120 steps" — what the window holds."""
        return what_moved(self.whole_turns, self.steps)

    def describe(self) -> str:
        if self.never_worse or (not self.compacted and (not self.dry_run or not self.turns)):
            return self.reason   # (a dry run that found nothing to do says why, as a run does)
        verb = "would compact" if self.dry_run else "compacted"
        abandoned = (f", {self.abandoned} unanswered call{'s' if self.abandoned != 1 else ''}"
                     if self.abandoned else "")
        text = (f"{verb} {self.what()} ({self.turn_range}, {self.traces} trace{'s' if self.traces != 1 else ''}"
                f"{abandoned}) of {self.agent_id!r}")
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
            text += f"; {counted(self.chunks, 'chunk')}"
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


def plan(store: AgentStore, tail_turns: int, on_note: Callable[[str], None] | None = None, *, keep_steps: int = 4,
         target_tokens: int | None = None, model: str | None = None,
         on_open: Callable[[int], None] | None = None, summarized: bool = True) -> WindowPlan:
    """The window, planned under the agent lock after any pending recovery (writes nothing else).
    ``on_open``: see :func:`memcli.compaction.window.plan_window`."""
    for _ in range(5):
        for message in recover(store):
            if on_note is not None:
                on_note(message)
        with agent_lock(store.paths):
            if store.paths.ingest_marker.exists() or store.paths.compaction_journal.exists():
                continue  # someone crashed in between: recover first
            return plan_window(store, tail_turns, keep_steps=keep_steps, target_tokens=target_tokens, model=model,
                               on_open=on_open, summarized=summarized)
    raise CompactionError(f"agent {store.agent_id!r} keeps needing recovery; run `memcli doctor {store.agent_id}`")


def _live_bundle(store: AgentStore) -> tuple[list, list]:
    """The items the working snapshot's memory bundle carries now (the snapshot's own rule,
    :func:`memcli.snapshot.recall.default_bundle`)."""
    from memcli.snapshot.recall import MAX_EPISODIC, default_bundle

    return default_bundle(*store.live_memory(MAX_EPISODIC, None))


def _memory_tokens(meter, episodic: list, semantic: list) -> int:
    """Tokens of the memory bundle the working snapshot would carry with these live items (which
    of them it carries: :func:`memcli.snapshot.recall.default_bundle`, the snapshot's rule)."""
    from memcli.snapshot.assemble import memory_message
    from memcli.snapshot.recall import default_bundle

    message = memory_message(*default_bundle(episodic, semantic))
    return meter.message(message) if message is not None else 0


def _memory_after(store: AgentStore, episodic: list, semantic: list) -> tuple[list, list]:
    """The live items once ``episodic`` and ``semantic`` are appended (supersedes applied)."""
    live_episodic, live_facts = store.live_memory(None, None)
    gone = {i for item in episodic + semantic for i in item.supersedes}
    return ([e for e in live_episodic if e.id not in gone] + episodic,
            [f for f in live_facts if f.id not in gone] + semantic)


class _EarlyTurns:
    """The turns a :class:`memcli.compaction.window.WholeTurnFeed` hands over (the ones certain
    to move whole), added to the offline summary at once, and the trace ids they move."""

    def __init__(self, summarizer: Summarizer):
        self.summary = summarizer.window_summary()
        self.ids: list = []

    @classmethod
    def of(cls, summarizer: Summarizer | None) -> "_EarlyTurns | None":
        """For a summarizer a feed can add turns to (its ``window_summary()`` is one)."""
        early = cls(summarizer) if summarizer is not None else None
        return early if early is not None and early.summary is not None else None

    def __call__(self, turn_id: str, traces: list, steps: int) -> None:
        room = MAX_LISTED_TRACE_IDS - len(self.ids)
        if room > 0:
            self.ids.extend(t.id for t in traces[:room])
        self.summary.whole_turn(turn_id, traces, steps)

    @staticmethod
    def open_steps(turn_id: str) -> "_NotedDigest":
        """The digest a giant turn's moved steps are folded into as the feed reads them (StepSpill)."""
        from memcli.compaction.offline import turn_digest

        return _NotedDigest(turn_digest(WindowTurn(turn_id, whole=False)))


class _ReadAhead:
    """The offline summary's read of the window, in a forked child process while this one plans.

    Planning (messages built and counted for every active trace) and summarizing (a digest of
    every moved trace) each cost about half of a large compaction, and the turns certain to
    move whole (:class:`memcli.compaction.window.WholeTurnFeed`) are known without counting. So
    when the plan opens the active file (:meth:`fork`, under the agent lock: the child reads the
    same bytes), a child process forks and runs the feed alone
    (:func:`memcli.compaction.window.feed_scan`) into its copy of ``early``, then sends it back
    through a pipe (pickled: the child is this process's own fork, nothing else writes the
    pipe). :meth:`finish` takes it and checks it against the finished plan
    (:func:`memcli.compaction.window.check_feed`); whatever it did not cover is read afterwards
    as before. The child writes no file, takes no lock and ends with ``os._exit``; an error in
    it, a child that dies, or one still running :data:`READ_AHEAD_PATIENCE` times the plan's time
    after its fork (at least :data:`READ_AHEAD_MIN_WAIT` seconds: stopped, starved, stuck), only
    means the window is read in this process: slower, the same summary. Used where fork
    exists, with more than one CPU, from a process with no other thread running (a fork copies
    no thread), for an active file of :data:`READ_AHEAD_MIN_BYTES` or more. Otherwise the window
    is read after the plan: in one process that is faster than feeding the summary while
    counting (the two interleaved thrash the CPU caches: 7.4 s against 3.0 + 2.9 s of CPU for
    100,000 turns, measured here)."""

    def __init__(self, early: _EarlyTurns, store: AgentStore, tail_turns: int, keep_steps: int,
                 target_tokens: int | None):
        self.early, self.store = early, store
        self.tail_turns, self.keep_steps, self.target_tokens = tail_turns, keep_steps, target_tokens
        self.pid = self.fd = None
        self.forked_at = 0.0

    @classmethod
    def of(cls, early: _EarlyTurns | None, store: AgentStore, policy: CompactionPolicy,
           target_tokens: int) -> "_ReadAhead | None":
        if early is None or not _can_fork():
            return None
        return cls(early, store, policy.tail_turns, policy.keep_steps, target_tokens)

    def fork(self, size: int) -> None:
        self.cancel()
        if size < READ_AHEAD_MIN_BYTES:
            return
        read_end, write_end = os.pipe()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:   # the child: summarize, send, leave without running anything of the parent's
            try:
                os.close(read_end)
                _die_with_parent(parent)
                result = feed_scan(self.store, size, self.tail_turns, self.keep_steps, self.early,
                                   self.early.open_steps, self.target_tokens)
                with os.fdopen(write_end, "wb") as out:
                    _Pickler(out, protocol=pickle.HIGHEST_PROTOCOL).dump((self.early, result))
            except BaseException:
                if os.environ.get("MEMCLI_DEBUG") == "1":   # else silent: the parent reads the window itself
                    import traceback

                    traceback.print_exc()
            finally:
                os._exit(0)
        os.close(write_end)
        self.pid, self.fd, self.forked_at = pid, read_end, time.monotonic()

    def finish(self, plan_: WindowPlan) -> _EarlyTurns | None:
        """The child's ``early``, with ``plan_.delivered``/``spilled`` set from what it did; None
        when it had nothing to give (the window is then read here)."""
        if self.fd is None:
            return None
        planned = time.monotonic() - self.forked_at   # what the plan took while the child read
        payload = _read_until(self.fd, self.forked_at + max(READ_AHEAD_MIN_WAIT, READ_AHEAD_PATIENCE * planned))
        if payload is None:   # the child is late: give it up (killed, reaped)
            self.cancel()
            return None
        os.close(self.fd)
        self.fd = None
        _reap(self.pid)
        self.pid = None
        try:
            early, result = pickle.loads(payload)
        except Exception:  # the child failed or died: nothing (or half of it) was sent
            return None
        plan_.delivered, plan_.spilled = check_feed(result, plan_, self.store.paths.active)
        return early

    def cancel(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            _reap(self.pid)
            self.pid = None


def _read_until(fd: int, deadline: float) -> bytes | None:
    """Everything the pipe ``fd`` gives until its writer closes it, or None if that has not
    happened by ``deadline`` (``time.monotonic``)."""
    import select

    chunks = []
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            return None
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


class _Pickler(pickle.Pickler):
    """Pickles what the read-ahead child sends, read-only mappings (``types.MappingProxyType``,
    which a digest may share for "nothing yet") as the plain mappings they show."""

    def reducer_override(self, obj):
        if type(obj) is MappingProxyType:
            return _read_only, (dict(obj),)
        return NotImplemented


def _read_only(mapping: dict) -> MappingProxyType:
    return MappingProxyType(mapping)


def _reap(pid: int) -> None:
    """Wait for the child ``pid`` to end; a host that reaps its children itself (or ignores
    SIGCHLD) leaves nothing to wait for."""
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def _can_fork() -> bool:
    """Whether a read-ahead child may fork: ``fork`` exists, this process may run on two CPUs or
    more (:func:`memcli.bulk.usable_cpus`: its affinity and its cgroup's CPU quota), and no other
    thread runs (a fork copies none, and one holding a lock — logging's, LiteLLM's worker's —
    would leave it held in the child). A process that called an LLM keeps LiteLLM's logging
    thread: its offline compactions read the window after the plan."""
    return hasattr(os, "fork") and usable_cpus() >= 2 and threading.active_count() == 1


def _die_with_parent(parent: int) -> None:
    """In a forked child: be killed when the parent dies (a compaction killed with -9 leaves no
    child reading on; Linux's PR_SET_PDEATHSIG), and leave now if it already has."""
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:
        os._exit(0)


class _NotedDigest:
    """A turn's digest fed a trace at a time, noting the first trace ids on the way."""

    __slots__ = ("digest", "ids")

    def __init__(self, digest):
        self.digest, self.ids = digest, []

    def add(self, trace: RawTrace) -> None:
        if len(self.ids) < MAX_LISTED_TRACE_IDS:
            self.ids.append(trace.id)
        self.digest.add(trace)

    def placed(self, turn: WindowTurn):
        """The digest, with the steps ``turn`` (its window turn) says moved."""
        self.digest.steps, self.digest.total_steps = turn.steps, turn.total_steps
        return self.digest


class _Collect:
    """The window's turns for the summarizer, noting the moved trace ids on the way: whole
    :class:`Turn` objects for a summarizer that reads them, or (:meth:`summarize_into`) the
    offline summary fed a trace at a time straight from the file, so no turn's traces are held —
    after the turns the read-ahead child summarized already (``early``), when it did."""

    def __init__(self, store: AgentStore, plan_: WindowPlan, early: _EarlyTurns | None = None):
        self.store, self.plan = store, plan_
        self.early = early if early is not None and (plan_.delivered or plan_.spilled is not None) else None
        self.ids: list = []

    def _noted(self, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, RawTrace]]:
        self.ids = list(self.early.ids) if start else []
        for i, trace in iter_window_traces(self.store.paths.active, self.plan, start, stop):
            if len(self.ids) < MAX_LISTED_TRACE_IDS:
                self.ids.append(trace.id)
            yield i, trace

    def __iter__(self) -> Iterator[Turn]:
        wanted = self.plan.turns
        for wt, traces in in_window_order(wanted, self._noted(), lambda i: [], list.append):
            yield Turn(wt.turn_id, traces, steps_only=not wt.whole, steps=wt.steps, total_steps=wt.total_steps)

    def summarize_into(self, summarizer):
        """The offline summarizer's :class:`memcli.compaction.offline.WindowSummary` of the window."""
        from memcli.compaction.offline import turn_digest

        early = self.early
        start = self.plan.delivered if early is not None else 0
        summary = early.summary if early is not None else summarizer.window_summary()
        spilled = self.plan.spilled if early is not None else None   # the last turn's steps, read already
        wanted = self.plan.turns[start:len(self.plan.turns) - (spilled is not None)]
        for _, digest in in_window_order(wanted, self._noted(start, start + len(wanted)),
                                         lambda i: turn_digest(wanted[i]), lambda d, trace: d.add(trace)):
            summary.add(digest)
        if spilled is not None:
            summary.add(spilled.placed(self.plan.turns[-1]))
            self.ids.extend(spilled.ids[:max(MAX_LISTED_TRACE_IDS - len(self.ids), 0)])
        return summary


def merge_summaries(parts: list[tuple[list, Summary]]) -> Summary:
    """One summary from chunk summaries, in order (module docstring, step 4)."""
    if len(parts) == 1:
        return parts[0][1]
    sections = []
    facts: list[Fact] = []
    by_key: dict[str, Fact] = {}
    for turns, summary in parts:
        span = turn_span([t.turn_id for t in turns])
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
    # (one long turn summarized in parts is "turn_0007, summarized in 3 parts")
    header = f"{turn_span([first, last])}, summarized in {len(parts)} parts:"
    return Summary(header + "\n\n" + "\n\n".join(sections), facts)


# a rollup's "[turn_0001–turn_0008]", and for summaries merged into one, how many: "[turn_0001–turn_0008] (5 summaries)"
_SECTION = re.compile(r"^\[((?:turn_|ep_)[^\]\n]*)\](?: \((\d+) summaries\))?$", re.MULTILINE)
_LEFT_OUT = re.compile(r"^(\d+) older summaries left out")
_ROLLUP_HEAD = "Earlier history ("
MIN_SECTION_CHARS = 300   # a rollup's share for one summary; past that many, the oldest are counted


def _rollup_parts(items: list[EpisodicItem]) -> list[tuple[str, str, int]]:
    """(turn range, summary, how many summaries it stands for) of each summary the items hold,
    oldest first: a rollup among them gives back the sections it holds (its count of those it
    left out too), so a rollup of rollups shares its room among the summaries themselves (nesting
    gave the oldest a third of a third… of it, and repeated each header)."""
    parts: list[tuple[str, str, int]] = []
    for item in items:
        text = item.summary
        if "rollup" in item.tags and text.startswith(_ROLLUP_HEAD):
            marks = list(_SECTION.finditer(text))
            for n, m in enumerate(marks):
                body = text[m.end() + 1:marks[n + 1].start() - 1 if n + 1 < len(marks) else len(text)]
                left_out = _LEFT_OUT.match(body)
                parts.append((m.group(1), body, int(left_out.group(1)) if left_out else int(m.group(2) or 1)))
            if marks:
                continue
        parts.append((turn_span(item.turn_ids) or item.id, text, 1))
    return parts


def _merged_parts(parts: list[tuple[str, str, int]]) -> list[tuple[str, str, int]]:
    """``parts`` (:func:`_rollup_parts`) with each run of two or more consecutive offline
    summaries as one (:func:`memcli.compaction.offline.merge_summary_texts`): what a session
    compacted again and again said in as many summaries, said once (its files, its failures'
    latest state, its plan)."""
    from memcli.compaction.offline import is_work_summary, merge_summary_texts, summary_turns

    out: list[tuple[str, str, int]] = []
    run: list[tuple[str, str, int, int]] = []

    def flush() -> None:
        if len(run) >= 2:
            first, last = run[0][0].split("–")[0], run[-1][0].split("–")[-1]
            # a turn whose steps moved in two compactions ends one summary and starts the next
            turns = sum(p[3] for p in run) - sum(a[0].split("–")[-1] == b[0].split("–")[0] for a, b in zip(run, run[1:]))
            span = turn_span([first, last])
            merged = merge_summary_texts([p[1] for p in run], span, turns)
            if merged is not None:
                out.append((span, merged, sum(p[2] for p in run)))
                run.clear()
                return
        out.extend(p[:3] for p in run)
        run.clear()

    for part in parts:
        turns = summary_turns(part[1])
        # (a summary of conversation only stays a section: rolled up as one, its quotes condensed
        # together, a chat compacted in six rounds kept 94 of its 185 facts against 105)
        if turns is None or not part[0].startswith("turn") or not is_work_summary(part[1]):
            flush()
            out.append(part)
        else:
            run.append((*part, turns))
    flush()
    return out


def _rollup_text(items: list[EpisodicItem], size: int = ROLLUP_CHARS) -> str:
    """One text for the items a rollup replaces: each summary (those of a rollup among them too,
    :func:`_rollup_parts`) under its turn range, line breaks kept, condensed (turn lines shrink to
    their asks first) to share ``size`` characters (``ROLLUP_CHARS``, or less when the target
    presses: :meth:`_Bundle.rollup_size`); when each would get less than ``MIN_SECTION_CHARS``,
    the oldest are counted on one line instead."""
    from memcli.compaction.offline import condense

    span = turn_span([t for item in items for t in item.turn_ids]) or "earlier turns"
    parts = _merged_parts(_rollup_parts(items))
    header = f"{_ROLLUP_HEAD}{span}), rolled up from {counted(sum(p[2] for p in parts), 'summary', 'summaries')}:"
    room = size - len(header)
    keep = max(min(len(parts), room // (MIN_SECTION_CHARS + 40)), 1)
    sections = []
    if keep < len(parts) or _LEFT_OUT.match(parts[0][1]):   # (the count of summaries left out before stays first)
        keep = min(keep, len(parts) - 1)
        old = parts[:len(parts) - keep]
        first, last = old[0][0].split("–")[0], old[-1][0].split("–")[-1]
        note = (f"[{turn_span([first, last])}]\n{sum(p[2] for p in old)} older summaries left out at the rollup's size "
                "(`memcli show AGENT --archive` has their turns)")
        sections.append(note)
        room -= len(note) + 1
        parts = parts[len(parts) - keep:]
    budget = max(room // max(len(parts), 1) - 40, 200)
    for part, text, count in parts:
        sections.append(f"[{part}]{f' ({count} summaries)' if count > 1 else ''}\n{condense(text, budget)}")
    return header + "\n" + "\n".join(sections)


def build_items(store: AgentStore, plan_: WindowPlan, summary: Summary | None, *, compaction_id: str,
                trace_ids: list, moved: int, model: str | None, policy: CompactionPolicy,
                strategy: str, rollup_chars: int | None = None) -> tuple[list[EpisodicItem], list[SemanticItem], dict]:
    """The items a compaction appends (rollup first, then the new episodic item; facts). The
    live summaries roll up when one more would exceed ``max_episodic_items``, or when the target
    presses (``rollup_chars``: the size the rollup is given, :meth:`_Bundle.rollup_size`)."""
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
    if live_episodic and (rollup_chars is not None or len(live_episodic) + 1 > max(policy.max_episodic_items, 1)):
        rolled = live_episodic
        episodic.append(EpisodicItem(
            id=new_id(EPISODIC_PREFIX), ts=now, turn_ids=list(dict.fromkeys(t for e in rolled for t in e.turn_ids)),
            summary=_rollup_text(rolled, rollup_chars or ROLLUP_CHARS), tags=["compaction", "rollup"], salience=0.5,
            compaction_id=compaction_id, supersedes=[e.id for e in rolled], model="rollup",
        ))
    episodic.append(item)

    live_by_key = {normalize_fact(f.fact): f for f in live_facts}
    # what a summary (any summarizer, merged chunks too) may supersede: facts compactions wrote,
    # never one someone remembered or pinned (MemoryContext.fact_ids, the same rule)
    replaceable = MemoryContext(facts=live_facts).fact_ids()
    semantic: list[SemanticItem] = []
    added = merged = 0
    for fact in summary.semantic_facts:
        if fact.supersedes and not replaceable.issuperset(fact.supersedes):
            fact = dataclasses.replace(fact, supersedes=[i for i in fact.supersedes if i in replaceable])
        key = normalize_fact(fact.fact)
        known = live_by_key.get(key)
        salience = 0.9 if "preference" in fact.tags else 0.5
        if known is not None and (not known.compaction_id or is_pinned(known)):
            # a fact remembered or pinned says it already, and stays as it is: a merged copy
            # superseding it would be a compaction's fact, which the next summary may supersede
            merged += 1
            continue
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
            added += 1
            sources = fact.source_turn_ids or plan_.turn_ids
            if len(sources) > MAX_SOURCE_TURNS:
                sources = sources[:1] + sources[-(MAX_SOURCE_TURNS - 1):]
            semantic.append(SemanticItem(
                id=new_id(SEMANTIC_PREFIX), ts=now, fact=fact.fact, tags=list(fact.tags), confidence=fact.confidence,
                salience=salience, source_turn_ids=list(sources), compaction_id=compaction_id,
                supersedes=list(fact.supersedes),
            ))
    return episodic, semantic, {"added": added, "merged": merged}


def _summarize(summarizer, window: _Collect, memory: MemoryContext, concurrency: int,
               on_progress) -> tuple[Summary, int]:
    """(summary, chunks): one pass for a summarizer without a context limit, else chunks of whole
    turns summarized concurrently and merged."""
    if summarizer.context_tokens() is None:
        if on_progress:
            on_progress(0, 1)
        summary = summarizer.summarize(window, memory)
        if on_progress:
            on_progress(1, 1)
        return summary, 1
    chunks = summarizer.split(list(window), memory)
    total = len(chunks)
    if on_progress:
        on_progress(0, total)
    results = _in_threads(summarizer, chunks, memory, concurrency, on_progress)
    summary = merge_summaries(list(zip(chunks, results, strict=True)))
    if summary.resize is None:   # a model's summary over its budget is asked to shorten, before writing
        summary.resize = summarizer.shortener(summary, [turn for chunk in chunks for turn in chunk])
    return summary, total


def _in_threads(summarizer, chunks: list, memory: MemoryContext, concurrency: int, on_progress) -> list:
    """``summarizer.summarize`` of each chunk, ``concurrency`` at a time, in chunk order. The first
    failure stops the chunks not started and is raised once the running ones end (their requests
    were sent: what they cost is counted). Ctrl-C (KeyboardInterrupt) stops at once: the summarizer
    is told (``interrupt``: no request goes after it) and the threads are daemons, so the process
    does not wait for an answer still coming (a ThreadPoolExecutor's threads are joined at exit:
    Ctrl-C waited out a 15-second answer, then threw it away)."""
    total = len(chunks)
    results: list = [None] * total
    todo = iter(range(total))
    todo_lock = threading.Lock()
    stop = threading.Event()
    done_q: queue.SimpleQueue = queue.SimpleQueue()

    def work() -> None:
        while not stop.is_set():
            with todo_lock:
                i = next(todo, None)
            if i is None:
                return
            try:
                done_q.put((i, summarizer.summarize(chunks[i], memory), None))
            except BaseException as exc:   # (raised in the caller's thread)
                done_q.put((i, None, exc))

    threads = [threading.Thread(target=work, name=f"memcli-chunk-{n}", daemon=True)
               for n in range(max(1, min(concurrency, total)))]
    for thread in threads:
        thread.start()
    interrupt = getattr(summarizer, "interrupt", None) or (lambda: None)
    done, error = 0, None
    try:
        while done < total:
            try:
                i, value, error = done_q.get(timeout=0.2)   # (a timeout: Ctrl-C is seen while waiting)
            except queue.Empty:
                continue
            if error is not None:
                break
            results[i] = value
            done += 1
            if on_progress:
                on_progress(done, total)
    except BaseException:   # Ctrl-C, or the caller's progress failing: no chunk starts, no request goes
        stop.set()
        interrupt()
        raise
    if error is not None:   # no chunk starts, no request goes (a chunk's CompactionError did it already),
        stop.set()          # and the running ones end first: their requests were sent, what they cost counts
        interrupt()
        for thread in threads:
            thread.join()
        raise error
    return results


def compact(memory_dir: str | os.PathLike, agent_id: str, *, summarizer=None, strategy: str = "summarize",
            policy: CompactionPolicy | None = None, if_needed: bool = False, force: bool = False,
            dry_run: bool = False, model: str | None = None, max_context_tokens: int | None = None,
            concurrency: int = 4, on_progress: Callable[[int, int], None] | None = None,
            on_note: Callable[[str], None] | None = None, max_cost: float | None = None) -> CompactResult:
    """Compact ``agent_id`` (module docstring). ``summarizer`` defaults to the offline one.

    Raises CompactionError (exit 1) when no valid summary could be had — nothing is written then
    but the circuit breaker's count — or when ``policy.target_tokens`` is below what must stay,
    and AgentNotFoundError / UsageError as usual. ``max_cost`` (USD): with a model, refuse
    (CompactionError, before any request) when the estimate (:func:`_check_cost`) is above it."""
    started = time.monotonic()
    policy = policy or CompactionPolicy()
    if strategy not in STRATEGIES:
        raise UsageError(f"unknown strategy {strategy!r} (expected {' or '.join(STRATEGIES)})")
    if concurrency < 1:
        raise UsageError("{concurrency} must be at least 1", param="concurrency")
    if policy.tail_turns < 0:
        raise UsageError("{tail_turns} must be 0 or more", param="tail_turns")
    if policy.keep_steps < 0:
        raise UsageError("{keep_steps} must be 0 or more", param="keep_steps")
    if policy.target_tokens is not None and policy.target_tokens < 1:
        raise UsageError("{target_tokens} must be 1 or more", param="target_tokens")
    if max_cost is not None and not max_cost >= 0:
        raise UsageError("{max_cost} must be 0 or more (US dollars)", param="max_cost")
    store = AgentStore(memory_dir, agent_id).require()
    if summarizer is None and strategy == "summarize":
        from memcli.compaction.offline import OfflineSummarizer

        summarizer = OfflineSummarizer(max_facts=policy.max_semantic_items)
    result = CompactResult(store.agent_id, dry_run=dry_run, strategy=strategy,
                           summarizer=summarizer.name if summarizer is not None and strategy == "summarize" else None)
    result.threshold = int(policy.trigger_ratio * input_budget(model, max_context_tokens, policy)[0])
    result.target_tokens = target_tokens(model, max_context_tokens, policy)

    job = _Job(store, result, summarizer, strategy, policy, dry_run, model, concurrency, on_progress, on_note, started,
               max_cost)
    # texts counted before (snapshot, stats, a hook) are not counted again; --dry-run writes nothing
    with store.counting_cache(save=not dry_run, keep_new=NEW_COUNTS_KEPT):
        return _compact(job, if_needed, force, max_context_tokens)


def _compact(job: _Job, if_needed: bool, force: bool, max_context_tokens: int | None) -> CompactResult:
    """:func:`compact` once its arguments are checked: the trigger, the compaction lock, the run."""
    planned: list = [None]   # the --if-needed plan, whose read-ahead child ends with this call whatever happens
    try:
        return _decide_and_run(job, if_needed, force, max_context_tokens, planned)
    finally:
        _cancel(planned[0])


def _decide_and_run(job: _Job, if_needed: bool, force: bool, max_context_tokens: int | None,
                    planned: list) -> CompactResult:
    store, result, summarizer, dry_run = job.store, job.result, job.summarizer, job.dry_run
    if if_needed:
        # the breaker holds back a model that kept failing, not the offline summary (nor a sliding window)
        trigger = _Trigger(store, result, job.model, max_context_tokens, job.policy, force or dry_run or not job.paid,
                           job.on_note)
        if trigger.reported is not None:   # the provider's usage decides at once
            if not trigger.decide(None):
                result.seconds = time.monotonic() - job.started
                return result
        else:
            # the working snapshot's count decides: the plan takes it anyway, so the store is read
            # once for both, and one that is not due is only read (no compaction lock taken)
            with cyclic_gc_paused():
                planned[0] = job.plan()
            if not trigger.decide(planned[0][0].tokens_before):
                result.seconds = time.monotonic() - job.started
                return result   # not due: what the child read ahead is not needed (ended by the caller)

    if job.strategy == "summarize" and not dry_run:  # a missing key or a closed --api-base, told before LiteLLM loads
        summarizer.preflight()
    lock = compaction_lock(store) if not dry_run else _no_lock()
    try:
        with lock, cyclic_gc_paused():
            return _run(job, planned[0])
    except CompactionBusy as exc:
        if if_needed:
            result.reason = f"skipped: {exc}"
            result.seconds = time.monotonic() - job.started
            return result
        raise


def _cancel(planned: tuple | None) -> None:
    """End the read-ahead child of a plan (:meth:`_Job.plan`), if it has one still running."""
    if planned is not None and planned[1] is not None:
        planned[1].cancel()


@contextmanager
def _no_lock():
    yield


class _Trigger:
    """``--if-needed``: is compaction due (:func:`memcli.compaction.policy.budget_status`), and
    may the summarizer be called (the circuit breaker)?"""

    def __init__(self, store: AgentStore, result: CompactResult, model, max_context_tokens, policy,
                 override_breaker: bool, on_note):
        from memcli.compaction.policy import latest_prompt_tokens

        self.store, self.result, self.model = store, result, model
        self.max_context_tokens, self.policy = max_context_tokens, policy
        self.override_breaker, self.on_note = override_breaker, on_note
        self.reported = latest_prompt_tokens(store)

    def decide(self, tokens: int | None) -> bool:
        """True when compaction is due (``tokens``: the working snapshot's count, unless the
        provider reported usage); False with ``result.reason`` set when it is not. Raises
        CompactionError when it is due but the circuit breaker is open."""
        status = budget_status(self.store, model=self.model, max_context_tokens=self.max_context_tokens,
                               policy=self.policy, tokens=tokens, reported=self.reported)
        self.result.budget = status
        # not due: the final line ("nothing to do: ...") says it; printing it here too would repeat it
        _note(self.result, self.on_note if status.due else None, status.explain())
        if not status.due:
            self.result.reason = "nothing to do: " + status.explain()
            # the snapshot as it stays: counted when the count decided; the provider's usage
            # decided without counting it (not due is meant to cost a hook nothing): unknown then
            counted_now = tokens if tokens is not None and status.source != "provider" else None
            self.result.tokens_before = self.result.tokens_after = counted_now
            return False
        state = breaker.read_breaker(self.store.paths)
        if state.open and not self.override_breaker:
            raise CompactionError(
                f"circuit breaker open for agent {self.store.agent_id!r}: {state.describe()}; "
                "{if_needed} does not call the summarizer again until a compaction succeeds",
                hint=f"run `memcli compact {self.store.agent_id}` without --if-needed, or add --force",
                param="if_needed")
        return True


def _stays_at(job: _Job, plan_: WindowPlan, bundle: _Bundle, older: int, target: int) -> tuple[int, int | None]:
    """What stays at ``target`` beside the window's summary — the kept traces and memory, the
    earlier summaries (``older`` tokens of them) rolled up when the room the target leaves is short
    of what the window's summary wants — and the rollup's size (None: no rollup)."""
    stays = plan_.kept_tokens
    room = target - stays
    # the window's summary wants its usual room, or half of what the target leaves the summaries
    # (the earlier ones and it) when that is less; short of it, the earlier ones roll up to the rest
    wanted = min(summary_reserve(plan_.window_tokens), (room + older) // 2)
    if not (older and room < wanted):
        return stays, None
    rollup_chars = bundle.rollup_size(room + older - wanted)
    return bundle.tokens_after(*build_items(   # what stays, the rollup in, the window's summary aside
        job.store, plan_, Summary("", []), compaction_id="", trace_ids=[], moved=0, model=None, policy=job.policy,
        strategy=job.strategy, rollup_chars=rollup_chars)[:2]), rollup_chars


def _model_floor(job: _Job, plan_: WindowPlan, bundle: _Bundle, older: int, named: int, start: int) -> int:
    """The least target that leaves a model's summary the ``named`` tokens it must hold, from
    ``start`` up: what stays grows with the target (a rollup of the earlier summaries is given
    more room), so a hint counted once ("use 1,132") was refused in turn ("use 1,475")."""
    target = start
    for _ in range(6):
        need = _stays_at(job, plan_, bundle, older, target)[0] + named
        if need <= target:
            break
        target = need
    return target


def _minimum_error(store: AgentStore, plan_: WindowPlan, target: int, smallest: int | None = None,
                   summarized: bool = True, named: int = 0, floor: int | None = None) -> CompactionError:
    """An explicit --target-tokens below what can never move. ``smallest``: the working snapshot
    the smallest summary of what moves would leave — the real minimum, which the hint names (known
    when that summary costs nothing to make: the offline one); without it, what must stay plus
    the room a summary is given at least (a model's answer is not bought to learn its size).
    Without a summary (``summarized`` false: a sliding window) what must stay is the minimum.
    ``named``: the tokens of what a model's answer must name (the window's asks and modified
    files), the least its summary takes; ``floor``: the least target that leaves it that much
    (:func:`_model_floor`)."""
    reach = ""
    if smallest is not None:
        reach = f"; with the smallest summary of what moves, the working snapshot would be {smallest:,} tokens"
        hint = f"use --target-tokens {smallest:,} or more{_fewer_steps(plan_)}"
    elif not summarized:
        hint = f"use --target-tokens {plan_.minimum_tokens:,} or more{_fewer_steps(plan_)}"
    else:
        least = floor if floor is not None else plan_.minimum_tokens + max(MIN_SUMMARY_TOKENS, named)
        hint = (f"use --target-tokens {least:,} or more (what must "
                f"stay and a summary of what moves, which names its asks and modified files; "
                f"{plan_.minimum_tokens + max(summary_reserve(plan_.tokens_before), named):,} or more leaves the "
                f"summary its usual room){_fewer_steps(plan_)}")
    return CompactionError(
        f"{{target_tokens}} {target:,} is below what agent {store.agent_id!r} must keep: {plan_.minimum_tokens:,} "
        f"tokens (the system prompt, the memory bundle and the user asks that stay"
        + (f", and {newest_steps(plan_.protected_steps)}, which never move{'s' if plan_.protected_steps == 1 else ''}"
           if plan_.protected_steps else ", which never move") + f"){reach}; nothing was written",
        hint=hint, param="target_tokens")


def _fewer_steps(plan_: WindowPlan, more: str = "") -> str:
    """The end of a refusal's hint: fewer kept steps (and ``more``), when the plan kept any it was
    asked to (with ``--keep-steps 0`` only a step whose call is still open stays: no flag moves it)."""
    if plan_.keep_steps > 0:
        return f", or fewer --keep-steps{more}"
    return f", or fewer{more.removeprefix(' or')}" if more else ""


def _target_error(store: AgentStore, plan_: WindowPlan, target: int, predicted: int) -> CompactionError:
    """An explicit --target-tokens the compaction cannot reach, even with the smallest summary."""
    return CompactionError(
        f"--target-tokens {target:,} cannot be met for agent {store.agent_id!r}: the compacted working snapshot "
        f"would be {predicted:,} tokens ({plan_.kept_tokens:,} that stay — {plan_.minimum_tokens:,} of them can never "
        f"move — plus the summary and facts); nothing was written",
        hint=f"use --target-tokens {predicted:,} or more{_fewer_steps(plan_)}")


def _named_error(store: AgentStore, plan_: WindowPlan, target: int, stays: int, named: int,
                 floor: int) -> CompactionError:
    """An explicit --target-tokens that leaves a model's summary less room than what it must name;
    ``floor``: the least target that does not (:func:`_model_floor`)."""
    return CompactionError(
        f"{{target_tokens}} {target:,} cannot be met for agent {store.agent_id!r} with a model's summary: "
        f"{stays:,} tokens stay, and the summary of what moves ({plan_.describe_range()}) must name its asks and "
        f"modified files, about {named:,} tokens more; nothing was sent or written",
        hint=f"use --target-tokens {floor:,} or more, or the offline summarizer (leave out --model)",
        param="target_tokens")


def _stuck_error(store: AgentStore, plan_: WindowPlan, target: int, why: str) -> CompactionError:
    """An explicit --target-tokens below the snapshot when nothing in the active file can move."""
    return CompactionError(
        f"{{target_tokens}} {target:,} cannot be met for agent {store.agent_id!r}: nothing can move ({why}), so the "
        f"working snapshot stays {plan_.tokens_before:,} tokens; nothing was written",
        hint=f"use --target-tokens {plan_.tokens_before:,} or more{_fewer_steps(plan_, ' or --tail-turns')}",
        param="target_tokens")


def _unterminated(store: AgentStore) -> CompactionError | None:
    """The refusal when a file the working snapshot reads ends in a record that only lost its
    newline (:func:`memcli.store.jsonl.unterminated_record`): no reader counts it, so the plan
    does not, but the commit's write adds the newline and the snapshot then carries it — the
    result would not be what was planned (an active file's 9,093 tokens became 11,541 at
    --target-tokens 3,000)."""
    paths = store.paths
    for path in (paths.active, paths.episodic, paths.semantic, paths.memory_files):
        found = jsonl.unterminated_record(path)
        if found is not None:
            offset, tail = found
            return CompactionError(
                f"the last line of {path.name} of agent {store.agent_id!r} is a record without its newline "
                f"({len(tail):,} bytes at byte {offset:,}: an append cut short, or the file edited): the working "
                "snapshot does not count it yet, but a compaction's write adds the newline, and with it the "
                "record, to what the compaction planned; nothing was written",
                hint=f"run `memcli doctor {store.agent_id} --repair` (it adds the newline), then compact again")
    return None


def _over_target(result: CompactResult, plan_: WindowPlan) -> str:
    """Why a compaction to the default target ends above it (under the trigger threshold)."""
    return (f"the working snapshot is {result.tokens_after - result.target_tokens:,} tokens over the target "
            f"({result.tokens_after:,} > {result.target_tokens:,}) though under the trigger threshold: what must stay "
            f"needs {plan_.minimum_tokens:,} tokens (system prompt, memory bundle, kept user asks and the newest "
            f"{plan_.protected_steps} steps), plus the summary")


def _shortfall(result: CompactResult, plan_: WindowPlan) -> str | None:
    """Why the compacted snapshot is still above the trigger threshold, when it is."""
    if not result.threshold or result.tokens_after <= result.threshold:
        return None
    over = result.tokens_after - result.threshold
    if plan_.minimum_tokens > result.threshold:
        why = (f"what must stay alone needs {plan_.minimum_tokens:,} tokens (system prompt, memory bundle, "
               f"kept user asks and {newest_steps(plan_.protected_steps)})")
    else:
        why = f"the window ends where {plan_.stop_reason}"
    return (f"the working snapshot is still {over:,} tokens over the trigger threshold "
            f"({result.tokens_after:,} > {result.threshold:,}): {why}")


@dataclass
class _Job:
    """One compaction: what was asked (the summarizer, strategy, policy, model ...) and the
    result being filled in. ``note`` reports to the result and to ``on_note``."""

    store: AgentStore
    result: CompactResult
    summarizer: Summarizer | None
    strategy: str
    policy: CompactionPolicy
    dry_run: bool
    model: str | None
    concurrency: int
    on_progress: Callable[[int, int], None] | None
    on_note: Callable[[str], None] | None
    started: float
    max_cost: float | None = None
    spent_before: object = None   # what the model had spent before this compaction (Spending)
    retries_said: int = 0         # of the summarizer's ``retried`` lines, those said already

    @property
    def paid(self) -> bool:
        """Whether the summary is a model's (paid for): what the circuit breaker is about, and
        what a refusal never buys an answer to learn."""
        return self.strategy == "summarize" and self.summarizer is not None and self.summarizer.spent is not None

    def note(self, message: str, *, say: bool = True) -> None:
        _note(self.result, self.on_note if say else None, message)

    def model_spent(self) -> None:
        """What the model spent so far goes to ``result.llm`` (the ledger's), and each request
        it was sent again is said, never silent."""
        if self.spent_before is not None:
            self.result.llm = self.summarizer.spent.since(self.spent_before, self.summarizer.name)
        for line in self.summarizer.retried[self.retries_said:]:
            self.note(line)
        self.retries_said = len(self.summarizer.retried)

    def done(self, **fields) -> CompactResult:
        """The result, with ``fields`` set and the time taken."""
        for name, value in fields.items():
            setattr(self.result, name, value)
        self.result.seconds = time.monotonic() - self.started
        return self.result

    def fed(self):
        """The summarizer a read-ahead child may feed while the plan reads: the one that will
        summarize (the offline one only, and not in a dry run)."""
        return self.summarizer if self.strategy == "summarize" and not self.dry_run else None

    def plan(self) -> tuple[WindowPlan, "_ReadAhead | None"]:
        """The window, and (for a summarizer that takes them: the offline one, where a child
        process can read ahead) the :class:`_ReadAhead` summarizing while it was planned: the
        caller finishes or cancels it."""
        ahead = _ReadAhead.of(_EarlyTurns.of(self.fed()), self.store, self.policy, self.result.target_tokens)
        try:
            return plan(self.store, self.policy.tail_turns, self.note, keep_steps=self.policy.keep_steps,
                        target_tokens=self.result.target_tokens, model=self.model,
                        on_open=ahead.fork if ahead is not None else None,
                        summarized=self.strategy == "summarize"), ahead
        except BaseException:
            if ahead is not None:
                ahead.cancel()
            raise


def _record_plan(result: CompactResult, plan_: WindowPlan) -> None:
    """The plan's figures on the result (what moves, what stays, the tokens)."""
    result.turns = len(plan_.turns)
    result.whole_turns = sum(1 for t in plan_.turns if t.whole)
    result.steps = plan_.steps
    result.abandoned = plan_.abandoned
    result.turn_range = plan_.describe_range()
    result.turn_ids = plan_.turn_ids
    result.traces = plan_.moved
    result.pinned_kept = plan_.pinned_kept
    result.kept_turns = plan_.kept_turns
    result.stop_reason = plan_.stop_reason
    result.tokens_before = plan_.tokens_before
    result.window_tokens = plan_.window_tokens
    result.minimum_tokens = plan_.minimum_tokens


class _Bundle:
    """The memory bundle's part of the working snapshot: its tokens now, and with new items."""

    def __init__(self, job: _Job, plan_: WindowPlan):
        from memcli.snapshot.assemble import working_counter
        from memcli.snapshot.views import TokenMeter

        self.store = job.store
        self.meter = TokenMeter(working_counter(job.model))
        self.live = _live_bundle(job.store)
        self.before = _memory_tokens(self.meter, *self.live)
        self.without = plan_.kept_tokens - self.before    # what stays, bundle aside
        self._rollable: list | None = None   # every live summary (what a rollup replaces), read once

    def tokens_after(self, episodic: list, semantic: list) -> int:
        """The working snapshot's tokens once these items are written."""
        return self.without + _memory_tokens(self.meter, *_memory_after(self.store, episodic, semantic))

    def unchanged(self) -> bool:
        return _memory_unchanged(self.store, self.live)

    def summaries_tokens(self) -> int:
        """What the live summaries take of the bundle now (the facts aside)."""
        return self.before - _memory_tokens(self.meter, [], self.live[1]) if self.live[0] else 0

    def rollable(self) -> list:
        """Every live summary: what a rollup replaces (the bundle carries the newest only)."""
        if self._rollable is None:
            self._rollable = self.store.live_memory(None, None)[0]
        return self._rollable

    def smallest_rollup_tokens(self) -> int:
        """The tokens of the smallest rollup of the live summaries (the newest one's few lines and
        the count of the others)."""
        return self.meter.text(_rollup_text(self.rollable(), 1))

    def rollup_size(self, tokens: int) -> int:
        """The characters a rollup of the live summaries is given so that it takes about
        ``tokens`` (never less than the smallest rollup, never more than ``ROLLUP_CHARS``)."""
        chars = min(max(tokens, 1) * 4, ROLLUP_CHARS)
        for _ in range(4):   # (a text's tokens per character vary: measured, then sized again)
            used = self.meter.text(_rollup_text(self.rollable(), chars))
            if used <= tokens or chars <= MIN_SECTION_CHARS:
                break
            chars = max(int(chars * tokens / used * 0.95), MIN_SECTION_CHARS)
        return chars


def _summarize_window(job: _Job, window: _Collect, memory: MemoryContext) -> Summary:
    """The window's summary; a failure counts against the circuit breaker (except in a dry run).
    What a model spent on it goes to ``result.llm``, failed or not."""
    job.spent_before, job.retries_said = _spending(job.summarizer), len(job.summarizer.retried)
    try:
        summary, job.result.chunks = _summarize(job.summarizer, window, memory, job.concurrency, job.on_progress)
    except CompactionError as exc:
        _whole_spend(job, exc)
        if not job.dry_run:
            with agent_lock(job.store.paths):
                breaker.record_failure(job.store.paths, str(exc))
        raise
    except KeyboardInterrupt:
        _interrupted(job)
        raise
    finally:
        job.model_spent()
    job.result.summary = summary.episodic_summary
    job.result.facts = [f.fact for f in summary.semantic_facts]
    return summary


def _interrupted(job: _Job) -> None:
    """Ctrl-C while a model works: what was paid is said and in the ledger (an
    ``unwritten-compaction`` record), and so is a request still out, never silent."""
    job.model_spent()
    in_flight = job.summarizer.in_flight() if hasattr(job.summarizer, "in_flight") else 0
    job.note("interrupted: nothing was written" + _unwritten_spend(job)
             + (f"; {counted(in_flight, 'request')} in flight not waited for (the provider may bill "
                f"{'it' if in_flight == 1 else 'them'})" if in_flight else ""))


def _whole_spend(job: _Job, error: CompactionError) -> None:
    """A model's ``error`` made to say what the whole compaction spent, every chunk's requests
    ended (:func:`memcli.compaction.llm.restate_spent`)."""
    if job.spent_before is not None:
        from memcli.compaction.llm import restate_spent

        restate_spent(error, job.summarizer.spent.minus(job.spent_before))


def _resized(job: _Job, summary: Summary, tokens: int, explicit_target: int | None) -> Summary | None:
    """``summary.resize(tokens)``; a model that cannot shorten it (CompactionError) fails the
    compaction when ``--target-tokens`` was given (it could not be met), else the summary stays
    as written, said. What the model spent counts in the compaction's spend either way (its
    ledger record, or the error's "spent: …" when it fails: nothing written, the ledger included)."""
    try:
        smaller = summary.resize(tokens)
    except KeyboardInterrupt:   # (a model's rewrite: the chunks before it were paid for)
        if job.paid:
            _interrupted(job)
        raise
    except CompactionError as exc:
        job.model_spent()
        _whole_spend(job, exc)
        if explicit_target is not None:
            raise
        job.note(f"the summary stays above its budget: {exc.message.removesuffix('; nothing was written')}")
        return None
    job.model_spent()
    return smaller


def _commit(job: _Job, plan_: WindowPlan, compaction_id: str, bundle: _Bundle, items,
            rebuild: Callable[[], tuple], predicted: int) -> tuple:
    """Under the agent lock: check the plan still holds, rebuild the items if memory changed
    meanwhile, run the journaled commit (the ledger record with it; ``predicted``: the tokens
    after). Returns the items written."""
    store, result = job.store, job.result
    episodic, semantic, counts = items
    with store.writer(create=False) as session:
        for repaired in session.repairs:   # (a torn last line a crashed writer left: cut, and said)
            job.note(repaired.describe())
        problem = check_plan(store.paths.active, plan_)
        if problem is not None:
            raise CompactionConflict(f"the active file of {store.agent_id!r} changed while summarizing: {problem}; "
                                     "nothing was written", hint="run the compaction again")
        if not bundle.unchanged():  # rare: items written meanwhile; rebuild them
            episodic, semantic, counts = rebuild()
        paths = store.paths
        journal = Journal(
            compaction_id=compaction_id, agent_id=store.agent_id,
            active={"ino": plan_.active_ino, "size": jsonl.file_size(paths.active)},
            runs=plan_.runs, run_ids=plan_.run_ids, moved=plan_.moved, first_id=plan_.first_id,
            last_id=plan_.last_id, archive_size=jsonl.file_size(paths.archive),
            episodic_size=jsonl.file_size(paths.episodic), semantic_size=jsonl.file_size(paths.semantic),
            episodic=[to_record(e) for e in episodic], semantic=[to_record(s) for s in semantic],
            ledger=[ledger_record(result, plan_, compaction_id, episodic, semantic, predicted,
                                  run_places(paths.active, plan_.runs, plan_.run_ids), jsonl.file_size(paths.archive))],
            ledger_size=jsonl.file_size(paths.ledger),
        )
        commit(session, journal)
        breaker.record_success(paths, compaction_id, model=job.paid)
    return episodic, semantic, counts


def _run(job: _Job, planned: tuple | None = None) -> CompactResult:
    """The compaction, under the compaction lock. ``planned``: what :meth:`_Job.plan` gave before
    the lock was taken (``--if-needed``); used when the active file still holds it, else planned
    again."""
    store, result, summarizer = job.store, job.result, job.summarizer
    if planned is None or check_plan(store.paths.active, planned[0]) is not None:
        _cancel(planned)
        planned = job.plan()
    plan_, ahead = planned
    try:
        early = ahead.finish(plan_) if ahead is not None else None
    finally:
        _cancel(planned)
    explicit_target = job.policy.target_tokens
    bundle = _Bundle(job, plan_)
    # the summaries written before may roll up to make room for the window's (module docstring):
    # what must stay counts their smallest rollup, not them — unless no rollup is written (a
    # sliding window), or the default target is out of reach anyway (they keep their size)
    older = bundle.summaries_tokens() if job.strategy == "summarize" else 0
    if older and explicit_target is None and plan_.minimum_tokens > result.target_tokens:
        older = 0
    if older:
        plan_.minimum_tokens -= older - min(bundle.smallest_rollup_tokens(), older)
    _record_plan(result, plan_)
    below_minimum = explicit_target is not None and explicit_target < plan_.minimum_tokens
    if below_minimum and (job.strategy != "summarize" or summarizer.context_tokens() is not None):
        # (no summary, or a model's: refused now, before a request; the offline summary, free, is
        # made at its smallest below, and the refusal names the snapshot it leaves: the real minimum)
        if job.strategy == "summarize":
            named = summarizer.named_tokens(_Collect(store, plan_, early))
            floor = _model_floor(job, plan_, bundle, older, max(named, MIN_SUMMARY_TOKENS),
                                 plan_.minimum_tokens + max(named, MIN_SUMMARY_TOKENS))
            raise _minimum_error(store, plan_, explicit_target, named=named, floor=floor)
        raise _minimum_error(store, plan_, explicit_target, summarized=False)
    if plan_.empty:
        why = (f"{plan_.conversation_turns} turn{'s' if plan_.conversation_turns != 1 else ''} in the active file and "
               f"{plan_.stop_reason}")
        if explicit_target is not None and plan_.tokens_before > explicit_target:
            # (what must stay counted the earlier summaries at their smallest rollup, but only a
            # compaction that moves something rolls them up: nothing would, so the snapshot stays)
            raise _stuck_error(store, plan_, explicit_target, why)
        if plan_.tokens_before <= result.target_tokens and "fits the target" not in why:
            # (--if-needed may find a compaction due by the provider's count, whose prompt holds
            # more than the working snapshot: say what memcli's own count found)
            why += f"; the working snapshot ({plan_.tokens_before:,} tokens) is within the target ({result.target_tokens:,})"
        return job.done(reason=f"nothing to compact in {store.agent_id!r}: {why}", tokens_after=plan_.tokens_before)
    torn = _unterminated(store)
    if torn is not None:
        raise torn
    check_ledger(store.paths.ledger, store.agent_id, "compact")   # it appends there: a bad line refuses now
    if plan_.pinned_kept:
        one = plan_.pinned_kept == 1
        # --dry-run's plan shows it already ("N system/developer traces stay")
        job.note(f"{plan_.pinned_kept} system/developer trace{'' if one else 's'} of the window "
                 f"stay{'s' if one else ''} in the active file (instructions are never compacted)",
                 say=not job.dry_run and not below_minimum)

    live_episodic, live_facts = store.live_memory(job.policy.max_episodic_items, PROMPT_FACTS)
    # the summary's budget: what the target leaves after the traces and the memory that stay; when
    # the default target is out of reach anyway (the newest steps alone are larger), the summary
    # keeps its usual size as far as the trigger threshold allows — and when the threshold is out
    # of reach too, its usual size (what the plan set aside): squeezed to a few lines, it lost the
    # window's content for nothing (a hook's round left 21,128 tokens either way, its summary of
    # 19 steps cut to a header and a note of the turn left out)
    stays, rollup_chars = _stays_at(job, plan_, bundle, older, result.target_tokens)
    window_room = summary_room(plan_.window_tokens)   # what the plan set aside for the summary
    room = result.target_tokens - stays
    if room < MIN_SUMMARY_TOKENS and explicit_target is None:
        room = max(room, result.threshold - stays)
        if room < MIN_SUMMARY_TOKENS:
            room = window_room
    goal = max(result.target_tokens, stays + room)
    told = max(room, MIN_SUMMARY_TOKENS)
    if job.paid:
        # a model is told its budget within a quarter of the window, as the offline summary keeps
        # to a quarter of its text: what the target leaves may be more than the window itself, and
        # a summary as long as what it replaces leaves nothing smaller to write (never worse)
        told = min(told, window_room)
    memory = MemoryContext(live_episodic, live_facts, summary_tokens=told, target_given=explicit_target is not None,
                           window_room=window_room)
    window = _Collect(store, plan_, early)
    summary: Summary | None = None
    if job.strategy == "summarize":
        is_offline = summarizer.context_tokens() is None
        if not is_offline and explicit_target is not None and told < window_room:
            # the target presses: a model's answer must still name the window's asks and modified
            # files; when they alone overflow the room, no request can succeed — refused before one
            named = summarizer.named_tokens(window)
            if stays + named > explicit_target:
                raise _named_error(store, plan_, explicit_target, stays, named,
                                   _model_floor(job, plan_, bundle, older, named, stays + named))
        if not is_offline and (job.dry_run or job.max_cost is not None):
            _check_cost(job, summarizer, window, memory)
        if job.dry_run and not is_offline:   # a model: estimated, not called
            from memcli.compaction.offline import OfflineSummarizer

            # the preview: the offline digest of the window (what a model gets to condense)
            result.summary = OfflineSummarizer(max_facts=job.policy.max_semantic_items).summarize(
                window, memory).episodic_summary
            chunks = result.estimate["requests"]
            return job.done(chunks=chunks, tokens_after_estimated=True,
                            tokens_after=bundle.without + bundle.before + EST_SUMMARY_TOKENS_PER_CHUNK * chunks)
        summary = _summarize_window(job, window, memory)
    else:
        for _ in window:  # the ids the items would list (sliding-window lists none, but counts)
            pass

    compaction_id = new_id(COMPACTION_PREFIX)
    model_name = summarizer.name if summarizer is not None else None

    def build() -> tuple:
        return build_items(store, plan_, summary, compaction_id=compaction_id, trace_ids=window.ids,
                           moved=plan_.moved, model=model_name, policy=job.policy, strategy=job.strategy,
                           rollup_chars=rollup_chars)

    items = build()
    predicted = bundle.tokens_after(*items[:2])
    # a model's answer is paid for: one that would not leave the snapshot smaller is asked to
    # shrink as one over the target is, not thrown away (the offline summary, free and within a
    # quarter of the window's text, is not)
    limit = min(goal, plan_.tokens_before - 1) if job.paid else goal
    for _ in range(4):   # over the target: a summary that can shrink (the offline one) is asked to
        over = predicted - limit
        if summary is None or summary.resize is None or over <= 0:
            break
        smaller = _resized(job, summary, max(bundle.meter.text(summary.episodic_summary) - over - 8,
                                             MIN_SUMMARY_TOKENS), explicit_target)
        if smaller is None or len(smaller.episodic_summary) >= len(summary.episodic_summary):
            break
        summary = smaller
        result.summary, result.facts = summary.episodic_summary, [f.fact for f in summary.semantic_facts]
        items = build()
        predicted = bundle.tokens_after(*items[:2])
    if predicted > limit and summary is not None and summary.resize is not None and not job.paid:
        # still over: the smallest summary (the offline one, free to make). A squeeze is not
        # monotonic in its budget: the one made for the room a target leaves can end larger than
        # the smallest, which the refusal of a lower target named as the minimum (1,517 > 1,479)
        smallest = summary.resize(MIN_SUMMARY_TOKENS)
        if smallest is not None and len(smallest.episodic_summary) < len(summary.episodic_summary):
            summary_before, items_before, predicted_before = summary, items, predicted
            summary = smallest
            items = build()
            predicted = bundle.tokens_after(*items[:2])
            if predicted <= limit or (explicit_target is not None and predicted < predicted_before):
                result.summary, result.facts = summary.episodic_summary, [f.fact for f in summary.semantic_facts]
            else:   # it does not fit either: the summary the budget made stays
                summary, items, predicted = summary_before, items_before, predicted_before
    if explicit_target is not None and predicted > explicit_target:
        if below_minimum:
            raise _minimum_error(store, plan_, explicit_target, smallest=predicted)
        raise _target_error(store, plan_, explicit_target, predicted)
    if predicted >= plan_.tokens_before:
        reason = (f"nothing written for {store.agent_id!r}: compacting {result.turn_range} "
                  f"({counted(plan_.moved, 'trace')}) would not make the working snapshot smaller "
                  f"({plan_.tokens_before:,} → {predicted:,} tokens)")
        # tokens_after: the snapshot as the command leaves it (unchanged), as "nothing to compact"
        # says it; what the compaction would have made is in the reason
        return job.done(reason=reason + _unwritten_spend(job), tokens_after=plan_.tokens_before, compacted=False,
                        dry_run=job.dry_run, never_worse=True)
    if job.dry_run:
        result.tokens_after = predicted
        return job.done(shortfall=_shortfall(result, plan_))
    items = _commit(job, plan_, compaction_id, bundle, items, build, predicted)
    return _finish(job, plan_, compaction_id, items, predicted)


def _unwritten_spend(job: _Job) -> str:
    """For a compaction that paid a model and writes nothing: its spending, appended to the
    ledger as an ``unwritten-compaction`` record (memcli.store.ledger) so the totals count it, and
    said ("; the model was paid: …"); "" when nothing was paid."""
    llm = job.result.llm
    if job.dry_run or not llm or not llm["requests"]:
        return ""
    store = job.store
    record = {"kind": UNWRITTEN, "id": new_id(UNWRITTEN_PREFIX), "ts": time.time(),
              "turn_range": job.result.turn_range, "llm": llm}
    with store.writer(create=False) as session:
        append_ledger(session.paths.ledger, [record], jsonl.file_size(session.paths.ledger))
    spent = job.summarizer.spent.minus(job.spent_before).describe()
    return f"; the model was paid: {spent} (in the ledger)"


def _finish(job: _Job, plan_: WindowPlan, compaction_id: str, items: tuple, predicted: int) -> CompactResult:
    """The result of a committed compaction: the items written, the tokens now (``predicted``:
    what the compaction itself left; traces appended while it ran, carried over by its rewrite,
    come on top), any shortfall."""
    from memcli.snapshot.assemble import working_tokens

    result = job.result
    episodic, _semantic, counts = items
    result.compacted = True
    result.compaction_id = compaction_id
    new_items = [e for e in episodic if "rollup" not in e.tags]
    result.episodic_id = new_items[0].id if new_items else None
    rollups = [e for e in episodic if "rollup" in e.tags]
    result.rollup_id = rollups[0].id if rollups else None
    result.facts_added, result.facts_merged = counts["added"], counts["merged"]
    result.tokens_after = working_tokens(job.store, job.model)
    job.done()
    if result.rollup_id:
        job.note(f"rolled up {counted(len(rollups[0].supersedes), 'older episodic summary', 'older episodic summaries')}"
                 f" into {result.rollup_id}")
    result.shortfall = _shortfall(result, plan_)
    if predicted <= result.target_tokens < result.tokens_after:   # what came in meanwhile, not the plan
        said = _appended_over(result, predicted)
        result.shortfall = said if result.shortfall else None
        job.note(said)
    elif result.shortfall:
        job.note(result.shortfall)
    elif result.tokens_after > result.target_tokens:
        job.note(_over_target(result, plan_))
    return result


def _appended_over(result: CompactResult, predicted: int) -> str:
    """Why a compaction that fitted its target leaves the working snapshot above it: traces
    appended while it ran (an ingest, a hook), which its rewrite carried over."""
    return (f"the working snapshot is {result.tokens_after - result.target_tokens:,} tokens over the target "
            f"({result.tokens_after:,} > {result.target_tokens:,}): the compaction left {predicted:,}, and what was "
            f"written to the agent while it ran (traces appended, memory items) adds "
            f"{result.tokens_after - predicted:,}; compacting again takes it in")


def _memory_unchanged(store: AgentStore, bundle: tuple) -> bool:
    now = _live_bundle(store)
    return [i.id for i in now[0]] == [i.id for i in bundle[0]] and [i.id for i in now[1]] == [i.id for i in bundle[1]]


def model_summarizer(model: str, **options) -> Summarizer:
    """The LiteLLM summarizer for ``model`` (``api_base``, ``timeout``, ``retries``,
    ``max_context_tokens``, ``api_key``, ``api_key_env``: :class:`memcli.compaction.llm.LiteLLMSummarizer`)."""
    from memcli.compaction.llm import LiteLLMSummarizer

    return LiteLLMSummarizer(model, **options)


def result_record(result: CompactResult) -> dict:
    """The result as one JSON-able object (``--json``)."""
    data = {k: v for k, v in result.__dict__.items() if k != "budget"}
    if result.budget is not None:
        data["budget"] = dict(result.budget.__dict__)
    return orjson.loads(orjson.dumps(data))


# --------------------------------------------------------------------------- ledger and cost

def _spending(summarizer):
    """A copy of what a model summarizer has spent so far (None for the offline one)."""
    return None if summarizer.spent is None else copy.copy(summarizer.spent)


def ledger_record(result: CompactResult, plan_: WindowPlan, compaction_id: str, episodic: list, semantic: list,
                  tokens_after: int, runs: list, archive_offset: int) -> dict:
    """The compaction's ledger record (memcli.store.ledger), written by its journaled commit."""
    record = {
        "kind": COMPACTION, "id": compaction_id, "ts": time.time(), "strategy": result.strategy,
        "summarizer": result.summarizer, "turn_range": result.turn_range, "turns": result.turns,
        "whole_turns": result.whole_turns, "steps": result.steps, "traces": plan_.moved,
        "first_id": plan_.first_id, "last_id": plan_.last_id,
        "tokens_before": plan_.tokens_before, "tokens_after": tokens_after,
        "items": {"episodic": [e.id for e in episodic], "semantic": [f.id for f in semantic]},
        "superseded": {"episodic": [i for e in episodic for i in e.supersedes],
                       "semantic": [i for f in semantic for i in f.supersedes]},
        "place": {"archive_offset": archive_offset, "runs": runs},
    }
    if result.llm is not None:
        record["llm"] = result.llm
    return record


def _check_cost(job: _Job, summarizer, window, memory: MemoryContext) -> None:
    """The model's estimate for the window (``result.estimate``); with ``--max-cost``, refuse before
    the first request when the estimate is above it, or when LiteLLM has no price for the model —
    and a dry run says that the real run would be refused (it exited 0 without a word)."""
    store, result, max_cost = job.store, job.result, job.max_cost
    estimate = summarizer.estimate(list(window), memory)
    result.estimate = estimate
    if max_cost is None:
        return
    if not result.dry_run:
        summarizer.limit_cost(max_cost)   # the limit holds for every request, retries included
    cost = estimate["cost_usd"]
    what = (f"{estimate['requests']} request{'s' if estimate['requests'] != 1 else ''}, "
            f"{estimate['input_tokens']:,} input tokens and up to {estimate['max_output_tokens']:,} output tokens")
    refusal = None
    if cost is None:
        refusal = CompactionError(
            f"{{max_cost}} {max_cost:g}: LiteLLM has no price for {summarizer.name}, so the cost of {what} cannot be "
            f"bounded; nothing was sent or written",
            hint="leave out --max-cost to compact with this model anyway, or use a model LiteLLM prices", param="max_cost")
    elif cost > max_cost:
        refusal = CompactionError(
            f"{{max_cost}} {max_cost:g}: compacting {store.agent_id!r} with {summarizer.name} would cost up to "
            f"${cost:.4f} ({what}); nothing was sent or written",
            hint="raise --max-cost, compact less (--tail-turns, --target-tokens), or use the offline summarizer", param="max_cost")
    if refusal is None:
        return
    if not result.dry_run:
        raise refusal
    job.note("without --dry-run this compaction would be refused: "
             + refusal.worded(as_flag).removesuffix("; nothing was sent or written"))
