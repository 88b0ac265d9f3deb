"""Harness compactions as memory items (docs/compaction.md, "Harness compactions").

A trace carrying ``harness_compaction`` (``{"harness", "trigger"?, "pre_tokens"?}``: the summary
an agent harness's own compaction wrote — Claude Code ``compact_boundary`` + ``isCompactSummary``,
Codex ``compacted``, Copilot CLI ``session.compaction_complete``, opencode ``summary`` messages,
Gemini CLI ``<state_snapshot>`` messages, Goose's summary before its "Your context was compacted" note)
with a text becomes one EPISODIC item, written by the ingest commit that writes the trace
(:meth:`memcli.store.agent.WriteSession.append_staged`, inside its rollback marker: both or
neither)::

    {"id": "ep_hc_<32 hex>", "ts": <the trace's ts>, "turn_ids": [<turns it covered>],
     "summary": <the trace's text, as stored (redacted)>, "tags": ["harness_compaction"],
     "salience": 0.5,
     "harness_compaction": {"harness": "claude-code", "trigger": "auto", "pre_tokens": 167000,
                            "trace_id": <the trace>, "turn_id": <the trace's turn>}}

* The id is a function of the trace id alone (:func:`harness_item_id`: the id index's 16-byte
  digest in hex), so re-ingesting, ``sync`` reading a grown file and hooks never make a second
  one, and ``append_memory``'s match by id adds nothing twice.
* A harness trace stored without its item (imported before memcli wrote these items) gets it when
  the same input is ingested again (:meth:`memcli.store.agent.WriteSession.catch_up_harness_items`:
  the item appended alone, after its trace; its ``turn_ids`` are the turns after the agent's
  previous harness item of the session up to the trace's own — a subagent's, the turns of that
  subagent's traces since its previous one, as at ingest).
* No ``compaction_id``: it is not memcli's compaction, so ``uncompact`` never takes it out.
* A subagent's own compaction (a ``sidechain`` trace) adds ``agent_id`` to the mark: the
  subagent it compacted, told apart from the session's. Its ``turn_ids`` are the turns of that
  subagent's traces since its previous compaction (:meth:`SpanTracker.subagent`; on an agent
  that had traces, those stored too: :func:`subagent_turns`); it does not end the session's
  span, and :func:`last_covered_turn` leaves it out.
* ``turn_ids`` are the turns the harness compacted, where known: the turns of the traces before it
  in the same ingest since the harness's previous compaction there; when that ingest began on an
  agent that already had traces (a ``sync`` of a grown file, a hook), the turns from the one after
  the agent's previous harness compaction (its item's last turn, or the turn of a text-less one:
  :func:`last_compacted_turn`) up to the last one before it (memcli's ``turn_NNNN``
  numbering) — from that turn itself when it went on after the previous compaction
  (:func:`continued_turn`), as one import of the whole file reads it. A summary that opens a file (a resumed session) covers nothing in this agent: ``[]``.
* A compaction that kept the newest messages as they were (its mark's ``kept_from``: Claude
  Code's session-memory or partial compaction) did not summarize their turns: its ``turn_ids``
  end before the first turn it kept (:func:`first_kept_turn`; the turn a kept message only ends
  is covered), and the session's next compaction covers them (:func:`leave_kept_turns`).
"""

from __future__ import annotations

from memcli.ids import format_turn
from memcli.models import HARNESS_COMPACTION, TAG_SIDECHAIN
from memcli.store.id_index import digest
from memcli.store.state import is_context_event, turn_number

FIELD = HARNESS_COMPACTION
CONTINUED_LOOKAHEAD = 64   # lines after a harness compaction's trace looked at for the first that is work
TAG = "harness_compaction"
ID_PREFIX = "ep_hc_"
SALIENCE = 0.5


def harness_item_id(trace_id: str) -> str:
    """The id of the item derived from trace ``trace_id`` (deterministic)."""
    return ID_PREFIX + digest(trace_id).hex()


def harness_mark(item) -> dict | None:
    """The ``harness_compaction`` mark of an episodic item (model or record), None when it has none."""
    value = item.get(FIELD) if isinstance(item, dict) else (getattr(item, "extra", None) or {}).get(FIELD)
    return value if isinstance(value, dict) else None


def is_harness_item(item) -> bool:
    """Whether an episodic item (model or record) is a harness compaction's."""
    return harness_mark(item) is not None


