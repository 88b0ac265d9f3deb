"""Data exports of the chat apps as sync sources: ChatGPT's and Claude.ai's ``conversations.json``
(read by :mod:`memcli.importers.chatgpt` and :mod:`memcli.importers.claude_ai`).

Where: ``<home>/Downloads/conversations.json`` and ``<home>/Downloads/<folder>/conversations.json``
(an unzipped export; the zip's folder name varies), and the same under
``<home>/.memcli/exports/``. Which app wrote a file is read from its first 64 KiB (``"mapping"``:
ChatGPT, ``"chat_messages"``: Claude.ai), once per change of the file; each of the two sources
takes only its own files.

One file holds many conversations: each conversation is one session and one agent,
``chatgpt.chat.<conversation id>`` / ``claude-ai.<project or chat>.<conversation uuid>``. So
these sources import a file themselves (``import_sessions``, which :func:`memcli.sync.engine.sync`
calls instead of ``import_session``): the file's size, mtime and inode are kept as for any
session file, and with them each conversation's agent and ``update_time`` / ``updated_at``. An
unchanged file is not opened; a changed one (a newer export) is read whole, and only the
conversations whose update time moved are imported again — reconciled by the message ids, so
only their new messages are added. A file that is not valid JSON fails whole (nothing written);
a conversation that cannot be read is reported and skipped, the others import, and the file is
read again at the next sync.

Resume: the conversation's page, ``https://chatgpt.com/c/<id>`` / ``https://claude.ai/chat/<uuid>``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from memcli.errors import InputError
from memcli.sync import Identity, Session, SessionFile
from memcli.sync._dirs import entries

FILE_NAME = "conversations.json"
SNIFF_BYTES = 64 << 10
_MARKERS = {"chatgpt": b'"mapping"', "claude-ai": b'"chat_messages"'}


def export_files(home: Path) -> list[str]:
    found = []
    for top in (home / "Downloads", home / ".memcli" / "exports"):
        direct = top / FILE_NAME
        if direct.is_file():
            found.append(str(direct))
        subdirs = [e.path for e in entries(top) if e.is_dir()]
        found.extend(str(Path(d) / FILE_NAME) for d in subdirs if (Path(d) / FILE_NAME).is_file())
    return found


def written_by(path: str) -> str | None:
    """``chatgpt``, ``claude-ai`` or None, from the head of the file."""
    try:
        with open(path, "rb") as f:
            head = f.read(SNIFF_BYTES)
    except OSError:
        return None
    found = [(head.find(marker), name) for name, marker in _MARKERS.items() if marker in head]
    return min(found)[1] if found else None


class ExportSource:
    def __init__(self, name: str, fmt: str, url: str):
        self.name = name
        self.fmt = fmt
        self.url = url

    def find(self, home: Path) -> Iterator[Session]:
        for path in export_files(home):
            yield self.session_of(path)

    def session_of(self, path: str) -> Session:
        return Session(self.name, [SessionFile(str(path), self.fmt, lines=False)])

    def identify(self, session: Session) -> Identity:  # the file itself; conversations are named below
        return Identity(Path(session.main.path).parent.name or "export", project_key="chat")

    def resume_command(self, ident: Identity) -> str | None:
        return self.url + ident.session_id

    @staticmethod
    def project(conv: dict) -> str:
        project = conv.get("project")
        name = project.get("name") if isinstance(project, dict) else None
        return name if isinstance(name, str) and name.strip() else "chat"

    def import_sessions(self, memory_dir, session: Session, files: dict, *, dry_run: bool = False,
                        redact: bool = True, changed: dict | None = None) -> list:
        """Import what is new in one export file: one report per conversation (module docstring)."""
        from memcli.sync.engine import SessionReport, _stat, _unchanged

        path = session.main.path
        st = _stat(path)
        entry = files.get(path)
        if st is None:
            return []
        known: dict = dict((entry or {}).get("conversations") or {})
        if _unchanged(entry, st):
            return [SessionReport(self.name, path, agent=c.get("agent")) for c in known.values()]
        new_entry = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ino": st.st_ino, "conversations": known}
        reports: list = []
        if written_by(path) == self.name:
            try:
                conversations = self._conversations(path)
            except (OSError, InputError) as exc:
                reason = str(exc) if isinstance(exc, InputError) else f"cannot read: {exc.strerror or exc}"
                return [SessionReport(self.name, path, status="failed", error=f"{path}: {reason}")]
            for conv in conversations:
                report = self._one(memory_dir, session, conv, known, dry_run=dry_run, redact=redact)
                reports.append(report)
                if report.status == "failed":
                    new_entry["pending"] = True  # read again next time
        if dry_run:
            return reports
        files[path] = new_entry
        if changed is not None:
            changed[path] = new_entry
        return reports

    def _conversations(self, path: str) -> list:
        from memcli.importers import get_importer
        from memcli.ingest.source import iter_json_values

        with open(path, "rb") as f:
            values = list(iter_json_values(f))
        for line, value in values:
            if isinstance(value, Exception):
                raise value if isinstance(value, InputError) else InputError(str(value), line=line)
        return list(get_importer(self.fmt).conversations(iter(values)))

    def _one(self, memory_dir, session: Session, conv, known: dict, *, dry_run: bool, redact: bool):
        from memcli.importers import get_importer
        from memcli.ingest.pipeline import IngestResult
        from memcli.sync._many import store_session
        from memcli.sync.engine import SessionReport
        from memcli.sync.naming import session_agent_id

        path = session.main.path
        line, value = conv.values[0]
        report = SessionReport(self.name, path)
        if not isinstance(value, dict):
            report.status, report.error = "failed", f"{path}: line {line}: {conv.label()} is not an object"
            return report
        key = conv.key or f"{Path(path).parent.name}-{conv.index}"
        updated = value.get("update_time", value.get("updated_at"))
        old = known.get(key)
        report.agent = old["agent"] if old else session_agent_id(self.name, key, project_key=self.project(value))
        if old and old.get("updated") == updated and updated is not None:
            return report
        report.status = "rewritten" if old else "new"
        ident = Identity(key, project_key=self.project(value))
        report.resume = self.resume_command(ident)
        if dry_run:
            return report
        importer = get_importer(self.fmt)
        result = IngestResult(report.agent)
        items = []
        for ln, event in importer.events(iter(conv.values), result):
            if isinstance(event, Exception):
                report.status, report.error = "failed", f"{path}: {event} ({conv.label()})"
                return report
            items.append((ln, event))
        store_session(memory_dir, self, session, ident, report, items, result, redact=redact, label=conv.label())
        if report.status == "failed":
            return report
        known[key] = {"agent": report.agent, "updated": updated}
        return report
