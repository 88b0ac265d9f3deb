"""What ``memcli sync`` remembers between runs, and where an agent's messages came from.

Two kinds of small files, both derived and written whole (temp file in the same directory, fsync,
``os.replace``, fsync of the directory), so a crash leaves the old or the new version, never a
mix:

* ``<memory dir>/.sync/<source>.json`` — per source, one entry per session *file* it has read,
  keyed by the file's path::

      {"version": 1, "files": {"/home/me/.codex/sessions/.../rollout-....jsonl":
          {"agent": "codex.app.0199...", "size": 48213, "mtime_ns": 1764..., "ino": 393244,
           "offset": 48213, "line": 211, "tail": "9f2c...", "carry": {...} | null}}}

  ``size``/``mtime_ns``/``ino`` say whether the file changed since (unchanged: not opened);
  ``offset``/``line`` where reading stopped (the end of the last complete line read); ``tail``
  a digest of the bytes just before ``offset`` (an appended file still has them; a rewritten
  one, as a rewind or a compacted rollout leaves it, does not); ``carry`` the importer's state at
  ``offset`` when its format can be read on from there (:mod:`memcli.sync`). Written under
  ``.locks/.sync.lock`` (agent ids cannot start with a dot), merged into the latest version on
  disk, so two syncs (or a sync and a harness hook) never lose each other's entries. Losing the
  file costs only time: the next sync re-reads every session and the ids of what is already
  stored make the re-read add nothing.

* ``agents/<agent>/.source.json`` — where the agent's traces came from, for ``agents --json``
  and ``search --all``: ``{"source", "source_path", "session_id", "title", "resume", ...}``.
  Written under the agent's lock.
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson

from memcli.store.jsonl import atomic_write_bytes
from memcli.store.layout import SOURCE_META, SYNC, AgentPaths, ensure_dir

STATE_VERSION = 1
LOCK_NAME = ".sync.lock"


def state_path(memory_dir: str | os.PathLike, source: str) -> Path:
    return Path(memory_dir) / SYNC / f"{source}.json"


def load_files(memory_dir: str | os.PathLike, source: str) -> dict[str, dict]:
    """The source's file entries (empty when there is no state, or it cannot be read: the next
    sync then re-reads, which adds nothing already stored)."""
    try:
        data = orjson.loads(state_path(memory_dir, source).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    files = data.get("files") if isinstance(data, dict) and data.get("version") == STATE_VERSION else None
    return files if isinstance(files, dict) else {}


def sync_lock(memory_dir: str | os.PathLike):
    """The store-wide lock under which sync state is read-modified-written (a timeout is a
    LockTimeoutError like an agent's lock)."""
    from memcli.store.lock import store_lock

    return store_lock(memory_dir, LOCK_NAME)


def save_files(memory_dir: str | os.PathLike, source: str, changed: dict[str, dict | None]) -> None:
    """Merge ``changed`` (path -> entry; None removes the entry) into the source's state on disk,
    under the sync lock, crash-safely."""
    if not changed:
        return
    path = state_path(memory_dir, source)
    ensure_dir(Path(memory_dir))
    ensure_dir(path.parent)
    with sync_lock(memory_dir):
        files = load_files(memory_dir, source)
        for key, entry in changed.items():
            if entry is None:
                files.pop(key, None)
            else:
                files[key] = entry
        _write_files(path, files)


def _write_files(path: Path, files: dict) -> None:
    """The source's state file, whole (the caller holds the sync lock)."""
    atomic_write_bytes(path, orjson.dumps({"version": STATE_VERSION, "files": files}))


_GROUPS = ("sessions", "runs", "conversations")   # entries of a file that holds many sessions


def forget_agent(memory_dir: str | os.PathLike, agent_id: str) -> int:
    """Drop from every source's state what led to ``agent_id`` — an agent ``clear`` deleted — so
    that the next sync imports its sessions again, whole, instead of finding them unchanged (or
    appending only what is new to an agent that lost the rest). A file of its own (a transcript)
    loses its entry; a file holding many sessions (a database, a chat export, an aider history)
    loses that session's and is marked to be read again. Under the sync lock; returns how many
    entries went."""
    sync_dir = Path(memory_dir) / SYNC
    try:
        sources = sorted(p.stem for p in sync_dir.iterdir() if p.suffix == ".json")
    except OSError:
        return 0
    forgotten = 0
    with sync_lock(memory_dir):
        for source in sources:
            files = load_files(memory_dir, source)
            before = forgotten
            for key, entry in list(files.items()):
                if not isinstance(entry, dict):
                    continue
                if entry.get("agent") == agent_id:
                    del files[key]
                    forgotten += 1
                    continue
                for group in _GROUPS:
                    inner = entry.get(group)
                    if not isinstance(inner, dict):
                        continue
                    gone = [k for k, v in inner.items() if isinstance(v, dict) and v.get("agent") == agent_id]
                    for k in gone:
                        del inner[k]
                    if gone:
                        forgotten += len(gone)
                        entry["pending"] = True   # read the file again (its signature alone says unchanged)
                        if "sig" in entry:
                            entry["sig"] = None
            if forgotten > before:
                _write_files(state_path(memory_dir, source), files)
    return forgotten


def read_source_meta(paths: AgentPaths) -> dict | None:
    try:
        data = orjson.loads((paths.dir / SOURCE_META).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def write_source_meta(store, meta: dict) -> None:
    """Write ``agents/<agent>/.source.json`` (under the agent's lock); no-op when unchanged."""
    from memcli.store.lock import agent_lock

    if read_source_meta(store.paths) == meta:
        return
    with agent_lock(store.paths):  # the lock only: nothing else of the agent is read or repaired
        store.paths.ensure()
        atomic_write_bytes(store.paths.dir / SOURCE_META, orjson.dumps(meta))
