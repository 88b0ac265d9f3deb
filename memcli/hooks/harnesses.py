"""The harnesses ``memcli hooks`` wires into, as their documentation and source describe them today.

Each :class:`Harness` says where its hook settings live per scope, which of its hook events memcli
uses and for what (``import``: read the session transcript into the session's agent;
``context``: import, then print the memory the model should see again), how it spells a hook
timeout, which importer reads its transcripts, and which of memcli's jobs it has no event for.

Claude Code (code.claude.com/docs/en/hooks): ``settings.json`` at user (``~/.claude``), project
(``.claude/``) and local (``.claude/settings.local.json``) scope; ``{"hooks": {EVENT: [{"matcher",
"hooks": [{"type": "command", "command", "timeout" (seconds)}]}]}}``. Stop, SubagentStop and
PreCompact import; SessionStart with the sources ``compact`` and ``resume`` gives context
(``hookSpecificOutput.additionalContext``, shown whole up to 10,000 characters). Exit 2 blocks
Stop, SubagentStop and PreCompact; any other non-zero exit is a non-blocking error. A session's
subagent files (``<session>/subagents/agent-*.jsonl``) are imported with it, as ``sync`` does.

Codex (developers.openai.com/codex/hooks, codex-rs/hooks): ``hooks.json`` beside each config
layer — ``$CODEX_HOME`` (default ``~/.codex``) for the user, ``<project>/.codex/`` for a project
— in Claude Code's shape, ``timeout`` in seconds. Stop, SubagentStop and PreCompact import;
SessionStart (sources startup, resume, clear, compact) gives context the same way. A hook that
is not managed runs only once the user has reviewed and trusted it (``/hooks`` in Codex).
The older ``notify`` program of ``config.toml`` is not used: it gets no transcript path and
there is only one of it (installing would replace the user's).

Gemini CLI (google-gemini/gemini-cli docs/hooks): ``settings.json`` at user (``~/.gemini``) and
project (``.gemini/``) scope, the same shape with ``timeout`` in milliseconds. AfterAgent (end of
a turn) and PreCompress import; SessionStart's sources are startup, resume and clear: there is
no start after a compression, so memory comes back on ``resume`` only. stdout must be JSON or
nothing. Exit 2 of AfterAgent forces a retry turn.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from memcli.errors import UsageError

IMPORT = "import"
CONTEXT = "context"
SCOPES = ("user", "project", "local")
TIMEOUT_SECONDS = 30  # written into each entry; memcli itself gives up on a lock after a few seconds


@dataclass(frozen=True)
class Event:
    name: str                 # the harness's event name, also `memcli hook HARNESS NAME`
    job: str                  # IMPORT or CONTEXT
    matcher: str | None       # None: the entry has no matcher (fires on every occurrence)
    what: str                 # one line for `hooks status` and the docs


@dataclass(frozen=True)
class Harness:
    name: str
    title: str
    events: tuple[Event, ...]
    importer: str                         # --from format of its transcripts
    timeout_factor: int                   # the settings' timeout unit: 1 = seconds, 1000 = ms
    missing: tuple[str, ...] = ()         # what it has no hook for (said by `hooks status`)
    note: str | None = None               # what the user must still do
    scopes: tuple[str, ...] = field(default=("user", "project"))

    def event(self, name: str) -> Event:
        for event in self.events:
            if event.name == name:
                return event
        raise UsageError(f"{self.title} has no hook event {name!r} that memcli handles "
                         f"(expected {', '.join(e.name for e in self.events)})")

    def settings_path(self, scope: str, project_dir: str | os.PathLike | None = None,
                      home: str | os.PathLike | None = None) -> Path:
        if scope not in self.scopes:
            raise UsageError(f"{self.title} has no {scope!r} settings scope (expected {', '.join(self.scopes)})")
        home_dir = Path(home) if home is not None else Path.home()
        project = Path(project_dir) if project_dir is not None else Path.cwd()
        return _PATHS[self.name](scope, home_dir, project.resolve())


def _claude_path(scope: str, home: Path, project: Path) -> Path:
    if scope == "user":   # ($CLAUDE_CONFIG_DIR moves ~/.claude: memcli.sync._dirs.harness_dir, sync's rule)
        from memcli.sync._dirs import harness_dir

        return harness_dir(home, ".claude", "CLAUDE_CONFIG_DIR") / "settings.json"
    return project / ".claude" / ("settings.json" if scope == "project" else "settings.local.json")


def _codex_path(scope: str, home: Path, project: Path) -> Path:
    if scope == "user":   # ($CODEX_HOME moves ~/.codex)
        from memcli.sync._dirs import harness_dir

        return harness_dir(home, ".codex", "CODEX_HOME") / "hooks.json"
    return project / ".codex" / "hooks.json"


def _gemini_path(scope: str, home: Path, project: Path) -> Path:
    return (home if scope == "user" else project) / ".gemini" / "settings.json"


_PATHS = {"claude-code": _claude_path, "codex": _codex_path, "gemini": _gemini_path}

_IMPORT_TURN = "imports the session transcript (what is new) into the session's agent"
_IMPORT_COMPACT = "imports the transcript before the harness compacts it, so nothing compacted is lost"
_CONTEXT = ("imports, then gives the model the latest ask, pinned facts, working-memory files and the "
            "memory relevant to the ask (at most 10,000 characters)")

HARNESSES: dict[str, Harness] = {
    "claude-code": Harness(
        name="claude-code", title="Claude Code", importer="claude-code", timeout_factor=1,
        scopes=SCOPES,
        events=(
            Event("Stop", IMPORT, None, "end of a turn: " + _IMPORT_TURN),
            Event("SubagentStop", IMPORT, None, "end of a subagent's turn: " + _IMPORT_TURN),
            Event("PreCompact", IMPORT, None, "before /compact or auto-compaction: " + _IMPORT_COMPACT),
            Event("SessionStart", CONTEXT, "compact|resume", "after compaction or on resume: " + _CONTEXT),
        ),
    ),
    "codex": Harness(
        name="codex", title="Codex", importer="codex", timeout_factor=1,
        events=(
            Event("Stop", IMPORT, None, "end of a turn: " + _IMPORT_TURN),
            Event("SubagentStop", IMPORT, None, "end of a subagent's turn: " + _IMPORT_TURN),
            Event("PreCompact", IMPORT, None, "before compaction: " + _IMPORT_COMPACT),
            Event("SessionStart", CONTEXT, "compact|resume", "after compaction or on resume: " + _CONTEXT),
        ),
        note="Codex runs a hook only after you review and trust it: open /hooks in Codex once",
    ),
    "gemini": Harness(
        name="gemini", title="Gemini CLI", importer="gemini-cli", timeout_factor=1000,
        events=(
            Event("AfterAgent", IMPORT, None, "end of a turn: " + _IMPORT_TURN),
            Event("PreCompress", IMPORT, None, "before history compression: " + _IMPORT_COMPACT),
            Event("SessionStart", CONTEXT, "resume", "on resume: " + _CONTEXT),
        ),
        missing=("no session start after compression (SessionStart sources are startup, resume, clear): "
                 "memory is given back on resume only",
                 "no subagent stop event"),
    ),
}


def harness(name: str) -> Harness:
    try:
        return HARNESSES[name]
    except KeyError:
        raise UsageError(f"unknown harness {name!r} (expected {', '.join(HARNESSES)})") from None
