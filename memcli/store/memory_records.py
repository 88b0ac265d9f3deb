"""Memory items inside a JSONL/JSON export, and how ``ingest`` restores them.

``export --with-memory`` in ``jsonl`` or ``json`` appends the agent's episodic and semantic items
after the traces, every item (superseded ones too, so a restore reproduces the files), each as
its stored record with one more key in front::

    {"record_type":"episodic","id":"ep_...","ts":...,"turn_ids":[...],"summary":"...",...}
    {"record_type":"semantic","id":"sem_...","ts":...,"fact":"...",...}

Traces carry no ``record_type``, so a trace line of an export is byte-for-byte its stored line.

``memcli ingest`` (native format) sets such records aside instead of treating them as traces
(:func:`divert_memory_record`), checks them like any event (a bad one rejects the input, or is
skipped with ``--skip-invalid``), and once the traces are committed appends the items the
agent does not have yet to ``episodic.jsonl`` / ``semantic.jsonl`` under the agent lock
(:func:`restore_memory`). Items are matched by ``id``, so restoring twice adds nothing. So
``memcli export A --with-memory | memcli ingest B`` gives B A's traces *and* memory, with the same
ids, and the memory's ``turn_ids`` still name B's (same) turns. The items are held in memory
until the traces are committed; memory files are small next to the traces.
"""

from __future__ import annotations

import orjson

from memcli.errors import InputError
from memcli.models import EpisodicItem, SemanticItem, from_record

RECORD_TYPE = "record_type"
MEMORY_KINDS = {"episodic": EpisodicItem, "semantic": SemanticItem}


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
    if cls is None:
        return RECORD_TYPE, f"expected 'episodic' or 'semantic', got {str(kind)[:40]!r}"
    record = {k: v for k, v in value.items() if k != RECORD_TYPE}
    if type(record.get("id")) is not str or not record["id"]:
        return "id", "a memory item needs a non-empty string id"
    if type(record.get("ts")) not in _NUMBER or isinstance(record.get("ts"), bool):
        return "ts", "expected a number (epoch seconds)"
    text_field, list_field = ("summary", "turn_ids") if kind == "episodic" else ("fact", None)
    if type(record.get(text_field)) is not str:
        return text_field, "expected a string"
    if list_field is not None and type(record.get(list_field)) is not list:
        return list_field, "expected an array of turn ids"
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


def restore_memory(store, items: list) -> str:
    """Append the items ``store`` does not have yet (by id), under its lock. Returns a note."""
    added = {"episodic": 0, "semantic": 0}
    present = 0
    with store.writer() as session:
        for kind in MEMORY_KINDS:
            wanted = [record for k, record in items if k == kind]
            if wanted:
                appended = session.append_memory(kind, wanted)
                added[kind] = appended
                present += len(wanted) - appended
    note = f"restored {added['episodic']} episodic and {added['semantic']} semantic memory items into {store.agent_id!r}"
    if present:
        note += f" ({present} already present)"
    return note
