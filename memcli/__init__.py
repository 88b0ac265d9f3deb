"""memcli: keep an AI agent's memory in plain JSONL files.

The package is a library first (``memcli.store``, ``memcli.ingest``, ``memcli.importers``,
``memcli.inspect``, ``memcli.compaction``, ``memcli.renderers``, ``memcli.export``) with a thin
Typer CLI in ``memcli.cli``. Importing ``memcli`` is cheap: heavy modules (LiteLLM, tiktoken, Rich)
are imported only by the code paths that use them.
"""

__version__ = "0.1.0"
