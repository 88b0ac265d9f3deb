"""Turns, seq and tool linkage (docs/design.md §2), and the ``.state.json`` cache that carries them
from one ``memcli`` process to the next.

Rules (the linker), applied in input order to every new trace:

* A ``user`` trace opens a new turn ``turn_NNNN`` (counting on from the agent's highest turn
  number, archive included) — unless it is *context* (tagged ``system``, ``developer``,
  ``context``, ``compact_summary`` or ``sidechain``), which never opens a turn, or unless the open
  turn so far holds only context, which the first real user ask then joins (a system prompt and
  the first question form turn 1 together).
* Every other trace joins the open turn; if no turn is open yet, one is opened for it.
* A ``tool_result`` joins the turn of the ``tool_call`` it answers, matched by ``tool_call_id``
  first-in-first-out among the still-unanswered calls with that id (transcripts reuse ids). A
  result with no unanswered call is an orphan and joins the open turn.
* An event that carries ``turn_id`` keeps it; a real ``user`` trace with its own ``turn_id``
  makes that turn the open one (and ``turn_NNNN`` ids move the counter forward).
* ``seq`` numbers traces within a turn from 1, continuing across invocations; a given ``seq`` is
  kept and later traces of that turn continue after it.

The cache holds only what the next trace needs: the turn counter, the open turn, the last seq of
recent turns and of turns with unanswered calls (bounded), the FIFO of unanswered calls (with the
call's byte offset in the active file, so pending calls are found without a scan), counts, and
the identity (inode, size) of the files it describes. It is rebuilt from the JSONL files whenever
that identity does not match (another writer, a crash), so it never needs to be trusted blindly.
"""

from __future__ import annotations

import re
from typing import Callable, Iterable

from memcli.ids import format_turn
from memcli.models import NON_OPENING_TAGS
from memcli.pairing import pop_open_call

STATE_VERSION = 1
RECENT_TURNS_KEPT = 64
_TURN_RE = re.compile(r"turn_(\d+)")


_last_turn: tuple[str, int | None] = ("", None)


def turn_number(turn_id: str) -> int | None:
    global _last_turn
    if _last_turn[0] == turn_id:
        return _last_turn[1]
    m = _TURN_RE.fullmatch(turn_id)
    n = int(m.group(1)) if m else None
    _last_turn = (turn_id, n)
    return n


def is_context_event(record: dict) -> bool:
    if record.get("trace_type") != "user":
        return False
    tags = record.get("tags")
    return bool(tags) and not NON_OPENING_TAGS.isdisjoint(tags)


class FileIdentity:
    """(inode, size) of a file as the cache last saw it; (0, 0) for a missing file."""

    __slots__ = ("ino", "size")

    def __init__(self, ino: int = 0, size: int = 0):
        self.ino, self.size = ino, size

    def to_json(self) -> list:
        return [self.ino, self.size]

    @classmethod
    def from_json(cls, value) -> "FileIdentity":
        return cls(int(value[0]), int(value[1]))


def _entry_turn(entry: list) -> str | None:
    return entry[0]  # [turn_id, trace_id, offset]


