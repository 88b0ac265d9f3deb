"""Episodic summaries and semantic facts (``memcli memory``).

An item is *superseded* when a later item of the same tier lists its id in ``supersedes`` (a
roll-up of episodic items, a fact replaced by a newer one); readers skip it. The listing shows
live items, or with ``all`` every item with ``superseded_by`` naming the item that replaced it.
Episodic items come first, then semantic ones, each in file order. Two passes per file (first
the ids that are superseded, then the items) keep memory flat.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from memcli.models import EpisodicItem, SemanticItem, superseded_ids, to_record
from memcli.store import jsonl
from memcli.store.agent import AgentStore

TIERS = ("episodic", "semantic")


@dataclass
class MemoryEntry:
    tier: str                   # "episodic" or "semantic"
    superseded_by: str | None   # id of the item that replaced this one, None when live
    item: EpisodicItem | SemanticItem

    def to_json(self) -> dict:
        """``tier``, ``superseded_by``, then the stored record's fields."""
        out = {"tier": self.tier, "superseded_by": self.superseded_by}
        for key, value in to_record(self.item).items():
            out.setdefault(key, value)
        return out


def superseded_map(path: Path) -> dict[str, str]:
    """id -> id of the first later item that supersedes it (:func:`memcli.models.superseded_ids`)."""
    return superseded_ids(record for _, _, record in jsonl.iter_records(path))


def iter_memory(store: AgentStore, *, include_superseded: bool = False,
                tiers: tuple[str, ...] = TIERS) -> Iterator[MemoryEntry]:
    store.recover_if_needed()
    sources = {"episodic": (store.paths.episodic, store.iter_episodic),
               "semantic": (store.paths.semantic, store.iter_semantic)}
    for tier in tiers:
        path, reader = sources[tier]
        superseded = superseded_map(path)
        for item in reader():
            by = superseded.get(item.id)
            if by is None or include_superseded:
                yield MemoryEntry(tier, by, item)
