"""Goose sessions: the database ``<home>/.local/share/goose/sessions/sessions.db`` (SQLite: tables
``sessions`` and ``messages``, one row per message with its ``content_json``), and the legacy
``sessions/<id>.jsonl`` files — read only when there is no database (Goose copies every legacy
session into the database when it creates it). Read by :mod:`memcli.importers.goose`.

The database belongs to the running harness: it is opened read-only (``file:...?mode=ro``), never
written, never locked for writing; when it is busy (locked by a writer) the read is retried for
about :data:`BUSY_SECONDS`, then the database is reported as failed and nothing is imported from
it this time (the next sync tries again).

Goose session ids are ``YYYYMMDD_N`` and collide across machines, so the agent's session part is
the id and the session's creation time: ``goose.<project>.<id>-<YYYYMMDDHHMMSS>`` (project from
``working_dir``). Per session the state keeps its ``updated_at`` and message count: a session
whose row did not change is not read; a changed one is read whole and reconciled by ids (only
its new messages are added). The database file's size, mtime and inode, and its ``-wal``
file's, decide whether it is opened at all.

Resume: ``cd <working dir> && goose session --resume --session-id <id>``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator

import orjson

from memcli.sync import Identity, Session, SessionFile
from memcli.sync._dirs import entries
from memcli.sync._head import head_values, in_dir, text
from memcli.sync._many import DatabaseSessions

FMT = "goose"
BUSY_SECONDS = 2.0
DB_NAME = "sessions.db"


def sessions_dir(home: Path) -> Path:
    return home / ".local" / "share" / "goose" / "sessions"


def read_database(path: str, known: dict) -> tuple[list, dict]:
    """(changed sessions as (row, messages), every session's (updated_at, count)) from the
    database at ``path``, read-only (:func:`memcli.sync._many.read_sqlite`)."""
    from memcli.sync._many import read_sqlite

    def read(con):
        rows = con.execute("SELECT * FROM sessions ORDER BY created_at, id").fetchall()
        counts = {r[0]: r[1] for r in con.execute("SELECT session_id, COUNT(*) FROM messages GROUP BY session_id")}
        marks, changed = {}, []
        for row in rows:
            mark = [str(row["updated_at"]), counts.get(row["id"], 0)]
            marks[row["id"]] = mark
            if (known.get(row["id"]) or {}).get("mark") != mark:
                messages = con.execute("SELECT * FROM messages WHERE session_id = ? ORDER BY id", (row["id"],))
                changed.append((row["id"], (dict(row), [dict(m) for m in messages])))
        return changed, marks

    return read_sqlite(path, read, BUSY_SECONDS)


def _message(row: dict) -> dict:
    content = orjson.loads(row["content_json"])
    metadata = row.get("metadata_json")
    return {"role": row["role"], "created": row.get("created_timestamp"), "content": content,
            "metadata": orjson.loads(metadata) if metadata else {}}


def session_key(row: dict) -> str:
    created = re.sub(r"\D", "", str(row.get("created_at") or ""))[:14]
    return f"{row['id']}-{created}" if created else str(row["id"])


class GooseSource(DatabaseSessions):
    name = "goose"
    database_label = "Goose database"

    def find(self, home: Path) -> Iterator[Session]:
        top = sessions_dir(home)
        db = top / DB_NAME
        if db.is_file():
            yield Session(self.name, [SessionFile(str(db), FMT, lines=False)], hint={"database": True})
            return
        for entry in entries(top):
            if entry.name.endswith(".jsonl") and entry.is_file():
                yield self.session_of(entry.path)

    def session_of(self, path: str) -> Session:
        return Session(self.name, [SessionFile(str(path), FMT)])

    def identify(self, session: Session) -> Identity:
        path = session.main.path
        for value in head_values(path):
            return Identity(Path(path).stem, cwd=text(value.get("working_dir")))
        return Identity(Path(path).stem)

    def resume_command(self, ident: Identity) -> str | None:
        return in_dir(ident.cwd, f"goose session --resume --session-id {ident.resume_id or ident.session_id}")

    def read_database(self, session: Session, known: dict):
        return read_database(session.main.path, known)

    def import_one(self, memory_dir, session: Session, sid: str, payload: tuple, known: dict, *, dry_run: bool,
                   redact: bool):
        row, messages = payload
        from memcli.importers import get_importer
        from memcli.sync._many import open_session, store_session

        path = session.main.path
        report, ident, result = open_session(self, session, known, row["id"], session_key(row),
                                             cwd=text(row.get("working_dir")),
                                             title=text(row.get("name")) or text(row.get("description")),
                                             dry_run=dry_run)
        if result is None:
            return report
        items = []
        values = []
        for n, m in enumerate(messages, 1):
            try:
                values.append((n, _message(m)))
            except (orjson.JSONDecodeError, TypeError) as exc:
                report.status, report.error = "failed", f"{path}: session {row['id']}: message {m.get('id')}: {exc}"
                return report
        for ln, event in get_importer(FMT).session_events(values, result, session_key(row)):
            if isinstance(event, Exception):
                report.status, report.error = "failed", f"{path}: session {row['id']}: {event}"
                return report
            items.append((ln, event))
        store_session(memory_dir, self, session, ident, report, items, result, redact=redact,
                      label=f"session {row['id']}")
        return report


SOURCE = GooseSource()
