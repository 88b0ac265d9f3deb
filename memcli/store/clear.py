"""``clear``: delete an agent's memory, under its lock.

Everything happens while holding the agent's lock (``<memory dir>/.locks/<agent>.lock``, which
lives outside the agent directory and is never deleted — see :mod:`memcli.store.layout`), so no
ingest or compaction can interleave. The agent is not opened for writing first (no recovery, no
state rebuild): clearing must also work for an agent whose files are corrupt.

* Full clear: the agent directory is renamed to a hidden name in ``agents/``
  (``.<agent>.clearing.<random>``) — one atomic step, after which the agent no longer exists for
  any reader — and that directory is then deleted. Data files, caches (``.state.json``,
  ``.ids``), markers and journals all go. A crash half-way through the deletion leaves only the
  hidden directory, which the next ``clear`` of that agent removes. The next ingest starts a new
  agent at ``turn_0001``.
* ``--keep-memory``: exactly ``episodic.jsonl``, ``semantic.jsonl`` and the working memory
  (``memory_files.jsonl``, the ``/memories`` files) stay (a torn last line in them is repaired); the raw traces (active and archive), the compaction ledger (it
  describes moves of traces that are gone), the caches and any marker or journal
  go the same way (moved into a hidden directory, then deleted). **Turn numbering continues
  after the turns the memory names**: summaries and facts refer to turns (``turn_ids``,
  ``source_turn_ids``), so a new turn must not reuse those ids. The state is rebuilt from the
  files that are left, and the rebuild counts the turns memory names
  (:func:`memcli.store.agent._observe_memory_turns`) — derived from the data, not from a cache
  that could be lost. Turns after the last compacted one (never summarized) are not named by
  memory, so their numbers are given out again. The id index goes with the traces, so the
  cleared traces can be ingested again (e.g. from an export). An agent with no memory files is
  removed entirely, as by a full clear.

An agent removed entirely is forgotten by ``sync`` too (:func:`memcli.store.sync_state.forget_agent`,
under the sync lock, inside the agent's, once its directory is renamed away): its session is
imported again, whole, by the next ``sync`` — not found unchanged, nor read on from where the
deleted agent stopped. An agent that stays (``--keep-memory`` with memory files) keeps its sync
state: the next sync reads on from where it stopped — a session read whole again (a rewritten
file, a database's) brings the cleared traces back, their ids gone with the id index.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from memcli.errors import MemcliError, StoreError
from memcli.ids import format_turn
from memcli.sizes import format_size
from memcli.store import jsonl
from memcli.store.agent import AgentStore
from memcli.store.layout import DATA_FILES, DIR_MODE, EPISODIC, SEMANTIC, AgentPaths
from memcli.store.layout import MEMORY_FILES as WORKING_MEMORY
from memcli.store.lock import agent_lock
from memcli.store.sync_state import forget_agent

MEMORY_FILES = (EPISODIC, SEMANTIC, WORKING_MEMORY)
TRASH_MARK = ".clearing."


@dataclass
class ClearPlan:
    agent_id: str
    keep_memory: bool
    remove: list = field(default_factory=list)   # (name, bytes)
    keep: list = field(default_factory=list)     # (name, bytes)

    def describe(self) -> str:
        def listing(items):
            data = [f"{name} ({format_size(size)})" for name, size in items
                    if not name.startswith(".") or name in DATA_FILES]
            hidden = [name for name, _ in items if name.startswith(".") and name not in DATA_FILES]
            if hidden:
                data.append(f"{len(hidden)} cache/marker file{'s' if len(hidden) != 1 else ''}")
            return ", ".join(data) or "nothing"

        text = f"agent {self.agent_id!r}: delete {listing(self.remove)}"
        if self.keep:
            text += f"; keep {listing(self.keep)}"
        return text


@dataclass
class ClearResult:
    agent_id: str
    keep_memory: bool
    removed: list = field(default_factory=list)  # (name, bytes)
    kept: list = field(default_factory=list)     # names
    agent_removed: bool = False                  # the whole directory went
    next_turn: str | None = None                 # with --keep-memory: the id the next turn gets
    resynced: int = 0                            # sync state entries that led to it, forgotten

    def summary(self) -> str:
        freed = sum(size for _, size in self.removed)
        files = len(self.removed)
        text = f"cleared agent {self.agent_id!r}: removed {files} file{'s' if files != 1 else ''} ({format_size(freed)})"
        if self.agent_removed:
            text += "; the agent no longer exists"
            if self.resynced:
                text += " (`memcli sync` imports its session again)"
        if self.kept:
            text += f"; kept {', '.join(self.kept)}; the next turn will be {self.next_turn}"
        return text


def _entries(paths: AgentPaths) -> list[tuple[str, int]]:
    out = []
    try:
        names = sorted(os.listdir(paths.dir))
    except FileNotFoundError:
        return out
    for name in names:
        try:
            st = os.lstat(paths.dir / name)
        except FileNotFoundError:
            continue
        out.append((name, st.st_size if not os.path.isdir(paths.dir / name) else _tree_size(paths.dir / name)))
    return out


def _tree_size(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def _split(paths: AgentPaths, keep_memory: bool) -> tuple[list, list]:
    entries = _entries(paths)
    order = {name: i for i, name in enumerate(DATA_FILES)}
    entries.sort(key=lambda e: (order.get(e[0], len(order)), e[0]))
    keep = [(n, s) for n, s in entries if keep_memory and n in MEMORY_FILES]
    remove = [(n, s) for n, s in entries if not (keep_memory and n in MEMORY_FILES)]
    return remove, keep


def plan_clear(memory_dir: str | os.PathLike, agent_id: str, *, keep_memory: bool = False) -> ClearPlan:
    """What ``clear`` would delete and keep; AgentNotFoundError (exit 3) for an unknown agent."""
    store = AgentStore(memory_dir, agent_id).require()
    remove, keep = _split(store.paths, keep_memory)
    return ClearPlan(store.agent_id, keep_memory, remove, keep)


def clear_agent(memory_dir: str | os.PathLike, agent_id: str, *, keep_memory: bool = False) -> ClearResult:
    """Delete the agent's memory (module docstring). AgentNotFoundError for an unknown agent."""
    store = AgentStore(memory_dir, agent_id).require()
    paths = store.paths
    result = ClearResult(store.agent_id, keep_memory)
    with agent_lock(paths):
        store.require()  # someone may have cleared it while we waited for the lock
        try:
            done = _clear_locked(paths, keep_memory, result)
        except OSError as exc:
            raise StoreError(
                f"cannot clear agent {paths.agent_id!r}: {exc.strerror or exc}"
                + (f" ({exc.filename})" if getattr(exc, "filename", None) else ""),
                hint="fix the problem and run clear again",
            ) from exc
    if not done:
        # the state is rebuilt from what is left: the memory's turn ids set the counter
        result.next_turn = format_turn(store.read_state().turn_counter + 1)
    return result


