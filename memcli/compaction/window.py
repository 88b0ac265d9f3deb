"""Which traces a compaction moves: the window of docs/design.md §4.

Rules, applied to the active file as it is when the plan is made (under the agent lock, so
every line read is committed):

* Turns are ordered by the first appearance of their ``turn_id`` in the active file.
* A trace tagged ``system`` or ``developer`` (:data:`memcli.models.PINNED_TAGS`) is part of the
  instructions, not of the conversation: it stays in the active file when its turn is compacted
  (snapshots render it as the system prompt). A turn made only of such traces is not a
  conversation turn: it is never counted, moved or summarized.
* The window is the longest run of oldest turns that leaves the last ``tail_turns`` turns and
  the open turn untouched and stops before the first turn that still has an unanswered tool call
  (its result, when it comes, must find its call in the active file).
* Whole turns move: a tool result that joined an old turn further down the file moves with it.

A plan records what moves as byte ranges (``runs``, ``[start, end)`` of whole lines, merged when
adjacent) of the active file with the file's inode and the size read, plus the id of the line at
the start of each run — enough for the commit to check that the plan still describes the file
(appends only) and for recovery to find the moved lines again. Plans are cheap in memory: one
offset per moved trace, nothing of their content; :func:`iter_window_turns` reads the content
back, one turn at a time.
"""

from __future__ import annotations

import os
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import orjson

from memcli.models import PINNED_TAGS, RawTrace
from memcli.store import jsonl
from memcli.store.agent import trace_from_record
from memcli.store.jsonl import iter_run_lines  # noqa: F401  (moved to the store; old name kept)
from memcli.store.state import TurnState


@dataclass
class WindowTurn:
    turn_id: str
    count: int = 0                  # traces that move (pinned ones excluded)
    first_offset: int = -1          # first and last moved line
    last_offset: int = -1
    first_ts: float | None = None
    last_ts: float | None = None


@dataclass
class WindowPlan:
    agent_id: str
    active_ino: int
    active_size: int                 # bytes of the active file the plan looked at
    turns: list                      # WindowTurn, oldest first: what moves
    conversation_turns: int          # turns in the active file (pinned-only turns not counted)
    kept_turns: int                  # conversation turns that stay
    stop_reason: str                 # why the window ends where it does
    runs: list                       # [[start, end], ...] byte ranges of moved lines
    run_ids: list                    # id of the line at each run's start
    moved: int                       # traces moved
    pinned_kept: int                 # system/developer traces of window turns that stay
    moved_bytes: int
    active_traces: int = 0           # traces in the active file
    first_id: str | None = None
    last_id: str | None = None

    @property
    def empty(self) -> bool:
        return self.moved == 0

    @property
    def turn_ids(self) -> list:
        return [t.turn_id for t in self.turns]

    def describe_range(self) -> str:
        if not self.turns:
            return "no turns"
        if len(self.turns) == 1:
            return self.turns[0].turn_id
        return f"{self.turns[0].turn_id}–{self.turns[-1].turn_id}"


def _is_pinned(record: dict) -> bool:
    tags = record.get("tags")
    return bool(tags) and isinstance(tags, list) and not PINNED_TAGS.isdisjoint(tags)


