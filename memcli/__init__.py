"""memcli: keep an AI agent's memory in plain JSONL files.

The Python API is ``memcli.Memory(path).agent(name)`` (:mod:`memcli.api`), exported lazily: the
names in ``__all__`` are loaded on first use, so ``import memcli`` (and every ``memcli ingest``)
stays as fast as before and loads neither typer nor rich.

The package is a library first (``memcli.store``, ``memcli.ingest``, ``memcli.importers``,
``memcli.inspect``, ``memcli.compaction``, ``memcli.renderers``, ``memcli.export``) with a thin
Typer CLI in ``memcli.cli``. Importing ``memcli`` is cheap: heavy modules (LiteLLM, tiktoken, Rich)
are imported only by the code paths that use them.
"""

__version__ = "0.1.0"

# the public names: name -> module that defines it (loaded on first access, PEP 562)
_LAZY = {"Memory": "memcli.api", "Agent": "memcli.api", "MemcliError": "memcli.errors"}
__all__ = ["Memory", "Agent", "MemcliError", "__version__"]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'memcli' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
