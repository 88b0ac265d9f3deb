"""Integrity checks of one agent, with file and line, and the repairs that lose no data
(``memcli doctor AGENT [--repair]``).

The check reads the files exactly as they are — before anything recovers — with a lenient
reader that goes on past a bad line. Every finding has a severity:

``error`` — the store breaks an invariant readers or writers rely on (docs/design.md §1–§3):

* ``unfinished-compaction`` — ``.compaction.journal`` exists. Repair: finish or undo it with
  :func:`memcli.store.journal.recover`, as the next write would.
* ``torn-tail`` — the last line has no newline (a crash mid-append, or a write in progress).
  Repair: a complete record only lost its newline and gets it back; otherwise the partial bytes
  are cut off — after being copied to ``<file>.corrupt-lines``.
* ``bad-json`` / ``not-an-object`` / ``invalid-record`` — a line readers cannot use (not JSON,
  JSON that is not an object, an object that is not a record of that file: the reason says
  what is missing). Repair: the line moves, byte for byte, to ``<file>.corrupt-lines`` (fix it
  and ingest it again if it matters); the file then parses again.
* ``duplicate-id`` — an id twice in one file. Repair: a later byte-identical copy is dropped;
  copies that differ are left for a person to decide.
* ``id-in-both-tiers`` — a trace id in both the active file and the archive (an interrupted
  compaction done by hand, a copy). Repair: a byte-identical active copy is dropped (the
  archived one stays); copies that differ are left.
* ``seq-backwards`` — within a turn a trace's ``seq`` is lower than or equal to the one before
  it in the same file (across active and archive it may restart: pinned system/developer traces
  stay active when their turn is compacted; in the archive it may restart where a second
  compaction pass of the same turn begins); readers assume a turn's traces come in rising ``seq`` (reading recent turns
  from the end stops at ``seq`` 1). Not repaired (renumbering would rewrite history).

* ``memory-file-conflict`` — a working-memory record (``memory_files.jsonl``) that does not
  apply to the tree the records before it leave (an edit of a missing file, a create of an
  existing path): readers refuse the file. Not repaired (which change is wrong is for a person
  to decide). Bad lines, duplicate ids and torn tails of this file are reported (and, except
  duplicates, repaired) as above.

* The compaction ledger (``.compactions.jsonl``, :mod:`memcli.store.ledger`): a line that is not
  a ledger record (``bad-json``, ``not-an-object``, ``invalid-record``: no string ``id`` and
  ``kind``) and a ``torn-tail`` are reported and repaired as above. Until a bad line is repaired,
  ``compact``, ``uncompact``, ``compactions``, ``stats`` and ``export --with-memory`` refuse,
  naming the file and line (a torn tail they skip, as every reader does).

* The tool-result summaries (``result_summaries.jsonl``, :mod:`memcli.store.result_summaries`):
  a line that is not a summary (``bad-json``, ``not-an-object``, ``invalid-record``: no string
  ``id``, ``trace_id`` and ``summary`` and integer ``chars``) and a ``torn-tail`` are reported
  and repaired as above. Until a bad line is repaired, ``summarize-results`` (dry run alike),
  ``snapshot --expire …:summary`` and ``stats`` refuse, naming the file and line.

``warning`` — legal, but worth a look; not repaired:

* ``memory-file-over-limit`` — a working-memory file over 100 KB, or more than 2,000 files
  (written by something other than the memory tool, which refuses both).
* ``interrupted-ingest`` — ``.ingest.pending`` exists: an ingest did not finish (or is running
  right now). Not an integrity problem: the next command that opens the agent rolls it back
  (its events were never acknowledged; an interrupted *first* import leaves no agent), and
  ``--repair`` rolls it back now. Reported as what it is, so that it does not look like an
  error that the next command makes disappear.

* ``orphan-result`` — a tool result whose call is nowhere in the history (archive and active,
  paired first-in-first-out per ``tool_call_id``).
* ``stale-pending-call`` — a tool call without a result while *later turns exist* (a turn first
  seen after the call's turn). A call in the newest turn is simply in flight and not reported.
  It does not block anything: compaction archives an abandoned call with its step and the
  summary says it was never answered (docs/design.md §4); ingest its result (or a ``tool_error``)
  if the call did finish.

``info`` — harmless: the state cache (``.state.json``, ``.ids``) disagrees with the files; it
is rebuilt on the next write, or now with ``--repair``.

``warning`` ``search-index`` — the search index (``.search.sqlite``, a cache) cannot be used or
has drifted from the files (:func:`memcli.store.search_index.verify`). ``--repair`` rebuilds it;
a search rebuilds an unusable one too.

``--repair`` works under the agent lock in this order: copy torn tails aside, roll back an
interrupted ingest, recover an unfinished compaction, repair torn tails, move bad lines aside and
drop byte-identical duplicates (each file rewritten through a temp file and ``os.replace``), then
rebuild the cache; finally it checks again. If the compaction cannot be recovered, nothing after
that step is done: its journal records byte offsets that a rewrite would invalidate. Each finding says whether it was fixed and how.
Exit status (CLI): 1 while an error remains (with ``--strict``, a warning too), else 0.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import orjson

from memcli.errors import CorruptStoreError
from memcli.models import EpisodicItem, RawTrace, SemanticItem, ToolStatus, from_record
from memcli.store import jsonl, ledger, memory_files, result_summaries
from memcli.store.agent import AgentStore, trace_from_record
from memcli.store.repair import QUARANTINE_SUFFIX
from memcli.tool_interactions import iter_tool_pairs

ERROR, WARNING, INFO = "error", "warning", "info"
# the JSONL files whose records are plain dicts, each kind with the store's own rule for a line
_RECORD_PROBLEMS = {"memory_file": memory_files.record_problem, "ledger": ledger.record_problem,
                    "result_summary": result_summaries.record_problem}


@dataclass
class Finding:
    severity: str           # error, warning or info
    code: str
    file: str | None        # path of the file concerned (None: the agent as a whole)
    line: int | None        # 1-based line in that file
    message: str
    fixable: bool           # --repair can fix it without losing data
    action: str | None      # what --repair does (or did) about it
    fixed: bool = False
    key: tuple = field(default=(), repr=False, compare=False)   # identifies it across re-checks
    offset: int | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict:
        return {"severity": self.severity, "code": self.code, "file": self.file, "line": self.line,
                "message": self.message, "fixable": self.fixable, "fixed": self.fixed, "action": self.action}

    def location(self) -> str:
        if self.file is None:
            return ""
        return f"{self.file}:{self.line}" if self.line is not None else self.file


@dataclass
class DoctorReport:
    agent: str
    findings: list
    repaired: bool          # --repair ran
    actions: list           # what the repair did, in order

    def remaining(self, *, strict: bool = False) -> list:
        counted = (ERROR, WARNING) if strict else (ERROR,)
        return [f for f in self.findings if f.severity in counted and not f.fixed]


# ---------------------------------------------------------------------- reading leniently

def _lines(path: Path) -> Iterator[tuple[int, int, bytes, bool]]:
    """(line number, offset, bytes without the newline, terminated) for every line."""
    try:
        f = jsonl.open_read(path)
    except FileNotFoundError:
        return
    with f:
        offset = 0
        for number, raw in enumerate(f, 1):
            terminated = raw.endswith(b"\n")
            yield number, offset, raw[:-1] if terminated else raw, terminated
            offset += len(raw)


def _digest(raw: bytes) -> bytes:
    return hashlib.blake2b(raw, digest_size=16).digest()


class _Checker:
    """One check of one agent (see the module docstring)."""

    def __init__(self, store: AgentStore):
        self.store = store
        self.paths = store.paths
        self.findings: list[Finding] = []
        self.counts = {"active": 0, "archive": 0}
        self.pending_ids: set[str] = set()
        self._keys: dict[tuple, int] = {}
        self.journal_finding: Finding | None = None
        self.in_both_mid_compaction = 0

    def add(self, severity, code, path: Path | None, line, message, *, fixable=False, action=None, key=(),
            offset=None) -> Finding:
        key = (code,) + tuple(key)
        seen = self._keys.get(key, 0)  # the n-th finding with the same identity (e.g. a third copy)
        self._keys[key] = seen + 1
        finding = Finding(severity, code, str(path) if path is not None else None, line, message, fixable, action,
                          key=key + (seen,), offset=offset)
        self.findings.append(finding)
        return finding

    # -------------------------------------------------------------- agent-level markers
    def check_markers(self) -> None:
        marker = self.paths.ingest_marker
        if marker.exists():
            detail = ""
            try:
                size = int(orjson.loads(marker.read_bytes())["active_size"])
                extra = jsonl.file_size(self.paths.active) - size
                if extra > 0:
                    detail = f"{extra:,} bytes after byte {size:,} of {self.paths.active.name} were never acknowledged"
                if self.paths.first_import_pending():
                    detail += ("; " if detail else "") + "the agent's first import: no agent remains"
            except (OSError, ValueError, KeyError, TypeError, orjson.JSONDecodeError):
                detail = "its marker is unreadable and will be discarded"
            self.add(WARNING, "interrupted-ingest", marker, None,
                     "interrupted ingest: will be rolled back; --repair rolls it back now"
                     + (f" ({detail})" if detail else ""), fixable=True,
                     action="roll the unfinished ingest back (its events were never acknowledged)")
        journal = self.paths.compaction_journal
        if journal.exists():
            what = f"{jsonl.file_size(journal):,}-byte journal"
            op = "compaction"
            try:
                data = orjson.loads(journal.read_bytes())
                if isinstance(data, dict) and data.get("compaction_id"):
                    moved = data.get("moved")
                    op = "uncompact" if data.get("op") == "uncompact" else op   # memcli.store.journal.UndoJournal
                    what = f"{data['compaction_id']}" + (f", moving {moved:,} traces" if isinstance(moved, int) else "")
            except (OSError, orjson.JSONDecodeError):
                pass
            self.journal_finding = self.add(
                ERROR, "unfinished-compaction", journal, None,
                f"{'an' if op == 'uncompact' else 'a'} {op} did not finish ({what})", fixable=True,
                action=f"finish the {op} from its journal, as the next write would")

    # -------------------------------------------------------------- one data file
    def _tail(self, path: Path, number: int, offset: int, raw: bytes) -> None:
        try:
            complete = isinstance(orjson.loads(raw), dict)
        except orjson.JSONDecodeError:
            complete = False
        if complete:
            action = "add the missing newline (the record is complete)"
        else:
            action = f"cut the {len(raw):,} partial bytes off (a copy goes to {path.name}{QUARANTINE_SUFFIX})"
        self.add(ERROR, "torn-tail", path, number,
                 f"the last line has no newline ({len(raw):,} bytes): a write was cut short, or is in progress",
                 fixable=True, action=action, key=(str(path),), offset=offset)

    def _bad_line(self, code: str, path: Path, number: int, offset: int, raw: bytes, message: str) -> None:
        self.add(ERROR, code, path, number, message, fixable=True,
                 action=f"move the line to {path.name}{QUARANTINE_SUFFIX}",
                 key=(str(path), _digest(raw)), offset=offset)

    def records(self, path: Path, kind: str) -> Iterator[tuple[int, int, bytes, dict, object]]:
        """(line, offset, raw, record, model) of each usable line; findings for the others."""
        for number, offset, raw, terminated in _lines(path):
            if not raw.strip():
                continue
            if not terminated:
                self._tail(path, number, offset, raw)
                continue
            try:
                record = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                self._bad_line("bad-json", path, number, offset, raw, f"not valid JSON ({exc})")
                continue
            if not isinstance(record, dict):
                self._bad_line("not-an-object", path, number, offset, raw,
                               f"a JSON {type(record).__name__}, not an object")
                continue
            try:
                if kind == "trace":
                    model = trace_from_record(path, number, offset, record)
                elif kind in _RECORD_PROBLEMS:   # a record the store reads as it is: its rule's word
                    problem = _RECORD_PROBLEMS[kind](record)
                    if problem is not None:
                        raise CorruptStoreError(str(path), number, problem)
                    model = record
                else:
                    if not isinstance(record.get("id"), str):
                        raise CorruptStoreError(str(path), number, "item without a valid 'id'")
                    cls = EpisodicItem if kind == "episodic" else SemanticItem
                    try:
                        model = from_record(cls, record)
                    except (TypeError, KeyError) as exc:
                        raise CorruptStoreError(str(path), number, f"not a {cls.__name__} record ({exc})") from None
            except CorruptStoreError as exc:
                self._bad_line("invalid-record", path, number, offset, raw, exc.reason)
                continue
            yield number, offset, raw, record, model

    # -------------------------------------------------------------- traces
    def check_traces(self) -> None:
        seen = {"archive": set(), "active": set()}     # hash(id) of every trace, per file
        suspects: set[str] = set()                      # ids that may be duplicated
        turns: dict[str, list] = {}                     # turn -> [last seq, line, order, file]
        open_calls: dict[str, tuple[Path, int]] = {}    # call trace id -> where it is
        where: list = [None, None]                      # the trace being read

        def traces() -> Iterator[RawTrace]:
            for tier, path in (("archive", self.paths.archive), ("active", self.paths.active)):
                mine, other = seen[tier], seen["archive"] if tier == "active" else None
                for number, _offset, _raw, _record, trace in self.records(path, "trace"):
                    self.counts[tier] += 1
                    h = hash(trace.id)
                    if h in mine or (other is not None and h in other):
                        suspects.add(trace.id)  # a copy: the duplicate check reports it, not the seq check
                    else:
                        self._seq(trace, path, number, turns)
                    mine.add(h)
                    where[0], where[1] = path, number
                    if trace.trace_type == "tool_call":
                        open_calls[trace.id] = (path, number)
                    yield trace

        for pair in iter_tool_pairs(traces(), ordered=False):
            interaction = pair.interaction
            if interaction.status is ToolStatus.ORPHAN:
                self.add(WARNING, "orphan-result", where[0], where[1],
                         f"tool result {interaction.result_trace_id!r} answers call id "
                         f"{interaction.tool_call_id!r}, which has no call before it (turn {interaction.turn_id})",
                         key=(interaction.result_trace_id,))
            elif interaction.status is ToolStatus.PENDING:
                path, number = open_calls.pop(interaction.call_trace_id, (None, None))
                if path == self.paths.active:
                    self.pending_ids.add(interaction.call_trace_id)
                turn = turns.get(interaction.turn_id)
                later = len(turns) - 1 - turn[2] if turn is not None else 0
                if later > 0:
                    self.add(WARNING, "stale-pending-call", path, number,
                             f"tool call {interaction.tool_call_id!r} ({interaction.tool_name}, "
                             f"{interaction.turn_id}) has no result and {later:,} later "
                             f"{'turns exist' if later != 1 else 'turn exists'}: it was never answered (compaction "
                             "archives it with its step)",
                             key=(interaction.call_trace_id,))
            else:
                open_calls.pop(interaction.call_trace_id, None)
        seen.clear()
        if suspects:
            self._duplicates(suspects)

    def _seq(self, trace: RawTrace, path: Path, number: int, turns: dict) -> None:
        """Track turn order (``turns``) and check that seq rises within a turn in one file.

        Per file: compaction moves a turn to the archive but leaves its system/developer traces
        active, so across the two files a turn's seq legitimately restarts. In the archive it may
        restart too: a long turn compacted in two passes archives its oldest steps first and its
        ask with the rest later (the archive is append-only, in compaction order)."""
        seq = trace.seq if isinstance(trace.seq, int) and not isinstance(trace.seq, bool) else None
        state = turns.get(trace.turn_id)
        if state is None or state[3] != path:
            order = len(turns) if state is None else state[2]
            turns[trace.turn_id] = [seq, number, order, path]
            return
        last, last_line, _, _ = state
        if path == self.paths.archive and seq is not None and last is not None and seq < last:
            state[0], state[1] = seq, number   # a later compaction pass of the same turn (below)
            return
        if seq is not None and last is not None and seq <= last:
            self.add(ERROR, "seq-backwards", path, number,
                     f"seq {seq} in {trace.turn_id} after seq {last} (line {last_line}); a turn's traces must rise in seq",
                     key=(trace.id,))
        if seq is not None and (last is None or seq > last):
            state[0], state[1] = seq, number

    def _duplicates(self, suspects: set[str]) -> None:
        """Second pass over the trace files for the few ids the first pass suspected."""
        places: dict[str, list] = {}
        for path in (self.paths.archive, self.paths.active):
            for number, offset, raw, terminated in _lines(path):
                if not terminated or not raw.strip():
                    continue
                try:
                    record = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(record, dict) and record.get("id") in suspects:
                    places.setdefault(record["id"], []).append((path, number, offset, raw))
        for trace_id, found in places.items():
            self._report_copies(trace_id, found)

    def _report_copies(self, trace_id: str, found: list) -> None:
        first_by_file: dict[Path, tuple] = {}
        for path, number, offset, raw in found:
            first = first_by_file.get(path)
            if first is None:
                first_by_file[path] = (number, raw)
                continue
            same = raw == first[1]
            self.add(ERROR, "duplicate-id", path, number,
                     f"id {trace_id!r} is also on line {first[0]}" + (" (a byte-identical copy)" if same else
                                                                      " with different content"),
                     fixable=same, action="drop this copy" if same else None,
                     key=(str(path), trace_id, _digest(raw)), offset=offset)
        archived = first_by_file.get(self.paths.archive)
        active = first_by_file.get(self.paths.active)
        if archived and active and self.journal_finding is not None:
            self.in_both_mid_compaction += 1  # the compaction in progress moves it: not a finding of its own
        elif archived and active:
            same = archived[1] == active[1]
            number = active[0]
            offset = next(o for p, n, o, _ in found if p == self.paths.active and n == number)
            self.add(ERROR, "id-in-both-tiers", self.paths.active, number,
                     f"trace {trace_id!r} is also archived ({self.paths.archive.name}:{archived[0]})"
                     + (", byte-identical" if same else ", with different content"),
                     fixable=same, action="drop the active copy (the archived one stays)" if same else None,
                     key=(trace_id,), offset=offset)

    # -------------------------------------------------------------- memory files
    def check_memory(self) -> None:
        for kind, path in (("episodic", self.paths.episodic), ("semantic", self.paths.semantic)):
            first: dict[str, tuple[int, bytes]] = {}
            for number, offset, raw, _record, item in self.records(path, kind):
                earlier = first.get(item.id)
                if earlier is None:
                    first[item.id] = (number, raw)
                    continue
                same = raw == earlier[1]
                self.add(ERROR, "duplicate-id", path, number,
                         f"id {item.id!r} is also on line {earlier[0]}" + (" (a byte-identical copy)" if same else
                                                                           " with different content"),
                         fixable=same, action="drop this copy" if same else None,
                         key=(str(path), item.id, _digest(raw)), offset=offset)

    # -------------------------------------------------------------- working memory
    def check_working_memory(self) -> None:
        from memcli.store.memory_files import MAX_FILE_BYTES, MAX_FILES, MemoryTree, TreeError

        path = self.paths.memory_files
        tree = MemoryTree()
        first: dict[str, int] = {}
        for number, offset, raw, record, _ in self.records(path, "memory_file"):
            record_id = record["id"]
            if record_id in first:
                self.add(ERROR, "duplicate-id", path, number, f"id {record_id!r} is also on line {first[record_id]}",
                         key=(str(path), record_id, _digest(raw)), offset=offset)
            first.setdefault(record_id, number)
            try:
                tree.apply(record)
            except TreeError as exc:
                self.add(ERROR, "memory-file-conflict", path, number,
                         f"{record.get('op')} of {record.get('path')} does not apply to the files before it: {exc}",
                         key=(str(path), _digest(raw)), offset=offset)
        for file_path, text in tree.sorted_files():
            size = len(text.encode("utf-8", "surrogatepass"))
            if size > MAX_FILE_BYTES:
                self.add(WARNING, "memory-file-over-limit", path, None,
                         f"{file_path} is {size:,} bytes (the memory tool allows {MAX_FILE_BYTES:,})", key=(file_path,))
        if len(tree.files) > MAX_FILES:
            self.add(WARNING, "memory-file-over-limit", path, None,
                     f"/memories holds {len(tree.files):,} files (the memory tool allows {MAX_FILES:,})")

    # -------------------------------------------------------------- the compaction ledger
    def check_ledger(self) -> None:
        """Bad lines and a torn tail of ``.compactions.jsonl`` (memcli.store.ledger), as for
        every JSONL file: ``compact`` and ``uncompact`` refuse while one is there."""
        for _ in self.records(self.paths.ledger, "ledger"):
            pass

    # -------------------------------------------------------------- the tool-result summaries
    def check_result_summaries(self) -> None:
        """Bad lines and a torn tail of ``result_summaries.jsonl`` (memcli.store.result_summaries),
        as for every JSONL file: ``summarize-results`` refuses while a line is bad."""
        for _ in self.records(self.paths.result_summaries, "result_summary"):
            pass

    # -------------------------------------------------------------- the cache
    def check_cache(self) -> None:
        from memcli.store.state import TurnState

        path = self.paths.state
        if not path.exists():
            return  # never written yet (e.g. a store written by AutoByteus): built on the next write
        problem = None
        try:
            state = TurnState.from_json(orjson.loads(path.read_bytes()))
        except (OSError, ValueError, KeyError, TypeError, orjson.JSONDecodeError):
            state = None
            problem = "cannot be read (or is from another memcli version)"
        if state is not None:
            active = os.lstat(self.paths.active) if self.paths.active.exists() else None
            archive = os.lstat(self.paths.archive) if self.paths.archive.exists() else None
            a_id = (active.st_ino, active.st_size) if active else (0, 0)
            r_id = (archive.st_ino, archive.st_size) if archive else (0, 0)
            if (state.archive.ino, state.archive.size) != r_id or (
                    state.active.size and (state.active.ino != a_id[0] or state.active.size > a_id[1])):
                problem = "describes other versions of the trace files"
            elif state.active.size == a_id[1]:
                cached_pending = {e[1] for q in state.pending.values() for e in q}
                if (state.active_count, state.archive_count) != (self.counts["active"], self.counts["archive"]):
                    problem = (f"counts {state.active_count:,} active / {state.archive_count:,} archived traces; "
                               f"the files hold {self.counts['active']:,} / {self.counts['archive']:,}")
                elif cached_pending != self.pending_ids:
                    problem = (f"lists {len(cached_pending):,} unanswered calls; the files have "
                               f"{len(self.pending_ids):,}")
                elif jsonl.file_size(self.paths.ids) < state.ids_count * 16:
                    problem = f"expects {state.ids_count:,} ids in {self.paths.ids.name}, which is shorter"
        if problem:
            self.add(INFO, "stale-cache", path, None, f"the state cache {problem}; it is rebuilt on the next write",
                     fixable=True, action="rebuild the cache from the files")


    def check_search_index(self) -> None:
        from memcli.store import search_index

        problem = search_index.verify(self.paths)
        if problem:
            self.add(WARNING, "search-index", search_index.index_path(self.paths), None,
                     f"the search index {problem}", fixable=True, action="rebuild the search index from the files")


_FILE_RANK = {".ingest.pending": 0, ".compaction.journal": 1, "raw_traces.jsonl": 2,
              "raw_traces_archive.jsonl": 3, "episodic.jsonl": 4, "semantic.jsonl": 5, "memory_files.jsonl": 6,
              ".compactions.jsonl": 7, "result_summaries.jsonl": 8}


def require_checkable(store: AgentStore) -> AgentStore:
    """The agent, or AgentNotFoundError: an agent's directory holding only an interrupted first
    import is not an agent (``agents`` does not list it) but is something to check and repair."""
    if not store.exists() and not store.paths.ingest_marker.exists():
        store.require()
    return store


def check(store: AgentStore) -> list[Finding]:
    """Every finding, ordered by file and line. Reads only; recovers nothing. After ``--repair``
    rolled back an agent's interrupted first import there is nothing left: no findings."""
    if not store.paths.dir.is_dir():
        store.require()
    checker = _Checker(store)
    checker.check_markers()
    checker.check_traces()
    checker.check_memory()
    checker.check_working_memory()
    checker.check_ledger()
    checker.check_result_summaries()
    checker.check_cache()
    checker.check_search_index()
    if checker.in_both_mid_compaction:
        n = checker.in_both_mid_compaction
        checker.journal_finding.message += (f"; {n:,} trace{'s are' if n != 1 else ' is'} in both the active file "
                                            "and the archive until it finishes")
    return sorted(checker.findings,
                  key=lambda f: (_FILE_RANK.get(Path(f.file).name, 9) if f.file else -1, f.line or 0))


def repair(store: AgentStore) -> DoctorReport:
    """Check, repair what can be repaired without losing data, check again (under the lock;
    the writes are :func:`memcli.store.repair.repair_files`)."""
    from memcli.store.repair import repair_files

    require_checkable(store)
    before, after, actions = repair_files(store, check)
    # fixed findings as they were found; the others as they are now (their lines may have moved)
    now = {f.key: f for f in after}
    findings = []
    for finding in before:
        current = now.pop(finding.key, None)
        if current is None:
            finding.fixed = True
            findings.append(finding)
        else:
            findings.append(current)
    findings += now.values()  # found only after the repair (e.g. behind an interrupted ingest)
    return DoctorReport(store.agent_id, findings, True, actions)


def diagnose(store: AgentStore) -> DoctorReport:
    """The check alone: what is wrong, and what ``--repair`` would do."""
    return DoctorReport(store.agent_id, check(require_checkable(store)), False, [])