def plan_window(path: Path, agent_id: str, tail_turns: int) -> WindowPlan:
    """Scan the active file at ``path`` once and decide the window (rules in the module docstring).

    The caller holds the agent lock, so every line read is committed. Memory: 24 bytes per line
    plus one small object per turn."""
    try:
        f = jsonl.open_read(path)
    except FileNotFoundError:
        return WindowPlan(agent_id, 0, 0, [], 0, 0, "the agent has no active traces", [], [], 0, 0, 0)
    state = TurnState()  # the linker's own replay: pending calls and the open turn, as the cache has them
    turns: dict[str, int] = {}
    turn_list: list[WindowTurn] = []
    pinned_count: list[int] = []
    starts, ends, owners = array("q"), array("q"), array("q")  # per line; owner -1 = pinned
    with f:
        st = os.fstat(f.fileno())
        size = st.st_size
        offset = 0
        loads = orjson.loads
        line_no = 1
        for raw in f:
            if offset >= size or not raw.endswith(b"\n"):
                break
            start = offset
            offset += len(raw)
            if not raw.strip():
                line_no += 1
                continue
            try:
                record = loads(raw)
            except orjson.JSONDecodeError:
                record = jsonl.parse_line(path, raw, line_no, start)  # raises with the line
            if type(record) is not dict:
                jsonl.parse_line(path, raw, line_no, start)
            turn_id = record.get("turn_id")
            if not isinstance(turn_id, str) or not isinstance(record.get("id"), str):
                trace_from_record(path, line_no, start, record)  # raises with the line
            state.observe(record, start)
            index = turns.get(turn_id)
            if index is None:
                index = turns[turn_id] = len(turn_list)
                turn_list.append(WindowTurn(turn_id))
                pinned_count.append(0)
            starts.append(start)
            ends.append(offset)
            if _is_pinned(record):
                pinned_count[index] += 1
                owners.append(-1)
            else:
                owners.append(index)
                turn = turn_list[index]
                turn.count += 1
                if turn.first_offset < 0:
                    turn.first_offset = start
                turn.last_offset = start
                ts = record.get("ts")
                if isinstance(ts, (int, float)):
                    if turn.first_ts is None or ts < turn.first_ts:
                        turn.first_ts = float(ts)
                    if turn.last_ts is None or ts > turn.last_ts:
                        turn.last_ts = float(ts)
            line_no += 1
        size = min(size, offset)

    conversation = [t for t in turn_list if t.count]
    pending = state.pending_turns()
    limit = max(len(conversation) - max(tail_turns, 0), 0)
    stop_reason = (f"the last {tail_turns} turn{'s' if tail_turns != 1 else ''} stay"
                   if limit < len(conversation) else "every turn is closed and answered")
    window: list[WindowTurn] = []
    for turn in conversation[:limit]:
        if turn.turn_id in pending:
            stop_reason = f"{turn.turn_id} has an unanswered tool call"
            break
        if turn.turn_id == state.open_turn:
            stop_reason = f"{turn.turn_id} is the open turn"
            break
        window.append(turn)
    if not conversation:
        stop_reason = "the agent has no conversation turns"

    in_window = bytearray(len(turn_list))
    for turn in window:
        in_window[turns[turn.turn_id]] = 1
    runs: list = []
    moved = moved_bytes = 0
    for start, end, owner in zip(starts, ends, owners):
        if owner < 0 or not in_window[owner]:
            continue
        moved += 1
        moved_bytes += end - start
        if runs and runs[-1][1] == start:
            runs[-1][1] = end
        else:
            runs.append([start, end])
    run_ids = [jsonl.read_line_at(path, start)["id"] for start, _ in runs]
    first_id = run_ids[0] if runs else None
    last_id = None
    if runs:
        last_start = max(s for s, e in zip(starts, ends) if e == runs[-1][1])
        last_id = jsonl.read_line_at(path, last_start)["id"]
    pinned_kept = sum(pinned_count[turns[t.turn_id]] for t in window)
    return WindowPlan(agent_id, st.st_ino, size, window, len(conversation), len(conversation) - len(window),
                      stop_reason, runs, run_ids, moved, pinned_kept, moved_bytes, len(starts), first_id, last_id)


def iter_window_turns(path: Path, plan: WindowPlan, start: int = 0,
                      stop: int | None = None) -> Iterator[tuple[str, list[RawTrace]]]:
    """The window's turns ``plan.turns[start:stop]`` with their moved traces, oldest first.

    One forward pass over the moved lines; a turn is yielded once all its traces are read, in
    window order, so memory holds only the turns whose traces interleave."""
    wanted = plan.turns[start:stop]
    if not wanted:
        return
    index = {t.turn_id: i for i, t in enumerate(wanted)}
    remaining = [t.count for t in wanted]
    buffers: dict[int, list] = {}
    lo = wanted[0].first_offset
    hi = max(t.last_offset for t in wanted)
    runs = [[max(s, lo), e] for s, e in plan.runs if e > lo and s <= hi]
    next_out = 0
    for offset, raw in iter_run_lines(path, runs):
        if offset > hi:
            break
        record = jsonl.parse_line(path, raw, None, offset)
        i = index.get(record.get("turn_id"))
        if i is None:
            continue
        buffers.setdefault(i, []).append(trace_from_record(path, None, offset, record))
        remaining[i] -= 1
        while next_out < len(wanted) and remaining[next_out] == 0:
            yield wanted[next_out].turn_id, buffers.pop(next_out, [])
            next_out += 1
    while next_out < len(wanted):  # only if the file changed under us; yield what was found
        yield wanted[next_out].turn_id, buffers.pop(next_out, [])
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
        for (start, _end), trace_id in zip(plan.runs, plan.run_ids):
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
