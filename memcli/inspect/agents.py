"""One summary per agent (``memcli agents``), cheap enough to run over a store with many agents.

Counts come from each agent's state cache (``.state.json``; rebuilt in memory, not written, when
it is missing or out of step) and file sizes; nothing is scanned when the cache is current.

* ``active`` / ``archive`` — traces in ``raw_traces.jsonl`` / ``raw_traces_archive.jsonl``
* ``turns`` — the agent's turn counter: the highest ``turn_NNNN`` it has used, archive included
* ``episodic`` / ``semantic`` — lines in those files (superseded items included)
* ``bytes`` — the data files together (:data:`memcli.store.layout.DATA_FILES`)
* ``last_activity`` — :func:`last_activity`, the one definition ``stats`` shows too: the newest
  ``ts`` among the active traces and the last records of the archive, the episodic and semantic
  files and the working-memory log (an edit of ``/memories`` is activity)
* ``problem`` — set (and the other counts None) when the agent cannot be read, e.g. a corrupt
  line: the listing goes on with the other agents.
* ``title`` — the harness's title of the session the agent came from (``memcli sync``), else its
  first user ask (the first of the first :data:`TITLE_SCAN` traces, archive first), clipped;
* ``source`` / ``source_path`` — the harness and the session file of a synced agent
  (``agents/<agent>/.source.json``), else None.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from memcli.errors import MemcliError
from memcli.store import jsonl
from memcli.store.agent import AgentStore
from memcli.store.layout import DATA_FILES, list_agent_ids


@dataclass
class AgentSummary:
    agent: str
    active: int | None
    archive: int | None
    turns: int | None
    episodic: int | None
    semantic: int | None
    bytes: int
    last_activity: float | None
    problem: str | None
    title: str | None
    source: str | None
    source_path: str | None


def count_lines(path: Path) -> int:
    """Complete lines in a file (a C-speed count of newlines)."""
    try:
        f = jsonl.open_read(path)
    except FileNotFoundError:
        return 0
    count = 0
    with f:
        while block := f.read(1 << 20):
            count += block.count(b"\n")
    return count


def last_ts(path: Path) -> float | None:
    """``ts`` of the last record of a file, read from its end."""
    for _, record in jsonl.iter_records_reverse(path):
        ts = record.get("ts")
        return float(ts) if isinstance(ts, (int, float)) and not isinstance(ts, bool) else None
    return None


def last_activity(store: AgentStore, state=None) -> float | None:
    """When the agent last changed, as ``agents`` and ``stats`` both show it: the newest ``ts``
    among its active traces (kept by the state cache), the last archived trace, the last
    episodic and semantic items (so a compaction counts) and the last working-memory edit; each
    file is read from its end."""
    paths = store.paths
    state = state if state is not None else store.read_state()
    known = [t for t in [state.last_ts] + [last_ts(p) for p in (paths.archive, paths.episodic, paths.semantic,
                                                                   paths.memory_files)]
             if t is not None]
    return max(known) if known else None


TITLE_SCAN = 200
TITLE_CHARS = 100


def first_ask(store: AgentStore) -> str | None:
    """The agent's first user ask (context, system prompts and sidechains are not asks)."""
    from memcli.models import NON_OPENING_TAGS

    seen = 0
    for path in (store.paths.archive, store.paths.active):
        for _, _, record in jsonl.iter_records(path):
            seen += 1
            if seen > TITLE_SCAN:
                return None
            content = record.get("content")
            if (record.get("trace_type") == "user" and isinstance(content, str) and content.strip()
                    and NON_OPENING_TAGS.isdisjoint(record.get("tags") or ())):
                return " ".join(content.split())[:TITLE_CHARS]
    return None


def summarize_agent(store: AgentStore) -> AgentSummary:
    from memcli.store.sync_state import read_source_meta

    paths = store.paths
    size = sum(jsonl.file_size(paths.dir / name) for name in DATA_FILES)
    meta = read_source_meta(paths) or {}
    where = {"source": meta.get("source"), "source_path": meta.get("source_path")}
    try:
        state = store.read_state()
        return AgentSummary(
            agent=store.agent_id, active=state.active_count, archive=state.archive_count,
            turns=state.turn_counter, episodic=count_lines(paths.episodic), semantic=count_lines(paths.semantic),
            bytes=size, last_activity=last_activity(store, state), problem=None,
            title=meta.get("title") or first_ask(store), **where,
        )
    except MemcliError as exc:
        return AgentSummary(store.agent_id, None, None, None, None, None, size, None, exc.message,
                            title=meta.get("title"), **where)


def iter_agents(memory_dir: str | os.PathLike) -> Iterator[AgentSummary]:
    for agent_id in list_agent_ids(memory_dir):
        yield summarize_agent(AgentStore(memory_dir, agent_id))
