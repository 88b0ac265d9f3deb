"""``memcli sync --path PATH``: session files kept outside the places the sources look in.

A path is a chat app's data export (``conversations.json``: ChatGPT or Claude.ai, told apart by
its head), an Aider chat log (``.aider.chat.history.md``), or a directory holding either. Each is
imported by its source exactly as if that source had found it (same agent names, same state), and
only when that source is among the chosen ones. A path that is none of these is a usage error.
"""

from __future__ import annotations

import os
from pathlib import Path

from memcli.errors import UsageError
from memcli.sync import Session, get_source


def claim(path: str) -> str | None:
    """The source that reads the file at ``path``, or None."""
    from memcli.sync.aider import FILE_NAME as AIDER
    from memcli.sync.chat_exports import written_by

    if os.path.basename(path) == AIDER:
        return "aider"
    return written_by(path)


def given_sessions(paths, chosen: list[str]) -> dict[str, list[Session]]:
    """source name -> the sessions of ``paths`` (files, or directories holding them)."""
    from memcli.sync.aider import FILE_NAME as AIDER
    from memcli.sync.chat_exports import FILE_NAME as EXPORT

    out: dict[str, list[Session]] = {}
    for given in paths:
        p = Path(os.path.abspath(os.path.expanduser(str(given))))
        files = [str(p / n) for n in (EXPORT, AIDER) if (p / n).is_file()] if p.is_dir() else [str(p)]
        if not p.exists():
            raise UsageError(f"--path {given}: no such file or directory")
        names = [(f, claim(f)) for f in files]
        if not any(name for _, name in names):
            raise UsageError(f"--path {given}: not a session file sync reads",
                             hint="a ChatGPT or Claude.ai conversations.json, an .aider.chat.history.md,"
                                  " or a directory holding one")
        for f, name in names:
            if name in chosen:
                out.setdefault(name, []).append(get_source(name).session_of(f))
    return out
