"""A point-in-time view of one agent's files, read forward in validated blocks.

:func:`open_history` opens the agent's data files and records their sizes; everything read
afterwards comes from those open descriptors and stops at those sizes. So an export shows the
agent as it was when the export started, whatever happens meanwhile:

* records appended later (a running ``ingest``) are not included, and a line that was still
  being written at that moment (no ``\\n`` yet) is not a record and is skipped;
* a compaction that rewrites ``raw_traces.jsonl`` (``os.replace``) does not disturb us: we keep
  reading the file we opened.

The one race left is a compaction *between* opening the archive and opening the active file:
its traces would be in neither (or in both). Compaction runs under a journal
(``.compaction.journal``) that exists from before it appends to the archive until after it
replaced the active file, so the files are opened active first, then archive, and the view is
accepted only if no journal existed around the opens and the active path still names the file we
opened; otherwise it is opened again (an interrupted compaction is recovered first, which waits
for a running one to finish). No lock is taken, so a read-only store can be exported.

Reading (:meth:`History.iter_trace_blocks`) goes by batches of whole lines (about 1 MB). Every
line is parsed (orjson) and must be a JSON object whose ``id``, ``turn_id`` and ``trace_type`` are
strings and which has ``ts``, ``seq`` and ``source_event`` — what
:func:`memcli.store.agent.trace_from_record` requires — otherwise
:class:`~memcli.errors.CorruptStoreError` names the file and the 1-based line. Blank lines are
skipped. Memory stays flat: one batch is held at a time.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Callable, Iterator

import orjson

from memcli.bulk import cyclic_gc_paused
from memcli.errors import CorruptStoreError, StoreError
from memcli.models import EpisodicItem, SemanticItem, from_record
from memcli.store import jsonl
from memcli.store.agent import AgentStore
from memcli.store.ledger import record_problem
from memcli.store.memory_files import record_problem as memory_file_problem

BATCH_BYTES = 1 << 20
OPEN_ATTEMPTS = 20

Progress = Callable[[int], None]  # called with the number of bytes just read


@dataclass
class SourceFile:
    """One data file as it was when the view was opened."""

    tier: str            # "archive", "active", "episodic", "semantic"
    path: Path
    file: BinaryIO | None
    size: int            # bytes that belong to the view (the file may have grown since)


@dataclass
class TraceBatch:
    """Consecutive whole lines of one file, each one validated.

    ``lines`` are the selected non-blank lines, each with its ``\\n`` — the file's bytes
    verbatim; ``records`` their parsed objects in the same order, or None when the caller did
    not ask to keep them (holding on to a batch of parsed records costs as much as parsing).
    """

    tier: str
    lines: list
    records: list | None
    consumed: int = 0     # bytes of the file this batch covers

    @property
    def data(self) -> bytes:
        return b"".join(self.lines)


@dataclass
class History:
    store: AgentStore
    archive: SourceFile
    active: SourceFile
    episodic: SourceFile
    semantic: SourceFile
    memory_files: SourceFile
    ledger: SourceFile | None = None       # the compaction ledger (memcli.store.ledger)
    _closed: bool = field(default=False, repr=False)

    @property
    def trace_bytes(self) -> int:
        return self.archive.size + self.active.size

    @property
    def memory_bytes(self) -> int:
        return self.episodic.size + self.semantic.size + self.memory_files.size

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            for source in (self.archive, self.active, self.episodic, self.semantic, self.memory_files, self.ledger):
                if source is not None and source.file is not None:
                    source.file.close()

    def __enter__(self) -> "History":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ traces
    def iter_trace_blocks(self, progress: Progress | None = None, *, select=None,
                          keep_records: bool = False) -> Iterator[TraceBatch]:
        """Archive then active, in file order, as validated batches (module docstring).

        ``select(record) -> bool`` keeps only the lines it accepts; ``keep_records`` also hands
        out the parsed records.
        """
        with cyclic_gc_paused():  # short-lived dicts only: memcli.bulk
            for source in (self.archive, self.active):
                yield from _iter_batches(source, progress, select=select, keep_records=keep_records)

    def iter_trace_records(self, progress: Progress | None = None, *, select=None) -> Iterator[dict]:
        for batch in self.iter_trace_blocks(progress, select=select, keep_records=True):
            yield from batch.records

    # ------------------------------------------------------------------ memory
    def iter_memory(self, progress: Progress | None = None) -> Iterator[tuple[str, dict]]:
        """``("episodic", record)`` then ``("semantic", record)``, in file order, every item
        (superseded ones included), each checked to be a valid item of its kind."""
        for source, cls in ((self.episodic, EpisodicItem), (self.semantic, SemanticItem)):
            for batch in _iter_batches(source, progress, check=_memory_problem(cls), keep_records=True):
                for record in batch.records:
                    yield source.tier, record

    def iter_ledger(self) -> Iterator[dict]:
        """The compaction ledger's records as the view holds them (memcli.store.ledger)."""
        if self.ledger is not None:
            for batch in _iter_batches(self.ledger, None, check=record_problem, keep_records=True):
                yield from batch.records

    def iter_memory_files(self, progress: Progress | None = None) -> Iterator[dict]:
        """The working-memory log's records (memcli.store.memory_files), in file order."""
        for batch in _iter_batches(self.memory_files, progress, check=memory_file_problem, keep_records=True):
            yield from batch.records


    def memory_tree(self, progress: Progress | None = None):
        """The working-memory tree as the view's log leaves it (memcli.store.memory_files)."""
        from memcli.store.memory_files import MemoryTree, TreeError

        tree = MemoryTree()
        for number, record in enumerate(self.iter_memory_files(progress), 1):
            try:
                tree.apply(record)
            except TreeError as exc:
                raise CorruptStoreError(str(self.memory_files.path), number,
                                        f"working-memory record does not apply: {exc}") from None
        return tree


