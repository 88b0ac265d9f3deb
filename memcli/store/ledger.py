"""The compaction ledger: ``agents/<agent>/.compactions.jsonl``, one JSON object per line,
append-only, written only inside a journaled commit (:mod:`memcli.store.journal`) or a restore,
under the agent lock. Every record has ``kind``, ``id`` and ``ts``; readers skip kinds they do not
know. AutoByteus never opens it (a hidden name beside its four files).

``kind: "compaction"`` — one per compaction, written in the same commit that moves its traces::

    {"kind": "compaction", "id": "cmp_…", "ts": 1772442000.5,
     "strategy": "summarize", "summarizer": "offline" | "<LiteLLM model>",
     "turn_range": "turn_0001–turn_0004", "turns": 4, "whole_turns": 4, "steps": 0,
     "traces": 16, "first_id": "rt_…", "last_id": "rt_…",
     "tokens_before": 7275, "tokens_after": 1840,          # the working snapshot's one count
     "items": {"episodic": ["ep_…"], "semantic": ["sem_…"]},          # what it wrote
     "superseded": {"episodic": ["ep_…"], "semantic": ["sem_…"]},     # what those items superseded
     "place": {"archive_offset": 0,      # archive size before: its lines start there, in run order
               "runs": [[start, end, "<id of the line before, or null>", "<id of the run's first line>"], …]},
     "llm": {"model": "openai/gpt-4o-mini", "requests": 1, "input_tokens": 5123,
             "output_tokens": 402, "cost_usd": 0.00101}}     # only for a model; cost_usd null: price unknown

``runs`` are the moved byte ranges of the active file as it was read (``[start, end)``, whole lines,
in file order); the anchor (the id of the kept line just before a run, blank lines passed over, null at the start of the
file) is what puts a run back where it was when the active file's bytes have changed (a restored
copy). ``kind: "uncompact"`` — one per undo::

    {"kind": "uncompact", "id": "unc_…", "ts": …, "compaction_id": "cmp_…", "traces": 16,
     "superseded": {"episodic": [...], "semantic": [...]},   # the compaction's items, taken out
     "restored": {"episodic": [...], "semantic": [...]}}     # copies of what it had superseded

``kind: "unwritten-compaction"`` — a compaction that paid a model and wrote nothing (its result
would not have made the working snapshot smaller): what it spent, so the totals count it::

    {"kind": "unwritten-compaction", "id": "unw_…", "ts": …, "turn_range": "turn_0001–turn_0008",
     "llm": {…}}     # as a compaction's

A line of the ledger that is not such a record — not JSON, not an object, no string ``id`` and
``kind`` (:func:`record_problem`, the one rule; the export reader and ``memcli doctor`` use it
too) — is a CorruptStoreError naming file and line for every reader, and a writer checks the
whole ledger before it writes anything (:func:`check_ledger`): ``compact``, ``summarize-results``
with a model and ``ingest`` of an export with memory refuse, dry run alike, rather than append after a line ``uncompact`` could never read past. ``memcli doctor`` reports
such a line (``bad-json``, ``not-an-object``, ``invalid-record``) and ``--repair`` moves it to
``.compactions.jsonl.corrupt-lines``, as for every JSONL file of the agent. An unterminated last
line is no record yet (readers skip it); the next append cuts it off, or adds the newline of a
complete record (:func:`memcli.store.jsonl.repair_tail`), and doctor reports it as ``torn-tail``.

Other kinds (later features' model spending, e.g. result summaries) only need ``id``, ``ts`` and
``llm``: the cost total (:func:`cost_total`) adds the ``llm`` of every record, whatever its kind,
and ``memcli compactions`` lists only ``compaction`` records. Such a feature appends its record
inside ``store.writer()`` (the agent lock) with ``append_ledger(session.paths.ledger, [record],
jsonl.file_size(session.paths.ledger))``, or through its own journal step as compaction does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from memcli.store import jsonl

COMPACTION = "compaction"
UNCOMPACT = "uncompact"
UNCOMPACT_PREFIX = "unc"
UNWRITTEN = "unwritten-compaction"
UNWRITTEN_PREFIX = "unw"


def record_problem(record) -> str | None:
    """Why a parsed ledger line is not a record (module docstring), or None."""
    if type(record) is not dict or type(record.get("id")) is not str or type(record.get("kind")) is not str:
        return "ledger record without a valid 'id' and 'kind'"
    return None


def iter_ledger(path: Path) -> Iterator[dict]:
    """The ledger's records in file order (a corrupt line raises CorruptStoreError)."""
    return jsonl.iter_checked(path, record_problem)


def check_ledger(path: Path, agent_id: str, command: str, written: str = "nothing was written") -> None:
    """Raise CorruptStoreError for the ledger's first bad line, before ``command`` writes anything
    more (module docstring; ``written``: what it wrote before); its hint is ``memcli doctor AGENT
    --repair``."""
    with jsonl.refusing_bad_lines(path, agent_id, command, "a ledger record (uncompact could not read past it)",
                                  written):
        for _ in iter_ledger(path):
            pass


def append_ledger(path: Path, records: list[dict], size_before: int) -> None:
    """Append ``records`` whose ids are not yet in the ledger past ``size_before`` (a step of a
    journaled commit: running it again after a crash adds nothing twice), fsynced."""
    if not records:
        return
    jsonl.repair_tail(path)
    present = {r.get("id") for _, _, r in jsonl.iter_records(path, start=min(size_before, jsonl.file_size(path)),
                                                              first_line_no=None)}
    todo = [r for r in records if r["id"] not in present]
    if todo:
        jsonl.append_records(path, todo, fsync=True)


def cost_total(path: Path) -> dict:
    """The model spending the ledger records: requests, input/output tokens, the cost of the
    records whose price was known (None when none was: not a guess of 0), and how many records
    had no price."""
    total = {"records": 0, "requests": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0,
             "unpriced": 0}
    for record in iter_ledger(path):
        llm = record.get("llm")
        if not isinstance(llm, dict):
            continue
        total["records"] += 1
        for key in ("requests", "input_tokens", "output_tokens"):
            value = llm.get(key)
            total[key] += value if isinstance(value, int) else 0
        cost = llm.get("cost_usd")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            total["cost_usd"] += cost
        else:
            total["unpriced"] += 1
    if total["records"] and total["unpriced"] == total["records"]:
        total["cost_usd"] = None
    return total


def run_places(active: Path, runs: list, run_ids: list) -> list:
    """``[start, end, anchor, first_id]`` for each moved run of ``active`` (module docstring):
    the anchor is the id of the kept line just before the run — blank lines, and the lines of an
    earlier run that only blank lines separate from this one, passed over — None when there is
    none (the start of the file)."""
    places = []
    for k, ((start, end), first_id) in enumerate(zip(runs, run_ids, strict=True)):
        places.append([start, end, _kept_line_before(active, start, runs, k), first_id])
    return places


def _kept_line_before(active: Path, start: int, runs: list, k: int) -> str | None:
    """The id of the nearest non-blank line before byte ``start`` that ``runs[:k]`` do not move."""
    end = start
    while end > 0:
        for offset, line in jsonl.iter_lines_reverse(active, end=end):
            while k > 0 and runs[k - 1][0] > offset:
                k -= 1
            if k > 0 and offset < runs[k - 1][1]:   # a moved line: look before its run
                end = runs[k - 1][0]
                break
            return jsonl.parse_line(active, line, None, offset).get("id")
        else:
            return None
    return None
