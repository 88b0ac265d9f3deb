"""Aider chat logs: ``.aider.chat.history.md`` in a project directory, read by
:mod:`memcli.importers.aider` (Markdown: each ``# aider chat started at ...`` run is one session).

Where: ``<home>/.aider.chat.history.md``, and in every directory one or two levels under the
home directory that is not hidden (``~/app``, ``~/src/app``): Aider writes the file in the
directory it runs in, usually the project (git root). Hidden directories and ``node_modules``
are not looked into.

One agent per run: ``aider.<project directory name>.<YYYYMMDD-HHMMSS>`` (the run's start time).
The file's size, mtime and inode decide whether it is opened; opened, only the runs whose text
changed (usually the last, still being appended to) are imported again, reconciled by ids.

Resume: ``cd <project> && aider --restore-chat-history``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterator

from memcli.sync import Identity, Session, SessionFile
from memcli.sync._dirs import entries
from memcli.sync._head import in_dir

FILE_NAME = ".aider.chat.history.md"
_SKIP = frozenset({"node_modules", "__pycache__", "Library", "snap"})


def _subdirs(path: str) -> list[str]:
    return [e.path for e in entries(path) if not e.name.startswith(".") and e.name not in _SKIP
            and e.is_dir(follow_symlinks=False)]


class AiderSource:
    name = "aider"

    def find(self, home: Path) -> Iterator[Session]:
        dirs = [str(home)]
        for child in _subdirs(str(home)):
            dirs.append(child)
            dirs.extend(_subdirs(child))
        for directory in dirs:
            path = os.path.join(directory, FILE_NAME)
            if os.path.isfile(path):
                yield self.session_of(path)

    def session_of(self, path: str) -> Session:
        return Session(self.name, [SessionFile(str(path), "aider", lines=False)])

    def identify(self, session: Session) -> Identity:
        return Identity(Path(session.main.path).parent.name, cwd=str(Path(session.main.path).parent))

    def resume_command(self, ident: Identity) -> str | None:
        return in_dir(ident.cwd, "aider --restore-chat-history")

    def import_sessions(self, memory_dir, session: Session, files: dict, *, dry_run: bool = False,
                        redact: bool = True, changed: dict | None = None) -> list:
        from memcli.events import parse_timestamp
        from memcli.importers._common import blake2b
        from memcli.importers.aider import run_events, runs
        from memcli.ingest.pipeline import IngestResult
        from memcli.sync._many import file_sig, store_session
        from memcli.sync.engine import SessionReport
        from memcli.sync.naming import session_agent_id

        path = session.main.path
        sig = file_sig(path)
        entry = files.get(path) or {}
        known: dict = dict(entry.get("runs") or {})
        if sig is None:
            return []
        if entry.get("sig") == sig:
            return [SessionReport(self.name, path, agent=r.get("agent")) for r in known.values()]
        try:
            with open(path, "rb") as f:
                text = f.read().decode("utf-8", errors="replace")
        except OSError as exc:
            return [SessionReport(self.name, path, status="failed", error=f"{path}: cannot read: {exc.strerror}")]
        cwd = str(Path(path).parent)
        reports = []
        for run in runs(text):
            stamp = re.sub(r"\D", "", run.started)
            key = f"{stamp[:8]}-{stamp[8:]}" if stamp else "before-first-run"
            body = run.text.strip()  # the blank line before the next run's header is not the run's
            mark = [len(body), blake2b(body.encode("utf-8"), digest_size=12).hexdigest()]
            old = known.get(key)
            agent = old["agent"] if old else session_agent_id(self.name, key, cwd=cwd)
            report = SessionReport(self.name, path, agent=agent)
            reports.append(report)
            if old and old.get("mark") == mark:
                continue
            report.status = "rewritten" if old else "new"
            ident = Identity(key, cwd=cwd)
            report.resume = self.resume_command(ident)
            if dry_run:
                continue
            try:
                ts = parse_timestamp(run.started.replace(" ", "T")) if run.started else None
            except Exception:
                ts = None
            result = IngestResult(agent)
            items = list(run_events(run, result.skipped, ts=ts))
            store_session(memory_dir, self, session, ident, report, items, result, redact=redact,
                          label=f"run at line {run.line}")
            if report.status != "failed":
                known[key] = {"agent": agent, "mark": mark}
        if not dry_run:
            new_entry = {"sig": sig, "runs": known}
            if any(r.status == "failed" for r in reports):
                new_entry["sig"] = None
            files[path] = new_entry
            if changed is not None:
                changed[path] = new_entry
        return reports


SOURCE = AiderSource()
