"""The one rule that names the agent of a harness session: ``<source>.<project>.<session>``.

``sync`` and the harness hooks (``memcli hook``) both call :func:`session_agent_id`, so a session
imported by either lands in the same agent.

* ``source``: the harness's short name (``claude-code``, ``codex``, ``gemini``, ``opencode``,
  ``copilot``, ``cursor``, ``goose``, ``aider``, ``chatgpt``, ``claude-ai``).
* ``project``: the last component of the session's working directory (``/home/me/app`` ->
  ``app``); else the harness's own project key (Claude Code's ``-home-me-app`` -> ``app`` is not
  guessed: the key is used as it is, leading dashes stripped); else ``unknown``. Made safe: every
  run of characters outside ``[A-Za-z0-9_-]`` becomes one ``-`` (dots too: the dot separates the
  three parts), leading/trailing ``-`` stripped, at most 40 characters.
* ``session``: the harness's session id, whole (opencode's ids are time-ordered, so a prefix is
  not unique), made safe the same way; at most 80 characters — a longer id keeps its first 67
  characters, ``-`` and a 12-hex digest of the whole id.

The result always matches the store's agent-id rule (``^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$``, no
``..``) and is stable: the same session gives the same name on every run.
"""

from __future__ import annotations

import re

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
_PROJECT_MAX = 40
_SESSION_MAX = 80


def safe_part(text: str, limit: int) -> str:
    """``text`` as one dot-free agent-id part of at most ``limit`` characters ("" when nothing is left)."""
    part = _UNSAFE.sub("-", str(text or "")).strip("-_")
    if len(part) > limit:
        import hashlib

        digest = hashlib.sha1(str(text).encode("utf-8", "surrogatepass")).hexdigest()[:12]
        part = part[: limit - 13].rstrip("-_") + "-" + digest
    return part


def project_name(cwd: str | None = None, project_key: str | None = None) -> str:
    """The ``project`` part: the working directory's last component, else the harness's project
    key, else ``unknown``."""
    if cwd:
        last = str(cwd).replace("\\", "/").rstrip("/").rpartition("/")[2]
        name = safe_part(last, _PROJECT_MAX)
        if name:
            return name
    if project_key:
        name = safe_part(project_key, _PROJECT_MAX)
        if name:
            return name
    return "unknown"


def session_agent_id(source: str, session_id: str, *, cwd: str | None = None,
                     project_key: str | None = None) -> str:
    """The agent id of one harness session (see the module docstring)."""
    src = safe_part(source, 20) or "session"
    session = safe_part(session_id, _SESSION_MAX) or "0"
    return f"{src}.{project_name(cwd, project_key)}.{session}"
