"""A shared PostgreSQL store: the team's replica and query engine (docs/design.md §11; docs/remote.md).

Local JSONL stays the source of truth on each machine. ``push`` copies every record of every data
file of an agent (:data:`memcli.store.layout.DATA_FILES`, whatever they are) into one table,
``memcli_records``, one row per record, the JSONL line kept byte for byte; ``pull`` writes the
files back from those rows in the same order, so the pulled agent's files — and so its export —
are identical to the pusher's. ``search --remote`` ranks with a tsvector/GIN index;
``mcp --remote`` serves the rows with the MCP tools.

Modules: :mod:`.connect` (URL, connection, one-line errors), :mod:`.schema` (tables, version
check), :mod:`.push`, :mod:`.pull`, :mod:`.search`, :mod:`.tools` (the MCP tools over the
database). ``psycopg`` is imported by these modules only, and only when a remote command runs.
"""