def describe_mark(mark: dict) -> str:
    """``claude-code compaction (auto, 167,000 tokens before)`` — one line for the human views."""
    parts = [p for p in (mark.get("trigger") if isinstance(mark.get("trigger"), str) else None,
                         f"{mark['pre_tokens']:,} tokens before" if type(mark.get("pre_tokens")) is int else None,
                         "the newest messages kept as they were" if isinstance(mark.get("kept_from"), str) else None)
             if p]
    who = f" of subagent {mark['agent_id']}" if isinstance(mark.get("agent_id"), str) else ""
    return f"{mark.get('harness')} compaction{who}" + (f" ({', '.join(parts)})" if parts else "")


def turn_range(first: int, last: int) -> list[str]:
    return [format_turn(n) for n in range(max(first, 1), last + 1)]


def last_covered_turn(records) -> int:
    """The highest turn number the session's own harness items cover (0 when none), from episodic
    records: a subagent's compaction (its mark names the subagent) summarized the subagent's
    conversation, not the session's turns up to it."""
    last = 0
    for record in records:
        mark = harness_mark(record)
        if mark is None or isinstance(mark.get("agent_id"), str):
            continue
        turns = record.get("turn_ids")
        if isinstance(turns, list) and turns and isinstance(turns[-1], str):
            number = turn_number(turns[-1])
            if number is not None and number > last:
                last = number
    return last


def first_kept_turn(paths, mark: dict) -> int | None:
    """The first turn a harness compaction left as it was (Claude Code's session-memory or partial
    compaction keeps the newest messages: ``kept_from``, the first of them): that trace's turn
    when the trace opens it (an ask), else the turn after it (its own turn was summarized up to
    it); None when the mark names none, or its trace is not in the active file (a line that gave
    no trace): the compaction then covers its whole span."""
    kept = mark.get("kept_from")
    record = _active_record(paths, kept) if isinstance(kept, str) else None
    turn_id = record.get("turn_id") if record is not None else None
    number = turn_number(turn_id) if isinstance(turn_id, str) else None
    if number is None:
        return None
    return number if record.get("trace_type") == "user" and not is_context_event(record) else number + 1


def leave_kept_turns(paths, records: list[dict]) -> list[dict]:
    """``records`` (harness items, in their traces' order; the traces in the active file) without
    the turns each of the session's compactions kept as they were (:func:`first_kept_turn`):
    those join the session's next compaction among ``records``, which summarized them; after the
    last, the next ingest's first compaction covers them (it starts after the last turn covered)."""
    moved: list = []
    for record in records:
        mark = record[FIELD]
        if isinstance(mark.get("agent_id"), str):   # (a subagent's own: its turns are its traces')
            continue
        turns = list(dict.fromkeys([*moved, *record["turn_ids"]]))
        moved = []
        first = first_kept_turn(paths, mark)
        if first is not None:
            moved = [t for t in turns if (turn_number(t) or 0) >= first]
            turns = [t for t in turns if (turn_number(t) or 0) < first]
        record["turn_ids"] = turns
    return records


def is_summary(trace: dict) -> bool:
    """Whether a harness trace has a text to keep (a Codex ``compacted`` item may carry only its
    replacement history: no item then)."""
    content = trace.get("content")
    return isinstance(content, str) and bool(content.strip())


def subagent_of(trace: dict) -> str | None:
    """The subagent whose own compaction a harness trace is (a ``sidechain`` trace's
    ``agent_id``), None for the session's."""
    agent = trace.get("agent_id")
    return agent if isinstance(agent, str) and TAG_SIDECHAIN in (trace.get("tags") or ()) else None


def item_record(event: dict, turn_ids: list) -> dict:
    """The episodic record of a staged (stamped, linked, redacted) harness-compaction trace."""
    mark = dict(event[FIELD])
    mark["trace_id"] = event["id"]
    mark["turn_id"] = event["turn_id"]
    agent = subagent_of(event)
    if agent is not None:
        mark["agent_id"] = agent   # a subagent's own compaction, not the session's
    return {"id": harness_item_id(event["id"]), "ts": event["ts"], "turn_ids": list(turn_ids),
            "summary": event.get("content") or "", "tags": [TAG], "salience": SALIENCE, FIELD: mark}


