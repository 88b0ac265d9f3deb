"""Claude Code sessions: ``<home>/.claude/projects/<project key>/<session id>.jsonl``, and
``<home>/.config/claude/projects/...`` (the XDG directory some 1.x versions wrote instead);
``$CLAUDE_CONFIG_DIR/projects/...`` alone when that is set.

* the project key is the working directory with every ``/`` and ``.`` made ``-``
  (``/home/me/app`` -> ``-home-me-app``); the agent's ``project`` part is the last component of
  the ``cwd`` the session's lines give, else the key;
* subagents (Task tool, 2.x) are in ``<project key>/<session id>/subagents/agent-<id>.jsonl``:
  they are joined to their session's agent, each trace tagged ``sidechain`` with
  ``agent_id = <id>`` so parallel subagents stay apart. ``agent-acompact-*`` is not a subagent:
  it is Claude Code's own compaction request (the conversation sent again, then the summary the
  session file holds already as its ``isCompactSummary`` line) and is not read — importing it
  would store the session a second time and the summary twice. Nor is
  ``agent-aprompt_suggestion-*`` (the harness predicting the user's next prompt: neither the
  user's ask nor the agent's work). 1.x wrote subagent lines into the session file itself
  (``isSidechain``);
* 2.0.x wrote subagents beside the sessions, ``<project key>/agent-<id>.jsonl``, each line naming
  its parent session (``sessionId``; the file name does not): such a file is one more subagent
  file of the session it names, as if it were in ``<session id>/subagents/`` (same traces, same
  order, same sync state). Imported as a session of its own it was stored before or after the
  whole session, in the wrong turn. Learning that name costs reading the file's first line at
  every sync (and at every hook call for a session of that directory): the one file ``find``
  opens, for this layout alone. A file whose session file is not beside it (or whose first lines
  name none) stays a session of its own, stored into the agent of the session it names;
* a session's files are merged by timestamp among what one sync reads of them. Memory is
  append-only: a line is never stored before what an earlier sync stored, so the lines a subagent
  file gets after the main file was synced past them are stored after (the new-layout rule too).
  A foreground Task holds the main file at its call until the subagent is done, so a sync while
  it runs loses no order (only a parallel Task's result, written when it ends, can come first);
  memory an older memcli synced from 2.0.x files keeps their order until ``memcli clear AGENT``
  makes the next sync import the session again, whole;
* ``~/.claude/history.jsonl`` (the prompt history) is not a session and is not read.

Resume: ``cd <cwd> && claude --resume <session id>``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

from memcli.json_input import loads
from memcli.sync import Identity, Session, SessionFile
from memcli.sync._dirs import entries, harness_dir
from memcli.sync._head import HEAD_BYTES, head_values, in_dir, text

FMT = "claude-code"
# the harness's own requests written like subagents, not subagents (docstring): its compaction
# request, and its guess at the user's next prompt
HARNESS_REQUESTS = ("agent-acompact-", "agent-aprompt_suggestion-", "agent-prompt_suggestion-")


def _jsonl(directory: str) -> list[os.DirEntry]:
    return [e for e in entries(directory) if e.name.endswith(".jsonl") and e.is_file()]


def _subagent_file(path: str, name: str) -> SessionFile:
    return SessionFile(path, FMT, sidechain=name[len("agent-"):-len(".jsonl")])


def _older_subagents(listed: list[os.DirEntry]) -> list[os.DirEntry]:
    """The 2.0.x subagent files among a project directory's entries (beside the sessions)."""
    return [e for e in listed if e.name.startswith("agent-") and e.name.endswith(".jsonl")
            and not e.name.startswith(HARNESS_REQUESTS) and e.is_file()]


def _named_session(path: str) -> str | None:
    """The ``sessionId`` the first complete lines of a 2.0.x subagent file name (its parent
    session), None when they name none. Line by line, not :func:`head_values`' whole head: this
    runs for every such file at every sync, and a subagent's first line is short."""
    read = 0
    try:
        with open(path, "rb") as f:
            while read < HEAD_BYTES:
                raw = f.readline(HEAD_BYTES - read)
                if not raw.endswith(b"\n"):  # the end of the file, a line still being written, or the limit
                    return None
                read += len(raw)
                try:
                    value = loads(raw)
                except ValueError:  # (orjson's JSONDecodeError is one)
                    continue
                if isinstance(value, dict) and text(value.get("sessionId")):
                    return value["sessionId"]
    except OSError:
        return None
    return None


