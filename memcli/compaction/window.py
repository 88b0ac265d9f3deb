"""Which traces a compaction moves: the window of docs/design.md §4.

Units, decided in one forward pass over the active file (under the agent lock, so every line
read is committed):

* Turns are ordered by the first appearance of their ``turn_id``. A turn is its **head** (its
  ``user`` traces: the ask(s) and context the harness injected) and its **steps**. A step is one
  assistant message of the working snapshot, cut exactly where its builder
  (:mod:`memcli.snapshot.build`) cuts them, with the results of its calls. The rule, the
  builder's: a call or a text that says something (:func:`memcli.snapshot.build.says_something`)
  joins the open message if it is of the same turn (a text: if the message made no call yet),
  else opens a new message — a new step; the open message ends at any user trace (instructions
  included), at a result of one of its own calls, and at a result with no call (an orphan, a
  message of its own). A result of an *older* message's call ends nothing; reasoning, a blank
  text and a subagent's traces (``sidechain``) are left out of the snapshot and end nothing
  either. So a message is never split between two steps, one of which moves (each message's
  tokens are credited to one unit, below), and a step holds one message. Reasoning or a blank
  text joins the open message's step (of its turn), else opens a step the next message of its
  turn joins. A harness's own compaction summary (``compact_summary``) in the middle of a turn
  joins the step before it, the work it stood for (at a turn's start, the head). A
  ``tool_result`` joins the step of the call it answers (:mod:`memcli.pairing`, the one pairing
  rule, over the calls the snapshot renders: not a subagent's); a result with no call joins the
  current step of its turn. Sidechain traces (a subagent's own conversation) join the current
  step of their turn — the one whose Task call started them — and pair with nothing.
* A ``user`` trace tagged ``system`` or ``developer`` is an instruction
  (:func:`memcli.models.is_instruction`, the rule the snapshot renders system text by): it never
  moves, and its tokens are the fixed part's. A turn made only of instructions is not a
  conversation turn. Those tags on an assistant or tool trace make no instruction: the
  snapshot renders it as any other, so it is its step's, and moves with it.
* Tokens: every trace is fed to :func:`memcli.snapshot.assemble.count_working` — the one count
  of the working snapshot — and each message's tokens are credited to the unit of its first
  trace (a pending call's placeholders to the step of the call each stands for — the snapshot's
  call, by its rendered id, not the oldest open call with that ``tool_call_id``, which transcripts
  reuse). So the plan knows, exactly, what
  the working snapshot costs now and what each unit contributes.

The window, oldest first:

1. whole turns older than the last ``tail_turns`` (today's rule);
2. then, while the kept part (plus a reserve for the summary) is above ``target_tokens``, the
   oldest steps of the remaining turns, the open turn included; a turn all of whose steps move
   goes whole (its head too) unless it is the newest turn. ``tail_turns`` is therefore a floor
   only where the target allows it.

Never moved: the newest ``keep_steps`` steps (and the newest step whenever it has an unanswered
call: it may still be running), the head of the newest turn, and the head of any turn that keeps
steps. A call without a result in any older step is *abandoned*: it moves with its step.

A plan records what moves as byte ranges (``runs``, ``[start, end)`` of whole lines, merged when
adjacent) of the active file with the file's inode and the size read, plus the id of the line at
the start of each run — enough for the commit to check that the plan still describes the file
(appends only) and for recovery to find the moved lines again. Memory: a few integers per line
and per unit (columns of arrays, :class:`_Units`, :class:`_Turns`); :func:`iter_window_traces` reads the content back, one trace at a
time. :func:`feed_scan` is the same pass without the count, for a process that summarizes the
turns certain to move while another plans (:class:`WholeTurnFeed`, checked against the finished
plan by :func:`check_feed`).
"""

from __future__ import annotations

import os
from array import array
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, TypeVar

import orjson

from memcli.compaction.summarizer import turn_span
from memcli.models import TAG_COMPACT_SUMMARY, TAG_REASONING, TAG_SIDECHAIN, RawTrace, is_instruction
from memcli.pairing import pop_open_call
from memcli.store import jsonl
from memcli.store.agent import TRACE_BUILDERS, AgentStore, trace_from_record
from memcli.store.jsonl import iter_run_lines

T = TypeVar("T")


@dataclass(slots=True)
class WindowTurn:
    turn_id: str
    count: int = 0                  # traces that move (pinned ones excluded)
    first_offset: int = -1          # first and last moved line
    last_offset: int = -1
    steps: int = 0                  # steps that move
    total_steps: int = 0            # steps the turn has
    whole: bool = True              # False: only steps move, the head stays
    abandoned: int = 0              # unanswered calls that move with their step


class _Units:
    """Every unit — a turn's head or one of its steps — as one entry of each of these arrays (a
    few bytes a unit, where an object each cost about a hundred: a store of 100,000 turns has
    300,000 units)."""

    __slots__ = ("turn", "tokens", "calls", "results", "moved", "next_step")

    def __init__(self):
        self.turn = array("i")          # index of its turn
        self.tokens = array("q")
        self.calls = array("i")
        self.results = array("i")       # its calls' results (one arrived: the next call starts a new step)
        self.moved = bytearray()
        self.next_step = array("i")     # the next step of its turn (-1: none)

    def __len__(self) -> int:
        return len(self.turn)

    def add(self, turn: int, tokens: int = 0, calls: int = 0, results: int = 0) -> int:
        self.turn.append(turn)
        self.tokens.append(tokens)
        self.calls.append(calls)
        self.results.append(results)
        self.moved.append(0)
        self.next_step.append(-1)
        return len(self.turn) - 1


