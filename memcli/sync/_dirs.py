"""Listing a harness's session directories: one way, sorted by name (so sessions are found in
the same order on every machine), and empty when the directory is missing or unreadable (a harness
not installed, or a directory it is still creating, is not an error)."""

from __future__ import annotations

import os


def entries(directory) -> list[os.DirEntry]:
    """The entries of ``directory``, sorted by name; ``[]`` when it cannot be read."""
    try:
        with os.scandir(directory) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError:
        return []
