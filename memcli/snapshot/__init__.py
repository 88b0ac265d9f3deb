"""Snapshots: memory turned back into a prompt (docs/design.md §5), and the canonical message model that
every renderer and the export consume.

Modules (each documents its rules):

* :mod:`memcli.messages` — the canonical messages (system / user / assistant / tool, tool
  calls, tool results linked to their call, orphan notes) and their invariants;
* :mod:`memcli.snapshot.build` — ``build_messages(traces)``: canonical messages from ANY iterator
  of RawTrace, streamed (pairing in render order, placeholders for pending calls, unique ids);
* :mod:`memcli.snapshot.views` — the budget views (clip, expire, stub, drop turns) and token
  counts, as transformations of message lists;
* :mod:`memcli.snapshot.assemble` — ``take_snapshot(memory_dir, agent_id, SnapshotOptions)``:
  the working / compaction snapshot of one agent, read from the end of the store, rendered by
  :func:`memcli.renderers.get_renderer`.

Contract for a streaming consumer (``memcli export --format openai|anthropic``)::

    from memcli.renderers import get_renderer
    from memcli.snapshot.build import BuildStats, build_messages
    from memcli.snapshot.assemble import memory_message      # optional: the memory bundle

    traces = (stored.trace for stored in store.iter_traces(archive=True))   # archive, then active
    stats = BuildStats()
    messages = build_messages(traces, lookahead=10_000, id_capacity=1_000_000, stats=stats)
    renderer = get_renderer("anthropic")
    for chunk in renderer.iter_chunks(system_text, messages):   # bytes; constant memory
        out.write(chunk)
    notes = renderer.notes.lines()                              # what was left out, for stderr

* memory is bounded by ``lookahead`` (traces buffered while a call waits for its result; past it
  the call gets its placeholder and a later result becomes a "late" note), ``id_capacity``
  (remembered call ids for uniqueness), the unanswered calls, and one message of renderer
  lookahead;
* ``system``/``developer`` traces come out in place as ``role="system"`` messages; the snapshot
  hoists them into ``system_text``, a stream may leave them: OpenAI renderers emit them as
  system/developer messages in place, Anthropic and Gemini as user text starting ``[system]``;
* reasoning is left out unless ``include_reasoning=True`` (only the text renderer shows it);
  sidechain traces are left out unless ``include_sidechain=True``.
"""

from memcli.snapshot.assemble import Snapshot, SnapshotOptions, take_snapshot

__all__ = ["Snapshot", "SnapshotOptions", "take_snapshot"]