class SpanTracker:
    """Follows an ingest batch's staged traces to tell each harness trace the turns it covered
    (module docstring). ``fresh``: the agent had no trace when the batch began; ``last_turn``: the
    agent's turn counter then. A subagent's own compaction (:func:`subagent_of`) covers the turns
    of that subagent's traces since its previous one, and leaves the session's span alone: the
    session's next compaction still covers every turn since the session's previous one."""

    __slots__ = ("fresh", "last_turn", "span", "pending", "skip_ids", "present", "lanes", "main_seen")

    def __init__(self, fresh: bool, last_turn: int):
        self.fresh = fresh
        self.last_turn = last_turn
        self.skip_ids: set = set()      # items the same input restores itself (an export's memory records)
        self.present: list = []         # harness traces of the input the agent already had
        self.span: list[str] = []       # distinct turns since the batch began or its last harness trace
        self.pending: list = []         # (event, span before it, first of the batch on a non-fresh agent)
        self.lanes: dict[str, list] = {}   # subagent -> the turns of its traces since its last compaction
        self.main_seen = False          # a harness trace of the session's own staged

    def harness(self, event: dict) -> None:
        agent = subagent_of(event)
        if agent is not None:
            # the subagent's first compaction of a batch on an agent with traces goes on from its
            # traces already stored (:meth:`items`)
            first = not self.fresh and not any(subagent_of(e) == agent for e, _, _ in self.pending)
            self.pending.append((event, self.lanes.pop(agent, []), first))
            return
        self.pending.append((event, self.span, not self.fresh and not self.main_seen))
        self.main_seen = True
        self.span = []

    def subagent(self, agent_id: str, turn_id: str) -> None:
        """A subagent's trace in turn ``turn_id`` (for that subagent's next compaction)."""
        lane = self.lanes.get(agent_id)
        if lane is None:
            self.lanes[agent_id] = [turn_id]
        elif lane[-1] != turn_id:
            lane.append(turn_id)

    def extends(self) -> bool:
        """Whether the batch's first harness trace of the session goes on from the agent's
        earlier ones (the agent had traces): then :meth:`items` needs where those left off."""
        return any(extend and subagent_of(event) is None for event, _, extend in self.pending)

    def items(self, previous_last: int, earlier=None, continued: int | None = None) -> list[dict]:
        """The records, given the last turn the agent's earlier harness items cover, and
        ``earlier(agent_id, trace_id)``: the turns of a subagent's stored traces between its
        previous compaction and this one (:func:`subagent_turns`), for a subagent's first
        compaction of a batch on an agent with traces. ``continued``: that last turn, when it
        went on after the previous compaction (:func:`continued_turn`): the next one covers it
        too, as a one-shot import's span does — and so when this batch's traces continue it."""
        out = []
        for event, span, extend in self.pending:
            if not is_summary(event):
                continue
            turns = list(dict.fromkeys(span))   # a result can join an older turn: each turn once
            agent = subagent_of(event)
            if agent is not None:
                if extend and earlier is not None:
                    turns = list(dict.fromkeys([*earlier(agent, event["id"]), *turns]))
            elif extend:
                numbers = [turn_number(t) for t in span]
                if all(n is not None for n in numbers):
                    end = max([self.last_turn] + numbers)
                    goes_on = continued == previous_last or previous_last in numbers
                    turns = turn_range(previous_last if goes_on and previous_last else previous_last + 1, end)
            out.append(item_record(event, turns))
        return out


def _records_holding(paths, needle: bytes, accept):
    """The records of the agent's active file whose line holds ``needle`` and that ``accept``
    (a predicate on the parsed record): a search of the file's bytes, each hit's line parsed."""
    for record, _ in _holding(paths, needle, accept):
        yield record


def _holding(paths, needle: bytes, accept):
    """:func:`_records_holding`, each record with the offset of its line's newline."""
    import mmap

    import orjson

    try:
        f = open(paths.active, "rb")
    except FileNotFoundError:
        return
    with f:
        try:
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:   # an empty file
            return
        with data:
            at = data.find(needle)
            while at >= 0:
                start = data.rfind(b"\n", 0, at) + 1
                end = data.find(b"\n", at)
                if end < 0:
                    return   # an unterminated last line: not a record yet
                try:
                    record = orjson.loads(data[start:end])
                except orjson.JSONDecodeError:
                    record = None
                if isinstance(record, dict) and accept(record):
                    yield record, end
                at = data.find(needle, end)


def subagent_turns(paths, agent_id: str, until: str) -> list[str]:
    """The turns of subagent ``agent_id``'s traces in the agent's active file between its
    previous harness compaction there and trace ``until`` (its compaction being itemized), in
    order: one search of the file's bytes for the id, each hit's line parsed."""
    import orjson

    turns: list[str] = []
    for record in _records_holding(paths, orjson.dumps(agent_id),
                                   lambda r: r.get("agent_id") == agent_id and TAG_SIDECHAIN in (r.get("tags") or ())):
        if record.get("id") == until:
            break
        if isinstance(record.get(FIELD), dict):
            turns = []
        elif isinstance(record.get("turn_id"), str) and (not turns or turns[-1] != record["turn_id"]):
            turns.append(record["turn_id"])
    return list(dict.fromkeys(turns))


