"""Doctor's repairs: the writes ``memcli doctor --repair`` makes, which lose no data.

The checks (:mod:`memcli.inspect.doctor`) read; everything here writes, under the agent lock:
copy torn tails aside to ``<file>.corrupt-lines``, roll back an interrupted ingest, recover an
unfinished compaction (:func:`memcli.store.journal.recover`), repair torn tails, move bad lines
aside and drop byte-identical duplicates — in the trace files, the memory files, the working-memory
log, the compaction ledger and the tool-result summaries alike (each file rewritten through a temp file, fsynced and
``os.replace``d), then rebuild the state cache, and the search index when the check found it
unusable or drifted (:func:`memcli.store.search_index.rebuild`). Findings are duck-typed (``code``, ``file``,
``line``, ``offset``, ``fixable``, ``action``) so the store does not import the checker; the
checker is passed in as ``check``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from memcli.errors import MemcliError
from memcli.sizes import counted
from memcli.store import jsonl
from memcli.store.agent import AgentStore
from memcli.store.rewrite import rewrite_lines, temp_path

QUARANTINE_SUFFIX = ".corrupt-lines"
_FIXABLE_LINE_CODES = ("bad-json", "not-an-object", "invalid-record")


def _append_quarantine(path: Path, chunks: list[bytes]) -> Path:
    target = path.with_name(path.name + QUARANTINE_SUFFIX)
    jsonl.append_chunks(target, [c if c.endswith(b"\n") else c + b"\n" for c in chunks])
    return target


def _rewrite_without(path: Path, drop: set[int]) -> None:
    """Rewrite ``path`` without the lines numbered in ``drop`` (temp file, fsync, replace)."""
    rewrite_lines(path, lambda number, raw: None if number in drop else raw, temp_path(path, "doctor"))


class _Repairer:
    def __init__(self, store: AgentStore):
        self.store = store
        self.paths = store.paths
        self.actions: list[str] = []

    def note(self, text: str) -> None:
        self.actions.append(text)

    def save_torn_tails(self, findings: list) -> None:
        for f in findings:
            if f.code == "torn-tail" and f.action and f.action.startswith("cut"):
                path = Path(f.file)
                found = jsonl.find_tail(path)
                if found is not None:
                    target = _append_quarantine(path, [found[1]])
                    self.note(f"copied the {len(found[1]):,} bytes of the torn last line of {path.name} to {target.name}")

    def recover(self, session) -> bool:
        """Finish an unfinished compaction; False if it could not be done."""
        if not self.paths.compaction_journal.exists():
            return True
        from memcli.store.journal import recover

        try:
            note = recover(session)
        except MemcliError as exc:
            self.note(f"could not recover the unfinished compaction: {exc.message}")
            self.note("left every other problem alone: the files must stay as the compaction journal "
                      "describes them until it is recovered")
            return False
        self.note(note or "recovered the unfinished compaction")
        return True

    def rewrite_lines(self, findings: list) -> bool:
        """Move bad lines aside and drop byte-identical copies; True if a file changed."""
        plan: dict[str, tuple[set[int], list[bytes], list[str]]] = {}
        for f in findings:
            if not f.fixable or f.line is None or f.file is None:
                continue
            if f.code in _FIXABLE_LINE_CODES:
                drop, quarantine, notes = plan.setdefault(f.file, (set(), [], []))
                drop.add(f.line)
                quarantine.append(_line_bytes(Path(f.file), f.offset))
                notes.append(f"moved line {f.line} ({f.code})")
            elif f.code in ("duplicate-id", "id-in-both-tiers"):
                drop, _, notes = plan.setdefault(f.file, (set(), [], []))
                drop.add(f.line)
                notes.append(f"dropped line {f.line} (a byte-identical copy of {'an archived trace' if f.code == 'id-in-both-tiers' else 'an earlier line'})")
        for file, (drop, quarantine, notes) in plan.items():
            path = Path(file)
            if quarantine:  # first the copy, durably; only then the file without the lines
                target = _append_quarantine(path, quarantine)
                notes = [f"{n} to {target.name}" if n.startswith("moved") else n for n in notes]
            _rewrite_without(path, drop)
            self.note(f"{path.name}: " + "; ".join(notes))
        return bool(plan)


def _line_bytes(path: Path, offset: int) -> bytes:
    with jsonl.open_read(path) as f:
        f.seek(offset)
        return f.readline()


def repair_files(store: AgentStore, check: Callable[[AgentStore], list]) -> tuple[list, list, list[str]]:
    """Under the agent lock: ``check``, repair, ``check`` again. Returns (findings before,
    findings after, what the repair did in order)."""
    from memcli.store.agent import WriteSession
    from memcli.store.lock import agent_lock

    repairer = _Repairer(store)
    with agent_lock(store.paths):
        before = check(store)
        repairer.save_torn_tails(before)
        session = WriteSession(store)
        session.rollback_interrupted_ingest()  # what WriteSession.open() does first
        for note in session.recovered:
            repairer.note(note)
        if repairer.recover(session):
            for path in (store.paths.active, store.paths.archive, store.paths.episodic, store.paths.semantic,
                         store.paths.memory_files, store.paths.ledger, store.paths.result_summaries):
                tail = jsonl.repair_tail(path)
                if tail is not None:
                    repairer.note(tail.describe())
            repairer.rewrite_lines(check(store))
            stale = any(f.code == "stale-cache" for f in before)
            if repairer.actions or stale:  # files changed: the cache no longer describes them
                for path in (store.paths.state, store.paths.ids):
                    try:
                        os.unlink(path)
                    except FileNotFoundError:
                        pass
                try:
                    WriteSession(store).open()
                    repairer.note("rebuilt the state cache from the files")
                except MemcliError as exc:
                    repairer.note(f"could not rebuild the state cache: {exc.message}")
            if any(f.code == "search-index" for f in before):
                from memcli.store import search_index

                done = search_index.rebuild(store.paths)
                repairer.note(f"rebuilt the search index ({counted(done.indexed, 'record')})")
        after = check(store)
    return before, after, repairer.actions
