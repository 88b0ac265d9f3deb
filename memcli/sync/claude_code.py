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
  would store the session a second time and the summary twice. Nor is ``agent-aprompt_suggestion-*``
  (the harness predicting the user's next prompt: neither the user's ask nor the agent's work). 1.x wrote subagent lines into the session file itself
  (``isSidechain``); an older layout put ``agent-<id>.jsonl`` beside the sessions: such a file
  joins the session its lines name (``sessionId``);
* ``~/.claude/history.jsonl`` (the prompt history) is not a session and is not read.

Resume: ``cd <cwd> && claude --resume <session id>``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

from memcli.sync import Identity, Session, SessionFile
from memcli.sync._dirs import entries, harness_dir
from memcli.sync._head import head_values, in_dir, text

FMT = "claude-code"
# the harness's own requests written like subagents, not subagents (docstring): its compaction
# request, and its guess at the user's next prompt
HARNESS_REQUESTS = ("agent-acompact-", "agent-aprompt_suggestion-", "agent-prompt_suggestion-")


def _jsonl(directory: str) -> list[os.DirEntry]:
    return [e for e in entries(directory) if e.name.endswith(".jsonl") and e.is_file()]


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
            for entry in listed:
                if entry.name.endswith(".jsonl") and entry.is_file() and not entry.name.startswith(HARNESS_REQUESTS):
                    yield self.session_of(entry.path, subagents=entry.name[:-len(".jsonl")] in with_dirs)

    def session_of(self, path: str, *, subagents: bool = True) -> Session:
        """The session of one transcript file, with its subagent files (looked for unless
        ``subagents`` is False: the caller knows there is no ``<session>/`` directory)."""
        directory, name = os.path.split(str(path))
        stem = name[:-len(".jsonl")] if name.endswith(".jsonl") else name
        key = os.path.basename(directory)
        if name.startswith("agent-"):
            # an older layout: a subagent file beside the sessions; it joins the session it names
            return Session(self.name, [SessionFile(str(path), FMT, sidechain=stem[len("agent-"):])],
                           hint={"project_key": key, "subagent": True})
        files = [SessionFile(str(path), FMT)]
        if subagents:
            for sub in _jsonl(os.path.join(directory, stem, "subagents")):
                if sub.name.startswith("agent-") and not sub.name.startswith(HARNESS_REQUESTS):
                    files.append(SessionFile(sub.path, FMT, sidechain=sub.name[len("agent-"):-len(".jsonl")]))
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
