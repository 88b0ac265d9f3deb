"""Export an agent's complete history (docs/design.md §6).

* :func:`memcli.export.api.export` — archive then active, streamed with flat memory from a
  point-in-time view (:mod:`.reader`), filtered (:mod:`memcli.filters`), in one of the formats
  ``jsonl`` / ``json`` (:mod:`.jsonl`, the stored records; re-ingestable), ``markdown``
  (:mod:`.markdown`, for people), ``openai`` / ``anthropic`` (:mod:`.provider`, through the
  snapshot renderers), to stdout or to a file that appears only when complete (:mod:`.output`).
* ``--with-memory``: episodic/semantic items, in jsonl/json as ``record_type`` records that
  ``ingest`` restores (:mod:`memcli.store.memory_records`), in markdown as a section at the top.

Clearing an agent is a write, so it lives in the store: :func:`memcli.store.clear.clear_agent`.
"""
