"""Episodic summaries and semantic facts (``memcli memory``).

An item is *superseded* when a later item of the same tier lists its id in ``supersedes`` (a
roll-up of episodic items, a fact replaced by a newer one); readers skip it. The listing shows
live items, or with ``all`` every item with ``superseded_by`` naming the item that replaced it.
An item an agent harness's own compaction wrote (imported from its transcript) carries
``harness_compaction`` (memcli.store.harness_items); ``MemoryEntry.harness`` says it in words.
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
from memcli.store.harness_items import describe_mark, harness_mark

TIERS = ("episodic", "semantic")


@dataclass
class MemoryEntry:
    tier: str                   # "episodic" or "semantic"
    superseded_by: str | None   # id of the item that replaced this one, None when live
    item: EpisodicItem | SemanticItem

    @property
    def harness(self) -> str | None:
        """For a harness compaction's item (memcli.store.harness_items): what the harness did, in
        one line (``claude-code compaction (auto, 167,000 tokens before) of trace cc-…``)."""
        mark = harness_mark(self.item) if self.tier == "episodic" else None
        if mark is None:
            return None
        return describe_mark(mark) + (f" of trace {mark['trace_id']}" if isinstance(mark.get("trace_id"), str) else "")

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


def iter_working_memory(store: AgentStore) -> Iterator[dict]:
    """The working-memory tree (``memcli memory --files``): ``{"path", "kind": "dir"|"file",
    "bytes"[, "content"]}`` for the root, every directory and every file, in path order."""
    store.require()
    tree = store.memory_tree()
    for path in sorted(tree.dirs | set(tree.files), key=lambda p: p.split("/")):
        if path in tree.files:
            text = tree.files[path]
            yield {"path": path, "kind": "file", "bytes": len(text.encode("utf-8", "surrogatepass")), "content": text}
        else:
            size = sum(len(t.encode("utf-8", "surrogatepass")) for p, t in tree.files.items() if p.startswith(path + "/"))
            yield {"path": path, "kind": "dir", "bytes": size}
