"""Looking inside an agent's memory: the library behind ``agents``, ``stats``, ``turns``,
``show``, ``tools``, ``get``, ``memory`` and ``doctor``.

Every view streams: it reads the JSONL files lazily and yields records (dataclasses, serialized
by :func:`memcli.models.to_record`), so memory stays flat however long the history is. Views of
recent history (``--last N``, pending calls) read from the end of the active file and never
scan it whole.

* :mod:`memcli.filters` (shared with export) — ``--since/--until/--type/--tag/--turn`` parsing and matching
* :mod:`~memcli.inspect.agents` — one summary per agent (from the state cache)
* :mod:`~memcli.inspect.stats` — counts, tokens, budget for one agent (one streaming pass)
* :mod:`~memcli.inspect.turns` — one summary per turn
* :mod:`~memcli.inspect.traces` — the traces themselves, filtered
* :mod:`~memcli.inspect.tools` — the tool interaction view (docs/design.md §2)
* :mod:`~memcli.inspect.memory` — episodic and semantic items, superseded ones marked
* :mod:`~memcli.inspect.records` — one record by id, wherever it lives
* :mod:`~memcli.inspect.doctor` — integrity checks with file and line, and repairs
"""