def active_trace_ids(paths, trace_ids) -> set:
    """Which of ``trace_ids`` are in the agent's active file (not archived by a compaction): one
    search of the file's bytes per id (the ids of harness items: a few), each hit parsed to check
    it is the record's own ``id``."""
    return {t for t in trace_ids if isinstance(t, str) and _active_record(paths, t) is not None}


def _active_record(paths, trace_id: str) -> dict | None:
    """The record of trace ``trace_id`` in the agent's active file, or None: one search of the
    file's bytes for the id, each hit parsed to check it is the record's own ``id``."""
    import orjson

    return next(_records_holding(paths, orjson.dumps(trace_id), lambda r: r.get("id") == trace_id), None)


_FIELD_NAME = b'"' + FIELD.encode() + b'"'   # what a harness compaction's line holds


def _is_harness_trace(record: dict) -> bool:
    return isinstance(record.get(FIELD), dict)


def _harness_traces(paths):
    """The harness-compaction traces of the agent's active file (one search of its bytes for the
    field's name, each hit's line parsed)."""
    return _records_holding(paths, _FIELD_NAME, _is_harness_trace)


def stored_compactions(paths, staged: set) -> list[tuple[dict, int]]:
    """The harness compactions of the session stored before this ingest — their traces in the
    active file, not among the ``staged`` ids, not a subagent's —, each with the offset its line
    ends at: one search of the file's bytes, which :func:`last_compacted_turn` and
    :func:`continued_turn` both read."""
    return list(_holding(paths, _FIELD_NAME, lambda r: _is_harness_trace(r) and r.get("id") not in staged
                         and subagent_of(r) is None))


def last_compacted_turn(records, stored: list) -> int:
    """Where the agent's earlier harness compactions left off: the last turn its harness items
    cover (:func:`last_covered_turn`), or later, the turn of a harness compaction with no text —
    hence no item (a Codex remote compaction) — among those ``stored`` (:func:`stored_compactions`).
    A one-shot import starts the next item's turns after such a compaction too."""
    last = last_covered_turn(records)
    for record, _ in stored:
        if is_summary(record):
            continue
        turn_id = record.get("turn_id")
        number = turn_number(turn_id) if isinstance(turn_id, str) else None
        if number is not None and number > last:
            last = number
    return last


def continued_turn(paths, stored: list) -> int | None:
    """The turn of the agent's last harness compaction of the session stored before this ingest
    (the last of ``stored``: :func:`stored_compactions`), when the trace after it in the file is
    of that turn too — the turn went on after the summary, so the
    next compaction covers it, as one import of the whole file reads it — else None. The trace
    after it is the first that is no context line (a manual compaction's caveat, command and
    output join its turn without being work: the ingest's span rule), within
    :data:`CONTINUED_LOOKAHEAD` lines: the lines after the last one read."""
    from memcli.errors import CorruptStoreError
    from memcli.store import jsonl

    if not stored:
        return None
    record, end = stored[-1]
    turn_id = record.get("turn_id")
    if not isinstance(turn_id, str):
        return None
    try:
        for n, (_, _, after) in enumerate(jsonl.iter_records(paths.active, end + 1, first_line_no=None)):
            if n >= CONTINUED_LOOKAHEAD:
                break
            if not is_context_event(after):   # (past the harness's own lines after a summary)
                return turn_number(turn_id) if after.get("turn_id") == turn_id else None
    except CorruptStoreError:
        pass
    return None


def holds_harness_compaction(paths) -> bool:
    """Whether the agent's active file holds a harness compaction's trace (one search of its
    bytes). After one, the harness sent the model its summary (or its replacement history)
    instead of the traces before it, while the working snapshot still renders those traces: the provider's reported prompt
    size no longer measures the snapshot (:func:`memcli.compaction.policy.latest_prompt_tokens`)."""
    return any(True for _ in _harness_traces(paths))


def rendered_in_place(paths, items) -> set:
    """The ids of the harness items among ``items`` whose trace is still active: the working
    snapshot renders that trace where it is, so its memory bundle leaves the item out."""
    marks = {item.id: harness_mark(item) for item in items}
    traces = {item_id: mark["trace_id"] for item_id, mark in marks.items()
              if mark is not None and isinstance(mark.get("trace_id"), str)}
    if not traces:
        return set()
    active = active_trace_ids(paths, traces.values())
    return {item_id for item_id, trace_id in traces.items() if trace_id in active}
