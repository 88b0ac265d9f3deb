"""Compaction (docs/design.md §3–§4): policy, window selection, summarizers; the journaled commit is
:mod:`memcli.store.journal`."""
