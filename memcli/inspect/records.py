"""One record by id, wherever it lives (``memcli get``): an active or archived trace, an episodic
summary, a semantic fact, or a working-memory change (``wm_…``: shown with the file's text as
that change left it — an old version). This is how a user expands what a snapshot clipped or a compaction
archived: the snapshot names the trace id, ``get`` prints the record in full.
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


def get_record(store: AgentStore, record_id: str) -> FoundRecord:
    store.require()
    found = store.find(record_id)
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
            hint = (f"a tool call id? `memcli tools {store.agent_id} --archive --json` lists them "
                    "with their call_trace_id/result_trace_id")
        raise RecordNotFoundError(
            f"no record with id {record_id!r} in agent {store.agent_id!r} (looked in {names} under {paths.dir})",
            hint=hint)
    tier, line, record = found
    path = getattr(store.paths, _TIER_PATHS[tier])
    return FoundRecord(tier, path, line, record)
