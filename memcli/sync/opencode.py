"""opencode sessions: its database ``<home>/.local/share/opencode/opencode.db`` (SQLite, tables
``project`` / ``session`` / ``message`` / ``part``, each message's and part's JSON in ``data``) —
an install of another channel than ``latest`` / ``beta`` / ``prod`` (a dev or preview build)
writes ``opencode-<channel>.db`` beside it instead, read the same way (every one found) — and,
when there is no database, the legacy JSON tree ``<home>/.local/share/opencode/storage/``
(``session/<project>/<session id>.json``, ``message/<session id>/<message id>.json``,
``part/<message id>/<part id>.json``). Each session is turned into the document
``opencode export`` writes and read by :mod:`memcli.importers.opencode`.

The database belongs to the running harness: opened read-only (``file:...?mode=ro``), never
written, WAL-safe (a reader never blocks opencode's writer); busy: retried for about
:data:`BUSY_SECONDS`, then reported (the next sync tries again). A session's mark is its
``time_updated``, its message count and its parts' latest ``time_updated``: a session whose
mark did not change is not read; a changed one is read whole and reconciled by part ids. A
legacy session's mark is the stat of its session file and of its message directory. Rows of
``session_message`` (the table of opencode's next session store, typed messages with their content
inline, not read yet) are counted per session, part of its mark, and named in the summary as
passed over: a session kept there is never taken silently as empty.

Agent: ``opencode.<project>.<session id>`` — the id whole (opencode ids are time-ordered: a
prefix is not unique), the project from the session's ``directory``. Resume:
``cd <directory> && opencode --session <id>``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import orjson

from memcli.json_input import loads
from memcli.sync import Identity, Session, SessionFile
from memcli.sync._head import text
from memcli.sync._many import DatabaseSessions, file_sig, open_session, read_sqlite, store_session

FMT = "opencode"
BUSY_SECONDS = 2.0
# the message table of opencode's next session store (typed messages, content inline): its rows
# are counted per session and named in the summary as passed over, never read silently as nothing
V2_TABLE = "session_message"


def data_dir(home: Path) -> Path:
    return home / ".local" / "share" / "opencode"


def _load(raw) -> dict:
    value = loads(raw)   # a lone surrogate, replaced (memcli.json_input); else refused
    if not isinstance(value, dict):
        raise ValueError("data is not a JSON object")
    return value


def read_database(path: str, known: dict) -> tuple[list, dict]:
    def read(con):
        sessions = con.execute("SELECT * FROM session ORDER BY time_created, id").fetchall()
        counts = {r[0]: [r[1]] for r in con.execute("SELECT session_id, COUNT(*) FROM message GROUP BY session_id")}
        latest = {r[0]: r[1] for r in con.execute("SELECT session_id, MAX(time_updated) FROM part GROUP BY session_id")}
        v2 = {}
        if con.execute(f"SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '{V2_TABLE}'").fetchone():
            v2 = {r[0]: r[1] for r in con.execute(f"SELECT session_id, COUNT(*) FROM {V2_TABLE} GROUP BY session_id")}
        marks, changed = {}, []
        for row in sessions:
            sid = row["id"]
            mark = [row["time_updated"], (counts.get(sid) or [0])[0], latest.get(sid)] + ([v2[sid]] if sid in v2 else [])
            marks[sid] = mark
            if (known.get(sid) or {}).get("mark") == mark:
                continue
            messages = con.execute("SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created, id",
                                   (sid,)).fetchall()
            parts: dict = {}
            for part in con.execute("SELECT id, message_id, data FROM part WHERE session_id = ? ORDER BY message_id, id",
                                    (sid,)):
                parts.setdefault(part["message_id"], []).append((part["id"], part["data"]))
            info = {"id": sid, "directory": row["directory"], "title": row["title"], "parentID": row["parent_id"]}
            doc = {"info": info, "messages": [], "v2": v2.get(sid, 0)}
            for m in messages:
                doc["messages"].append({"raw": (m["id"], m["data"]), "parts": parts.get(m["id"], [])})
            changed.append((sid, doc))
        return changed, marks

    return read_sqlite(path, read, BUSY_SECONDS)


def _document(doc: dict) -> dict:
    """The ``opencode export`` shape of a session read from the database (raw ``data`` parsed)."""
    messages = []
    for m in doc["messages"]:
        mid, data = m["raw"]
        info = dict(_load(data), id=mid)
        parts = [dict(_load(pdata), id=pid) for pid, pdata in m["parts"]]
        messages.append({"info": info, "parts": parts})
    return {"info": doc["info"], "messages": messages}


def legacy_document(session_file: str, storage: Path) -> dict:
    """A legacy session (the JSON tree) in the ``opencode export`` shape."""
    info = _load(Path(session_file).read_bytes())
    sid = str(info.get("id") or Path(session_file).stem)
    messages = []
    for mpath in sorted((storage / "message" / sid).glob("*.json")):
        minfo = _load(mpath.read_bytes())
        mid = str(minfo.get("id") or mpath.stem)
        parts = []
        for ppath in sorted((storage / "part" / mid).glob("*.json")):
            part = _load(ppath.read_bytes())
            parts.append(dict(part, id=str(part.get("id") or ppath.stem)))
        messages.append({"info": dict(minfo, id=mid), "parts": parts})
    messages.sort(key=lambda m: ((m["info"].get("time") or {}).get("created") or 0, m["info"]["id"]))
    return {"info": dict(info, id=sid), "messages": messages}


class OpencodeSource(DatabaseSessions):
    name = "opencode"
    database_label = "opencode database"

    def find(self, home: Path) -> Iterator[Session]:
        base = data_dir(home)
        databases = [p for p in [base / "opencode.db", *sorted(base.glob("opencode-*.db"))] if p.is_file()]
        for db in databases:
            yield Session(self.name, [SessionFile(str(db), FMT, lines=False)], hint={"database": True})
        if databases:
            return
        storage = base / "storage"
        for project in sorted((storage / "session").glob("*")):
            for path in sorted(project.glob("*.json")):
                yield Session(self.name, [SessionFile(str(path), FMT, lines=False)], hint={"legacy": str(storage)})

    def session_of(self, path: str) -> Session:
        p = Path(path)
        if p.suffix == ".db":
            return Session(self.name, [SessionFile(str(p), FMT, lines=False)], hint={"database": True})
        return Session(self.name, [SessionFile(str(p), FMT, lines=False)], hint={"legacy": str(p.parent.parent.parent)})

    def identify(self, session: Session) -> Identity:
        info = _load(Path(session.main.path).read_bytes())
        return Identity(str(info.get("id") or Path(session.main.path).stem), cwd=info.get("directory"),
                        title=info.get("title"))

    def resume_command(self, ident: Identity) -> str | None:
        from memcli.sync._head import in_dir

        return in_dir(ident.cwd, f"opencode --session {ident.resume_id or ident.session_id}")

    def read_database(self, session: Session, known: dict):
        return read_database(session.main.path, known)

    def import_sessions(self, memory_dir, session: Session, files: dict, **kw) -> list:
        if session.hint.get("legacy"):
            return self._legacy(memory_dir, session, files, **kw)
        return super().import_sessions(memory_dir, session, files, **kw)

    def _legacy(self, memory_dir, session: Session, files: dict, *, dry_run: bool = False, redact: bool = True,
                changed: dict | None = None) -> list:
        """A legacy session: its mark is the stat of its file and of its message directory."""
        from memcli.sync.engine import SessionReport

        path = session.main.path
        sid = Path(path).stem
        storage = Path(session.hint["legacy"])
        mark = [file_sig(path), file_sig(str(storage / "message" / sid))]
        entry = files.get(path) or {}
        known = {sid: entry} if entry.get("agent") else {}
        if entry.get("mark") == mark:
            return [SessionReport(self.name, path, agent=entry.get("agent"))]
        try:
            doc = legacy_document(path, storage)
        except (OSError, ValueError) as exc:
            return [SessionReport(self.name, path, status="failed", error=f"{path}: {exc}")]
        report = self.import_one(memory_dir, session, sid, doc, known, dry_run=dry_run, redact=redact, parsed=True)
        if not dry_run and report.status != "failed":
            files[path] = {"agent": report.agent, "mark": mark}
            if changed is not None:
                changed[path] = files[path]
        return [report]

    def import_one(self, memory_dir, session: Session, sid: str, payload: dict, known: dict, *, dry_run: bool,
                   redact: bool, parsed: bool = False):
        from memcli.importers import get_importer

        path = session.main.path
        info = payload["info"]
        # the title, when not empty, is also the importer's ai_title (the same value set twice)
        report, ident, result = open_session(self, session, known, sid, sid,
                                             cwd=info.get("directory") if isinstance(info.get("directory"), str) else None,
                                             title=text(info.get("title")), dry_run=dry_run)
        if result is None:
            return report
        try:
            doc = payload if parsed else _document(payload)
        except (orjson.JSONDecodeError, ValueError) as exc:
            report.status, report.error = "failed", f"{path}: session {sid}: {exc}"
            return report
        if payload.get("v2"):
            result.skipped[f"{V2_TABLE} rows (opencode's v2 session store, not read)"] += payload["v2"]
        items = []
        for ln, event in get_importer(FMT).events(iter([(1, doc)]), result):
            if isinstance(event, Exception):
                report.status, report.error = "failed", f"{path}: session {sid}: {event}"
                return report
            items.append((ln, event))
        store_session(memory_dir, self, session, ident, report, items, result, redact=redact, label=f"session {sid}")
        return report


SOURCE = OpencodeSource()