def _by_session(older: list[os.DirEntry]) -> dict[str | None, list[SessionFile]]:
    """session id (None: unnamed) -> its 2.0.x subagent files, in name order."""
    out: dict[str | None, list[SessionFile]] = {}
    for entry in older:
        out.setdefault(_named_session(entry.path), []).append(_subagent_file(entry.path, entry.name))
    return out


class ClaudeCodeSource:
    name = "claude-code"

    def find(self, home: Path) -> Iterator[Session]:
        base = harness_dir(home, ".claude", "CLAUDE_CONFIG_DIR")
        roots = dict.fromkeys([base, home / ".config" / "claude"] if base == home / ".claude" else [base])
        for project in (p for root in roots for p in entries(os.path.join(root, "projects"))):
            if not project.is_dir():
                continue
            listed = entries(project.path)
            with_dirs = {e.name for e in listed if e.is_dir()}  # <session>/ holds its subagents
            # 2.0.x subagent files join the session they name, as one more file of it (module
            # docstring): imported on their own they were stored before or after the whole session
            older = _by_session(_older_subagents(listed))
            for entry in listed:
                if entry.name.endswith(".jsonl") and entry.is_file() and not entry.name.startswith("agent-"):
                    stem = entry.name[:-len(".jsonl")]
                    yield self.session_of(entry.path, subagents=stem in with_dirs, older=older.pop(stem, []))
            for files in older.values():  # their session file is not here: each a session of its own
                for spec in files:
                    yield Session(self.name, [spec], hint={"project_key": os.path.basename(project.path),
                                                           "subagent": True})

    def session_of(self, path: str, *, subagents: bool = True, older: list[SessionFile] | None = None) -> Session:
        """The session of one transcript file, with its subagent files: those in
        ``<session>/subagents/`` (looked for unless ``subagents`` is False: the caller knows there
        is no ``<session>/`` directory) and the 2.0.x ones beside it that name it (``older``;
        looked for when None). A 2.0.x subagent file's session is the one it names when that
        session's file is beside it, else it is a session of its own."""
        directory, name = os.path.split(str(path))
        stem = name[:-len(".jsonl")] if name.endswith(".jsonl") else name
        key = os.path.basename(directory)
        if name.startswith("agent-"):
            parent = _named_session(str(path))
            # the id is the file's text, made a file name: only a plain session file's name (no
            # path, not an agent-* file, which would send this back here)
            main = os.path.join(directory, f"{parent}.jsonl") if (
                parent and os.path.basename(parent) == parent and not parent.startswith("agent-")) else None
            if main and os.path.isfile(main):
                return self.session_of(main)
            return Session(self.name, [_subagent_file(str(path), name)], hint={"project_key": key, "subagent": True})
        files = [SessionFile(str(path), FMT)]
        if subagents:
            for sub in _jsonl(os.path.join(directory, stem, "subagents")):
                if sub.name.startswith("agent-") and not sub.name.startswith(HARNESS_REQUESTS):
                    files.append(_subagent_file(sub.path, sub.name))
        if older is None:
            older = _by_session(_older_subagents(entries(directory))).get(stem, [])
        files.extend(older)
        return Session(self.name, files, hint={"project_key": key})

    def identify(self, session: Session) -> Identity:
        path = Path(session.main.path)
        session_id = None if session.hint.get("subagent") else path.stem
        cwd = None
        for value in head_values(str(path)):
            cwd = cwd or text(value.get("cwd"))
            session_id = session_id or text(value.get("sessionId"))
            if cwd and session_id:
                break
        return Identity(session_id or path.stem, cwd=cwd, project_key=session.hint.get("project_key"))

    def resume_command(self, ident: Identity) -> str | None:
        return in_dir(ident.cwd, f"claude --resume {ident.resume_id or ident.session_id}")


SOURCE = ClaudeCodeSource()
