"""Writing an agent harness's settings file (``memcli hooks install|uninstall``).

A harness's settings file (``~/.claude/settings.json``, ``~/.codex/hooks.json``,
``~/.gemini/settings.json`` ...) belongs to the user: it is changed only by :func:`replace_settings`,
which first copies the current bytes to a backup beside it (``<name>.memcli-backup``, replaced by
each change: it holds the file as it was just before memcli's last change), then writes the new
text to a random temp name in the same directory and ``os.replace``\\ s it over the file, so a
crash leaves the old file or the new one, never half of one. A file that did not exist gets no
backup; its missing parent directories are created. A symlinked settings file (a dotfiles
checkout) is written through: its target changes, the link stays. The file keeps its permission
bits (a new one is 0600).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from memcli.errors import StoreError
from memcli.store.jsonl import atomic_write_bytes

BACKUP_SUFFIX = ".memcli-backup"


def backup_path(path: Path) -> Path:
    return path.with_name(path.name + BACKUP_SUFFIX)


def replace_settings(path: Path, text: str) -> Path | None:
    """Write ``text`` as the settings file ``path``; the backup's path (None for a new file)."""
    target = Path(os.path.realpath(path))
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from None
    backup = None
    try:
        if st is None:
            target.parent.mkdir(parents=True, exist_ok=True)
            mode = None
        else:
            backup = backup_path(target)
            atomic_write_bytes(backup, target.read_bytes(), mode=stat.S_IMODE(st.st_mode))
            mode = stat.S_IMODE(st.st_mode)
        atomic_write_bytes(target, text.encode("utf-8"), mode=mode)
    except OSError as exc:
        raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from None
    return backup