def _memory_problem(cls):
    def check(record) -> str | None:
        if type(record) is not dict:
            return f"expected a JSON object, found {type(record).__name__}"
        if type(record.get("id")) is not str:
            return f"{cls.__name__} without a valid 'id'"
        try:
            from_record(cls, record)
        except (TypeError, KeyError) as exc:
            return f"not a {cls.__name__} record ({exc})"
        return None

    return check


_REQUIRED = frozenset({"id", "turn_id", "trace_type", "ts", "seq", "source_event"})


def _trace_problem(record) -> str | None:
    if type(record) is not dict:
        return f"expected a JSON object, found {type(record).__name__}"
    for key in ("id", "turn_id", "trace_type"):
        if type(record.get(key)) is not str:
            return f"trace without a valid {key!r}"
    for key in ("ts", "seq", "source_event"):
        if key not in record:
            return f"not a RawTrace record (missing {key!r})"
    return None


def _is_trace(record) -> bool:
    """The fast form of ``_trace_problem(record) is None`` (the hot loop calls it per line)."""
    return (type(record) is dict and record.keys() >= _REQUIRED and type(record["id"]) is str
            and type(record["turn_id"]) is str and type(record["trace_type"]) is str)


def _iter_batches(source: SourceFile, progress: Progress | None, check=None, select=None,
                  keep_records: bool = False) -> Iterator[TraceBatch]:
    """Validated batches of ``source`` up to its size in the view. ``check(record)`` returns a
    problem or None; the default is the trace check, inlined: this loop is the export's cost."""
    f = source.file
    if f is None or source.size == 0:
        return
    f.seek(0)
    remaining = source.size
    first_line = 1
    loads = orjson.loads
    decode_error = orjson.JSONDecodeError
    required = _REQUIRED
    path = str(source.path)
    while remaining > 0:
        raw_lines = f.readlines(min(BATCH_BYTES, remaining))
        if not raw_lines:  # the file was cut short under us (an uncompact cuts the archive back)
            raise StoreError(f"{path} was cut short while it was read ({remaining:,} bytes missing); "
                             "try again")
        # readlines stops at the first line that reaches the hint (<= remaining), so only the
        # last line can reach beyond the view or lack its newline (still being written)
        consumed = sum(map(len, raw_lines))
        last = raw_lines[-1]
        if consumed > remaining or last[-1] != 10:
            raw_lines.pop()
            consumed -= len(last)
            remaining = consumed  # nothing after it belongs to the view
        if not raw_lines:
            break
        lines = raw_lines
        records = [] if keep_records else None
        kept: list | None = [] if select is not None else None
        blank = False
        for raw in raw_lines:
            try:
                record = loads(raw)
            except decode_error as exc:
                if raw.strip():
                    line_no = first_line + _index(raw_lines, raw)
                    raise CorruptStoreError(path, line_no, f"not valid JSON ({exc})") from None
                blank = True
                continue
            if check is None:
                # _is_trace(record), inlined
                if not (type(record) is dict and record.keys() >= required and type(record["id"]) is str
                        and type(record["turn_id"]) is str and type(record["trace_type"]) is str):
                    raise CorruptStoreError(path, first_line + _index(raw_lines, raw), _trace_problem(record))
            else:
                problem = check(record)
                if problem is not None:
                    raise CorruptStoreError(path, first_line + _index(raw_lines, raw), problem)
            if kept is not None:
                if not select(record):
                    continue
                kept.append(raw)
            if records is not None:
                records.append(record)
        if kept is not None:
            lines = kept
        elif blank:
            lines = [raw for raw in raw_lines if raw.strip()]
        first_line += len(raw_lines)
        remaining -= consumed
        if progress is not None:
            progress(consumed)
        yield TraceBatch(source.tier, lines, records, consumed)


def _index(lines: list, line: bytes) -> int:
    for i, candidate in enumerate(lines):
        if candidate is line:
            return i
    return lines.index(line)


# ---------------------------------------------------------------------- opening the view

def _open(path: Path, tier: str) -> SourceFile:
    try:
        f = jsonl.open_read(path)
    except FileNotFoundError:
        return SourceFile(tier, path, None, 0)
    return SourceFile(tier, path, f, os.fstat(f.fileno()).st_size)


def _same_file(path: Path, source: SourceFile) -> bool:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return source.file is None
    if source.file is None:
        return False
    own = os.fstat(source.file.fileno())
    return (st.st_ino, st.st_dev) == (own.st_ino, own.st_dev)


def open_history(store: AgentStore) -> History:
    """Open a consistent point-in-time view of ``store`` (see the module docstring).

    The caller checks that the agent exists; a missing file is an empty one.
    """
    paths = store.paths
    for attempt in range(OPEN_ATTEMPTS):
        store.recover_if_needed()  # finishes an interrupted compaction; waits for a running one
        journal_before = paths.compaction_journal.exists()
        active = _open(paths.active, "active")
        archive = _open(paths.archive, "archive")
        episodic = _open(paths.episodic, "episodic")
        semantic = _open(paths.semantic, "semantic")
        memory_files = _open(paths.memory_files, "memory_files")
        history = History(store, archive, active, episodic, semantic, memory_files, _open(paths.ledger, "ledger"))
        if not journal_before and not paths.compaction_journal.exists() and _same_file(paths.active, active):
            return history
        history.close()
        time.sleep(min(0.05 * (attempt + 1), 0.5))
    raise StoreError(
        f"agent {store.agent_id!r} kept changing under the export (a compaction is running?); try again"
    )