def _clear_locked(paths: AgentPaths, keep_memory: bool, result: ClearResult) -> bool:
    """The deletion itself (caller holds the lock). True when the whole agent went."""
    _remove_leftovers(paths)
    remove, keep = _split(paths, keep_memory)
    if not keep:
        trash = _trash_name(paths)
        os.rename(paths.dir, trash)
        jsonl.fsync_dir(paths.agents_dir)
        # the agent is gone: what sync remembers of it goes too, before the deletion (which may
        # fail, and the agent cannot be cleared again); a derived state, kept if it cannot be written
        try:
            result.resynced = forget_agent(paths.memory_dir, paths.agent_id)
        except (OSError, MemcliError):
            pass
        _delete(trash)
        result.removed = remove
        result.agent_removed = True
        return True
    for name, _ in keep:
        jsonl.repair_tail(paths.dir / name)
    trash = _trash_name(paths)
    os.mkdir(trash, DIR_MODE)
    for name, _ in remove:
        os.rename(paths.dir / name, trash / name)
    jsonl.fsync_dir(paths.dir)
    _delete(trash)
    result.removed = remove
    result.kept = [n for n, _ in keep]
    return False


def _delete(trash: Path) -> None:
    """Delete a directory already moved out of the agent's way (the clear itself is done)."""
    try:
        shutil.rmtree(trash)
    except OSError as exc:
        raise StoreError(
            f"the agent's files were moved to {trash} but could not be deleted there: {exc.strerror or exc}",
            hint=f"delete {trash} by hand (the next clear of this agent also removes it)",
        ) from None


def _trash_name(paths: AgentPaths) -> Path:
    return paths.agents_dir / f".{paths.agent_id}{TRASH_MARK}{os.getpid()}.{os.urandom(4).hex()}"


def _remove_leftovers(paths: AgentPaths) -> None:
    """Hidden directories left by a clear of this agent that was interrupted mid-deletion."""
    prefix = f".{paths.agent_id}{TRASH_MARK}"
    try:
        names = os.listdir(paths.agents_dir)
    except FileNotFoundError:
        return
    for name in names:
        if name.startswith(prefix):
            shutil.rmtree(paths.agents_dir / name, ignore_errors=True)
