"""Rewriting a data file line by line: the store's one way to change lines already written.

:func:`rewrite_lines` copies a file through a per-line transform into a fresh temp file beside it
(random name, ``O_EXCL | O_NOFOLLOW``, mode 0600), fsyncs it, ``os.replace``s the original and
fsyncs the directory: a reader sees the old file or the new one, never a mix, and a crash leaves
at most a stray temp file. The new file has a new inode, which is what every cache keyed on file
identity (the state cache, the search index) notices and rebuilds from.

:func:`rewrite_agent_files` does that for several files of one agent under the agent lock, after
the same recovery a write does first (an interrupted ingest is rolled back, an unfinished
compaction finished: both record byte offsets a rewrite would invalidate). It keeps a journal,
``.rewrite.pending`` (``{"tmp": [temp file names]}``), from before the first temp file exists
until the last replace is durable; a journal left by a crash names the temp files to delete,
which the next rewrite does first. Files whose lines the transform leaves alone are not touched.
Then the state cache is rebuilt from the files (keeping its turn counter: turn numbers never go
back).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import orjson

from memcli.errors import MemcliError
from memcli.store import jsonl, layout
from memcli.store.agent import AgentStore, crash_point

JOURNAL = layout.REWRITE_JOURNAL

# (line number, line bytes with its newline) -> the new line bytes (with the newline), or None to drop it
LineTransform = Callable[[int, bytes], "bytes | None"]


def temp_path(path: Path, purpose: str) -> Path:
    """A fresh name beside ``path`` (nothing planted there can be followed)."""
    return jsonl.temp_name(path, purpose)


def rewrite_lines(path: Path, transform: LineTransform, tmp: Path | None = None) -> None:
    """Rewrite ``path`` through ``transform`` (temp file, fsync, ``os.replace``, directory fsync)."""
    tmp = tmp or temp_path(path, "rewrite")
    fd = jsonl.create_new(tmp)
    try:
        with os.fdopen(fd, "wb", buffering=1 << 20) as out:
            with jsonl.open_read(path) as f:
                for number, raw in enumerate(f, 1):
                    new = transform(number, raw)
                    if new is not None:
                        out.write(new)
            out.flush()
            os.fsync(out.fileno())
        crash_point("rewrite:written")
        os.replace(tmp, path)
        jsonl.fsync_dir(path.parent)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _journal_path(store: AgentStore) -> Path:
    return store.paths.dir / JOURNAL


def clean_interrupted_rewrite(store: AgentStore) -> str | None:
    """Delete the temp files a crashed rewrite left (its journal names them); a note, or None."""
    journal = _journal_path(store)
    try:
        names = orjson.loads(journal.read_bytes()).get("tmp", [])
    except FileNotFoundError:
        return None
    except (OSError, orjson.JSONDecodeError, AttributeError):
        names = []
    removed = 0
    for name in names:
        if isinstance(name, str) and "/" not in name and name.endswith(".tmp"):
            try:
                os.unlink(store.paths.dir / name)
                removed += 1
            except FileNotFoundError:
                pass
    os.unlink(journal)
    jsonl.fsync_dir(store.paths.dir)
    return f"cleaned up an interrupted rewrite ({removed} temp file{'s' if removed != 1 else ''} deleted)"


def rewrite_agent_files(store: AgentStore, plan: dict[Path, LineTransform],
                        changed: Callable[[Path], bool] | None = None) -> list[str]:
    """Under the agent lock, rewrite each file of ``plan`` through its transform (module
    docstring). ``changed(path)`` (checked under the lock, before writing) says whether the file
    needs it at all. Returns what was done, in order."""
    from memcli.store.agent import WriteSession
    from memcli.store.journal import recover
    from memcli.store.lock import agent_lock

    notes: list[str] = []
    with agent_lock(store.paths):
        note = clean_interrupted_rewrite(store)
        if note:
            notes.append(note)
        session = WriteSession(store)
        session.rollback_interrupted_ingest()
        notes.extend(session.recovered)
        if store.paths.compaction_journal.exists():
            notes.append(recover(session) or "recovered the unfinished compaction")
        todo = [path for path in plan if path.exists() and (changed is None or changed(path))]
        if not todo:
            return notes
        temps = {path: temp_path(path, "rewrite") for path in todo}
        jsonl.atomic_write_bytes(_journal_path(store), orjson.dumps({"tmp": [t.name for t in temps.values()]}))
        for path in todo:
            rewrite_lines(path, plan[path], temps[path])
            crash_point("rewrite:replaced")
        os.unlink(_journal_path(store))
        jsonl.fsync_dir(store.paths.dir)
        try:  # the files have new inodes: the cache sees that and is rebuilt (its turn counter kept)
            WriteSession(store).open()
            notes.append("rebuilt the state cache from the files")
        except MemcliError as exc:
            notes.append(f"could not rebuild the state cache: {exc.message}")
    return notes
