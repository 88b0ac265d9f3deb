"""``memcli search --all``: one ranked list over every agent of a store.

Each agent is searched by the one per-agent search (:func:`memcli.search.search`, whatever its
ranking), and the hits are merged by score, best first (ties: newest first); each hit names its
agent, and for an agent that came from a harness session (``memcli sync``; its
``.source.json``) the command that resumes the session in its harness (``claude --resume
<id>``...) and the session's title. An agent that cannot be searched (a corrupt file) is left
out with a note; the others still answer.
"""

from __future__ import annotations

import heapq
import os
from dataclasses import dataclass, field
from typing import Callable

from memcli.errors import MemcliError
from memcli.store.layout import list_agent_ids


@dataclass
class AgentHit:
    agent: str
    hit: object                      # memcli.search.engine.Hit
    resume: str | None = None
    title: str | None = None
    source: str | None = None

    def to_json(self) -> dict:
        out = {"agent": self.agent}
        out.update(self.hit.to_json())
        for key in ("source", "title", "resume"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        return out


@dataclass
class AcrossResult:
    hits: list[AgentHit]
    agents: int = 0                  # agents searched
    notes: list[str] = field(default_factory=list)


def search_all(memory_dir: str | os.PathLike, search_one: Callable[[str], object], limit: int = 10) -> AcrossResult:
    """Merge ``search_one(agent)`` (a :class:`memcli.search.SearchResult`) over every agent."""
    from memcli.store import sync_state
    from memcli.store.layout import agent_paths

    result = AcrossResult([])
    candidates = []
    n = 0
    for agent in list_agent_ids(memory_dir):
        try:
            found = search_one(agent)
        except MemcliError as exc:
            result.notes.append(f"agent {agent!r} not searched: {exc.message}")
            continue
        result.agents += 1
        for hit in found.hits:
            n += 1
            candidates.append((hit.score, hit.ts or 0.0, -n, agent, hit))
    best = heapq.nlargest(limit, candidates)
    metas: dict[str, dict] = {}
    for _, _, _, agent, hit in best:
        if agent not in metas:
            metas[agent] = sync_state.read_source_meta(agent_paths(memory_dir, agent)) or {}
        meta = metas[agent]
        result.hits.append(AgentHit(agent, hit, resume=meta.get("resume"), title=meta.get("title"),
                                    source=meta.get("source")))
    return result
