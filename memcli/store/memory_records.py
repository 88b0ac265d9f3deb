"""Memory items inside a JSONL/JSON export, and how ``ingest`` restores them.

``export --with-memory`` in ``jsonl`` or ``json`` appends the agent's episodic and semantic items
after the traces, every item (superseded ones too, so a restore reproduces the files), each as
its stored record with one more key in front::

    {"record_type":"episodic","id":"ep_...","ts":...,"turn_ids":[...],"summary":"...",...}
    {"record_type":"semantic","id":"sem_...","ts":...,"fact":"...",...}
    {"record_type":"memory_file","id":"wm_...","ts":...,"op":"create","path":"/memories/...",...}

The working-memory log (``memory_file``, memcli.store.memory_files) is carried whole, in order,
whatever the export's filters: the tree is the replay of the whole log, and a part of it would
not replay.

Then the shape of the history (docs/compaction.md, "Backups keep the shape"): the compaction
ledger's records (memcli.store.ledger) and, when the export holds archived traces, one line
naming the first and last of them::

    {"record_type":"ledger","kind":"compaction","id":"cmp_...",...}
    {"record_type":"archived","first_id":"rt_...","last_id":"rt_...","traces":184}

``ingest`` restores the ledger records it does not have (by id) and moves the traces it appended
from ``first_id`` to ``last_id`` into the archive — journaled like a compaction that writes no
items (:func:`restore_shape`) — so the copy has the original's active/archive split, memory and
working snapshot, and its compactions can be undone there.

Traces carry no ``record_type``, so a trace line of an export is byte-for-byte its stored line.

``memcli ingest`` (native format) sets such records aside instead of treating them as traces
(:func:`divert_memory_record`), checks them like any event (a bad one rejects the input, or is
skipped with ``--skip-invalid``), and once the traces are committed appends the items the
agent does not have yet to ``episodic.jsonl`` / ``semantic.jsonl`` under the agent lock
(:func:`restore_memory`). Items are matched by ``id``, so restoring twice adds nothing. So
``memcli export A --with-memory | memcli ingest B`` gives B A's traces *and* memory, with the same
ids, and the memory's ``turn_ids`` still name B's (same) turns. The items are held in memory
until the traces are committed; memory files are small next to the traces.

Working-memory records are restored the same way, by id and in order, after checking under the
lock that each one applies to the target's tree as it is (a ``create`` of a path the target
already has does not): if one does not, none is appended and ingest fails naming it (the traces
are committed by then; the message says so). They are restored as they are, not redacted again:
memcli redacted their text when it first wrote them, and rewriting one change's text would shift
the offsets of the changes after it.
"""

from __future__ import annotations

import orjson

from memcli.errors import InputError
from memcli.models import HARNESS_COMPACTION, EpisodicItem, SemanticItem, from_record

RECORD_TYPE = "record_type"
MEMORY_KINDS = {"episodic": EpisodicItem, "semantic": SemanticItem}
MEMORY_FILE_KIND = "memory_file"
LEDGER_KIND = "ledger"
ARCHIVED_KIND = "archived"


def memory_record(kind: str, record: dict) -> dict:
    out = {RECORD_TYPE: kind}
    out.update(record)
    out[RECORD_TYPE] = kind
    return out


def memory_line(kind: str, record: dict) -> bytes:
    return orjson.dumps(memory_record(kind, record))


def is_memory_record(value) -> bool:
    return type(value) is dict and RECORD_TYPE in value and "trace_type" not in value


_NUMBER = (int, float)


def memory_problem(value: dict) -> tuple[str | None, str] | None:
    """(field, message) when ``value`` is not a valid memory record, else None."""
    kind = value.get(RECORD_TYPE)
    cls = MEMORY_KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None and kind not in (MEMORY_FILE_KIND, LEDGER_KIND, ARCHIVED_KIND):
        return RECORD_TYPE, (f"expected 'episodic' or 'semantic' (or 'memory_file', a working-memory change; "
                             f"'ledger' or 'archived', the shape of the history), got {str(kind)[:40]!r}")
    record = {k: v for k, v in value.items() if k != RECORD_TYPE}
    if kind == ARCHIVED_KIND:
        for key in ("first_id", "last_id"):
            if type(record.get(key)) is not str or not record[key]:
                return key, "expected the id of an archived trace"
        return None
    if type(record.get("id")) is not str or not record["id"]:
        return "id", "a memory item needs a non-empty string id"
    if type(record.get("ts")) not in _NUMBER or isinstance(record.get("ts"), bool):
        return "ts", "expected a number (epoch seconds)"
    if kind == LEDGER_KIND:
        return None if type(record.get("kind")) is str else ("kind", "expected the ledger record's kind")
    if kind == MEMORY_FILE_KIND:
        from memcli.store.memory_files import OPS, is_canonical

        if record.get("op") not in OPS:
            return "op", f"expected one of {', '.join(OPS)}, got {str(record.get('op'))[:40]!r}"
        if not is_canonical(record.get("path")):
            return "path", "expected a canonical /memories path"
        return None
    text_field, list_field = ("summary", "turn_ids") if kind == "episodic" else ("fact", None)
    if type(record.get(text_field)) is not str:
        return text_field, "expected a string"
    if list_field is not None and type(record.get(list_field)) is not list:
        return list_field, "expected an array of turn ids"
    if kind == "episodic" and record.get(HARNESS_COMPACTION) is not None:
        mark = record[HARNESS_COMPACTION]   # as memcli.store.harness_items writes it: readers rely on it
        if type(mark) is not dict or any(type(mark.get(key)) is not str or not mark[key] for key in ("harness", "trace_id")):
            return HARNESS_COMPACTION, 'expected an object with "harness" and "trace_id" strings (a harness compaction\'s mark)'
    try:
        from_record(cls, record)
    except (TypeError, KeyError) as exc:
        return None, f"not a valid {kind} item ({exc})"
    return None