class TurnState:
    """What the linker needs to place the next trace (module docstring): the turn counter and the
    open turn, the last ``seq`` of recent turns, the unanswered calls per ``tool_call_id``
    (``pending``: ``[turn_id, trace_id, offset]`` oldest first, paired by
    :func:`memcli.pairing.pop_open_call`), trace counts, and the identity (inode, size) of the
    active and archive files it describes. :meth:`assign` places a new event (stamping
    ``turn_id``/``seq``); :meth:`observe` replays a stored record when the cache is rebuilt.
    Stored as ``.state.json`` (:meth:`to_json` / :meth:`from_json`); never trusted when the file
    identities do not match.
    """

    def __init__(self, turn_counter: int = 0, open_turn: str | None = None, open_turn_context_only: bool = False,
                 turn_seq: dict | None = None, pending: dict | None = None, active: FileIdentity | None = None,
                 archive: FileIdentity | None = None, ids_count: int = 0, active_count: int = 0,
                 archive_count: int = 0, last_ts: float | None = None):
        self.turn_counter = turn_counter
        self.open_turn = open_turn
        self.open_turn_context_only = open_turn_context_only
        self.turn_seq = turn_seq if turn_seq is not None else {}   # turn_id -> last seq, in order of appearance
        self.pending = pending if pending is not None else {}      # call_id -> [[turn_id, trace_id, offset], ...]
        # what the cache describes
        self.active = active or FileIdentity()
        self.archive = archive or FileIdentity()
        self.ids_count = ids_count
        self.active_count = active_count
        self.archive_count = archive_count
        self.last_ts = last_ts

    # ------------------------------------------------------------------ linking new traces
    def assign(self, event: dict, seq_lookup: Callable[[str], int], offset: int | None = None) -> None:
        """Give a new event its ``turn_id`` and ``seq`` (rules in the module docstring)."""
        trace_type = event["trace_type"]
        turn_id = event.get("turn_id")
        if turn_id is None:
            if trace_type == "tool_result":
                entry = self._pop_pending(event.get("tool_call_id"), None)
                turn_id = entry[0] if entry is not None else self._join_open_turn(event)
            elif trace_type == "user" and not ("tags" in event and is_context_event(event)):
                if self.open_turn_context_only and self.open_turn is not None:
                    turn_id = self.open_turn
                    self.open_turn_context_only = False
                else:
                    turn_id = self._open_new_turn(context_only=False)
            else:
                turn_id = self.open_turn
                if turn_id is None or self.open_turn_context_only:
                    turn_id = self._join_open_turn(event)
            event["turn_id"] = turn_id
        else:
            if trace_type != "tool_result" or self._pop_pending(event.get("tool_call_id"), turn_id) is None:
                self._note_turn(turn_id, event)
            n = turn_number(turn_id)
            if n is not None and n > self.turn_counter:
                self.turn_counter = n

        turn_seq = self.turn_seq
        last = turn_seq.get(turn_id)
        if last is None:
            last = seq_lookup(turn_id)
        seq = event.get("seq")
        if seq is None:
            seq = event["seq"] = last + 1
        turn_seq[turn_id] = seq if seq > last else last
        if trace_type == "tool_call":
            self.pending.setdefault(event["tool_call_id"], []).append([turn_id, event["id"], offset])

    def _open_new_turn(self, *, context_only: bool) -> str:
        self.turn_counter += 1
        turn_id = format_turn(self.turn_counter)
        while turn_id in self.turn_seq:  # a foreign id could already use this name
            self.turn_counter += 1
            turn_id = format_turn(self.turn_counter)
        self.open_turn = turn_id
        self.open_turn_context_only = context_only
        self.turn_seq[turn_id] = 0
        return turn_id

    def _join_open_turn(self, event: dict) -> str:
        if self.open_turn is None:
            return self._open_new_turn(context_only=is_context_event(event))
        if self.open_turn_context_only and not is_context_event(event):
            self.open_turn_context_only = False
        return self.open_turn

    def move_pending_offset(self, call_id: str, trace_id: str, offset: int) -> None:
        """Correct the recorded byte offset of an unanswered call (its line moved)."""
        for entry in self.pending.get(call_id, ()):
            if entry[1] == trace_id:
                entry[2] = offset
                return

    def _note_turn(self, turn_id: str, record: dict) -> None:
        """A trace placed in ``turn_id`` by its own choice: that turn is now the open one."""
        if turn_id != self.open_turn:
            self.open_turn = turn_id
            self.open_turn_context_only = is_context_event(record)
        elif not is_context_event(record):
            self.open_turn_context_only = False

    def _pop_pending(self, call_id: str | None, turn_id: str | None) -> list | None:
        if not call_id:
            return None
        return pop_open_call(self.pending, call_id, turn_id, _entry_turn)  # the one pairing rule

    # ------------------------------------------------------------------ replaying stored traces
    def observe(self, record: dict, offset: int | None) -> None:
        """Update the cache from a trace already in the active file (rebuild / catch-up)."""
        trace_type = record.get("trace_type")
        turn_id = record.get("turn_id")
        if not isinstance(turn_id, str):
            return
        n = turn_number(turn_id)
        if n is not None and n > self.turn_counter:
            self.turn_counter = n
        if trace_type != "tool_result" or self._pop_pending(record.get("tool_call_id"), turn_id) is None:
            self._note_turn(turn_id, record)
        seq = record.get("seq")
        if isinstance(seq, int) and seq > self.turn_seq.get(turn_id, 0):
            self.turn_seq[turn_id] = seq
        if trace_type == "tool_call" and record.get("tool_call_id"):
            self.pending.setdefault(record["tool_call_id"], []).append([turn_id, record.get("id"), offset])
        ts = record.get("ts")
        if isinstance(ts, (int, float)) and (self.last_ts is None or ts > self.last_ts):
            self.last_ts = float(ts)

    def observe_archived(self, record: dict) -> None:
        """Archived traces only move the turn counter forward (and, through
        :meth:`keep_seqs_rising`, the seq of a turn that goes on in the active file)."""
        self.observe_turn_id(record.get("turn_id"))

    def keep_seqs_rising(self, *highest: dict) -> None:
        """A turn of the active file goes on after the highest seq it ever had, not after its
        highest in the active file: a compaction inside a turn archives its older steps, and a
        step appended then must not take their seq again. ``highest``: turn id -> a seq it had
        (the archive's, the previous state's); seq never goes back."""
        turn_seq = self.turn_seq
        for turn_id, seq in turn_seq.items():
            top = max((h.get(turn_id, 0) for h in highest), default=0)
            if top > seq:
                turn_seq[turn_id] = top

    def observe_turn_id(self, turn_id) -> None:
        """A turn id named outside the active file (an archived trace, a memory item) moves the
        turn counter forward, so a new turn never reuses it; anything not a turn id is passed over."""
        if isinstance(turn_id, str):
            n = turn_number(turn_id)
            if n is not None and n > self.turn_counter:
                self.turn_counter = n

    def observe_turn_ids(self, turn_ids: Iterable) -> None:
        observe = self.observe_turn_id
        for turn_id in turn_ids:
            observe(turn_id)

    # ------------------------------------------------------------------ persistence
    def pending_turns(self) -> set:
        return {entry[0] for queue in self.pending.values() for entry in queue}

    def prune(self) -> None:
        """Bound ``turn_seq`` to recent turns, the open turn and turns with unanswered calls."""
        if len(self.turn_seq) <= RECENT_TURNS_KEPT:
            return
        keep = self.pending_turns()
        if self.open_turn:
            keep.add(self.open_turn)
        items = list(self.turn_seq.items())
        recent = {k for k, _ in items[-RECENT_TURNS_KEPT:]}
        self.turn_seq = {k: v for k, v in items if k in recent or k in keep}

    def to_json(self) -> dict:
        self.prune()
        return {
            "version": STATE_VERSION,
            "turn_counter": self.turn_counter,
            "open_turn": self.open_turn,
            "open_turn_context_only": self.open_turn_context_only,
            "turn_seq": self.turn_seq,
            "pending": self.pending,
            "active": self.active.to_json(),
            "archive": self.archive.to_json(),
            "ids_count": self.ids_count,
            "active_count": self.active_count,
            "archive_count": self.archive_count,
            "last_ts": self.last_ts,
        }

    @classmethod
    def from_json(cls, data: dict) -> "TurnState":
        if data.get("version") != STATE_VERSION:
            raise ValueError("unknown state version")
        return cls(
            turn_counter=int(data["turn_counter"]),
            open_turn=data.get("open_turn"),
            open_turn_context_only=bool(data.get("open_turn_context_only")),
            turn_seq=dict(data.get("turn_seq") or {}),
            pending={k: [list(e) for e in v] for k, v in (data.get("pending") or {}).items()},
            active=FileIdentity.from_json(data["active"]),
            archive=FileIdentity.from_json(data["archive"]),
            ids_count=int(data["ids_count"]),
            active_count=int(data.get("active_count", 0)),
            archive_count=int(data.get("archive_count", 0)),
            last_ts=data.get("last_ts"),
        )

    def copy(self) -> "TurnState":
        return TurnState.from_json(self.to_json())
