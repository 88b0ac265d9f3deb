"""``--format jsonl`` and ``--format json``: the stored records themselves.

``jsonl`` is the backup format. Each trace is written as its stored line, byte for byte (blank
lines dropped), archive first and then active — for an agent whose files have no blank lines,
``export`` without filters equals ``cat raw_traces_archive.jsonl raw_traces.jsonl``. Every line is
still parsed and checked on the way (:mod:`memcli.export.reader`), so a corrupt store fails the
export instead of producing a backup that cannot be restored. Because the lines keep every field
(``id``, ``ts``, ``turn_id``, ``seq``, ``source_event``, unknown fields...), ``memcli ingest`` of an
export into another agent reproduces the same records, and ingesting it again adds nothing (known
ids are skipped). Memory items (``--with-memory``) follow the traces, marked with
``record_type`` (:mod:`memcli.store.memory_records`), then the compaction ledger's records and one
``archived`` line naming the first and last archived trace written, so that ``ingest`` restores
the archive/active split (docs/compaction.md, "Backups keep the shape").

``json`` is the same records as one JSON array, one element per line::

    [
    {"id":"coder-0001",...},
    {"id":"coder-0002",...}
    ]

written as it streams (never built in memory). ``memcli ingest`` reads JSON arrays too, so it
round-trips the same way.
"""

from __future__ import annotations

from typing import BinaryIO

import orjson

from memcli.export.reader import History, Progress
from memcli.filters import TraceFilter
from memcli.store.memory_records import ARCHIVED_KIND, LEDGER_KIND, MEMORY_FILE_KIND, memory_line


def write_jsonl(history: History, out: BinaryIO, flt: TraceFilter, *, with_memory: bool,
                result, progress: Progress | None = None) -> None:
    write = out.write
    select = flt.matches if flt.active else None
    archived = _Archived()
    for batch in history.iter_trace_blocks(progress, select=select):
        if batch.lines:
            write(batch.data)
            result.traces += len(batch.lines)
            archived.saw(batch)
    if with_memory:
        for kind, record in history.iter_memory(progress):
            if flt.matches_memory(kind, record):
                write(memory_line(kind, record) + b"\n")
                result.count_memory(kind)
        for record in history.iter_memory_files(progress):  # whole: a part of the log would not replay
            write(memory_line(MEMORY_FILE_KIND, record) + b"\n")
            result.count_memory(MEMORY_FILE_KIND)
        for line in archived.lines(history):
            write(line + b"\n")


class _Archived:
    """The shape of the history (``--with-memory``): the ledger's records and which traces of
    the export were archived (:mod:`memcli.store.memory_records`, ``ledger`` and ``archived``)."""

    def __init__(self):
        self.first_id = self.last_id = None
        self.count = 0

    def saw(self, batch) -> None:
        if batch.tier == "archive":
            if self.first_id is None:
                self.first_id = orjson.loads(batch.lines[0])["id"]
            self.last_id = orjson.loads(batch.lines[-1])["id"]
            self.count += len(batch.lines)

    def lines(self, history: History):
        for record in history.iter_ledger():
            yield memory_line(LEDGER_KIND, record)
        if self.count:
            yield memory_line(ARCHIVED_KIND, {"first_id": self.first_id, "last_id": self.last_id,
                                              "traces": self.count})


def write_json(history: History, out: BinaryIO, flt: TraceFilter, *, with_memory: bool,
               result, progress: Progress | None = None) -> None:
    write = out.write
    write(b"[")
    first = True

    def elements(lines: list[bytes]) -> None:
        nonlocal first
        if not lines:
            return
        write(b"\n" if first else b",\n")
        write(b",\n".join(lines))
        first = False

    select = flt.matches if flt.active else None
    archived = _Archived()
    for batch in history.iter_trace_blocks(progress, select=select):
        elements([line.rstrip(b"\r\n") for line in batch.lines])
        result.traces += len(batch.lines)
        if batch.lines:
            archived.saw(batch)
    if with_memory:
        for kind, record in history.iter_memory(progress):
            if flt.matches_memory(kind, record):
                elements([memory_line(kind, record)])
                result.count_memory(kind)
        for record in history.iter_memory_files(progress):
            elements([memory_line(MEMORY_FILE_KIND, record)])
            result.count_memory(MEMORY_FILE_KIND)
        elements(list(archived.lines(history)))
    write(b"]\n" if first else b"\n]\n")