def divert_memory_record(line: int, value, sink: list):
    """The ingest pipeline's ``divert`` hook, asked about an event that failed validation: a
    valid memory record goes to ``sink`` as ``(kind, record)`` (returns True); an invalid one
    gives the InputError that names its problem; anything else returns False."""
    if type(value) is dict and RECORD_TYPE in value and "trace_type" not in value:
        problem = memory_problem(value)
        if problem is not None:
            field, message = problem
            return InputError(message, line=line, field=field)
        sink.append((value[RECORD_TYPE], {k: v for k, v in value.items() if k != RECORD_TYPE}))
        return True
    return False


def restore_memory(store, items: list, written: str = "nothing was written") -> str:
    """Append the items ``store`` does not have yet (by id), under its lock. Returns a note.
    A bad line of the agent's ledger refuses before anything more is written (CorruptStoreError;
    ``written``: what the caller wrote before, the traces of a stream)."""
    from memcli.store.ledger import check_ledger

    added = {"episodic": 0, "semantic": 0}
    present = 0
    with store.writer() as session:
        # restore_shape reads and appends to the ledger: a bad line of it refuses before any write
        check_ledger(session.paths.ledger, store.agent_id, "ingest", written)
        files_added = session.restore_memory_files([r for k, r in items if k == MEMORY_FILE_KIND])
        present += sum(1 for k, _ in items if k == MEMORY_FILE_KIND) - files_added
        for kind in MEMORY_KINDS:
            wanted = [record for k, record in items if k == kind]
            if wanted:
                appended = session.append_memory(kind, wanted)
                added[kind] = appended
                present += len(wanted) - appended
        marks = [record for k, record in items if k == ARCHIVED_KIND]
        archived = restore_shape(session, [r for k, r in items if k == LEDGER_KIND], marks[-1] if marks else None)
    note = f"restored {added['episodic']} episodic and {added['semantic']} semantic memory items"
    if any(k == MEMORY_FILE_KIND for k, _ in items):
        note += f" and {files_added} working-memory record{'s' if files_added != 1 else ''}"
    note += f" into {store.agent_id!r}"
    if present:
        note += f" ({present} already present)"
    if archived:
        note += f"; {archived} trace{'s' if archived != 1 else ''} archived, as in the export"
    return note



def restore_shape(session, ledger: list, archived: dict | None) -> int:
    """Restore the ledger records the agent does not have, and archive the traces from
    ``archived["first_id"]`` to ``archived["last_id"]`` (module docstring) when both are in the
    active file, in that order — one journaled commit (memcli.store.journal) moving that range.
    Returns how many traces were archived."""
    from memcli.store import jsonl
    from memcli.store.journal import Journal, commit
    from memcli.store.ledger import append_ledger, iter_ledger

    paths = session.paths
    known = {r.get("id") for r in iter_ledger(paths.ledger)}
    ledger = [r for r in ledger if r["id"] not in known]
    start = end = None
    moved = 0
    if archived is not None:
        first, last = orjson.dumps(archived["first_id"]), orjson.dumps(archived["last_id"])
        size = jsonl.file_size(paths.active)
        for offset, line in jsonl.iter_run_lines(paths.active, [[0, size]]) if size else ():
            if not line.strip():
                continue
            if start is None and first in line and orjson.loads(line).get("id") == archived["first_id"]:
                start = offset
            if start is not None:
                moved += 1
                if last in line and orjson.loads(line).get("id") == archived["last_id"]:
                    end = offset + len(line)
                    break
    if start is None or end is None:
        append_ledger(paths.ledger, ledger, jsonl.file_size(paths.ledger))
        return 0
    journal = Journal(
        compaction_id="restore", agent_id=paths.agent_id,
        active={"ino": paths.active.lstat().st_ino, "size": jsonl.file_size(paths.active)},
        runs=[[start, end]], run_ids=[archived["first_id"]], moved=moved, first_id=archived["first_id"],
        last_id=archived["last_id"], archive_size=jsonl.file_size(paths.archive),
        episodic_size=jsonl.file_size(paths.episodic), semantic_size=jsonl.file_size(paths.semantic),
        ledger=ledger, ledger_size=jsonl.file_size(paths.ledger))
    commit(session, journal)
    return moved
