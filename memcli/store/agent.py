"""One agent's memory: reading it, and writing it safely.

Writing goes through :meth:`AgentStore.writer`, which takes the agent lock and then, before
anything else, brings the agent to a consistent state:

1. an interrupted ingest (``.ingest.pending`` exists) is rolled back: the active file and the id
   index are cut back to their sizes before that ingest and the previous state is restored — an
   ingest that did not finish is not acknowledged, so none of it stays (when it was the agent's
   first, the active file goes too: no empty agent is left behind, and until then
   :meth:`AgentPaths.exists` does not count it as an agent);
2. an interrupted compaction (``.compaction.journal`` exists) is finished or undone by
   :func:`memcli.store.journal.recover`;
3. torn last lines of the data files are repaired (:func:`memcli.store.jsonl.repair_tail`);
4. the state cache is loaded, caught up with records appended by someone else, or rebuilt.

An ingest commit (:meth:`WriteSession.append_staged`) writes the rollback marker, appends the
staged lines and fsyncs, appends the episodic items of the harness compactions among them
(memcli.store.harness_items; the marker then holds ``episodic.jsonl``'s size too, and a rollback
cuts it back, or removes it when this ingest made it), appends the new id digests, writes the new state, then removes the
marker. Readers take no lock; they only recover (with the lock) when a marker or journal is
present, and they never see a half-written line.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator

import orjson

from memcli.errors import AgentNotFoundError, CorruptStoreError, InputError, StoreError, UsageError
from memcli.models import (
    HARNESS_COMPACTION,
    EpisodicItem,
    RawTrace,
    SemanticItem,
    from_record,
    record_builder,
    record_builders,
    supersedes_of,
    to_record,
)
from memcli.store import jsonl
from memcli.store.id_index import IdIndex, digest
from memcli.store.layout import AgentPaths, agent_paths, ensure_dir
from memcli.store.lock import agent_lock
from memcli.store.memory_files import MEMORY_FILE_PREFIX, MemoryTree, TreeError, version_view
from memcli.store.state import FileIdentity, TurnState


def _identity(path: Path) -> FileIdentity:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return FileIdentity(0, 0)
    return FileIdentity(st.st_ino, st.st_size)


def _record_to(cls, path: Path, line_no: int | None, offset: int, record: dict):
    try:
        return from_record(cls, record)
    except (TypeError, KeyError) as exc:
        if line_no is None:
            line_no = jsonl.line_number_at(path, offset)
        raise CorruptStoreError(str(path), line_no, f"not a {cls.__name__} record ({exc})") from None


TRACE_STRINGS = ("id", "turn_id", "trace_type")
# key order -> builder of a trace, or None when one of its TRACE_STRINGS is not a str (a reader
# may call ``TRACE_BUILDERS.get(tuple(record))`` itself; trace_from_record does the rest)
TRACE_BUILDERS = record_builders(RawTrace, TRACE_STRINGS)


def trace_from_record(path: Path, line_no: int | None, offset: int, record: dict) -> RawTrace:
    # the usual record: a key order seen before, whose builder never raises; it builds the trace
    # when the string checks below pass (the loop reports the first bad key)
    if type(record) is dict:
        key = tuple(record)
        build = TRACE_BUILDERS.get(key) or record_builder(RawTrace, key, TRACE_STRINGS)
        if build is not None:
            trace = build(record)
            if trace is not None:
                return trace
    for key in TRACE_STRINGS:
        if not isinstance(record.get(key), str):
            if line_no is None:
                line_no = jsonl.line_number_at(path, offset)
            raise CorruptStoreError(str(path), line_no, f"trace without a valid {key!r}")
    return _record_to(RawTrace, path, line_no, offset, record)


class StoredTrace:
    """A trace with where it lives (``tier`` is "active" or "archive").

    (Plain classes rather than dataclasses for the small helpers on the ingest path: creating a
    dataclass costs ~1.5 ms at import, and ``memcli ingest`` runs once per event.)"""

    __slots__ = ("trace", "tier", "offset")

    def __init__(self, trace: RawTrace, tier: str, offset: int):
        self.trace, self.tier, self.offset = trace, tier, offset


class AgentStore:
    """One agent's memory: ``memory_dir/agents/<agent_id>/`` (the id is validated first).

    Reading needs no lock and never writes, except that a reader finding an interrupted ingest
    or compaction recovers it under the lock first (:meth:`recover_if_needed`): ``iter_traces``
    (archive then active, lazily), ``iter_recent_turns`` / ``last_turns`` (from the end of the
    active file), ``live_memory`` (the newest live
    summaries and facts, read from the end), ``find`` (a record by id), ``read_state``.
    Writing goes through :meth:`writer` — a :class:`WriteSession` under the agent lock — and
    nowhere else. Creating an AgentStore touches no file.
    """

    def __init__(self, memory_dir: str | os.PathLike, agent_id: str):
        self.paths: AgentPaths = agent_paths(memory_dir, agent_id)

    @property
    def agent_id(self) -> str:
        return self.paths.agent_id

    def exists(self) -> bool:
        return self.paths.exists()

    def require(self) -> "AgentStore":
        """Raise :class:`AgentNotFoundError` (exit 3) unless the agent exists."""
        if not self.exists():
            raise AgentNotFoundError(
                f"no agent {self.agent_id!r} in {self.paths.memory_dir} "
                f"(looked for {self.paths.dir}); `memcli agents` lists the agents there"
            )
        return self

    def counting_cache(self, *, save: bool = True, keep_new: int | None = None):
        """A context in which token counts come from, and go to, this agent's rebuildable count
        cache (:mod:`memcli.store.token_counts`): ``with store.counting_cache(): ...``. With
        ``save=False`` counts only come from it (a command that writes nothing: ``--dry-run``);
        ``keep_new``: :class:`memcli.store.token_counts.TokenCountCache`."""
        from memcli.store.token_counts import counting_cache

        return counting_cache(self.paths.token_counts, save=save, keep_new=keep_new)

    # ------------------------------------------------------------------ writing
    @contextmanager
    def writer(self, *, create: bool = True) -> Iterator["WriteSession"]:
        """A :class:`WriteSession` under the agent lock. With ``create`` the agent's directory is
        made if needed; a session that made it and wrote no data file (a rejected or empty
        import) takes it away again, so a failed first write leaves no agent behind."""
        if create:
            ensure_dir(self.paths.memory_dir)
        with agent_lock(self.paths):
            created = create and not self.paths.dir.exists()
            if create:
                self.paths.ensure()
            elif not self.paths.dir.is_dir():
                self.require()
            try:
                session = WriteSession(self)
                session.open()
                yield session
            finally:
                if created and not self.paths.exists():
                    _discard_new_dir(self.paths.dir)

    def recover_if_needed(self) -> None:
        """For readers: finish an interrupted ingest or compaction (takes the lock only then)."""
        if self.paths.ingest_marker.exists() or self.paths.compaction_journal.exists():
            with self.writer(create=False):
                pass

    # ------------------------------------------------------------------ reading
    def iter_traces(self, *, archive: bool = False, active: bool = True) -> Iterator[StoredTrace]:
        """Traces in store order: archive first (when asked), then active. Lazy, O(1) memory."""
        self.recover_if_needed()
        tiers = []
        if archive:
            tiers.append(("archive", self.paths.archive))
        if active:
            tiers.append(("active", self.paths.active))
        for tier, path in tiers:
            for line_no, offset, record in jsonl.iter_records(path):
                yield StoredTrace(trace_from_record(path, line_no, offset, record), tier, offset)

    def iter_active(self) -> Iterator[RawTrace]:
        for stored in self.iter_traces():
            yield stored.trace

    def iter_recent_turns(self) -> Iterator[tuple[str, list[RawTrace]]]:
        """Active turns newest first, each complete and in file order, read from the end.

        A turn is complete once its first trace (``seq`` 1) has been read: every trace of a turn
        comes after its first one. The cost depends on how many turns the caller takes, not on
        the size of the file. Turns whose first trace has no ``seq`` 1 (foreign data) are
        yielded when the start of the file is reached.
        """
        self.recover_if_needed()
        path = self.paths.active
        collected: dict[str, list[tuple[int, dict]]] = {}
        for offset, record in jsonl.iter_records_reverse(path):
            turn_id = record.get("turn_id")
            if not isinstance(turn_id, str):
                trace_from_record(path, None, offset, record)  # raises with the line
            collected.setdefault(turn_id, []).append((offset, record))
            seq = record.get("seq")
            if isinstance(seq, int) and seq <= 1:
                items = collected.pop(turn_id)
                items.reverse()
                yield turn_id, [trace_from_record(path, None, o, r) for o, r in items]
        rest = sorted(collected.items(), key=lambda kv: kv[1][-1][0], reverse=True)
        for turn_id, items in rest:
            items.reverse()
            yield turn_id, [trace_from_record(path, None, o, r) for o, r in items]

    def last_turns(self, n: int) -> list[tuple[str, list[RawTrace]]]:
        """The last ``n`` active turns, oldest first."""
        out = []
        if n <= 0:
            return out
        for item in self.iter_recent_turns():
            out.append(item)
            if len(out) >= n:
                break
        out.reverse()
        return out

    def iter_episodic(self) -> Iterator[EpisodicItem]:
        path = self.paths.episodic
        for line_no, offset, record in jsonl.iter_records(path):
            yield _record_to(EpisodicItem, path, line_no, offset, record)

    def iter_semantic(self) -> Iterator[SemanticItem]:
        path = self.paths.semantic
        for line_no, offset, record in jsonl.iter_records(path):
            yield _record_to(SemanticItem, path, line_no, offset, record)

    def live_memory(self, max_episodic: int | None = None, max_semantic: int | None = None, *,
                    harness: bool = False) -> tuple[list[EpisodicItem], list[SemanticItem]]:
        """Items not superseded by a later item, oldest first; the last N of each when given.

        Read from the end of the files: a later item's ``supersedes`` is always seen before the
        items it replaces, so the read stops as soon as enough live items are found.

        The items of imported harness compactions (memcli.store.harness_items) are left out
        unless ``harness``: they are the harness's record, not memcli's rolling memory — never
        rolled up, not counted in ``max_episodic_items``, not in the snapshot's default bundle.
        """
        def newest_live(path: Path, cls, limit):
            superseded: set = set()
            out = []
            if limit is not None and limit <= 0:
                return out
            for offset, record in jsonl.iter_records_reverse(path):
                item = _record_to(cls, path, None, offset, record)
                # memcli.models.superseded_ids, read from the end (before the check: a tombstone
                # lists its own id)
                superseded.update(supersedes_of(item))
                if item.id not in superseded and (harness or not (item.extra and HARNESS_COMPACTION in item.extra)):
                    out.append(item)
                    if limit is not None and len(out) >= limit:
                        break
            out.reverse()
            return out

        self.recover_if_needed()
        return (newest_live(self.paths.episodic, EpisodicItem, max_episodic),
                newest_live(self.paths.semantic, SemanticItem, max_semantic))

    def memory_tree(self) -> MemoryTree:
        """The working-memory tree as it is now (memcli.store.memory_files; readers, no lock)."""
        self.recover_if_needed()
        return MemoryTree.replay(self.paths.memory_files)

    def read_state(self) -> TurnState:
        """The state as it is now, without writing anything (readers; no lock)."""
        self.recover_if_needed()
        state = _read_state_file(self.paths)
        if state is not None and _state_matches(self.paths, state):
            if state.active.size < _identity(self.paths.active).size:
                _catch_up(self.paths, state, None)
            return state
        return _rebuild(self.paths, previous=state, ids=None)

    def find(self, record_id: str) -> tuple[str, int, object] | None:
        """(tier, line number, record) for an id in active, archive, episodic or semantic; or a
        working-memory change (tier "memory_files"; the record with the file as that change left
        it, see :func:`memcli.store.memory_files.version_view`)."""
        self.recover_if_needed()
        if record_id.startswith(MEMORY_FILE_PREFIX + "_"):
            found = MemoryTree.replay_until(self.paths.memory_files, record_id)
            if found is not None:
                line_no, record, tree = found
                return "memory_files", line_no, version_view(record, tree)
        tiers = [("active", self.paths.active, RawTrace), ("archive", self.paths.archive, RawTrace),
                 ("episodic", self.paths.episodic, EpisodicItem), ("semantic", self.paths.semantic, SemanticItem)]
        needle = orjson.dumps(record_id)
        for tier, path, cls in tiers:
            for offset, line in jsonl.iter_lines(path):
                if needle not in line:
                    continue
                record = jsonl.parse_line(path, line, None, offset)
                if record.get("id") == record_id:
                    return tier, jsonl.line_number_at(path, offset), _record_to(cls, path, None, offset, record)
        return None


class WriteSession:
    """Exclusive access to an agent, consistent and recovered: obtained from
    :meth:`AgentStore.writer`, which holds the agent lock for the session's lifetime.

    :meth:`open` rolls back an interrupted ingest, finishes an interrupted compaction, repairs
    torn tails and loads the state (module docstring, steps 1–4); afterwards ``state`` (the
    :class:`~memcli.store.state.TurnState`) and ``ids`` (the :class:`~memcli.store.id_index.IdIndex`)
    describe the files exactly. Every write to the agent's files is a method of this class or
    runs under it: :meth:`append_staged` (the ingest commit, crash-safe through the
    ``.ingest.pending`` marker), :meth:`append_memory` (episodic/semantic items, by id),
    :meth:`write_state` / :meth:`rebuild_state` (the cache), and the compaction journal's
    ``commit(session, journal)`` (:mod:`memcli.store.journal`). ``repairs`` and ``recovered`` say
    what :meth:`open` had to fix, for the caller to report.
    """

    def __init__(self, store: AgentStore):
        self.store = store
        self.paths = store.paths
        self.state: TurnState = TurnState()
        self.ids: IdIndex = IdIndex(self.paths.ids, 0)
        self.repairs: list[jsonl.TailRepair] = []
        self.recovered: list[str] = []
        self._turn_max_seq: dict[str, int] | None = None  # built on the first seq_lookup miss

    def open(self) -> None:
        self.rollback_interrupted_ingest()
        if self.paths.compaction_journal.exists():
            from memcli.store.journal import recover

            note = recover(self)
            if note:
                self.recovered.append(note)
        for path in (self.paths.active, self.paths.archive, self.paths.episodic, self.paths.semantic,
                     self.paths.memory_files):
            repair = jsonl.repair_tail(path)
            if repair is not None:
                self.repairs.append(repair)
        self.state = self._load_state()

    # ---------------------------------------------------------------- state
    def _load_state(self) -> TurnState:
        state = _read_state_file(self.paths)
        ids = IdIndex(self.paths.ids, state.ids_count if state else 0)
        if state is not None and _state_matches(self.paths, state) and ids.is_consistent():
            ids.truncate_to_count()
            self.ids = ids
            if state.active.size < _identity(self.paths.active).size:
                _catch_up(self.paths, state, ids)
                self.write_state(state)
            return state
        state = _rebuild(self.paths, previous=state, ids=ids)
        self.ids = ids
        self.write_state(state)
        return state

    def write_state(self, state: TurnState) -> None:
        state.active = _identity(self.paths.active)
        state.archive = _identity(self.paths.archive)
        state.ids_count = self.ids.count
        jsonl.atomic_write_bytes(self.paths.state, orjson.dumps(state.to_json()), fsync=False)
        self.state = state

    def rebuild_state(self, *, ids_trusted: bool = True, archived: int | None = None) -> TurnState:
        """Recompute the state from the files (after a rewrite of the active file).

        With ``ids_trusted`` the id index is kept (a compaction moves ids, it adds none). With
        ``archived`` (the number of traces a compaction just moved to the archive) the archive is
        not re-read: its count is the current one plus ``archived`` and the turn counter carries
        over, so the cost depends on the active file only, not on the history.
        """
        previous = self.state
        archive_count = None if archived is None else previous.archive_count + archived
        state = _rebuild(self.paths, previous=previous, ids=None if ids_trusted else self.ids,
                         archive_count=archive_count)
        self.write_state(state)
        return state

    def seq_lookup(self, turn_id: str) -> int:
        """Highest stored seq of a turn that is not in the state's recent set.

        Rare (an input naming an old turn itself, e.g. re-ingesting an export), but such inputs
        name many turns: the first miss scans active and archive once and keeps every turn's
        highest seq for the rest of this session, so the cost is one pass, not one per turn.
        """
        if self._turn_max_seq is None:
            table: dict[str, int] = {}
            for path in (self.paths.archive, self.paths.active):
                for _, line in jsonl.iter_lines(path):
                    try:
                        record = orjson.loads(line)
                    except orjson.JSONDecodeError:
                        continue
                    if not isinstance(record, dict):
                        continue
                    turn, seq = record.get("turn_id"), record.get("seq")
                    if isinstance(turn, str) and isinstance(seq, int) and seq > table.get(turn, 0):
                        table[turn] = seq
            self._turn_max_seq = table
        return self._turn_max_seq.get(turn_id, 0)

    # ---------------------------------------------------------------- working memory
    def memory_tree(self) -> MemoryTree:
        """The working-memory tree, replayed under the lock: a change checked against it applies
        to the latest version (memcli.store.memory_files)."""
        return MemoryTree.replay(self.paths.memory_files)

    def append_memory_file(self, record: dict, *, fsync: bool = True) -> None:
        """Append one working-memory change durably. The caller checked it against
        :meth:`memory_tree` in this session; a crash mid-append leaves a torn last line that the
        next session cuts off, so the previous version stays the current one."""
        line = orjson.dumps(record) + b"\n"
        crash_point("memory-file:before-append")

        def halves():
            middle = len(line) // 2
            yield line[:middle]
            crash_point("memory-file:append")  # half a line written: a torn tail if killed here
            yield line[middle:]

        jsonl.append_chunks(self.paths.memory_files, halves(), fsync=fsync)
        crash_point("memory-file:appended")

    def restore_memory_files(self, records: list[dict]) -> int:
        """Append the working-memory records the agent does not have yet (by ``id``), in order,
        after checking that each applies to the tree as it is (``ingest`` of an export). If one
        does not, none is appended: InputError naming it. Returns how many were appended."""
        if not records:
            return 0
        tree = MemoryTree()
        known = {record.get("id") for _, record in tree.replay_records(self.paths.memory_files)}  # one read
        new = []
        for record in records:
            if record["id"] in known:
                continue
            known.add(record["id"])
            try:
                tree.apply(record)
            except TreeError as exc:
                raise InputError(
                    f"working-memory record {record['id']} ({record.get('op')} {record.get('path')}) does not "
                    f"apply to agent {self.paths.agent_id!r}: {exc}; the traces were ingested, the memory items "
                    "and working memory were not",
                    hint="restore into an agent without working memory files, or remove them first") from None
            new.append(record)
        if new:
            jsonl.append_records(self.paths.memory_files, new)
        return len(new)

    # ---------------------------------------------------------------- ingest commit
    def append_staged(self, staged: IO[bytes], staged_len: int, digests: list[bytes],
                      new_state: TurnState, *, fsync: bool = True, harness=None) -> None:
        """Append staged lines to the active file with crash rollback (module docstring).

        ``harness`` (a :class:`memcli.store.harness_items.SpanTracker`) holds the staged traces
        that are harness compactions: their episodic items are appended after the traces and
        before the marker goes, so a crash leaves both or neither (the rollback cuts
        ``episodic.jsonl`` back too)."""
        if staged_len == 0:
            return
        marker = {
            "active_size": _identity(self.paths.active).size,
            "ids_count": self.ids.count,
            "state": self.state.to_json(),
        }
        if harness is not None and harness.pending:
            marker["episodic_size"] = jsonl.file_size(self.paths.episodic)
            if not self.paths.episodic.exists():
                marker["episodic_new"] = True   # made by this ingest: a rollback removes it again
        jsonl.atomic_write_bytes(self.paths.ingest_marker, orjson.dumps(marker), fsync=False)
        crash_point("ingest:marker")
        staged.seek(0)

        def chunks():
            remaining = staged_len
            while remaining > 0:
                block = staged.read(min(1 << 20, remaining))
                if not block:
                    break
                remaining -= len(block)
                yield block
                crash_point("ingest:append")

        jsonl.append_chunks(self.paths.active, chunks(), fsync=fsync)
        crash_point("ingest:appended")
        if "episodic_size" in marker:
            self._append_harness_items(harness, fsync=fsync)
            crash_point("ingest:items")
        self.ids.append(digests, fsync=fsync)
        crash_point("ingest:ids")
        self.write_state(new_state)
        crash_point("ingest:state")
        os.unlink(self.paths.ingest_marker)

    def rollback_interrupted_ingest(self) -> None:
        """Undo an ingest that was killed before it finished (step 1 of :meth:`open`; public for
        ``doctor --repair``, which must run it before moving bad lines aside)."""
        marker_path = self.paths.ingest_marker
        try:
            with jsonl.open_read(marker_path) as f:
                raw = f.read()
        except FileNotFoundError:
            return
        try:
            marker = orjson.loads(raw)
            size = int(marker["active_size"])
            count = int(marker["ids_count"])
            previous = marker["state"]
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            os.unlink(marker_path)  # written atomically, so this is not ours: nothing to undo
            return
        first_import = self.paths.first_import_pending()
        episodic_size = marker.get("episodic_size")
        for path, before in ((self.paths.active, size), (self.paths.episodic, episodic_size)):
            if isinstance(before, int):
                jsonl.truncate(path, before)
        crash_point("ingest-recovery:truncated")
        ids = IdIndex(self.paths.ids, count)
        ids.truncate_to_count()
        jsonl.atomic_write_bytes(self.paths.state, orjson.dumps(previous), fsync=False)
        crash_point("ingest-recovery:state")
        # the agent's first import: nothing of the agent was ever acknowledged; an episodic file
        # this ingest made for its harness items goes too (empty once cut back)
        made = [self.paths.active] if first_import else []
        if first_import or marker.get("episodic_new") is True:
            made.append(self.paths.episodic)
        for path in made:
            try:
                if path == self.paths.active or jsonl.file_size(path) == 0:
                    os.unlink(path)
            except FileNotFoundError:
                pass
        os.unlink(marker_path)  # every step above is idempotent: a crash before this repeats them
        self.recovered.append(f"rolled back an interrupted ingest of agent {self.paths.agent_id!r}"
                              + (" (its first: the agent has no data)" if first_import else ""))

    # ---------------------------------------------------------------- memory items
    def append_memory(self, kind: str, records: list[dict]) -> int:
        """Append episodic (``kind="episodic"``) or semantic items the agent does not have yet,
        matched by ``id`` (so appending the same items twice adds nothing); each record is
        normalised through its model first. Returns how many were appended (fsynced)."""
        cls = {"episodic": EpisodicItem, "semantic": SemanticItem}.get(kind)
        if cls is None:
            raise UsageError(f"kind: expected 'episodic' or 'semantic', got {kind!r}")
        path = self.paths.episodic if kind == "episodic" else self.paths.semantic
        return self._append_new_items(cls, path, records, {record.get("id") for _, _, record in jsonl.iter_records(path)})

    @staticmethod
    def _append_new_items(cls, path: Path, records: list[dict], known: set, *, fsync: bool = True) -> int:
        new = []
        for record in records:
            if record["id"] in known:
                continue
            known.add(record["id"])
            new.append(to_record(from_record(cls, record)))
        if new:
            jsonl.append_records(path, new, fsync=fsync)
        return len(new)

    def catch_up_harness_items(self, trace_ids: list) -> int:
        """Write the items of harness traces the agent has but whose item it lacks (stored before
        memcli wrote them; memcli.store.harness_items). The traces are durable already, so this is
        one append: a torn line is cut by the next session and the next ingest writes it again."""
        from memcli.store.harness_items import (
            harness_item_id,
            is_summary,
            item_record,
            last_covered_turn,
            leave_kept_turns,
            subagent_of,
            subagent_turns,
            turn_range,
        )
        from memcli.store.state import turn_number

        records = [record for _, _, record in jsonl.iter_records(self.paths.episodic)]
        known = {record.get("id") for record in records}
        missing = [t for t in dict.fromkeys(trace_ids) if harness_item_id(t) not in known]
        if not missing:
            return 0
        previous = last_covered_turn(records)
        items = []
        for trace_id in missing:
            found = self.store.find(trace_id)
            if found is None or found[0] not in ("active", "archive"):
                continue
            trace = to_record(found[2])
            if not isinstance(trace.get("harness_compaction"), dict) or not is_summary(trace):
                continue
            agent = subagent_of(trace)
            if agent is not None:   # a subagent's own: the turns of its traces, the session's span left alone
                turns = subagent_turns(self.paths, agent, trace_id) if found[0] == "active" else [trace["turn_id"]]
                items.append(item_record(trace, turns))
                continue
            number = turn_number(trace["turn_id"])
            turns = turn_range(previous + 1, number) if number is not None else []
            items.append(item_record(trace, turns))
            previous = max(previous, number or 0)
        # (the turns a compaction kept as they were go to the next one, as an ingest's do)
        return self._append_new_items(EpisodicItem, self.paths.episodic, leave_kept_turns(self.paths, items), known)

    def _append_harness_items(self, harness, *, fsync: bool = True) -> int:
        """The episodic items of the harness compactions an ingest staged (memcli.store.harness_items),
        those the agent does not have yet (by id), after one read of ``episodic.jsonl``."""
        from memcli.store.harness_items import (
            continued_turn,
            last_compacted_turn,
            last_covered_turn,
            leave_kept_turns,
            stored_compactions,
            subagent_turns,
        )

        records = [record for _, _, record in jsonl.iter_records(self.paths.episodic)]
        known = {record.get("id") for record in records} | harness.skip_ids
        continued = None
        if harness.extends():
            stored = stored_compactions(self.paths, {event["id"] for event, _, _ in harness.pending})
            previous = last_compacted_turn(records, stored)
            continued = continued_turn(self.paths, stored)
        else:
            previous = last_covered_turn(records)
        items = harness.items(previous, lambda agent, until: subagent_turns(self.paths, agent, until), continued)
        return self._append_new_items(EpisodicItem, self.paths.episodic, leave_kept_turns(self.paths, items), known,
                                      fsync=fsync)



# ---------------------------------------------------------------------- state helpers

def _read_state_file(paths: AgentPaths) -> TurnState | None:
    try:
        with jsonl.open_read(paths.state) as f:
            return TurnState.from_json(orjson.loads(f.read()))
    except FileNotFoundError:
        return None
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, StoreError):
        return None


def _state_matches(paths: AgentPaths, state: TurnState) -> bool:
    """True when the files are what the state describes, or the active file only grew."""
    archive = _identity(paths.archive)
    if (archive.ino, archive.size) != (state.archive.ino, state.archive.size):
        return False
    active = _identity(paths.active)
    if state.active.size == 0:
        return state.active.ino in (0, active.ino)
    if active.ino != state.active.ino or active.size < state.active.size:
        return False
    with jsonl.open_read(paths.active) as f:
        f.seek(state.active.size - 1)
        return f.read(1) == b"\n"


def _catch_up(paths: AgentPaths, state: TurnState, ids: IdIndex | None) -> None:
    """Observe records appended after what the state covers (another writer, e.g. AutoByteus)."""
    new_digests = []
    for _, offset, record in jsonl.iter_records(paths.active, start=state.active.size, first_line_no=None):
        trace_from_record(paths.active, None, offset, record)
        state.observe(record, offset)
        state.active_count += 1
        new_digests.append(digest(record["id"]))
    if ids is not None and new_digests:
        known = ids.present(new_digests)
        ids.append([d for d in new_digests if d not in known])
    state.active = _identity(paths.active)


def _rebuild(paths: AgentPaths, *, previous: TurnState | None, ids: IdIndex | None,
             archive_count: int | None = None) -> TurnState:
    """A state computed from the files alone (and the id index, when ``ids`` is given).

    ``archive_count`` (with ``previous`` and without ``ids``) skips reading the archive: the
    caller knows its count, and archived traces only ever move the turn counter and the seq of a
    turn that goes on in the active file, which ``previous`` already carries."""
    state = TurnState()
    if previous is not None:
        state.turn_counter = previous.turn_counter  # turn numbers never go back
    digests: list[bytes] | None = [] if ids is not None else None
    skip_archive = archive_count is not None and previous is not None and ids is None
    if skip_archive:
        state.archive_count = archive_count
    archive, active = paths.archive, paths.active  # each property builds a Path: not once per record
    archived_seq: dict[str, int] = {}   # turn id -> its highest archived seq
    for line_no, offset, record in (() if skip_archive else jsonl.iter_records(archive)):
        trace_from_record(archive, line_no, offset, record)
        state.observe_archived(record)
        state.archive_count += 1
        turn_id, seq = record.get("turn_id"), record.get("seq")
        if isinstance(seq, int) and seq > archived_seq.get(turn_id, 0):
            archived_seq[turn_id] = seq
        if digests is not None:
            digests.append(digest(record["id"]))
    for line_no, offset, record in jsonl.iter_records(active):
        trace_from_record(active, line_no, offset, record)
        state.observe(record, offset)
        state.active_count += 1
        if digests is not None:
            digests.append(digest(record["id"]))
    if ids is not None:
        ids.rewrite(digests)
        state.ids_count = ids.count
    elif previous is not None:
        state.ids_count = previous.ids_count
    state.keep_seqs_rising(archived_seq, previous.turn_seq if previous is not None else {})
    _observe_memory_turns(paths, state)
    state.active = _identity(paths.active)
    state.archive = _identity(paths.archive)
    return state


def _observe_memory_turns(paths: AgentPaths, state: TurnState) -> None:
    """Turns named by memory items move the turn counter forward too: after
    ``clear --keep-memory`` no trace names them any more, and a new turn must not reuse their ids.
    (A bad line here is doctor's business, not a reason to refuse a write.)"""
    for path, key in ((paths.episodic, "turn_ids"), (paths.semantic, "source_turn_ids")):
        for _, line in jsonl.iter_lines(path):
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            turn_ids = record.get(key) if isinstance(record, dict) else None
            if isinstance(turn_ids, list):
                state.observe_turn_ids(turn_ids)


# ---------------------------------------------------------------------- crash testing hook

_CRASH_SPEC = os.environ.get("MEMCLI_CRASH_AT")
_crash_hits: dict[str, int] = {}


def _discard_new_dir(path: Path) -> None:
    """Remove an agent directory this session created and left without data (its caches only)."""
    try:
        for entry in os.scandir(path):
            if entry.is_file(follow_symlinks=False) or entry.is_symlink():
                os.unlink(entry.path)
        os.rmdir(path)
    except OSError:
        pass  # something else is in it: leave it


def crash_point(name: str) -> None:
    """Test hook for the crash matrix: ``MEMCLI_CRASH_AT=<name>[@k]`` makes the process SIGKILL
    itself the k-th time (default 1st) it reaches the named point. Costs one comparison when unset.
    """
    if _CRASH_SPEC is None:
        return
    target, _, nth = _CRASH_SPEC.partition("@")
    if target != name:
        return
    _crash_hits[name] = _crash_hits.get(name, 0) + 1
    if _crash_hits[name] >= int(nth or 1):
        import signal

        os.kill(os.getpid(), signal.SIGKILL)

