"""Cursor agent transcripts: ``<home>/.cursor/projects/<workspace slug>/agent-transcripts/<id>/<id>.jsonl``
and ``agent-transcripts/<id>.jsonl``, read by :mod:`memcli.importers.cursor` (the older plain-text
``.txt`` transcripts are not read).

The writer leaves the last line without a newline: the files are read with ``complete_tail``
(that line is read when it parses, and again — de-duplicated by id — once the file grows).
The session id is the file name; the project is the workspace slug (Cursor's folder name for the
workspace path, which cannot be turned back into the path: it is used as it is).

Resume: ``cursor-agent --resume <id>``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

from memcli.sync import Identity, Session, SessionFile
from memcli.sync._dirs import entries

FMT = "cursor"


class CursorSource:
    name = "cursor"

    def find(self, home: Path) -> Iterator[Session]:
        for project in entries(str(home / ".cursor" / "projects")):
            transcripts = os.path.join(project.path, "agent-transcripts")
            for entry in entries(transcripts):
                if entry.is_dir():
                    path = os.path.join(entry.path, entry.name + ".jsonl")
                    if os.path.isfile(path):
                        yield self.session_of(path)
                elif entry.name.endswith(".jsonl"):
                    yield self.session_of(entry.path)

    def session_of(self, path: str) -> Session:
        p = Path(path)
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


SOURCE = CursorSource()
