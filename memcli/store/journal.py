"""The journaled commit of a compaction (docs/design.md §3) and its crash recovery.

``.compaction.journal`` (one JSON object, written atomically before anything moves, removed when
everything has) holds what the commit does:

    {"version": 1, "compaction_id": "cmp_…", "agent_id": "…",
     "active": {"ino": 1234, "size": 56789},       # the active file the window was read from
     "runs": [[start, end], …], "run_ids": ["rt_…", …],   # byte ranges of the moved lines
     "moved": 184, "first_id": "rt_…", "last_id": "rt_…",
     "archive_size": 0, "episodic_size": 0, "semantic_size": 0,   # sizes before the commit
     "episodic": [record, …], "semantic": [record, …]}            # the items to append

Steps, each idempotent, so that running them again after a crash at any point — including a crash
while recovering — converges to the same result:

1. **archive**: repair a torn tail of ``raw_traces_archive.jsonl``; the moved lines whose ids are
   not yet in the archive past ``archive_size`` are appended (verbatim bytes), then fsync;
2. **memory**: repair torn tails of ``episodic.jsonl``/``semantic.jsonl``; the journal's items
   whose ids are not yet written past the recorded sizes are appended, then fsync;
3. **rewrite**: the active file as it is now, minus the moved runs, is written to
   ``.raw_traces.jsonl.compact.tmp``, fsynced, ``os.replace``d over the active file, and the
   directory is fsynced.

The compaction's ledger record (:mod:`memcli.store.ledger`) travels in the journal (``ledger``,
with the ledger's size before, ``ledger_size``) and is appended in step 2, after the items.

Recovery rolls forward: once the journal exists the summary has been produced and recorded, so
finishing is always possible and never loses work. Whether step 3 happened is told by the active
file's inode (``os.replace`` installs a new inode; the old one is still alive while the new file
is created, so the two can never share a number). Before step 3 the journal's ``run_ids`` must
still be found at the run starts, else recovery refuses to guess and raises. The state cache is
rebuilt after recovery by :class:`memcli.store.agent.WriteSession` (the active inode changed).

**Uncompact** uses the same file with ``"op": "uncompact"`` (:class:`UndoJournal`)::

    {"version": 1, "op": "uncompact", "undo_id": "unc_…", "compaction_id": "cmp_…", "agent_id": "…",
     "active": {"ino": 1234, "size": 5678},       # the active file the undo was planned on
     "archive_keep": 0,                            # the archive is cut back to this size
     "inserts": [[offset, archive_start, archive_end, first_id], …],   # archive bytes put back at
                                                   # offsets of the active file, in order
     "moved": 16, "episodic_size": …, "semantic_size": …, "ledger_size": …,
     "episodic": [record, …], "semantic": [record, …], "ledger": [record]}

Its steps, idempotent like the compaction's: **memory** (the tombstones and restored copies, then
the ledger's ``uncompact`` record, each skipped when already written); **rewrite** (the active file
with the archive's bytes inserted at the offsets, through a temp file, ``os.replace``, directory
fsync — done when the active inode is no longer the planned one; before it, the archive must still
hold each insert's ``first_id`` at its start); **truncate** (the archive cut back to
``archive_keep`` and fsynced — only after the rewrite, so a trace is in the archive, or in both
until the truncation finishes the move, never in neither).

Crash points for the crash matrix (``MEMCLI_CRASH_AT=compact:<step>[@k]``): ``journal``,
``archive`` (after each copied block), ``archived``, ``episodic``, ``memory``, ``rewrite`` (after
each copied block), ``rewritten``, ``replaced``, ``state``; and ``uncompact:<step>`` for
``journal``, ``memory``, ``rewrite`` (after each copied block), ``rewritten``, ``replaced``,
``truncated``, ``state``. ``MEMCLI_TEST_COPY_BLOCK`` (bytes)
makes the copy blocks small so that a crash can tear a line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import orjson

from memcli.errors import StoreError
from memcli.store import jsonl
from memcli.store.agent import crash_point
from memcli.store.jsonl import iter_run_lines
from memcli.store.layout import FILE_MODE, AgentPaths
from memcli.store.ledger import append_ledger

JOURNAL_VERSION = 1
COPY_BLOCK = int(os.environ.get("MEMCLI_TEST_COPY_BLOCK") or (1 << 20))
TMP_NAME = ".raw_traces.jsonl.compact.tmp"


@dataclass
class Journal:
    """The ``.compaction.journal`` record (module docstring): what one compaction commits — the
    byte ranges of the active file that move (``runs``, with the id found at each run's start),
    the active file's identity when planned, the sizes of archive/episodic/semantic before the
    commit, and the items to append. Written atomically before anything moves; every step reads
    it to decide what is still to do, so running the steps again converges."""

    compaction_id: str
    agent_id: str
    active: dict                       # {"ino": int, "size": int}
    runs: list
    run_ids: list
    moved: int
    first_id: str | None
    last_id: str | None
    archive_size: int
    episodic_size: int
    semantic_size: int
    episodic: list = field(default_factory=list)
    semantic: list = field(default_factory=list)
    version: int = JOURNAL_VERSION
    ledger: list = field(default_factory=list)    # the compaction's ledger record (memcli.store.ledger)
    ledger_size: int = 0

    def to_json(self) -> bytes:
        return orjson.dumps(self)   # a dataclass, field by field: as asdict() gives it, without copying it first


@dataclass
class UndoJournal:
    """The journal of an uncompact (module docstring): archive byte ranges to put back at offsets
    of the active file, the archive size to cut back to, and the memory items and ledger record
    to append."""

    undo_id: str
    compaction_id: str
    agent_id: str
    active: dict                       # {"ino": int, "size": int}
    archive_keep: int
    inserts: list                      # [[offset, archive_start, archive_end, first_id], ...]
    moved: int
    episodic_size: int
    semantic_size: int
    ledger_size: int
    episodic: list = field(default_factory=list)
    semantic: list = field(default_factory=list)
    ledger: list = field(default_factory=list)
    op: str = "uncompact"
    version: int = JOURNAL_VERSION

    def to_json(self) -> bytes:
        return orjson.dumps(self)   # a dataclass, field by field: as asdict() gives it, without copying it first


def write_journal(paths: AgentPaths, journal: Journal | UndoJournal) -> None:
    jsonl.atomic_write_bytes(paths.compaction_journal, journal.to_json())


def load_journal(paths: AgentPaths) -> Journal | UndoJournal:
    try:
        with jsonl.open_read(paths.compaction_journal) as f:
            data = orjson.loads(f.read())
        if data.get("version") != JOURNAL_VERSION:
            raise ValueError(f"unknown journal version {data.get('version')!r}")
        return UndoJournal(**data) if data.get("op") == "uncompact" else Journal(**data)
    except (orjson.JSONDecodeError, TypeError, ValueError, AttributeError) as exc:
        raise StoreError(
            f"{paths.compaction_journal} cannot be read ({exc}); it records an unfinished compaction",
            hint="nothing was changed; inspect it, and remove it only if you know the compaction never started",
        ) from None


def remove_journal(paths: AgentPaths) -> None:
    try:
        os.unlink(paths.compaction_journal)
    except FileNotFoundError:
        pass
    jsonl.fsync_dir(paths.dir)


# --------------------------------------------------------------------------- the steps

def active_rewritten(paths: AgentPaths, journal: Journal) -> bool:
    try:
        return os.lstat(paths.active).st_ino != journal.active["ino"]
    except FileNotFoundError:
        return True


def check_runs(paths: AgentPaths, journal: Journal) -> None:
    """Raise unless the active file still holds the journal's lines at the journal's offsets."""
    check_ids_at(paths.active, [(start, trace_id) for (start, _), trace_id in zip(journal.runs, journal.run_ids)],
                 f"the compaction journal of agent {journal.agent_id!r}")


def check_ids_at(path: Path, places: list, what: str) -> None:
    """Raise unless each ``(offset, id)`` of ``places`` is a line of ``path`` holding that trace."""
    with jsonl.open_read(path) as f:
        for start, trace_id in places:
            f.seek(start)
            raw = f.readline()
            try:
                record = orjson.loads(raw)
            except orjson.JSONDecodeError:
                record = None
            if not isinstance(record, dict) or record.get("id") != trace_id:
                raise StoreError(
                    f"{what} does not match {path} (expected {trace_id} at byte {start}); refusing to guess",
                    hint="`memcli doctor AGENT` shows the problem; the journal and every file were left as they are",
                )


def _iter_run_blocks(path: Path, runs: list, point: str) -> Iterator[bytes]:
    with jsonl.open_read(path) as f:
        for start, end in runs:
            f.seek(start)
            remaining = end - start
            while remaining > 0:
                block = f.read(min(COPY_BLOCK, remaining))
                if not block:
                    raise StoreError(f"{path} ended inside a compaction run at byte {end - remaining}")
                remaining -= len(block)
                yield block
                crash_point(point)


def _ids_after(path: Path, size: int) -> set:
    if jsonl.file_size(path) < size:
        raise StoreError(f"{path} is shorter than when the compaction started ({size} bytes); refusing to continue")
    return {record.get("id") for _, _, record in jsonl.iter_records(path, start=size, first_line_no=None)}


def archive_step(paths: AgentPaths, journal: Journal) -> None:
    jsonl.repair_tail(paths.archive)
    present = _ids_after(paths.archive, journal.archive_size)
    if not present:
        blocks = _iter_run_blocks(paths.active, journal.runs, "compact:archive")
    else:
        def missing() -> Iterator[bytes]:
            for _, raw in iter_run_lines(paths.active, journal.runs):
                if orjson.loads(raw).get("id") not in present:
                    yield raw
                    crash_point("compact:archive")
        blocks = missing()
    jsonl.append_chunks(paths.archive, blocks, fsync=True)


def memory_step(paths: AgentPaths, journal: Journal | UndoJournal, op: str = "compact") -> None:
    for path, records, size, point in ((paths.episodic, journal.episodic, journal.episodic_size, f"{op}:episodic"),
                                       (paths.semantic, journal.semantic, journal.semantic_size, f"{op}:memory")):
        if records:
            jsonl.repair_tail(path)
            present = _ids_after(path, size)
            todo = [r for r in records if r["id"] not in present]
            if todo:
                jsonl.append_records(path, todo, fsync=True)
        crash_point(point)
    append_ledger(paths.ledger, journal.ledger, journal.ledger_size)


def rewrite_step(paths: AgentPaths, journal: Journal) -> None:
    """The active file minus the moved runs, installed atomically (module docstring, step 3)."""
    size = jsonl.file_size(paths.active)
    keep = []
    position = 0
    for start, end in journal.runs:
        if start > position:
            keep.append((paths.active, position, start))
        position = max(position, end)
    if position < size:
        keep.append((paths.active, position, size))
    install_active(paths, keep, "compact")


def install_active(paths: AgentPaths, pieces: list, op: str) -> None:
    """Write ``pieces`` — ``(path, start, end)`` byte ranges of the agent's files, in order — to a
    temp file beside the active file, fsync it, ``os.replace`` it over the active file and fsync
    the directory (the rewrite of a compaction and of an uncompact). A range of the active file
    that reaches its end takes what the file holds then (appends under the lock: none)."""
    tmp = paths.dir / TMP_NAME
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    sources: dict = {}
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                 | getattr(os, "O_CLOEXEC", 0), FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
        for path, start, end in pieces:
            src = sources.get(path)
            if src is None:
                src = sources[path] = jsonl.open_read(path)
            src.seek(start)
            remaining = end - start
            while remaining > 0:
                block = src.read(min(COPY_BLOCK, remaining))
                if not block:
                    if path == paths.active:
                        break
                    raise StoreError(f"{path} ended at byte {end - remaining} while restoring bytes up to {end}")
                remaining -= len(block)
                jsonl.write_all(fd, block)
                crash_point(f"{op}:rewrite")
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    finally:
        for src in sources.values():
            src.close()
    os.close(fd)
    crash_point(f"{op}:rewritten")
    os.replace(tmp, paths.active)
    crash_point(f"{op}:replaced")
    jsonl.fsync_dir(paths.dir)


def apply_steps(paths: AgentPaths, journal: Journal) -> None:
    """Steps 1–3, each skipped or completed as far as it already went."""
    if active_rewritten(paths, journal):
        memory_step(paths, journal)  # done before the rewrite; checking again costs a small read
        return
    check_runs(paths, journal)
    archive_step(paths, journal)
    crash_point("compact:archived")
    memory_step(paths, journal)
    rewrite_step(paths, journal)


def _journaled(session, journal, kind: str, apply, archived: int) -> None:
    """The commit protocol of a compaction (``kind`` ``compact``) and an uncompact: the journal
    written first, its steps applied (each one resumable), the state rebuilt with the traces
    ``archived`` (negative: brought back), the journal removed — crash points between them."""
    write_journal(session.paths, journal)
    crash_point(f"{kind}:journal")
    apply(session.paths, journal)
    session.rebuild_state(ids_trusted=True, archived=archived)
    crash_point(f"{kind}:state")
    remove_journal(session.paths)


def commit(session, journal: Journal) -> None:
    """Run a compaction's commit under ``session`` (which holds the agent lock)."""
    _journaled(session, journal, "compact", apply_steps, journal.moved)


def check_inserts(paths: AgentPaths, journal: UndoJournal) -> None:
    """Raise unless the archive still holds each insert's first trace at the insert's start."""
    check_ids_at(paths.archive, [(start, trace_id) for _, start, _, trace_id in journal.inserts],
                 f"the uncompact journal of agent {journal.agent_id!r}")


def undo_rewrite_step(paths: AgentPaths, journal: UndoJournal) -> None:
    """The active file with the archive's ranges inserted at their offsets, installed atomically."""
    pieces = []
    position = 0
    for offset, start, end, _ in journal.inserts:
        if offset > position:
            pieces.append((paths.active, position, offset))
        position = max(position, offset)
        pieces.append((paths.archive, start, end))
    pieces.append((paths.active, position, jsonl.file_size(paths.active)))
    install_active(paths, pieces, "uncompact")


def truncate_archive(paths: AgentPaths, journal: UndoJournal) -> None:
    if jsonl.file_size(paths.archive) <= journal.archive_keep:
        return
    jsonl.truncate(paths.archive, journal.archive_keep)
    crash_point("uncompact:truncated")


def apply_undo_steps(paths: AgentPaths, journal: UndoJournal) -> None:
    """The uncompact's steps (module docstring), each skipped or completed as far as it went."""
    memory_step(paths, journal, "uncompact")
    if not active_rewritten(paths, journal):
        check_inserts(paths, journal)
        undo_rewrite_step(paths, journal)
    truncate_archive(paths, journal)


def commit_undo(session, journal: UndoJournal) -> None:
    """Run an uncompact's commit under ``session`` (which holds the agent lock)."""
    _journaled(session, journal, "uncompact", apply_undo_steps, -journal.moved)


def recover(session) -> str | None:
    """Finish an interrupted compaction or uncompact of ``session``'s agent (called by
    :meth:`memcli.store.agent.WriteSession.open` under the lock, before tails are repaired and
    the state is loaded). Returns a note for the user."""
    paths = session.paths
    journal = load_journal(paths)
    tmp = paths.dir / TMP_NAME
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    plural = "s" if journal.moved != 1 else ""
    if isinstance(journal, UndoJournal):
        apply_undo_steps(paths, journal)
        remove_journal(paths)
        return (f"finished an interrupted uncompact of {journal.compaction_id} of agent {journal.agent_id!r}: "
                f"{journal.moved} trace{plural} back in the active file")
    apply_steps(paths, journal)
    remove_journal(paths)
    return (f"finished an interrupted compaction ({journal.compaction_id}) of agent {journal.agent_id!r}: "
            f"{journal.moved} trace{plural} archived")
