"""Cursor sessions, two stores:

* agent transcripts: ``<home>/.cursor/projects/<workspace slug>/agent-transcripts/<id>/<id>.jsonl``
  and ``agent-transcripts/<id>.jsonl``, read by :mod:`memcli.importers.cursor` (the older
  plain-text ``.txt`` transcripts are not read). The writer leaves the last line without a
  newline: the files are read with ``complete_tail`` (that line is read when it parses, and
  again — de-duplicated by id — once the file grows). The session id is the file name; the
  project is the workspace slug (Cursor's folder name for the workspace path, which cannot be
  turned back into the path: it is used as it is);
* the editor's chats (composers) in its SQLite database ``User/globalStorage/state.vscdb`` under
  Cursor's application data (``~/.config/Cursor`` on Linux, ``~/Library/Application
  Support/Cursor`` on macOS, ``~/AppData/Roaming/Cursor`` on Windows): table ``cursorDiskKV``,
  ``composerData:<composer id>`` (one chat) and ``bubbleId:<composer id>:<bubble id>`` (its
  messages), read by :func:`memcli.importers.cursor.composer_events`. Opened read-only
  (``file:...?mode=ro``), never written; only those two key families are read (the database
  also holds the editor's credentials: never selected). One agent per composer,
  ``cursor.<workspace>.<composer id>`` (the workspace from ``workspaceIdentifier.uri``); a
  composer whose id also names an agent transcript is left to the transcript (one agent, not
  two). Per composer the state keeps ``[lastUpdatedAt, bubble count]``: an unchanged composer
  is not read; a changed one is read whole and reconciled by bubble ids.

Resume: ``cursor-agent --resume <id>``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator
from urllib.parse import unquote, urlparse

import orjson

from memcli.json_input import loads
from memcli.sync import Identity, Session, SessionFile
from memcli.sync._dirs import entries
from memcli.sync._many import DatabaseSessions

FMT = "cursor"
BUSY_SECONDS = 2.0
# Cursor's application data directory under the home, per platform (Linux, macOS, Windows)
APP_DIRS = ((".config", "Cursor"), ("Library", "Application Support", "Cursor"), ("AppData", "Roaming", "Cursor"))
_COMPOSER, _BUBBLE = "composerData:", "bubbleId:"


def state_databases(home: Path) -> list[Path]:
    return [p for p in (home.joinpath(*parts, "User", "globalStorage", "state.vscdb") for parts in APP_DIRS)
            if p.is_file()]


def _json(value):
    try:   # (Cursor is a JavaScript harness too: a lone surrogate replaced, memcli.json_input)
        return loads(value) if isinstance(value, (str, bytes)) else None
    except orjson.JSONDecodeError:
        return None


def _workspace(composer: dict) -> str | None:
    """The workspace folder a composer ran in, from ``workspaceIdentifier.uri``."""
    ident = composer.get("workspaceIdentifier")
    uri = ident.get("uri") if isinstance(ident, dict) else None
    if isinstance(uri, dict):
        path = uri.get("fsPath") or uri.get("path")
        return path if isinstance(path, str) and path else None
    if isinstance(uri, str) and uri.startswith("file://"):
        return unquote(urlparse(uri).path) or None
    return None


def read_database(path: str, known: dict, skip: frozenset) -> tuple[list, dict]:
    """(changed composers as (id, (composer, bubbles)), every composer's mark) from the
    ``state.vscdb`` at ``path``, read-only; composers in ``skip`` (read from their transcript) are
    left out."""
    from memcli.importers.cursor import composer_bubble_ids
    from memcli.sync._many import read_sqlite

    def read(con):
        rows = con.execute("SELECT key, value FROM cursorDiskKV WHERE key >= ? AND key < ? ORDER BY key",
                           (_COMPOSER, _COMPOSER[:-1] + ";")).fetchall()
        marks, changed = {}, []
        for row in rows:
            cid, composer = row["key"][len(_COMPOSER):], _json(row["value"])
            if cid in skip or not isinstance(composer, dict):
                continue
            refs = composer_bubble_ids(composer)
            if not refs:
                continue
            mark = [composer.get("lastUpdatedAt") or composer.get("createdAt"), len(refs)]
            marks[cid] = mark
            if (known.get(cid) or {}).get("mark") == mark:
                continue
            prefix = f"{_BUBBLE}{cid}:"
            bubbles = {r["key"][len(prefix):]: _json(r["value"]) for r in con.execute(
                "SELECT key, value FROM cursorDiskKV WHERE key >= ? AND key < ?", (prefix, prefix[:-1] + ";"))}
            changed.append((cid, (composer, bubbles)))
        return changed, marks

    return read_sqlite(path, read, BUSY_SECONDS)


class CursorSource(DatabaseSessions):
    name = "cursor"
    database_label = "Cursor state database"

    def find(self, home: Path) -> Iterator[Session]:
        transcripts = set()
        for project in entries(str(home / ".cursor" / "projects")):
            for entry in entries(os.path.join(project.path, "agent-transcripts")):
                if entry.is_dir():
                    path = os.path.join(entry.path, entry.name + ".jsonl")
                    if os.path.isfile(path):
                        transcripts.add(entry.name)
                        yield self.session_of(path)
                elif entry.name.endswith(".jsonl"):
                    transcripts.add(entry.name[:-len(".jsonl")])
                    yield self.session_of(entry.path)
        for db in state_databases(home):
            yield Session(self.name, [SessionFile(str(db), FMT, lines=False)],
                          hint={"database": True, "transcripts": frozenset(transcripts)})

    def session_of(self, path: str) -> Session:
        p = Path(path)
        if p.name == "state.vscdb":
            return Session(self.name, [SessionFile(str(p), FMT, lines=False)], hint={"database": True})
        transcripts = p.parent if p.parent.name == "agent-transcripts" else p.parent.parent
        return Session(self.name, [SessionFile(str(p), FMT, complete_tail=True)],
                       hint={"project_key": transcripts.parent.name})

    def identify(self, session: Session) -> Identity:
        p = Path(session.main.path)
        key = session.hint.get("project_key") or (p.parent.parent.parent.name if p.parent.name != "agent-transcripts"
                                                  else p.parent.parent.name)
        return Identity(p.stem, project_key=key)

    def resume_command(self, ident: Identity) -> str | None:
        return f"cursor-agent --resume {ident.resume_id or ident.session_id}"

    def read_database(self, session: Session, known: dict):
        return read_database(session.main.path, known, session.hint.get("transcripts", frozenset()))

    def import_one(self, memory_dir, session: Session, sid: str, payload: tuple, known: dict, *, dry_run: bool,
                   redact: bool):
        from memcli.importers.cursor import composer_events
        from memcli.sync._head import text
        from memcli.sync._many import open_session, store_session

        composer, bubbles = payload
        report, ident, result = open_session(self, session, known, sid, sid, cwd=_workspace(composer),
                                             title=text(composer.get("name")), dry_run=dry_run)
        if result is None:
            return report
        items = composer_events(composer, bubbles, result)
        store_session(memory_dir, self, session, ident, report, items, result, redact=redact,
                      label=f"composer {sid}")
        return report


SOURCE = CursorSource()
