"""Working memory: the agent's ``/memories`` tree, kept as an append-only log.

The files an agent edits through Anthropic's memory tool (docs/design.md §8) live in one file of the
agent's directory, ``memory_files.jsonl``; the tree as it is now is the replay of that log, from
the start. One JSON object per line, one line per change, never rewritten::

    {"id":"wm_…","ts":…,"op":"create","path":"/memories/plan.md","content":"…"}
    {"id":"wm_…","ts":…,"op":"str_replace","path":"/memories/plan.md","at":120,"cut":7,"text":"…"}
    {"id":"wm_…","ts":…,"op":"insert","path":"/memories/plan.md","at":0,"cut":0,"text":"…"}
    {"id":"wm_…","ts":…,"op":"delete","path":"/memories/old"}
    {"id":"wm_…","ts":…,"op":"rename","path":"/memories/a.md","new_path":"/memories/done/a.md"}

* ``path``/``new_path`` are canonical: ``/memories`` or ``/memories/<name>/…`` with no ``.``,
  ``..``, empty or trailing parts.
* An edit (``str_replace``/``insert``: the tool command that made it) is one splice of the file's
  previous text: ``cut`` characters (code points) from ``at`` are replaced by ``text``. The
  splice is the difference between the stored text before and after (common prefix and suffix),
  so a log line is as small as the change, whatever the command did to the text.
* Directories exist as in a file system: ``create`` and ``rename`` make the missing parents of
  their path, deleting a file leaves its directory, ``delete`` of a directory removes everything
  under it, ``rename`` of a directory moves everything under it.
* Optional ``redacted``: how many secrets :mod:`memcli.redact` replaced in this change.

Every change is made by :meth:`WriteSession.append_memory_file` (memcli.store.agent) under the
agent lock, fsync'd, after the caller checked it against the tree replayed under that same lock
— so concurrent writers never lose an edit and never apply one to a stale version. A crash
mid-append leaves a torn last line, which the next write cuts off (the previous version is then
the current one). The whole log is replayed on each call: it holds the files once plus their
changes, which stays small for what the limits allow (:data:`MAX_FILE_BYTES` per file,
:data:`MAX_FILES` files); a snapshot record that lets replay start later can be added without
changing this format.

``memcli get AGENT <wm_ id>`` shows a record with the file as it was right after that change
(:meth:`MemoryTree.replay_until`): history is kept.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Iterator

from memcli.errors import CorruptStoreError
from memcli.store import jsonl

ROOT = "/memories"
MEMORY_FILE_PREFIX = "wm"
MAX_FILE_BYTES = 100 * 1024
MAX_FILES = 2000
OPS = ("create", "str_replace", "insert", "delete", "rename")
EDIT_OPS = ("str_replace", "insert")


class TreeError(ValueError):
    """A change that does not apply to the tree (the message says why)."""


def record_problem(record) -> str | None:
    """Why a parsed line of the log is not a working-memory record (an ``id`` and a known
    ``op``), or None: the one rule ``doctor`` and ``export`` read it by."""
    if type(record) is not dict:
        return f"expected a JSON object, found {type(record).__name__}"
    if type(record.get("id")) is not str:
        return "working-memory record without a valid 'id'"
    if record.get("op") not in OPS:
        return f"working-memory record with an unknown 'op' ({str(record.get('op'))[:40]!r})"
    return None


def parent_of(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"


def is_canonical(path) -> bool:
    if not isinstance(path, str):
        return False
    if path == ROOT:
        return True
    if not path.startswith(ROOT + "/"):
        return False
    parts = path[len(ROOT) + 1:].split("/")
    return all(part not in ("", ".", "..") and "\x00" not in part for part in parts)


def splice(old: str, new: str) -> tuple[int, int, str]:
    """(at, cut, text) such that ``old[:at] + text + old[at + cut:] == new``, as small as the
    common prefix and suffix allow."""
    limit = min(len(old), len(new))
    start = 0
    # compare in blocks first: texts are up to 100 KB and usually share most of it
    step = 4096
    while start + step <= limit and old[start:start + step] == new[start:start + step]:
        start += step
    while start < limit and old[start] == new[start]:
        start += 1
    end_old, end_new = len(old), len(new)
    while end_old - step >= start and end_new - step >= start and old[end_old - step:end_old] == new[end_new - step:end_new]:
        end_old -= step
        end_new -= step
    while end_old > start and end_new > start and old[end_old - 1] == new[end_new - 1]:
        end_old -= 1
        end_new -= 1
    return start, end_old - start, new[start:end_new]


class MemoryTree:
    """The ``/memories`` tree: ``files`` (canonical path -> text) and ``dirs`` (canonical paths,
    the root included). :meth:`apply` replays one record; it raises :class:`TreeError` when the
    record does not apply, and never changes the tree then."""

    __slots__ = ("files", "dirs", "records")

    def __init__(self):
        self.files: dict[str, str] = {}
        self.dirs: set[str] = {ROOT}
        self.records = 0

    # ------------------------------------------------------------------ queries
    def kind(self, path: str) -> str | None:
        if path in self.files:
            return "file"
        if path in self.dirs:
            return "dir"
        return None

    def children(self, path: str) -> list[str]:
        """Names directly under directory ``path``, sorted."""
        prefix = path + "/"
        names = {p[len(prefix):].split("/", 1)[0] for p in self.files if p.startswith(prefix)}
        names.update(d[len(prefix):].split("/", 1)[0] for d in self.dirs if d.startswith(prefix))
        return sorted(names)

    def blocking_file(self, path: str) -> str | None:
        """The first ancestor of ``path`` that is a file (so ``path`` cannot exist), or None."""
        current = parent_of(path)
        found = None
        while current.startswith(ROOT):
            if current in self.files:
                found = current
            if current == ROOT:
                break
            current = parent_of(current)
        return found

    def sorted_files(self) -> list[tuple[str, str]]:
        return sorted(self.files.items())

    # ------------------------------------------------------------------ changes
    def _make_parents(self, path: str) -> None:
        current = parent_of(path)
        while current != ROOT and current not in self.dirs:
            self.dirs.add(current)
            current = parent_of(current)

    def apply(self, record: dict) -> None:
        op = record.get("op")
        path = record.get("path")
        if op not in OPS:
            raise TreeError(f"unknown op {str(op)[:40]!r}")
        if not is_canonical(path):
            raise TreeError(f"'path' is not a canonical /memories path: {str(path)[:80]!r}")
        if op == "create":
            content = record.get("content")
            if not isinstance(content, str):
                raise TreeError("a create needs a string 'content'")
            if self.kind(path) is not None:
                raise TreeError(f"{path} already exists")
            if self.blocking_file(path):
                raise TreeError(f"{self.blocking_file(path)} is a file, not a directory")
            self._make_parents(path)
            self.files[path] = content
        elif op in EDIT_OPS:
            at, cut, text = record.get("at"), record.get("cut"), record.get("text")
            if path not in self.files:
                raise TreeError(f"{path} is not a file")
            old = self.files[path]
            if (type(at) is not int or type(cut) is not int or not isinstance(text, str)
                    or at < 0 or cut < 0 or at + cut > len(old)):
                raise TreeError(f"an edit needs 0 <= at, 0 <= cut, at + cut <= {len(old)} and a string 'text'")
            self.files[path] = old[:at] + text + old[at + cut:]
        elif op == "delete":
            if path == ROOT:
                raise TreeError("the root cannot be deleted")
            kind = self.kind(path)
            if kind is None:
                raise TreeError(f"{path} does not exist")
            if kind == "file":
                del self.files[path]
            else:
                prefix = path + "/"
                self.dirs = {d for d in self.dirs if d != path and not d.startswith(prefix)}
                for p in [p for p in self.files if p.startswith(prefix)]:
                    del self.files[p]
        else:  # rename
            new_path = record.get("new_path")
            if not is_canonical(new_path):
                raise TreeError(f"'new_path' is not a canonical /memories path: {str(new_path)[:80]!r}")
            if path == ROOT:
                raise TreeError("the root cannot be renamed")
            kind = self.kind(path)
            if kind is None:
                raise TreeError(f"{path} does not exist")
            if self.kind(new_path) is not None:
                raise TreeError(f"{new_path} already exists")
            if new_path.startswith(path + "/"):
                raise TreeError(f"{path} cannot move into itself")
            if self.blocking_file(new_path):
                raise TreeError(f"{self.blocking_file(new_path)} is a file, not a directory")
            self._make_parents(new_path)
            if kind == "file":
                self.files[new_path] = self.files.pop(path)
            else:
                prefix = path + "/"
                moved_dirs = {d for d in self.dirs if d == path or d.startswith(prefix)}
                self.dirs -= moved_dirs
                self.dirs.update(new_path + d[len(path):] for d in moved_dirs)
                for p in [p for p in self.files if p.startswith(prefix)]:
                    self.files[new_path + p[len(path):]] = self.files.pop(p)
        self.records += 1

    # ------------------------------------------------------------------ reading the log
    @classmethod
    def replay(cls, path: Path) -> "MemoryTree":
        """The tree as the log at ``path`` leaves it (a torn last line is not read)."""
        tree = cls()
        for _ in tree.replay_records(path):
            pass
        return tree

    def replay_records(self, path: Path) -> Iterator[tuple[int, dict]]:
        """Apply the log's records one by one, yielding (line number, record) after each; a record
        that does not apply raises :class:`CorruptStoreError` naming the file and line."""
        for line_no, _, record in jsonl.iter_records(path):
            try:
                self.apply(record)
            except TreeError as exc:
                raise CorruptStoreError(str(path), line_no, f"working-memory record does not apply: {exc}") from None
            yield line_no, record

    @classmethod
    def replay_until(cls, path: Path, record_id: str) -> tuple[int, dict, "MemoryTree"] | None:
        """(line number, record, tree right after it) for the record with ``record_id``."""
        tree = cls()
        for line_no, record in tree.replay_records(path):
            if record.get("id") == record_id:
                return line_no, record, tree
        return None


def version_view(record: dict, tree: MemoryTree) -> dict:
    """A record as ``memcli get`` shows it: the record, then the file it leaves (``content``
    after the change) — for a delete, nothing more; for a directory rename, the files moved."""
    out = dict(record)
    path = record.get("new_path") if record.get("op") == "rename" else record.get("path")
    if isinstance(path, str) and path in tree.files:
        out["content"] = tree.files[path]
    elif record.get("op") == "rename" and isinstance(path, str):
        out["files"] = sorted(p for p in tree.files if p.startswith(path + "/"))
    return out


def records_for_export(path: Path) -> Iterable[dict]:
    for _, _, record in jsonl.iter_records(path):
        yield record