class _Turns:
    """Every turn of the active file, in order of first appearance, one entry per array: its id,
    its head unit, the step new assistant traces join (-1: none), its conversation traces
    (pinned ones excluded) and its steps (a chain through :attr:`_Units.next_step`)."""

    __slots__ = ("ids", "head", "current", "count", "first_step", "last_step", "n_steps")

    def __init__(self):
        self.ids: list[str] = []
        self.head, self.current, self.count = array("i"), array("i"), array("i")
        self.first_step, self.last_step, self.n_steps = array("i"), array("i"), array("i")

    def __len__(self) -> int:
        return len(self.ids)

    def add(self, turn_id: str, head: int) -> int:
        self.ids.append(turn_id)
        self.head.append(head)
        for column in (self.current, self.first_step, self.last_step):
            column.append(-1)
        self.count.append(0)
        self.n_steps.append(0)
        return len(self.ids) - 1

    def add_step(self, turn: int, unit: int, units: _Units) -> None:
        last = self.last_step[turn]
        if last < 0:
            self.first_step[turn] = unit
        else:
            units.next_step[last] = unit
        self.last_step[turn] = unit
        self.n_steps[turn] += 1
        self.current[turn] = unit


@dataclass(slots=True)
class WindowPlan:
    agent_id: str
    active_ino: int
    active_size: int                 # bytes of the active file the plan looked at
    turns: list                      # WindowTurn, oldest first: what moves
    conversation_turns: int          # turns in the active file (pinned-only turns not counted)
    kept_turns: int                  # conversation turns that stay whole or in part
    stop_reason: str                 # why the window ends where it does
    runs: list                       # [[start, end], ...] byte ranges of moved lines
    run_ids: list                    # id of the line at each run's start
    moved: int                       # traces moved
    pinned_kept: int                 # system/developer traces of window turns that stay
    moved_bytes: int
    active_traces: int = 0           # traces in the active file
    first_id: str | None = None
    last_id: str | None = None
    tokens_before: int = 0           # the working snapshot now (the one count)
    window_tokens: int = 0           # what the moved traces contribute to it
    fixed_tokens: int = 0            # system prompt, memory bundle, reply priming
    minimum_tokens: int = 0          # what can never move: fixed + kept heads + protected steps
    protected_steps: int = 0         # the newest steps that always stay
    keep_steps: int = 0              # how many of them the caller asked to keep (the rest: a call still open)
    target_tokens: int | None = None
    steps: int = 0                   # steps moved out of turns that stay
    abandoned: int = 0               # unanswered calls moved with their step
    delivered: int = 0               # first window turns a feed handed over (check_feed)
    spilled: object = None           # the last window turn's moved steps, folded by a feed (StepSpill.digest)
    strays: dict = field(default_factory=dict)   # offset -> turn id: a result whose call is in another turn

    @property
    def empty(self) -> bool:
        return self.moved == 0

    @property
    def turn_ids(self) -> list:
        return [t.turn_id for t in self.turns]

    @property
    def kept_tokens(self) -> int:
        return self.tokens_before - self.window_tokens

    def describe_range(self) -> str:
        return turn_span(self.turn_ids) or "no turns"


WHOLE_TURN_FEED_BYTES = 8 << 20   # lines a WholeTurnFeed keeps for turns not handed over yet
SPILL_BYTES_PER_TOKEN = 64        # line bytes a spilled turn holds back per token of the target ...
SPILL_MIN_BYTES = 1 << 20         # ... and at least this many


