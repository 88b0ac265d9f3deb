"""Agent homes: find every harness session on a machine and import what is new (``memcli sync``).

One agent per session, named by :func:`memcli.sync.naming.session_agent_id`
(``<source>.<project>.<session>``; the harness hooks use the same rule, so a session imported by
either lands in the same agent).

Sources
-------
A *source* is one harness's home layout: a module ``memcli/sync/<module>.py`` listed in
:data:`SOURCES` (name -> module) whose ``SOURCE`` object has:

* ``name`` — the ``--source`` value and the first part of agent names (``claude-code``);
* ``find(home: Path) -> Iterator[Session]`` — the sessions under the home directory. Cheap: it
  lists directories and builds :class:`Session` objects; it must not open session files (an
  unchanged session costs one ``stat`` per file). Files that are not sessions (a harness's
  ``history.jsonl``, Gemini's ``logs.json``) are not returned;
* ``identify(session: Session) -> Identity`` — the session id, working directory / project key
  and resume id, read from the head of the session's main file. Called only for a session sync
  has not seen before (its agent name is then remembered in the sync state);
* ``resume_command(identity: Identity) -> str | None`` — how to resume it in its harness
  (``claude --resume <id>``), shown by ``search --all``.

A source whose one file holds many sessions (a chat app's data export) also has
``import_sessions(memory_dir, session, files, *, dry_run, redact, changed) -> list[SessionReport]``:
:func:`memcli.sync.engine.sync` calls it instead of ``import_session`` for each file, and it keeps
that file's state entry itself (:mod:`memcli.sync.chat_exports`).

A :class:`Session` is one or more :class:`SessionFile` (a Claude Code session and its subagent
files): each file names the importer (``fmt``, a ``--from`` value of
:data:`memcli.importers.REGISTRY`) that reads it, whether it is a line-oriented log that can be
read on from an offset (``lines=True``) or one JSON document read whole, and for a subagent file
the ``sidechain`` id stamped on its traces (``agent_id``, tag ``sidechain``), and
``complete_tail`` for a format whose writer leaves its last line without a newline (Cursor): that
line is read when it parses as JSON, and read again once the file grows (ids de-duplicate).

Incremental import
------------------
:func:`memcli.sync.engine.import_session` is the one entry point (``sync`` calls it per session,
a harness hook calls it for the live transcript): per file it compares size, mtime and inode with
the state kept through :mod:`memcli.store.sync_state`; an unchanged file is not opened; a file
that grew and still holds the bytes where reading stopped is read on from that offset (only
complete lines: a line still being written is read next time); anything else (rewritten,
truncated, replaced) is re-read whole and reconciled by trace ids, which importers derive from
the source (:mod:`memcli.importers._common`), so nothing is stored twice.

Reading on from an offset needs the importer's state at that offset. An importer that can give
it has ``resume(result, carry) -> reader`` with ``reader.events(values)`` (as ``events``) and
``reader.checkpoint() -> dict | None`` (a JSON-able carry after the last value it consumed, or
None where it cannot stop, e.g. a message held until its pair arrives); sync stores the last
checkpoint's offset and carry. The carry is read once ``events`` is exhausted, and sync asks for
a checkpoint after every value it gives but a ``complete_tail`` file's unterminated last line: a
reader may hand out one dict and fill it in place by then (Gemini CLI's, whose files have no such
line, builds its carry once per run of lines it can stop in, not after every line). An importer without ``resume`` gets the whole file again and ids
de-duplicate. A reader may hold its last lines back (awaiting their pair); the file is then read
on from the checkpoint at the next sync even if it did not change.

A session that cannot be read (a corrupt line, a file that is not what its source says) is
reported with its path, line and reason and skipped — nothing of it is written, its state is
left as it was — and every other session still imports; ``sync`` then exits 1.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from memcli.errors import UsageError

# --source name -> module under memcli.sync (the order sync runs them in)
SOURCES: dict[str, str] = {
    "claude-code": "claude_code",
    "codex": "codex",
    "gemini": "gemini",
    "copilot": "copilot",
    "goose": "goose",
    "opencode": "opencode",
    "cursor": "cursor",
    "aider": "aider",
    "chatgpt": "chatgpt",
    "claude-ai": "claude_ai",
}


@dataclass
class SessionFile:
    path: str
    fmt: str                       # the importer (--from value) that reads it
    lines: bool = True             # a line log that can be read on from an offset; else one document
    sidechain: str | None = None   # subagent id: its traces get agent_id and the sidechain tag
    complete_tail: bool = False    # the format never ends its last line (Cursor): read it when it parses


@dataclass
class Session:
    source: str
    files: list[SessionFile]       # the main file first
    hint: dict = field(default_factory=dict)  # what find() learnt cheaply (project dir, ...)

    @property
    def main(self) -> SessionFile:
        return self.files[0]


@dataclass
class Identity:
    session_id: str
    cwd: str | None = None
    project_key: str | None = None
    title: str | None = None
    resume_id: str | None = None   # the id the harness's resume command takes (default: session_id)


def source_names() -> tuple[str, ...]:
    return tuple(SOURCES)


_LOADED: dict = {}


def get_source(name: str):
    source = _LOADED.get(name)
    if source is not None:
        return source
    module = SOURCES.get(name)
    if module is None:
        raise UsageError(f"unknown source {name!r} (expected one of {', '.join(SOURCES)})")
    source = _LOADED[name] = importlib.import_module(f"memcli.sync.{module}").SOURCE
    return source


def parse_sources(value: str | list | tuple | None) -> list[str]:
    """``--source a,b`` (or a list) -> source names, checked; None: every source."""
    if value is None or value == "" or value == []:
        return list(SOURCES)
    items = value.split(",") if isinstance(value, str) else [p for v in value for p in str(v).split(",")]
    names = [p.strip() for p in items if p.strip()]
    for name in names:
        get_source(name)
    return list(dict.fromkeys(names))
