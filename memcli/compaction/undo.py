"""Compactions you can see and undo: ``memcli compactions`` and ``memcli uncompact``.

**The list** (:func:`list_compactions`), oldest first, comes from the ledger
(:mod:`memcli.store.ledger`: one record per compaction, one per undo). A compaction made before the
ledger existed has no record; it is listed from what the store holds — the episodic items that
name its ``compaction_id`` (``turn_ids``, ``trace_ids`` or ``trace_count``, ``model``, ``ts``) —
with ``recorded: false`` and no token figures. A ``sliding-window`` compaction of that time wrote no
item and cannot be listed.

**Undo** (:func:`uncompact`) takes the newest compaction not yet undone (or the one named, which
must be that one: undo goes newest first, as each compaction planned on what the previous ones
left). Under the compaction lock and the agent lock it plans, then commits through the journal
(:class:`memcli.store.journal.UndoJournal`, so an interrupted undo is finished by the next
command):

* **traces**: the compaction's lines are the last ``traces`` lines of the archive (later
  compactions are undone, and each undo cuts the archive back). Each of its runs goes back into the
  active file where it was, byte for byte: at its recorded offset (the run's start less the bytes
  of the runs before it) when the kept line just before that offset is the run's anchor, else right
  after the anchor's line wherever it is now (a restored copy, whose bytes may differ). For a
  compaction without a record, the lines go back in (turn number, seq) order among the active
  lines — where the turn ids are ``turn_NNNN``; otherwise the undo is refused. The archive is then
  cut back to where the compaction's lines began.
* **items**: the live items the compaction wrote (``compaction_id``) are superseded by one
  tombstone per tier (``tags: ["uncompacted"]``, ``uncompact: <compaction id>``, superseding
  itself as ``forget``'s do); the items it had superseded (a rollup's summaries, merged facts) come
  back as copies (new ids, ``restores: <original id>``). So that the memory bundle is the one
  before the compaction, in the same order, live items that sort after a restored one (by the
  position of the item they restore) are copied after it too, each copy superseding its original.
* **ledger**: an ``uncompact`` record names the compaction; the list shows it undone.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

import orjson

from memcli.compaction.summarizer import turn_span
from memcli.errors import CompactionError, RecordNotFoundError, UsageError
from memcli.ids import EPISODIC_PREFIX, SEMANTIC_PREFIX, new_id
from memcli.models import EpisodicItem, SemanticItem, from_record, is_instruction, superseded_ids, to_record
from memcli.sizes import counted, what_moved
from memcli.store import jsonl
from memcli.store.agent import AgentStore
from memcli.store.journal import UndoJournal, commit_undo
from memcli.store.ledger import COMPACTION, UNCOMPACT, UNCOMPACT_PREFIX, iter_ledger
from memcli.store.lock import compaction_lock
from memcli.store.state import turn_number

UNCOMPACTED_TAG = "uncompacted"


@dataclass
class CompactionEntry:
    """One compaction as ``memcli compactions`` lists it."""

    id: str
    ts: float
    recorded: bool                   # False: made before the ledger, listed from its items
    strategy: str | None = None
    summarizer: str | None = None
    turn_range: str = ""
    turns: int = 0
    whole_turns: int = 0
    steps: int = 0
    traces: int = 0
    tokens_before: int | None = None
    tokens_after: int | None = None
    llm: dict | None = None          # {"model", "requests", "input_tokens", "output_tokens", "cost_usd"}
    undone: bool = False
    undone_by: str | None = None
    undone_ts: float | None = None
    items: dict = field(default_factory=lambda: {"episodic": [], "semantic": []})
    superseded: dict = field(default_factory=lambda: {"episodic": [], "semantic": []})
    place: dict | None = None        # the ledger's "place"; None without a record
    trace_ids: list | None = None    # without a record: the ids the episodic item lists (all of them)
    turn_ids: list = field(default_factory=list)

    def moved(self) -> str:
        """"6 turns, 24 traces", "2 turns and 30 steps, 96 traces"."""
        return f"{what_moved(self.whole_turns, self.steps)}, {counted(self.traces, 'trace')}"

    def to_dict(self) -> dict:
        data = asdict(self)
        for key in ("place", "trace_ids", "turn_ids"):
            data.pop(key)
        return data


@dataclass
class UncompactResult:
    agent_id: str
    compaction_id: str
    undo_id: str
    recorded: bool
    traces: int = 0
    turn_range: str = ""
    superseded: int = 0              # items of the compaction taken out
    restored: int = 0                # items it had superseded, back (as copies)
    tokens_before: int = 0
    tokens_after: int = 0
    seconds: float = 0.0

    def describe(self) -> str:
        text = (f"undid {self.compaction_id} of {self.agent_id!r}: {self.traces} trace"
                f"{'s' if self.traces != 1 else ''} ({self.turn_range}) back in the active file")
        if self.superseded or self.restored:
            text += f", {self.superseded} memory item{'s' if self.superseded != 1 else ''} superseded"
            if self.restored:
                text += f", {self.restored} restored"
        text += f"; tokens {self.tokens_before:,} → {self.tokens_after:,}"
        if not self.recorded:
            text += " (made before the ledger: traces placed by turn and seq)"
        return text

    def to_dict(self) -> dict:
        return asdict(self)


# --------------------------------------------------------------------------- the list

def list_compactions(store: AgentStore) -> list[CompactionEntry]:
    """Every compaction of the agent, oldest first (module docstring)."""
    store.recover_if_needed()
    entries: dict[str, CompactionEntry] = {}
    undone: dict[str, tuple[str, float]] = {}
    for record in iter_ledger(store.paths.ledger):
        kind = record.get("kind")
        if kind == COMPACTION and isinstance(record.get("id"), str):
            entries[record["id"]] = _from_record(record)
        elif kind == UNCOMPACT and isinstance(record.get("compaction_id"), str):
            undone[record["compaction_id"]] = (record.get("id"), record.get("ts"))
    for entry in _unrecorded(store, set(entries)):
        entries[entry.id] = entry
    out = sorted(entries.values(), key=lambda e: e.ts)
    for entry in out:
        if entry.id in undone:
            entry.undone = True
            entry.undone_by, entry.undone_ts = undone[entry.id]
    return out


def _from_record(record: dict) -> CompactionEntry:
    known = {k: record[k] for k in ("strategy", "summarizer", "turn_range", "turns", "whole_turns", "steps",
                                    "traces", "tokens_before", "tokens_after", "llm", "items", "superseded",
                                    "place") if k in record}
    return CompactionEntry(id=record["id"], ts=float(record.get("ts") or 0.0), recorded=True, **known)


def _unrecorded(store: AgentStore, recorded: set) -> list[CompactionEntry]:
    """Compactions without a ledger record, from the items that name them (module docstring)."""
    found: dict[str, CompactionEntry] = {}
    for kind, items in (("episodic", store.iter_episodic()), ("semantic", store.iter_semantic())):
        for item in items:
            extra = getattr(item, "extra", None) or {}
            cid = item.compaction_id
            if not cid or cid in recorded or "restores" in extra:
                continue
            entry = found.get(cid)
            if entry is None:
                entry = found[cid] = CompactionEntry(id=cid, ts=item.ts, recorded=False, strategy="summarize")
            entry.items[kind].append(item.id)
            entry.superseded[kind].extend(item.supersedes)
            if kind == "episodic" and "rollup" not in item.tags:
                entry.summarizer = item.model
                entry.turn_ids = list(item.turn_ids)
                entry.turns = entry.whole_turns = len(item.turn_ids)
                ids = item.turn_ids
                entry.turn_range = turn_span(ids)
                count = extra.get("trace_count")
                entry.traces = count if isinstance(count, int) else len(item.trace_ids)
                entry.trace_ids = None if isinstance(count, int) else list(item.trace_ids)
    return [e for e in found.values() if e.turn_ids]


# --------------------------------------------------------------------------- undo

def uncompact(memory_dir, agent_id: str, compaction_id: str | None = None) -> UncompactResult:
    """Undo ``compaction_id`` (default: the newest compaction not undone) of ``agent_id``.

    RecordNotFoundError (exit 3) for an id the agent has no compaction of; CompactionError
    (exit 1) when it is already undone, when a newer one stands (naming it), or when its traces
    cannot be put back; CompactionBusy while a compaction of the agent runs."""
    from memcli.snapshot.assemble import working_tokens

    started = time.monotonic()
    store = AgentStore(memory_dir, agent_id).require()
    with compaction_lock(store), store.counting_cache():   # texts counted before are not counted again
        store.recover_if_needed()
        tokens_before = working_tokens(store, None)
        with store.writer(create=False) as session:
            entry = _choose(store, list_compactions(store), compaction_id)
            journal, result = _plan(store, entry)
            commit_undo(session, journal)
        result.tokens_after = working_tokens(store, None)
    result.tokens_before = tokens_before
    result.seconds = time.monotonic() - started
    return result


def _choose(store: AgentStore, entries: list[CompactionEntry], compaction_id: str | None) -> CompactionEntry:
    standing = [e for e in entries if not e.undone]
    if compaction_id is None:
        if not standing:
            raise CompactionError(f"agent {store.agent_id!r} has no compaction to undo"
                                  + (f" ({len(entries)} undone already)" if entries else ""),
                                  hint=f"`memcli compactions {store.agent_id}` lists them")
        return standing[-1]
    chosen = next((e for e in entries if e.id == compaction_id), None)
    if chosen is None:   # the start of one (``memcli compactions`` shows ids that way when narrow: ``cmp_01a2…``)
        prefix = compaction_id.rstrip("…")
        starting = [e for e in entries if prefix and e.id.startswith(prefix)]
        if len(starting) > 1:
            raise UsageError(f"{prefix!r} is the start of {len(starting)} compaction ids of {store.agent_id!r}: "
                             + ", ".join(e.id for e in starting), hint="give more of the id")
        chosen = starting[0] if starting else None
        compaction_id = chosen.id if chosen else compaction_id
    if chosen is None:
        raise RecordNotFoundError(f"agent {store.agent_id!r} has no compaction {compaction_id!r}",
                                  hint=f"`memcli compactions {store.agent_id}` lists them")
    if chosen.undone:
        raise CompactionError(f"compaction {compaction_id} of {store.agent_id!r} is already undone"
                              + (f" (by {chosen.undone_by})" if chosen.undone_by else ""))
    newer = [e for e in standing if e.ts > chosen.ts or (e.ts == chosen.ts and standing.index(e) > standing.index(chosen))]
    if newer:
        raise CompactionError(
            f"compaction {compaction_id} of {store.agent_id!r} cannot be undone while the newer {newer[-1].id} "
            f"stands{f' (and {len(newer) - 1} more)' if len(newer) > 1 else ''}: undo goes newest first",
            hint=f"`memcli uncompact {store.agent_id} {newer[-1].id}` first")
    return chosen


def _plan(store: AgentStore, entry: CompactionEntry) -> tuple[UndoJournal, UncompactResult]:
    paths = store.paths
    lines = _archive_tail(store, entry)
    if entry.recorded:
        inserts = _recorded_inserts(store, entry, lines)
    else:
        inserts = _merged_inserts(store, entry, lines)
    undo_id = new_id(UNCOMPACT_PREFIX)
    episodic, taken_e, restored_e = _memory_undo(paths.episodic, EpisodicItem, entry, "episodic", EPISODIC_PREFIX)
    semantic, taken_s, restored_s = _memory_undo(paths.semantic, SemanticItem, entry, "semantic", SEMANTIC_PREFIX)
    record = {"kind": UNCOMPACT, "id": undo_id, "ts": time.time(), "compaction_id": entry.id, "traces": len(lines),
              "superseded": {"episodic": taken_e, "semantic": taken_s},
              "restored": {"episodic": restored_e, "semantic": restored_s}}
    st = paths.active.lstat() if paths.active.exists() else None
    journal = UndoJournal(
        undo_id=undo_id, compaction_id=entry.id, agent_id=store.agent_id,
        active={"ino": st.st_ino if st else 0, "size": st.st_size if st else 0},
        archive_keep=lines[0][0] if lines else jsonl.file_size(paths.archive), inserts=inserts, moved=len(lines),
        episodic_size=jsonl.file_size(paths.episodic), semantic_size=jsonl.file_size(paths.semantic),
        ledger_size=jsonl.file_size(paths.ledger), episodic=episodic, semantic=semantic, ledger=[record])
    result = UncompactResult(store.agent_id, entry.id, undo_id, entry.recorded, traces=len(lines),
                             turn_range=entry.turn_range, superseded=len(taken_e) + len(taken_s),
                             restored=len(restored_e) + len(restored_s))
    return journal, result


def _cannot(store: AgentStore, entry: CompactionEntry, why: str) -> CompactionError:
    return CompactionError(f"compaction {entry.id} of {store.agent_id!r} cannot be undone: {why}; nothing was changed",
                           hint=f"`memcli doctor {store.agent_id}` checks the files")


def _archive_tail(store: AgentStore, entry: CompactionEntry) -> list[tuple[int, int, dict]]:
    """``(offset, end, record)`` of the compaction's lines: the last ``entry.traces`` lines of the
    archive, checked to be its own (``record``: the fields the undo reads, not the whole trace)."""
    path = store.paths.archive
    out = []
    if entry.traces:
        for offset, line in jsonl.iter_lines_reverse(path):
            record = jsonl.parse_line(path, line, None, offset)
            out.append((offset, offset + len(line) + 1,
                        {"id": record.get("id"), "turn_id": record.get("turn_id"), "seq": record.get("seq")}))
            if len(out) == entry.traces:
                break
    out.reverse()
    if len(out) != entry.traces or jsonl.file_size(path) != (out[-1][1] if out else jsonl.file_size(path)):
        raise _cannot(store, entry, f"the archive does not end with its {entry.traces} traces")
    ids = [r.get("id") for _, _, r in out]
    if entry.recorded:
        firsts = [run[3] for run in entry.place["runs"]]
        if not firsts or ids[0] != firsts[0] or not set(firsts) <= set(ids):
            raise _cannot(store, entry, "the archive does not end with its traces (their first ids differ)")
    elif entry.trace_ids is not None:
        if set(ids) != set(entry.trace_ids):
            raise _cannot(store, entry, "the traces at the end of the archive are not the ones its summary lists")
    else:
        turns = set(entry.turn_ids)
        if any(r.get("turn_id") not in turns for _, _, r in out):
            raise _cannot(store, entry, "the traces at the end of the archive are not all of its turns")
    return out


def _recorded_inserts(store: AgentStore, entry: CompactionEntry, lines: list) -> list:
    """``[offset, archive_start, archive_end, first_id]`` per run: where each run goes back."""
    runs = entry.place["runs"]
    position = {r.get("id"): k for k, (_, _, r) in enumerate(lines)}
    bounds = [position[run[3]] for run in runs] + [len(lines)]
    if bounds != sorted(bounds):
        raise _cannot(store, entry, "its runs are out of order in the archive")
    inserts = []
    removed = 0
    for k, (start, end, anchor, first_id) in enumerate(runs):
        offset = start - removed
        removed += end - start
        inserts.append([offset, lines[bounds[k]][0], lines[bounds[k + 1] - 1][1], first_id, anchor])
    active = store.paths.active
    if not all(_anchor_at(active, offset, anchor) for offset, _, _, _, anchor in inserts):
        ends = _line_ends(active, {anchor for *_, anchor in inserts if anchor is not None})
        for insert in inserts:
            anchor = insert[4]
            if anchor is not None and anchor not in ends:
                raise _cannot(store, entry, f"the trace {anchor} its traces came after is no longer active")
            insert[0] = 0 if anchor is None else ends[anchor]
    inserts.sort(key=lambda i: i[0])
    return [i[:4] for i in inserts]


def _anchor_at(path, offset: int, anchor: str | None) -> bool:
    """Whether ``offset`` of ``path`` is a line's start and the nearest non-blank line before it
    is the trace ``anchor`` (None: there is none; blank lines kept in the active file lie between)."""
    if offset == 0:
        return anchor is None
    if offset > jsonl.file_size(path):
        return False
    gap_start, found = 0, None
    for start, line in jsonl.iter_lines_reverse(path, end=offset):
        gap_start = start + len(line) + 1
        try:
            found = orjson.loads(line).get("id")
        except (orjson.JSONDecodeError, AttributeError):
            return False
        break
    if gap_start != offset and not _blank_lines(path, gap_start, offset):
        return False   # (offset is inside a line)
    return found == anchor   # None when there is no line before (or it has no id), as recorded


def _blank_lines(path, start: int, end: int) -> bool:
    """Whether bytes ``[start, end)`` of ``path`` are whole blank lines (the rare gap between a
    run's anchor and its place)."""
    with jsonl.open_read(path) as f:
        f.seek(start)
        gap = f.read(end - start)
    return gap.endswith(b"\n") and not gap.strip()


def _line_ends(path, ids: set) -> dict:
    """id -> the offset just past its line, for the traces of ``path`` named in ``ids``."""
    out = {}
    for offset, raw in _raw_lines(path):
        if raw.strip():
            trace_id = jsonl.parse_line(path, raw, None, offset).get("id")
            if trace_id in ids:
                out[trace_id] = offset + len(raw)
    return out


def _raw_lines(path):
    """(offset, line with its newline) of every complete line of ``path``."""
    size = jsonl.file_size(path)
    for offset, raw in jsonl.iter_run_lines(path, [[0, size]]) if size else ():
        if raw.endswith(b"\n"):
            yield offset, raw


def _turn_key(record: dict, store: AgentStore, entry: CompactionEntry) -> tuple[int, int]:
    number = turn_number(str(record.get("turn_id")))
    seq = record.get("seq")
    if number is None or not isinstance(seq, int):
        raise _cannot(store, entry, f"made before the ledger, and trace {record.get('id')} has no turn_NNNN turn id "
                                    "and seq to place it by")
    return number, seq


def _merged_inserts(store: AgentStore, entry: CompactionEntry, lines: list) -> list:
    """A compaction without a record: its lines go back in (turn number, seq) order among the
    active lines (system/developer traces, which never moved, keep their place)."""
    pending = [(_turn_key(r, store, entry), start, end, r["id"]) for start, end, r in lines]
    inserts: list = []

    def put(offset: int, item) -> None:
        if inserts and inserts[-1][0] == offset and inserts[-1][2] == item[1]:
            inserts[-1][2] = item[2]
        else:
            inserts.append([offset, item[1], item[2], item[3]])

    k = 0
    path = store.paths.active
    for offset, line in _raw_lines(path):
        if not line.strip():
            continue
        record = jsonl.parse_line(path, line, None, offset)
        if is_instruction(record.get("trace_type"), record.get("tags")):
            continue
        key = _turn_key(record, store, entry)
        while k < len(pending) and pending[k][0] < key:
            put(offset, pending[k])
            k += 1
    end = jsonl.file_size(path)
    while k < len(pending):
        put(end, pending[k])
        k += 1
    return inserts


def _memory_undo(path, cls, entry: CompactionEntry, kind: str, prefix: str) -> tuple[list, list, list]:
    """(records to append, ids superseded, ids restored) for one tier (module docstring)."""
    records = [r for _, _, r in jsonl.iter_records(path)]
    for r in records:
        from_record(cls, r)  # a bad item fails here, before anything is written
    position = {r["id"]: k for k, r in enumerate(records)}
    superseded = superseded_ids(records)
    live = [r for r in records if r["id"] not in superseded]
    gone = [r["id"] for r in live if r.get("compaction_id") == entry.id]
    back = [records[position[i]] for i in dict.fromkeys(entry.superseded.get(kind) or ())
            if i in position and i in superseded]
    if not gone and not back:
        return [], [], []

    def rank(r: dict) -> int:
        return position.get(r.get("restores") or r["id"], position[r["id"]])

    remaining = [r for r in live if r["id"] not in set(gone)]
    target = sorted(remaining + back, key=rank)
    k = 0
    while k < len(remaining) and remaining[k]["id"] == target[k]["id"]:
        k += 1
    now = time.time()
    out = []
    if gone:
        tomb_id = new_id(prefix)
        text = f"(uncompacted {entry.id})"
        tomb = {"id": tomb_id, "ts": now, "tags": [UNCOMPACTED_TAG], "salience": 0.0, "supersedes": gone + [tomb_id],
                "uncompact": entry.id}
        tomb.update({"turn_ids": [], "summary": text} if kind == "episodic" else {"fact": text, "confidence": 0.0})
        out.append(to_record(from_record(cls, tomb)))
    is_live = {r["id"] for r in live}
    restored = []
    for r in target[k:]:
        copy = dict(r)
        copy["id"] = new_id(prefix)
        copy["restores"] = r.get("restores") or r["id"]
        copy["supersedes"] = [r["id"]] if r["id"] in is_live else []
        out.append(to_record(from_record(cls, copy)))
        if r["id"] not in is_live:
            restored.append(r["id"])
    return out, gone, restored
