"""Snapshots: memory turned back into a prompt (DESIGN.md §5), and the canonical message model that
every renderer and the export consume.

Modules (each documents its rules):

* :mod:`memcli.snapshot.model` — the canonical messages (system / user / assistant / tool, tool
  calls, tool results linked to their call, orphan notes) and their invariants;
* :mod:`memcli.snapshot.build` — ``build_messages(traces)``: canonical messages from ANY iterator
  of RawTrace, streamed (pairing in render order, placeholders for pending calls, unique ids);
* :mod:`memcli.snapshot.views` — the budget views (clip, expire, stub, drop turns) and token
  counts, as transformations of message lists;
* :mod:`memcli.snapshot.assemble` — ``take_snapshot(memory_dir, agent_id, SnapshotOptions)``:
  the working / compaction snapshot of one agent, read from the end of the store, rendered by
  :func:`memcli.renderers.get_renderer`.
"""

from memcli.snapshot.assemble import Snapshot, SnapshotOptions, take_snapshot

__all__ = ["Snapshot", "SnapshotOptions", "take_snapshot"]
