"""One record by id, wherever it lives (``memcli get``): an active or archived trace, an episodic
summary, a semantic fact, or a working-memory change (``wm_…``: shown with the file's text as
that change left it — an old version). This is how a user expands what a snapshot clipped or a compaction
archived: the snapshot names the trace id, ``get`` prints the record in full.

An id that is no record's id is tried as a ``tool_call_id`` (:func:`find_tool_call`): the call
and its result, paired as ``memcli tools`` pairs them (first-in-first-out per id), from the
archive and the active file. Transcripts reuse call ids, so one id can name several
interactions: every one is returned, and ``ambiguous`` says so.

**Prefixes, as git takes them.** An id that is neither is tried as the start of one: a record
id (then a tool_call_id) that only one record starts with is expanded and found; one that
several start with is a usage error (exit 2) listing them (:data:`MAX_CANDIDATES` at most). A
trailing ``…`` (as tables shorten ids) is ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from memcli.errors import RecordNotFoundError
from memcli.store.agent import AgentStore
from memcli.store.memory_files import MEMORY_FILE_PREFIX

_TIER_PATHS = {"active": "active", "archive": "archive", "episodic": "episodic", "semantic": "semantic",
               "memory_files": "memory_files"}


@dataclass
class FoundRecord:
    tier: str       # active, archive, episodic, semantic or memory_files
    path: Path
    line: int
    record: object  # RawTrace, EpisodicItem, SemanticItem, or a working-memory change (a dict with the
                    # file's ``content`` as that change left it)


MAX_CANDIDATES = 10


def _expand(store: AgentStore, prefix: str, key: str) -> str | None:
    """The one ``key`` value (``id`` or ``tool_call_id``) of the agent's records that starts with
    ``prefix``; None when none does; UsageError naming the candidates when several do."""
    from memcli.errors import UsageError
    from memcli.store import jsonl

    prefix = prefix.rstrip("…")
    if not prefix:
        return None
    paths = store.paths
    files = [paths.archive, paths.active] if key == "tool_call_id" else \
        [paths.active, paths.archive, paths.episodic, paths.semantic, paths.memory_files]
    needle = b'"' + prefix.encode("utf-8", "surrogatepass")
    found: dict[str, None] = {}
    for path in files:
        for offset, line in jsonl.iter_lines(path):
            if needle not in line:
                continue
            value = jsonl.parse_line(path, line, None, offset).get(key)
            if isinstance(value, str) and value.startswith(prefix):
                found[value] = None
    if len(found) > 1:
        names = list(found)
        more = f" and {len(names) - MAX_CANDIDATES:,} more" if len(names) > MAX_CANDIDATES else ""
        what = "ids" if key == "id" else "tool call ids"
        raise UsageError(f"{prefix!r} is the start of {len(names):,} {what} in agent {store.agent_id!r}: "
                         + ", ".join(names[:MAX_CANDIDATES]) + more, hint="give more of the id")
    return next(iter(found), None)


def get_record(store: AgentStore, record_id: str) -> FoundRecord:
    store.require()
    found = store.find(record_id)
    if found is None:
        full = _expand(store, record_id, "id")
        found = store.find(full) if full is not None else None
    if found is None:
        paths = store.paths
        looked = [paths.active, paths.archive, paths.episodic, paths.semantic]
        if record_id.startswith(MEMORY_FILE_PREFIX + "_"):  # only working-memory ids are looked for there
            looked.append(paths.memory_files)
        names = ", ".join(p.name for p in looked)
        hint = None
        if re.fullmatch(r"turn_\d+", record_id):
            hint = f"{record_id!r} looks like a turn id: `memcli show {store.agent_id} --turn {record_id} --archive`"
        else:
            hint = f"not a tool call id either; `memcli search {store.agent_id} WORDS` finds records by what they say"
        raise RecordNotFoundError(
            f"no record with id {record_id!r} in agent {store.agent_id!r} (looked in {names} under {paths.dir})",
            hint=hint)
    tier, line, record = found
    path = getattr(store.paths, _TIER_PATHS[tier])
    return FoundRecord(tier, path, line, record)


@dataclass
class FoundToolCall:
    tool_call_id: str
    interactions: list   # dicts: turn_id, tool_name, status, call, result, call_tier, result_tier

    @property
    def ambiguous(self) -> bool:
        return len(self.interactions) > 1

    def to_json(self) -> dict:
        return {"tool_call_id": self.tool_call_id, "ambiguous": self.ambiguous, "interactions": self.interactions}

    to_dict = to_json


def locate(store: AgentStore, record_id: str) -> FoundRecord | FoundToolCall:
    """What ``memcli get ID`` shows, the one rule for every client: the record with this id (or
    the one id that starts with it), else the tool call(s) with this ``tool_call_id`` and their
    results. Raises RecordNotFoundError when it is neither."""
    try:
        return get_record(store, record_id)
    except RecordNotFoundError:
        calls = find_tool_call(store, record_id)
        if calls is None:
            raise
        return calls


def find_tool_call(store: AgentStore, call_id: str) -> FoundToolCall | None:
    """Every interaction whose call or result carries ``tool_call_id == call_id`` (or the one id
    that starts with it), in store order."""
    store.recover_if_needed()
    found = _tool_call(store, call_id)
    if found is None:
        full = _expand(store, call_id, "tool_call_id")
        found = _tool_call(store, full) if full is not None else None
    return found


def _tool_call(store: AgentStore, call_id: str) -> FoundToolCall | None:
    import orjson

    from memcli.models import to_record
    from memcli.store import jsonl
    from memcli.store.agent import trace_from_record
    from memcli.tool_interactions import iter_tool_pairs

    needle = orjson.dumps(call_id)
    tiers: dict[str, str] = {}

    def traces():
        for tier, path in (("archive", store.paths.archive), ("active", store.paths.active)):
            for offset, line in jsonl.iter_lines(path):
                if needle not in line:
                    continue
                record = jsonl.parse_line(path, line, None, offset)
                if record.get("tool_call_id") != call_id:
                    continue
                trace = trace_from_record(path, None, offset, record)
                tiers[trace.id] = tier
                yield trace

    out = []
    for pair in iter_tool_pairs(traces()):
        i = pair.interaction
        out.append({
            "turn_id": i.turn_id, "tool_name": i.tool_name, "status": i.status.value,
            "call": to_record(pair.call) if pair.call is not None else None,
            "result": to_record(pair.result) if pair.result is not None else None,
            "call_tier": tiers.get(pair.call.id) if pair.call is not None else None,
            "result_tier": tiers.get(pair.result.id) if pair.result is not None else None,
        })
    return FoundToolCall(call_id, out) if out else None
