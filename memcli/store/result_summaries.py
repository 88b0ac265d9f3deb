"""Result summaries: ``agents/<agent>/result_summaries.jsonl``, one JSON object per line,
append-only, written only under the agent lock (``store.writer()``) by :func:`append_result_summaries`.

Each record summarizes one tool result (``memcli summarize-results``), keyed by the result's trace
id; the trace itself never changes::

    {"id": "rsum_…", "ts": 1772442000.5, "trace_id": "<the tool_result trace>", "tool_name": "Read",
     "kind": "read" | "command" | "search" | "other", "chars": 85123,   # the result's length
     "summary": "…", "summarizer": "offline" | "<LiteLLM model>"}

One record per trace id: a result already summarized is skipped (running the command again adds
nothing). A torn last line (a crash mid-append) is cut off before the next append, so a crash
leaves every summary either whole or absent. Model spending of a run is one ledger record
(:mod:`memcli.store.ledger`, ``kind: "result-summaries"``) appended after the summaries. The file is
a data file (``memcli.store.layout.DATA_FILES``): ``clear`` removes it, ``push`` carries it; an
export does not (a summary is derived from the result it names).

A line that is not such a record — not JSON, not an object, or without a string ``id``,
``trace_id`` and ``summary`` and an integer ``chars`` (:func:`record_problem`, the one rule;
``memcli doctor`` uses it too) — is a CorruptStoreError naming file and line for every reader
(``snapshot --expire …:summary``, ``stats``), and ``summarize-results`` checks the whole file
before it selects, requests or writes anything, dry run alike (:func:`check_result_summaries`),
rather than append after a line that hides which results are summarized. ``memcli doctor``
reports such a line (``bad-json``, ``not-an-object``, ``invalid-record``) and a torn last line
(``torn-tail``); ``--repair`` moves the line to ``result_summaries.jsonl.corrupt-lines``, as for
every JSONL file of the agent.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from memcli.store import jsonl
from memcli.store.ledger import append_ledger


def record_problem(record) -> str | None:
    """Why a parsed line of the file is not a result summary (module docstring), or None."""
    if (type(record) is not dict or type(record.get("id")) is not str or type(record.get("trace_id")) is not str
            or type(record.get("summary")) is not str or type(record.get("chars")) is not int):
        return "result summary without a valid 'id', 'trace_id', 'summary' and 'chars'"
    return None


def iter_result_summaries(path: Path) -> Iterator[dict]:
    """The records in file order (a bad line raises CorruptStoreError naming file:line)."""
    return jsonl.iter_checked(path, record_problem)


def check_result_summaries(path: Path, agent_id: str, command: str) -> dict[str, dict]:
    """:func:`read_result_summaries`, read before ``command`` writes anything: its first bad line
    raises CorruptStoreError (module docstring), hint ``memcli doctor AGENT --repair``."""
    with jsonl.refusing_bad_lines(path, agent_id, command,
                                  "a result summary (which results are summarized would be unknown)"):
        return read_result_summaries(path)


def read_result_summaries(path: Path) -> dict[str, dict]:
    """trace id -> its summary record (the first one stored for it)."""
    found: dict[str, dict] = {}
    for record in iter_result_summaries(path):
        found.setdefault(record["trace_id"], record)
    return found


def append_result_summaries(session, records: list[dict], ledger_record: dict | None = None) -> set[str]:
    """Append the ``records`` whose trace id has no summary yet (under ``session``'s lock),
    fsynced, then the run's ledger record when it spent on a model (whether or not any of its
    summaries was added). Returns the trace ids whose summary was added (a concurrent run may
    have stored the others first)."""
    path = session.paths.result_summaries
    jsonl.repair_tail(path)
    present = read_result_summaries(path)
    todo, seen = [], set(present)
    for record in records:
        if record["trace_id"] not in seen:
            seen.add(record["trace_id"])
            todo.append(record)
    if todo:
        jsonl.append_records(path, todo, fsync=True)
    if ledger_record is not None:   # the model was paid even when another run stored these first
        append_ledger(session.paths.ledger, [ledger_record], jsonl.file_size(session.paths.ledger))
    return {record["trace_id"] for record in todo}
