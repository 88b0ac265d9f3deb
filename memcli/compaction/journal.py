"""The compaction journal (DESIGN.md §3). Implemented with compaction; see the compaction issue."""

from __future__ import annotations


def recover(session) -> str | None:
    """Finish or undo an interrupted compaction of ``session``'s agent. Returns a note or None."""
    from memcli.errors import StoreError

    raise StoreError(
        f"{session.paths.compaction_journal} records an unfinished compaction, "
        "but this memcli cannot recover it"
    )
