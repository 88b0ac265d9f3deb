"""GitHub Copilot CLI sessions: ``<home>/.copilot/session-state/<session id>/events.jsonl`` (and the
older flat ``<home>/.copilot/session-state/<session id>.jsonl``; ``$COPILOT_HOME`` instead of
``~/.copilot`` when set), read by
:mod:`memcli.importers.copilot_cli`.

The session id and working directory come from the first line (``session.start``:
``data.sessionId``, ``data.context.cwd``); without it the id is the directory's (or file's) name.
The session directory's other files (``workspace.yaml``, checkpoints, plans) are not sessions.

Resume: ``cd <cwd> && copilot --resume <session id>``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

from memcli.sync import Identity, Session, SessionFile
from memcli.sync._dirs import entries, harness_dir
from memcli.sync._head import head_values, in_dir, text

FMT = "copilot-cli"


class CopilotSource:
    name = "copilot"

    def find(self, home: Path) -> Iterator[Session]:
        for entry in entries(harness_dir(home, ".copilot", "COPILOT_HOME") / "session-state"):
            if entry.is_dir():
                path = os.path.join(entry.path, "events.jsonl")
                if os.path.isfile(path):
                    yield self.session_of(path)
            elif entry.name.endswith(".jsonl") and entry.is_file():
                yield self.session_of(entry.path)

    def session_of(self, path: str) -> Session:
        return Session(self.name, [SessionFile(str(path), FMT)])

    def identify(self, session: Session) -> Identity:
        path = Path(session.main.path)
        for value in head_values(str(path)):
            data = value.get("data") if value.get("type") == "session.start" else None
            if isinstance(data, dict) and text(data.get("sessionId")):
                context = data.get("context")
                cwd = text(context.get("cwd")) if isinstance(context, dict) else None
                return Identity(data["sessionId"], cwd=cwd)
            break
        return Identity(path.parent.name if path.name == "events.jsonl" else path.stem)

    def resume_command(self, ident: Identity) -> str | None:
        return in_dir(ident.cwd, f"copilot --resume {ident.resume_id or ident.session_id}")


SOURCE = CopilotSource()
