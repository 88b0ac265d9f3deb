"""Gemini CLI sessions: ``<home>/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl`` (the
replay log written since March 2026) and the legacy ``session-*.json``, read by
:mod:`memcli.importers.gemini_cli` (ids from the message ids).

* ``<project>`` is a short name or the project hash; ``<home>/.gemini/tmp/<project>/.project_root``
  names the project directory when Gemini CLI wrote it (the agent's ``project`` part is its last
  component), else the directory name is the project key;
* resuming a legacy ``.json`` makes Gemini CLI write a ``.jsonl`` beside it with the same session
  id and every message: the ``.json`` is then not read (the ``.jsonl`` holds it all). Two files of
  one ``sessionId`` (a session resumed into a new file) land in one agent, their messages
  de-duplicated by message id — they are one conversation;
* a subagent's session is ``chats/<parent session id>/<id>.jsonl``: it joins its parent's agent
  as a sidechain (``agent_id = <id>``) when the parent's file is found, else it is a session of
  its own;
* ``logs.json`` (the prompt log) and ``checkpoint-*.json`` (``/chat save``) are not sessions.

Resume: ``cd <project dir> && gemini --resume <session id>``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import orjson

from memcli.json_input import loads
from memcli.sync import Identity, Session, SessionFile
from memcli.sync._dirs import entries
from memcli.sync._head import head_values, in_dir, text

FMT = "gemini-cli"


def _project_root(project_dir: Path) -> str | None:
    try:
        return (project_dir / ".project_root").read_text("utf-8").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


class GeminiSource:
    name = "gemini"

    def find(self, home: Path) -> Iterator[Session]:
        for project in entries(home / ".gemini" / "tmp"):
            if not project.is_dir():
                continue
            chats = Path(project.path) / "chats"
            listed = entries(chats)
            names = {e.name for e in listed}
            mains = [e for e in listed if e.is_file() and e.name.startswith("session-")
                     and (e.name.endswith(".jsonl") or (e.name.endswith(".json") and e.name + "l" not in names))]
            subdirs = {e.name: e for e in listed if e.is_dir()}
            joined: dict[str, list[SessionFile]] = {}
            orphans: list[str] = []
            for parent, entry in subdirs.items():
                subs = [e.path for e in entries(Path(entry.path)) if e.is_file() and e.name.endswith(".jsonl")]
                owners = [m for m in mains if m.name.endswith(f"-{parent[:8]}.jsonl")]
                if len(owners) == 1:
                    joined.setdefault(owners[0].path, []).extend(
                        SessionFile(p, FMT, sidechain=Path(p).stem) for p in subs)
                else:
                    orphans.extend(subs)
            hint = {"project_dir": project.path}
            for main in mains:
                files = [SessionFile(main.path, FMT, lines=main.name.endswith(".jsonl"))] + joined.get(main.path, [])
                yield Session(self.name, files, hint=hint)
            for path in orphans:
                yield Session(self.name, [SessionFile(path, FMT)], hint=hint)

    def session_of(self, path: str) -> Session:
        p = Path(path)
        project_dir = p.parent.parent if p.parent.name == "chats" else p.parent.parent.parent
        return Session(self.name, [SessionFile(str(p), FMT, lines=p.suffix == ".jsonl")],
                       hint={"project_dir": str(project_dir)})

    def identify(self, session: Session) -> Identity:
        path = session.main.path
        session_id = None
        if path.endswith(".jsonl"):
            for value in head_values(path):
                session_id = text(value.get("sessionId"))
                break
        else:
            with open(path, "rb") as f:
                data = f.read()
            try:
                doc = loads(data)   # a lone surrogate, replaced (memcli.json_input)
            except orjson.JSONDecodeError:
                doc = None
            session_id = text(doc.get("sessionId")) if isinstance(doc, dict) else None
        project_dir = Path(session.hint.get("project_dir") or Path(path).parent.parent)
        return Identity(session_id or Path(path).stem, cwd=_project_root(project_dir), project_key=project_dir.name)

    def resume_command(self, ident: Identity) -> str | None:
        return in_dir(ident.cwd, f"gemini --resume {ident.resume_id or ident.session_id}")


SOURCE = GeminiSource()
