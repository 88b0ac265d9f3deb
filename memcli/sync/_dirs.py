"""Listing a harness's session directories: one way, sorted by name (so sessions are found in
the same order on every machine), and empty when the directory is missing or unreadable (a harness
not installed, or a directory it is still creating, is not an error); and where a harness keeps
its files: ``<home>/.<harness>``, or the directory its environment variable names (``CODEX_HOME``,
``CLAUDE_CONFIG_DIR``, ``COPILOT_HOME``) when sync reads this machine's own home."""

from __future__ import annotations

import os
from pathlib import Path


def entries(directory) -> list[os.DirEntry]:
    """The entries of ``directory``, sorted by name; ``[]`` when it cannot be read."""
    try:
        with os.scandir(directory) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError:
        return []


def harness_dir(home: Path, default: str, env: str) -> Path:
    """``home / default``; for the user's own home (not ``--home`` elsewhere), ``$env`` when set:
    the harness itself then writes there, not under ``~``."""
    moved = os.environ.get(env)
    if moved and os.path.abspath(home) == os.path.abspath(os.path.expanduser("~")):
        return Path(os.path.abspath(os.path.expanduser(moved)))
    return home / default
