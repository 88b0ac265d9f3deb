"""What the sources whose one file holds many sessions (chat exports, Goose's database) share:
storing one session's events into its agent, as :func:`memcli.sync.engine.import_session` does
for a session file (same redaction, all-or-nothing ingest, agent metadata)."""

from __future__ import annotations

from memcli.errors import MemcliError


def open_session(source, session, known: dict, sid, key: str, *, cwd: str | None, title: str | None,
                 dry_run: bool):
    """(report, identity, ingest result) for one session of a harness's database: its agent the
    one the sync state remembers for ``sid``, else named from ``key``; status ``rewritten`` when
    known, else ``new``; the result None on a dry run (nothing to ingest)."""
    from memcli.ingest.pipeline import IngestResult
    from memcli.sync import Identity
    from memcli.sync.engine import SessionReport
    from memcli.sync.naming import session_agent_id

    old = known.get(sid)
    agent = old["agent"] if old else session_agent_id(source.name, key, cwd=cwd)
    report = SessionReport(source.name, session.main.path, agent=agent, status="rewritten" if old else "new")
    ident = Identity(str(sid), cwd=cwd, title=title)
    report.resume = source.resume_command(ident)
    if dry_run:
        return report, ident, None
    result = IngestResult(agent)
    if ident.title:
        result.meta["ai_title"] = ident.title
    return report, ident, result


def store_session(memory_dir, source, session, ident, report, items: list, result, *, redact: bool,
                  label: str) -> None:
    """Ingest ``items`` into ``report.agent``; on failure ``report`` says why (``label`` names the
    session in the file) and nothing is written."""
    from memcli.ingest.pipeline import ingest_events
    from memcli.store.agent import AgentStore
    from memcli.sync.engine import _first_ask, _write_meta

    redactor = None
    if redact:
        import memcli.redact as redactor
    store = AgentStore(memory_dir, report.agent)
    try:
        if items:
            ingest_events(store, iter(items), redactor=redactor, source_event=source.name, result=result)
    except MemcliError as exc:
        report.status, report.error = "failed", f"{session.main.path}: {label}: {exc}"
        return
    report.events, report.duplicates, report.skipped = result.appended, result.duplicates, result.skipped
    _write_meta(store, source, session, ident, report, _first_ask(items), result)


def read_sqlite(path: str, read, busy_seconds: float):
    """``read(connection)`` on the harness's SQLite database at ``path``, opened read-only
    (``file:...?mode=ro``: nothing is ever written, no write lock taken); while the database is
    locked by a writer it is retried for ``busy_seconds``, then sqlite3.OperationalError is raised."""
    import sqlite3
    import time
    from urllib.parse import quote

    deadline = time.monotonic() + busy_seconds
    while True:
        try:
            con = sqlite3.connect(f"file:{quote(path)}?mode=ro", uri=True, timeout=0.2)
            try:
                con.row_factory = sqlite3.Row
                return read(con)
            finally:
                con.close()
        except sqlite3.OperationalError as exc:
            message = str(exc).lower()
            if ("locked" not in message and "busy" not in message) or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def file_sig(path: str) -> list | None:
    """[size, mtime_ns, inode] of ``path``, None when it does not exist."""
    import os

    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ino]


class DatabaseSessions:
    """``import_sessions`` for a source whose sessions live in one SQLite database (Goose,
    opencode, Cursor). The source gives ``database_label``, ``read_database(session, known) ->
    (changed, marks)`` (the database is ``session.main.path``; its ``hint`` says what else the
    finder knew) — ``changed`` the ``(session id, payload)`` of the sessions whose ``mark`` differs
    from the one kept, ``marks`` every session's mark — and ``import_one(memory_dir, session, sid,
    payload, known, dry_run=, redact=) -> SessionReport``. A session found outside the database
    (``session.hint["database"]`` not set: a legacy file) goes through the engine as usual.

    State kept for the database file: the [size, mtime, inode] of it and of its ``-wal`` file (an
    unchanged pair: not opened), and per session its agent and mark."""

    database_label = "database"

    def import_sessions(self, memory_dir, session, files: dict, *, dry_run: bool = False, redact: bool = True,
                        changed: dict | None = None) -> list:
        from memcli.sync.engine import SessionReport, import_session

        if not session.hint.get("database"):
            return [import_session(memory_dir, session, files, dry_run=dry_run, redact=redact, save=False,
                                   changed=changed)]
        path = session.main.path
        entry = files.get(path) or {}
        known: dict = dict(entry.get("sessions") or {})
        sig = [file_sig(path), file_sig(path + "-wal")]
        if entry.get("sig") == sig and not entry.get("pending"):
            return [SessionReport(self.name, path, agent=s.get("agent")) for s in known.values()]
        import sqlite3  # only once the database changed: a sync with nothing new never loads it

        try:
            sessions, marks = self.read_database(session, known)
        except (sqlite3.Error, OSError) as exc:
            return [SessionReport(self.name, path, status="failed",
                                  error=f"{path}: cannot read the {self.database_label}: {exc}")]
        todo = {sid for sid, _ in sessions}
        reports = [SessionReport(self.name, path, agent=known[sid]["agent"]) for sid in marks
                   if sid in known and sid not in todo]
        pending = False
        for sid, payload in sessions:
            report = self.import_one(memory_dir, session, sid, payload, known, dry_run=dry_run, redact=redact)
            reports.append(report)
            if report.status == "failed":
                pending = True
            elif not dry_run:
                known[sid] = {"agent": report.agent, "mark": marks[sid]}
        if dry_run:
            return reports
        new_entry = {"sig": sig, "sessions": known}
        if pending:
            new_entry["pending"] = True
        files[path] = new_entry
        if changed is not None:
            changed[path] = new_entry
        return reports