def spill_lag(target_tokens: int | None, budget: int) -> int:
    """Bytes of a spilled turn's newest step lines a :class:`WholeTurnFeed` holds back rather than
    folds: room for the steps a plan toward ``target_tokens`` keeps — :data:`SPILL_BYTES_PER_TOKEN`
    bytes of lines a token (a JSONL line carries its id, times and arguments beside the text the
    snapshot counts), at least :data:`SPILL_MIN_BYTES`, at most half the feed's ``budget``. Were the kept steps' lines
    larger, the spill would be void (:func:`check_feed`) and those steps read again: slower, the
    same summary."""
    if target_tokens is None:
        return budget // 2
    return min(max(target_tokens * SPILL_BYTES_PER_TOKEN, SPILL_MIN_BYTES), budget // 2)


MIN_SUMMARY_ROOM = 250   # a window's summary is given at least this many tokens, however small the window


def summary_room(window_tokens: int) -> int:
    """The most the summary of a window of ``window_tokens`` is given: a quarter of the window
    (at least :data:`MIN_SUMMARY_ROOM`), so that it leaves the working snapshot smaller than the
    window did (docs/compaction.md, "The budget is a promise"). A model is told its budget within
    it; the offline summary takes a quarter of the window's characters itself."""
    return max(window_tokens // 4, MIN_SUMMARY_ROOM)


def summary_reserve(window_tokens: int) -> int:
    """Tokens set aside for the summary a window of ``window_tokens`` becomes: its room
    (:func:`summary_room`), 3,000 at most (the offline summary is at most a quarter of the
    window's text, 12,000 characters at most)."""
    return min(summary_room(window_tokens), 3_000)


class WholeTurnFeed:
    """Turns handed over while the file is read: the ones certain to move whole.

    A turn moves whole when at least ``tail_turns`` (and at least one) conversation turns come
    after it and none of its steps is protected — at least ``keep_steps`` (and at least one)
    steps opened after its newest step; the target only ever adds to the window. Those counts
    only grow as the file is read, so once they hold for the oldest turn not handed over yet,
    its traces (kept since it began) go to ``deliver(turn_id, traces, steps)`` and are dropped
    here. Turns are handed over in order. A trace that arrives later for a turn already handed
    over (turns that interleave) voids what was handed over (``broken``).

    Past ``budget`` bytes of kept lines (a giant turn) the turn holding the most is *spilled*,
    when ``open_steps`` is given and no turn was spilled yet (:class:`StepSpill`): its step
    traces are folded, oldest first, into ``open_steps(turn_id)`` (a digest with ``add(trace)``),
    all but its newest ``lag`` bytes of them (:func:`spill_lag`; half the budget unless given). The window's last turn is the only one that
    can move in part, and its kept steps are its newest, so when the spilled turn is that turn
    its moved steps need no second read. Otherwise, or past the budget again, nothing more is
    kept or handed over.

    :meth:`result` says what was done as a :class:`FeedResult` (turn ids and byte offsets, so it
    can come from another process); :func:`check_feed` checks it against the finished plan.
    """

    def __init__(self, deliver: Callable[[str, list, int], None], turns: _Turns, step_order: array,
                 tail_turns: int, keep_steps: int, budget: int, open_steps: Callable[[str], object] | None = None,
                 lag: int | None = None):
        self.deliver = deliver
        self.lag = budget // 2 if lag is None else lag
        self.open_steps = open_steps
        self.spill: StepSpill | None = None
        self.turns, self.step_order = turns, step_order
        self.need_turns, self.need_steps = max(tail_turns, 1), max(keep_steps, 1)
        self.budget = budget
        self.kept: dict[int, list] = {}   # turn -> [its traces so far, their bytes, [their units], [offsets], [sizes]]
        self.kept_bytes = 0
        self.head = 0                  # the oldest turn not handed over (or passed over)
        self.conversation = 0          # conversation turns seen
        self.conversation_before = 0   # ... of them before ``head``
        # the conversation turns release waits for: conversation_before + need_turns, and once it
        # found the head turn waiting, that turn's own count (one more when it is a conversation turn)
        self.ready = self.need_turns
        self.newest_step: dict[int, int] = {}   # turn -> position of its newest step in step_order
        self.delivered: list = []      # (turn id, traces) handed over, in order
        self.reading = True
        self.broken = False

    def trace(self, index: int, owner_turn: int, trace: RawTrace, start: int, size: int, unit: int) -> None:
        if index < self.head or owner_turn < self.head:
            self.broken, self.reading, self.spill = True, False, None
            self.kept.clear()
            return
        spill = self.spill   # (a trace is its unit's turn's, as in the plan: a result from a later turn is its call's)
        if spill is not None and spill.turn == owner_turn:
            if unit != self.turns.head[owner_turn]:   # its head moves only if the turn moves whole: then it is void
                spill.hold(trace, start, size)
            return
        if self.reading:
            kept = self.kept.get(owner_turn)
            if kept is None:
                kept = self.kept[owner_turn] = [[], 0, [], [], []]
            kept[0].append(trace)
            kept[1] += size
            kept[2].append(unit)
            kept[3].append(start)
            kept[4].append(size)
            self.kept_bytes += size
            if self.kept_bytes > self.budget:
                self._over_budget()

    def _over_budget(self) -> None:
        """Spill the turn that holds the most (class docstring), or stop keeping."""
        kept = self.kept
        turn = max(kept, key=lambda t: kept[t][1])
        if self.open_steps is None or self.spill is not None:
            self.reading = False
            kept.clear()
            return
        traces, size, units, starts, sizes = kept.pop(turn)
        self.kept_bytes -= size
        spill = self.spill = StepSpill(turn, self.turns.ids[turn], self.open_steps(self.turns.ids[turn]), self.lag)
        head = self.turns.head[turn]
        for trace, unit, start, trace_size in zip(traces, units, starts, sizes, strict=True):
            if unit != head:
                spill.hold(trace, start, trace_size)

    def release(self) -> None:
        """Hand over the turns now certain to move whole (class docstring). It can only do so
        once ``conversation`` reaches ``ready``: a caller may skip calling it before (a turn
        waiting for newer conversation turns waits for exactly ``ready``, so the scan calls again
        once per new conversation turn, not per step)."""
        turns = self.turns
        while self.reading and self.head < len(turns.ids):
            head = self.head
            count = turns.count[head]
            after = self.conversation - self.conversation_before - (1 if count else 0)
            if after < self.need_turns:   # (the head's count only grows: ready never overshoots)
                self.ready = self.conversation_before + self.need_turns + (1 if count else 0)
                return
            newest = self.newest_step.get(head)
            if newest is not None and len(self.step_order) - 1 - newest < self.need_steps:
                return
            self.newest_step.pop(head, None)
            if self.spill is not None and self.spill.turn == head:   # it moves whole: the spill is void
                self.spill, self.reading = None, False
                self.kept.clear()
                return
            kept = self.kept.pop(head, None)
            traces = kept[0] if kept is not None else []
            if kept is not None:
                self.kept_bytes -= kept[1]
            if count:
                self.conversation_before += 1
                self.ready = self.conversation_before + self.need_turns
                self.deliver(turns.ids[head], traces, turns.n_steps[head])
                self.delivered.append((turns.ids[head], len(traces)))
            self.head += 1

    def result(self) -> "FeedResult":
        spill = None if self.broken else self.spill
        return FeedResult([] if self.broken else self.delivered,
                          None if spill is None else (spill.turn_id, spill.digest, spill.folded,
                                                      array("q", (start for _, start, _ in spill.held))))


@dataclass(slots=True)
class FeedResult:
    """What a :class:`WholeTurnFeed` did: the turns it handed over, ``(turn id, traces)`` in
    order, and its spill, ``(turn id, digest, offsets of the lines folded, offsets of the step
    lines it still held)``, or None."""

    delivered: list
    spill: tuple | None = None


class StepSpill:
    """The step traces of one giant turn, folded into ``digest`` (``add(trace)``) in file order
    as they fall more than ``lag`` bytes behind the newest one (:class:`WholeTurnFeed`)."""

    __slots__ = ("turn", "turn_id", "digest", "lag", "held", "held_bytes", "folded")

    def __init__(self, turn: int, turn_id: str, digest, lag: int):
        self.turn, self.turn_id, self.digest, self.lag = turn, turn_id, digest, lag
        self.held: deque = deque()          # (trace, offset, size), oldest first
        self.held_bytes = 0
        self.folded = array("q")            # offsets of the lines folded

    def hold(self, trace: RawTrace, start: int, size: int) -> None:
        held = self.held
        held.append((trace, start, size))
        self.held_bytes += size
        while self.held_bytes > self.lag and len(held) > 1:
            trace, start, size = held.popleft()
            self.held_bytes -= size
            self.folded.append(start)
            self.digest.add(trace)


def newest_steps(n: int) -> str:
    """``the newest step`` or ``the newest 4 steps``: the steps that never move, in a sentence."""
    return "the newest step" if n == 1 else f"the newest {n} steps"


def _moved_offsets(runs: list, offsets) -> Iterator[bool]:
    """For each of ``offsets`` (ascending), whether a moved run (``plan.runs``) holds it."""
    i, n = 0, len(runs)
    for offset in offsets:
        while i < n and runs[i][1] <= offset:
            i += 1
        yield i < n and runs[i][0] <= offset


def check_feed(result: FeedResult, plan: WindowPlan, path: Path) -> tuple[int, object]:
    """``(delivered, spilled)`` for the finished ``plan``: how many of its first window turns
    the feed handed over (0 unless they are exactly the turns that move whole first, with the
    same traces), and the spill's digest completed with the rest of the turn's moved steps — when
    the spilled turn is the window's last, moving in part, and every line folded moves; then it
    holds exactly the turn's moved traces in file order, as a read of the window gives them —
    or None."""
    window = plan.turns
    delivered = len(result.delivered)
    if delivered > len(window) or any(wt.turn_id != turn_id or not wt.whole or wt.count != count
                                      for (turn_id, count), wt in zip(result.delivered, window, strict=False)):
        delivered = 0
    spill = result.spill
    if spill is None or not window or delivered == len(window) or (result.delivered and not delivered):
        return delivered, None   # (a void hand-over voids the spill too: the summary holds those turns)
    turn_id, digest, folded, held = spill
    last = window[-1]
    if last.whole or last.turn_id != turn_id or not _all_moved(plan.runs, folded):
        return delivered, None
    rest = [start for start, moved in zip(held, _moved_offsets(plan.runs, held), strict=True) if moved]
    if len(folded) + len(rest) != last.count:
        return delivered, None
    with jsonl.open_read(path) as f:
        position = -1
        for start in rest:
            if start != position:   # (a seek drops the read buffer: adjacent lines are read on)
                f.seek(start)
            raw = f.readline()
            position = start + len(raw)
            digest.add(trace_from_record(path, None, start, jsonl.parse_line(path, raw, None, start)))
    return delivered, digest


def _all_moved(runs: list, offsets) -> bool:
    """``all(_moved_offsets(runs, offsets))``; at once when one run holds the first and the last
    offset (then it holds every one between)."""
    if offsets:
        first, last = offsets[0], offsets[-1]
        for start, end in runs:
            if start <= first < end:
                if last < end:
                    return True
                break
    return all(_moved_offsets(runs, offsets))


class _Scan:
    """The one forward pass over the active file: every line's byte range and owner (its unit,
    or ``-2 - turn`` for a pinned line), the turns and their units (module docstring), and each
    unit's tokens (:meth:`credit`, called by :func:`memcli.snapshot.assemble.count_working`
    for every message it counts). With a ``feed`` (a :class:`WholeTurnFeed`, :func:`feed_scan`)
    the traces go to it as they are read instead: no line table is kept and nothing is credited."""

    def __init__(self, store: AgentStore):
        self.path = store.paths.active
        self.units = _Units()
        self.turn_list = _Turns()
        self.turns: dict[str, int] = {}       # turn id -> its index in turn_list
        self.step_order = array("i")          # step units in the order they opened
        self.pending: dict[str, list] = {}    # tool_call_id -> (unit, turn) of its unanswered calls, oldest first
        self.starts, self.ends, self.owners = array("q"), array("q"), array("i")
        self.unit_of_trace: dict[str, int] = {}
        # a call's rendered id (unique in the snapshot) -> its unit, for each call still open when
        # its message was counted, until its tool message is: the unit a placeholder of it goes to
        self.call_units: dict[str, int] = {}
        self.strays: dict[int, str] = {}      # offset -> the turn id of its call, for a result from another turn
        self.ino = self.size = 0
        self.feed: WholeTurnFeed | None = None   # set: a feed alone (feed_scan), no token credits, no line table

    def traces(self, f, limit: int | None = None) -> Iterator[RawTrace]:
        """The traces of the open file ``f`` (its first ``limit`` bytes, when given), each
        assigned its unit as it goes by."""
        from memcli.snapshot.build import says_something  # the builder's own rule (module docstring)

        path, turns, turn_list, units = self.path, self.turns, self.turn_list, self.units
        starts, ends, owners, feed, step_order = self.starts, self.ends, self.owners, self.feed, self.step_order
        planning, unit_of_trace, pending = feed is None, self.unit_of_trace, self.pending
        add_unit, add_turn, add_step = units.add, turn_list.add, turn_list.add_step
        unit_turn, calls_of, results_of = units.turn, units.calls, units.results
        turn_ids, head_of, current_of, count_of = turn_list.ids, turn_list.head, turn_list.current, turn_list.count
        newest_step = feed.newest_step if feed is not None else None
        feed_trace = feed.trace if feed is not None else None
        loads, decode_error, instruction, trace_builders = orjson.loads, orjson.JSONDecodeError, is_instruction, TRACE_BUILDERS
        with f:
            st = os.fstat(f.fileno())
            self.ino, size = st.st_ino, st.st_size if limit is None else min(limit, st.st_size)
            self.size = size
            offset, last_turn_id, last_index = 0, None, -1
            open_unit = open_index = fresh = -1
            open_calls = False
            for offset, lines in jsonl.line_batches(f, size):
                for raw in lines:
                    start = offset
                    offset += len(raw) + 1
                    try:
                        record = loads(raw)
                    except decode_error:
                        if not raw or raw.isspace():   # a blank line
                            continue
                        record = jsonl.parse_line(path, raw + b"\n", None, start)  # raises with the line
                    if type(record) is not dict:
                        jsonl.parse_line(path, raw + b"\n", None, start)
                    build = trace_builders.get(tuple(record))
                    trace = build(record) if build is not None else None
                    if trace is None:
                        trace = trace_from_record(path, None, start, record)  # raises with the line
                    turn_id = trace.turn_id
                    if turn_id != last_turn_id:   # (a turn's lines mostly follow one another)
                        index = turns.get(turn_id)
                        if index is None:   # a new turn and its head unit
                            index = turns[turn_id] = add_turn(turn_id, add_unit(len(turn_ids)))
                        last_turn_id, last_index = turn_id, index
                    else:
                        index = last_index
                    tags = trace.tags
                    if tags and instruction(trace.trace_type, tags):   # it never moves
                        if TAG_SIDECHAIN not in tags:
                            open_unit = -1   # a user trace ends the snapshot's open message
                        if planning:
                            starts.append(start)
                            ends.append(offset)
                            owners.append(-index - 2)
                        yield trace
                        continue
                    count = count_of[index] = count_of[index] + 1
                    opened = False
                    # its unit (module docstring); open_unit: the step of the snapshot's open
                    # assistant message (-1: none), of turn open_index, with calls or not
                    kind = trace.trace_type
                    if tags and TAG_SIDECHAIN in tags:   # no message, no pairing: the snapshot leaves it out
                        unit = current_of[index]
                        if unit < 0:
                            unit = head_of[index]
                    elif kind == "tool_result":
                        entry = pop_open_call(pending, trace.tool_call_id or "", turn_id, _entry_turn)
                        if entry is not None:
                            unit = entry[0]
                            results_of[unit] += 1
                            if unit == open_unit:   # it answers the open message: that message ends
                                open_unit = -1
                            if planning and entry[1] != turn_id:   # it moves, or stays, with its call's turn
                                self.strays[start] = entry[1]
                        else:   # an orphan, a message of its own: the open message ends
                            open_unit = -1
                            unit = current_of[index]
                            if unit < 0:
                                unit = head_of[index]
                    elif kind == "user":
                        open_unit = -1
                        unit = current_of[index]
                        current_of[index] = -1
                        if unit < 0 or not tags or TAG_COMPACT_SUMMARY not in tags:
                            unit = head_of[index]   # an ask, injected context
                        # else a harness's own summary: it joins the step before it, the work it
                        # stood for, and moves with it (in the head, a session compacted N times
                        # inside one turn kept N summaries that could never move)
                    elif kind == "tool_call" or (kind == "assistant" and not (tags and TAG_REASONING in tags) and (
                            # a trace of an assistant message (a text not blank, the usual case, says something)
                            ((content := trace.content) and not content.isspace()) or says_something(trace))):
                        if open_unit >= 0 and open_index == index and (kind == "tool_call" or not open_calls):
                            unit = open_unit   # it joins the open message
                        else:   # it opens a message: a new step (or the one a reasoning opened for it)
                            unit = current_of[index]
                            if unit < 0 or unit != fresh:
                                unit = add_unit(index)
                                add_step(index, unit, units)
                                step_order.append(unit)
                                if newest_step is not None:
                                    newest_step[index] = len(step_order) - 1
                                opened = True
                            fresh = -1
                            open_unit, open_index, open_calls = unit, index, False
                        if kind == "tool_call":
                            open_calls = True
                            calls_of[unit] += 1
                            pending.setdefault(trace.tool_call_id or "", []).append((unit, turn_id))
                    elif open_unit >= 0 and open_index == index:   # reasoning, an empty text: no message
                        unit = open_unit
                    else:   # ... its step, the one the next message of its turn joins
                        unit = current_of[index]
                        if unit < 0 or unit != fresh:
                            unit = fresh = add_unit(index)
                            add_step(index, unit, units)
                            step_order.append(unit)
                            if newest_step is not None:
                                newest_step[index] = len(step_order) - 1
                            opened = True
                    if planning:
                        starts.append(start)
                        ends.append(offset)
                        owners.append(unit)
                        unit_of_trace[trace.id] = unit
                    else:
                        if count == 1:
                            feed.conversation += 1
                        feed_trace(index, unit_turn[unit], trace, start, offset - start, unit)
                        if (count == 1 or opened) and feed.conversation >= feed.ready:
                            feed.release()   # what it waits for (newer turns, newer steps) only changes here
                    yield trace
            self.size = min(size, offset)

    def credit(self, message, tokens: int) -> None:
        """Credit a message's tokens to the unit of its first trace (module docstring); a tool
        message of placeholders only, to the unit of the call its first placeholder stands for."""
        unit_of_trace = self.unit_of_trace
        call_units = self.call_units
        if message.tool_calls:   # where each call still open stands, for the placeholder it may get
            pending = self.pending
            for call in message.tool_calls:
                if call.source_id in pending:
                    call_units[call.id] = unit_of_trace.get(call.trace_id, -1)
        elif call_units and message.results:   # the calls it answers (or gives placeholders) wait no more
            units_of_calls = [call_units.pop(result.call_id, -1) for result in message.results]
            if not message.trace_ids:   # placeholders only: the unit of the first one's call
                if units_of_calls[0] >= 0:
                    self.units.tokens[units_of_calls[0]] += tokens
                return
        trace_ids = message.trace_ids
        if len(trace_ids) == 1:   # (the usual message)
            unit = unit_of_trace.pop(trace_ids[0], -1)
        else:
            unit = -1
            for trace_id in trace_ids:
                unit = unit_of_trace.pop(trace_id, -1)
                if unit >= 0:
                    break
            for trace_id in trace_ids[1:]:
                unit_of_trace.pop(trace_id, None)
        if unit >= 0:  # else no trace of it moves (none is a unit's): it stays in the fixed part
            self.units.tokens[unit] += tokens

    def conversation(self) -> array:
        """The turns with at least one conversation trace (pinned-only turns are not turns)."""
        return array("i", (t for t, count in enumerate(self.turn_list.count) if count))


def _protected_steps(units: _Units, step_order, keep_steps: int) -> set[int]:
    """The steps that never move: the newest ``keep_steps``, and the newest one whenever it has an
    unanswered call (it may still be running)."""
    protected: set[int] = set(step_order[-keep_steps:]) if keep_steps > 0 else set()
    if step_order:
        newest = step_order[-1]
        if units.calls[newest] > units.results[newest]:
            protected.add(newest)
    return protected


def _minimum_tokens(units: _Units, turns: _Turns, conversation, protected: set, fixed_tokens: int) -> int:
    """What can never move: the fixed part, the protected steps, and the heads of the newest turn
    and of every turn that keeps a protected step."""
    tokens = units.tokens
    minimum = fixed_tokens + sum(tokens[u] for u in protected)
    keeping = {units.turn[u] for u in protected}
    if conversation:
        keeping.add(conversation[-1])
    return minimum + sum(tokens[turns.head[t]] for t in keeping)


def _no_reserve(window_tokens: int) -> int:
    return 0


class _Selection:
    """The units chosen so far and what the kept part then costs (summary reserve included)."""

    def __init__(self, units: _Units, total: int, target_tokens: int | None, summarized: bool = True):
        self.units, self.target_tokens = units, target_tokens
        self.kept = total
        self.moved_tokens = 0
        # the room set aside for the window's summary (none when the window is archived without one)
        self.reserve = summary_reserve if summarized else _no_reserve

    def estimate(self) -> int:
        return self.kept + (self.reserve(self.moved_tokens) if self.moved_tokens else 0)

    def fits(self) -> str:
        return f"the rest fits the target ({self.estimate():,} ≤ {self.target_tokens:,} tokens)"


def _choose(selection: _Selection, turns: _Turns, conversation, step_order, protected: set,
            tail_turns: int) -> str:
    """Mark the units that move (the window of the module docstring, oldest first); returns why
    the window ends where it does."""
    reason = _mark(selection, turns, conversation, step_order, protected, tail_turns)
    return selection.fits() if reason is None else reason


def _mark(selection: _Selection, turns: _Turns, conversation, step_order, protected: set,
          tail_turns: int) -> str | None:
    """:func:`_choose`'s marking; None when it ends because the rest fits the target."""
    units = selection.units
    if not conversation:
        return "the agent has no conversation turns"
    newest_turn = conversation[-1]
    keeping = {units.turn[s] for s in protected}   # turns with a protected step
    limit = max(len(conversation) - max(tail_turns, 0), 0)
    moved, tokens, target, reserve_of = units.moved, units.tokens, selection.target_tokens, selection.reserve
    first_step, next_step, head = turns.first_step, units.next_step, turns.head
    # the selection's kept and moved tokens in two locals (a unit that moves takes its tokens
    # from one to the other: 100,000 steps in one turn make 100,000 moves); written back before
    # any return
    kept, moved_tokens = selection.kept, selection.moved_tokens
    try:
        for n, turn in enumerate(conversation):
            old = n < limit
            whole_allowed = turn != newest_turn and turn not in keeping
            if old and whole_allowed:
                s = head[turn]
                moved[s] = 1
                kept -= tokens[s]
                moved_tokens += tokens[s]
                s = first_step[turn]
                while s >= 0:   # the turn's steps: its chain from first_step through next_step
                    moved[s] = 1
                    kept -= tokens[s]
                    moved_tokens += tokens[s]
                    s = next_step[s]
                continue
            if not old and (target is None or kept + (reserve_of(moved_tokens) if moved_tokens else 0) <= target):
                return f"the last {tail_turns} turn{'s' if tail_turns != 1 else ''} stay" if n == limit else None
            # the reserve last computed: it only grows as units move, so while the kept part plus
            # it is over the target, the part is over without computing it again
            reserve = reserve_of(moved_tokens) if moved_tokens else 0
            s = first_step[turn]
            while s >= 0:   # (a turn's steps are visited once: all move when this loop ends unbroken)
                if s in protected:
                    newest = step_order[-1]
                    one = len(protected) == 1
                    return (f"{newest_steps(len(protected))} stay{'s' if one else ''}"
                            + (f" ({'it' if one else 'the newest one'} has an unanswered tool call)"
                               if units.calls[newest] > units.results[newest] else ""))
                if not old and (target is None or kept + reserve <= target):
                    reserve = reserve_of(moved_tokens) if moved_tokens else 0
                    if target is None or kept + reserve <= target:
                        break
                moved[s] = 1
                kept -= tokens[s]
                moved_tokens += tokens[s]
                s = next_step[s]
            else:
                if whole_allowed:
                    s = head[turn]
                    moved[s] = 1
                    kept -= tokens[s]
                    moved_tokens += tokens[s]
                elif turn is newest_turn:
                    return "the newest turn's ask stays"
                continue
            return None
        return "every turn is compacted"
    finally:
        selection.kept, selection.moved_tokens = kept, moved_tokens


@dataclass(slots=True)
class _Moved:
    """The moved lines as the plan records them: per-turn figures, byte runs, counts."""

    window: list = field(default_factory=list)   # turn index -> its WindowTurn, None when nothing of it moves
    runs: list = field(default_factory=list)
    moved: int = 0
    moved_bytes: int = 0
    last_start: int = -1
    pinned_kept: int = 0
    steps: int = 0                               # steps moved out of turns that stay
    abandoned: int = 0


def _moved_lines(scan: _Scan) -> _Moved:
    """The byte runs (merged when adjacent) and per-turn figures of the moved units' lines."""
    units, turns = scan.units, scan.turn_list
    moved, unit_turn = units.moved, units.turn
    out = _Moved([None] * len(turns))
    window, runs = out.window, out.runs
    # per line, only locals: each turn's count, first and last moved line; the run being merged
    count, first, last = [0] * len(turns), [-1] * len(turns), [-1] * len(turns)
    run_start = run_end = -1
    pinned: dict[int, int] = {}   # turn -> its pinned lines (an owner of -2 - turn)
    for start, end, owner in zip(scan.starts, scan.ends, scan.owners, strict=True):
        if owner < 0:
            if owner < -1:
                pinned[-owner - 2] = pinned.get(-owner - 2, 0) + 1
            continue
        if not moved[owner]:
            continue
        turn = unit_turn[owner]
        if not count[turn]:
            first[turn] = start
        count[turn] += 1
        last[turn] = start
        if start != run_end:
            if run_end >= 0:
                runs.append([run_start, run_end])
            run_start = start
        run_end = end
    if run_end >= 0:
        runs.append([run_start, run_end])
        out.last_start = max(last)
    out.moved = sum(count)
    out.moved_bytes = sum(end - start for start, end in runs)   # (a run is its lines, end to end)
    calls, results, next_step, first_step = units.calls, units.results, units.next_step, turns.first_step
    for index, n in enumerate(count):
        if not n:
            continue
        wt = window[index] = WindowTurn(turns.ids[index], n, first[index], last[index],
                                        total_steps=turns.n_steps[index])
        wt.whole = bool(moved[turns.head[index]])
        steps = abandoned = 0
        step = first_step[index]
        while step >= 0:   # the turn's steps (first_step, then next_step), oldest first
            if moved[step]:
                steps += 1
                if calls[step] > results[step]:
                    abandoned += calls[step] - results[step]
            step = next_step[step]
        wt.steps, wt.abandoned = steps, abandoned
        out.abandoned += wt.abandoned
        if not wt.whole:
            out.steps += wt.steps
    out.pinned_kept = sum(n for turn, n in pinned.items() if window[turn] is not None)
    return out


def plan_window(store: AgentStore, tail_turns: int, *, keep_steps: int = 4, target_tokens: int | None = None,
                model: str | None = None, on_open: Callable[[int], None] | None = None,
                summarized: bool = True) -> WindowPlan:
    """Scan the active file once and decide the window (rules in the module docstring); toward
    ``target_tokens`` with room for the window's summary, unless it is archived without one
    (``summarized`` False: a sliding window).

    ``on_open(size)`` is called once the active file is open, with the bytes the plan reads
    (:func:`feed_scan` in another process reads the same; :func:`check_feed` then sets
    ``plan.delivered`` and ``plan.spilled``). The caller holds the agent lock, so every line
    read is committed."""
    from memcli.snapshot.assemble import count_working, working_counter
    from memcli.snapshot.views import TokenMeter

    path = store.paths.active
    try:
        f = jsonl.open_read(path)
    except FileNotFoundError:
        return WindowPlan(store.agent_id, 0, 0, [], 0, 0, "the agent has no active traces", [], [], 0, 0, 0)
    size = os.fstat(f.fileno()).st_size
    if on_open is not None:
        on_open(size)
    scan = _Scan(store)
    total = count_working(store, TokenMeter(working_counter(model), memo_limit=10_000), scan.traces(f, size),
                          scan.credit)
    scan.turns.clear()   # read: the turn ids' index (a dict entry per turn) is no longer needed
    units = scan.units
    fixed_tokens = total - sum(units.tokens)
    conversation = scan.conversation()
    protected = _protected_steps(units, scan.step_order, keep_steps)
    selection = _Selection(units, total, target_tokens, summarized)
    stop_reason = _choose(selection, scan.turn_list, conversation, scan.step_order, protected, tail_turns)
    out = _moved_lines(scan)
    ordered = [wt for wt in out.window if wt is not None]   # in turn order
    run_ids = [jsonl.read_line_at(path, start)["id"] for start, _ in out.runs]
    return WindowPlan(
        store.agent_id, scan.ino, scan.size, ordered, len(conversation),
        len(conversation) - sum(1 for t in ordered if t.whole), stop_reason, out.runs, run_ids, out.moved,
        out.pinned_kept, out.moved_bytes, len(scan.starts), run_ids[0] if out.runs else None,
        jsonl.read_line_at(path, out.last_start)["id"] if out.runs else None,
        tokens_before=total, window_tokens=selection.moved_tokens, fixed_tokens=fixed_tokens,
        minimum_tokens=_minimum_tokens(units, scan.turn_list, conversation, protected, fixed_tokens),
        protected_steps=len(protected), keep_steps=keep_steps, target_tokens=target_tokens, steps=out.steps,
        abandoned=out.abandoned,
        strays=scan.strays,
    )


def feed_scan(store: AgentStore, size: int, tail_turns: int, keep_steps: int,
              whole_turns: Callable[[str, list, int], None],
              open_steps: Callable[[str], object] | None = None, target_tokens: int | None = None) -> FeedResult:
    """A :class:`WholeTurnFeed` over the first ``size`` bytes of the active file, assigning units
    as the plan does but counting nothing: for a process that summarizes while another plans
    toward ``target_tokens`` (:func:`check_feed` checks the result against that plan)."""
    scan = _Scan(store)
    scan.feed = WholeTurnFeed(whole_turns, scan.turn_list, scan.step_order, tail_turns, keep_steps,
                              WHOLE_TURN_FEED_BYTES, open_steps, spill_lag(target_tokens, WHOLE_TURN_FEED_BYTES))
    for _ in scan.traces(jsonl.open_read(store.paths.active), size):
        pass
    return scan.feed.result()


def _entry_turn(entry: tuple) -> str:
    return entry[1]


def iter_window_traces(path: Path, plan: WindowPlan, start: int = 0,
                       stop: int | None = None) -> Iterator[tuple[int, RawTrace]]:
    """``(i, trace)`` for every moved trace of the turns ``plan.turns[start:stop]`` (``i`` indexes
    that slice), in file order: one forward pass over the moved lines, nothing held. A trace is
    its unit's turn's: a result answering a call of another turn is that turn's (``plan.strays``)."""
    wanted = plan.turns[start:stop]
    if not wanted:
        return
    index = {t.turn_id: i for i, t in enumerate(wanted)}
    lo = wanted[0].first_offset
    hi = max(t.last_offset for t in wanted)
    runs = [[max(s, lo), e] for s, e in plan.runs if e > lo and s <= hi]
    strays = plan.strays
    for offset, raw in iter_run_lines(path, runs):
        if offset > hi:
            break
        record = jsonl.parse_line(path, raw, None, offset)
        i = index.get(strays.get(offset, record.get("turn_id")) if strays else record.get("turn_id"))
        if i is not None:
            yield i, trace_from_record(path, None, offset, record)


def in_window_order(wanted: list, traces: Iterable[tuple[int, RawTrace]], open_turn: Callable[[int], T],
                    add: Callable[[T, RawTrace], object]) -> Iterator[tuple[WindowTurn, T]]:
    """Fold the traces of :func:`iter_window_traces` into one value per turn (``open_turn(i)``
    makes it, ``add`` feeds it a trace) and yield ``(turn, value)`` in window order as soon as a
    turn's last trace is read — then the value is no longer held here."""
    remaining = [t.count for t in wanted]
    values: dict[int, T] = {}
    next_out = 0
    for i, trace in traces:
        value = values.get(i)
        if value is None:
            value = values[i] = open_turn(i)
        add(value, trace)
        remaining[i] -= 1
        while next_out < len(wanted) and remaining[next_out] == 0:
            value = values.pop(next_out, None)
            yield wanted[next_out], open_turn(next_out) if value is None else value
            next_out += 1
    while next_out < len(wanted):  # only if the file changed under us; yield what was found
        value = values.pop(next_out, None)
        yield wanted[next_out], open_turn(next_out) if value is None else value
        next_out += 1


def check_plan(path: Path, plan: WindowPlan) -> str | None:
    """None when the active file still holds the plan's lines where the plan says (it may have
    grown by appends), else why not."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return "the active file is gone"
    if st.st_ino != plan.active_ino:
        return "the active file was rewritten (another compaction, a repair or a clear)"
    if st.st_size < plan.active_size:
        return "the active file shrank"
    with jsonl.open_read(path) as f:
        for (start, _end), trace_id in zip(plan.runs, plan.run_ids, strict=True):
            f.seek(start)
            raw = f.readline()
            try:
                record = orjson.loads(raw)
            except orjson.JSONDecodeError:
                return f"the line at byte {start} changed"
            if not isinstance(record, dict) or record.get("id") != trace_id:
                return f"the line at byte {start} is no longer {trace_id}"
        if plan.active_size:
            f.seek(plan.active_size - 1)
            if f.read(1) != b"\n":
                return "the active file changed where the plan ended"
    return None
