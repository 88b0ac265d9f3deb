"""Fake homes for the sync sources added after the first three (Copilot CLI, ...).

Every record here is written by this project from the producers' own format definitions (Copilot
CLI: the session event schema of github/copilot-sdk, ``generated/session_events``): nothing is
copied from a real session.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from tests.sync_fixtures import CWD, write_lines

__all__ = ["CWD", "write_lines", "cp_session", "cp_turn", "copilot_events", "sid"]


def sid(n: int, kind: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"memcli-sync-more/{kind}/{n}"))


# ---------------------------------------------------------------------------- Copilot CLI
def _ev(session: str, n: int, kind: str, data: dict, parent: str | None = None) -> dict:
    return {"type": kind, "data": data, "id": f"{session[:8]}-e{n:05d}",
            "timestamp": f"2026-02-01T09:{n // 60 % 60:02d}:{n % 60:02d}.000Z", "parentId": parent}


def cp_turn(session: str, t: int, *, phrase: str = "") -> list[dict]:
    """One turn: the ask (with the CLI's transformed prompt), reasoning, a shell call, its start and
    completion, the answer, and streaming/usage events that are passed over."""
    n = 100 * (t + 1)
    call = f"call_{session[:6]}_{t}"
    ask = f"run the tests {t} {phrase}".strip()
    return [
        _ev(session, n, "user.message", {"content": ask, "transformedContent": f"<context>cwd</context>\n{ask}",
                                         "attachments": []}),
        _ev(session, n + 1, "assistant.turn_start", {"turnId": str(t)}),
        _ev(session, n + 2, "assistant.reasoning", {"reasoningId": f"r{t}", "content": f"I will run pytest {t}"}),
        _ev(session, n + 3, "assistant.message", {"messageId": f"m{t}a", "content": "", "model": "gpt-5",
                                                  "toolRequests": [{"toolCallId": call, "name": "bash",
                                                                    "arguments": {"command": f"pytest -k t{t}"}}]}),
        _ev(session, n + 4, "tool.execution_start", {"toolCallId": call, "toolName": "bash",
                                                     "arguments": {"command": f"pytest -k t{t}"}}),
        _ev(session, n + 5, "tool.execution_complete", {"toolCallId": call, "success": True,
                                                        "result": {"content": f"{t} passed",
                                                                   "detailedContent": f"==== {t} passed ===="}}),
        _ev(session, n + 6, "assistant.message_delta", {"messageId": f"m{t}b", "deltaContent": "all"}),
        _ev(session, n + 7, "assistant.message", {"messageId": f"m{t}b", "content": f"all {t} passed"}),
        _ev(session, n + 8, "assistant.usage", {"model": "gpt-5", "inputTokens": 100, "outputTokens": 9}),
        _ev(session, n + 9, "assistant.turn_end", {"turnId": str(t)}),
    ]


def cp_session(session: str, turns: int = 2, *, cwd: str = CWD, phrase: str = "") -> list[dict]:
    lines = [_ev(session, 0, "session.start", {"sessionId": session, "version": 1, "producer": "copilot-agent",
                                               "copilotVersion": "0.0.400", "startTime": "2026-02-01T09:00:00.000Z",
                                               "context": {"cwd": cwd, "gitRoot": cwd, "branch": "main"}}),
             _ev(session, 1, "session.info", {"infoType": "folder_trust", "message": "trusted"})]
    for t in range(turns):
        lines += cp_turn(session, t, phrase=phrase)
    return lines


def copilot_events(home: Path, session: str) -> Path:
    return home / ".copilot" / "session-state" / session / "events.jsonl"


# ---------------------------------------------------------------------------- Goose
GOOSE_SCHEMA = """
CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);
CREATE TABLE sessions (id TEXT PRIMARY KEY, name TEXT NOT NULL DEFAULT '', description TEXT NOT NULL DEFAULT '',
  user_set_name BOOLEAN DEFAULT FALSE, session_type TEXT NOT NULL DEFAULT 'user', working_dir TEXT NOT NULL,
  created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
  extension_data TEXT DEFAULT '{}', total_tokens INTEGER, input_tokens INTEGER, output_tokens INTEGER,
  accumulated_total_tokens INTEGER, accumulated_input_tokens INTEGER, accumulated_output_tokens INTEGER,
  schedule_id TEXT, recipe_json TEXT, user_recipe_values_json TEXT);
CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id),
  role TEXT NOT NULL, content_json TEXT NOT NULL, created_timestamp INTEGER NOT NULL,
  timestamp TIMESTAMP DEFAULT CURRENT_TIMESTAMP, tokens INTEGER, metadata_json TEXT);
"""


def goose_turn(t: int, phrase: str = "") -> list[tuple[str, list, dict]]:
    """(role, content, metadata) rows of one turn: an ask, a shell tool request, the row of tool
    responses only (a tool result, not an ask), the answer."""
    call = f"tool_{t}"
    return [
        ("user", [{"type": "text", "text": f"list files {t} {phrase}".strip()}], {"userVisible": True, "agentVisible": True}),
        ("assistant", [{"type": "text", "text": "Let me look."},
                       {"type": "toolRequest", "id": call, "toolCall": {"status": "success", "value": {
                           "name": "developer__shell", "arguments": {"command": f"ls {t}"}}}}], {}),
        ("user", [{"type": "toolResponse", "id": call, "toolResult": {"status": "success", "value": {
            "content": [{"type": "text", "text": f"file{t}.txt"}], "isError": False}}}], {}),
        ("assistant", [{"type": "text", "text": f"There is file{t}.txt"}], {}),
    ]


def goose_db(path: Path, sessions: dict, *, created: str = "2026-02-03 08:00:00") -> Path:
    """``sessions``: id -> (working_dir, rows); written as Goose's schema v5 lays it out."""
    import json
    import sqlite3

    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    if not con.execute("SELECT name FROM sqlite_master WHERE name='sessions'").fetchone():
        con.executescript(GOOSE_SCHEMA)
        con.execute("INSERT INTO schema_version (version) VALUES (5)")
    for sid_, (cwd, rows) in sessions.items():
        con.execute("INSERT OR IGNORE INTO sessions (id, name, working_dir, created_at, updated_at) VALUES (?,?,?,?,?)",
                    (sid_, f"session {sid_}", cwd, created, created))
        for n, (role, content, meta) in enumerate(rows):
            con.execute("INSERT INTO messages (session_id, role, content_json, created_timestamp, metadata_json)"
                        " VALUES (?,?,?,?,?)", (sid_, role, json.dumps(content), 1770105600 + n, json.dumps(meta)))
        con.execute("UPDATE sessions SET updated_at = datetime(updated_at, '+' || ? || ' seconds') WHERE id = ?",
                    (len(rows), sid_))
    con.commit()
    con.close()
    return path


# ---------------------------------------------------------------------------- opencode
OPENCODE_SCHEMA = """
CREATE TABLE project (id TEXT PRIMARY KEY, worktree TEXT NOT NULL, time_created INTEGER NOT NULL,
  time_updated INTEGER NOT NULL);
CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT NOT NULL, workspace_id TEXT, parent_id TEXT,
  slug TEXT NOT NULL, directory TEXT NOT NULL, path TEXT, title TEXT NOT NULL, version TEXT NOT NULL,
  share_url TEXT, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, time_compacting INTEGER,
  time_archived INTEGER);
CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, time_created INTEGER NOT NULL,
  time_updated INTEGER NOT NULL, data TEXT NOT NULL);
CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL, session_id TEXT NOT NULL,
  time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
"""
OC_T0 = 1770000000000  # epoch ms


def oc_turn(t: int, phrase: str = "", *, status: str = "completed") -> list[tuple[dict, list[dict]]]:
    """(message data, parts) of one turn: an ask, then an assistant message with reasoning, a bash
    tool part (its state ``status``) and text, and the step markers that are passed over."""
    ask = f"fix lint {t} {phrase}".strip()
    user = {"role": "user", "time": {"created": OC_T0 + 1000 * t}, "agent": "build",
            "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4"}}
    state = {"status": status, "input": {"command": f"ruff check {t}"}, "time": {"start": OC_T0 + 1000 * t + 2}}
    if status == "completed":
        state.update(output=f"{t} errors fixed", title="ruff", metadata={})
    assistant = {"role": "assistant", "time": {"created": OC_T0 + 1000 * t + 1}, "modelID": "claude-sonnet-4",
                 "providerID": "anthropic", "mode": "build", "path": {"cwd": "/home/me/app", "root": "/home/me/app"},
                 "cost": 0, "tokens": {"input": 10, "output": 5, "reasoning": 0, "cache": {"read": 0, "write": 0}}}
    return [(user, [{"type": "text", "text": ask}]),
            (assistant, [{"type": "step-start"}, {"type": "reasoning", "text": f"lint {t} first"},
                         {"type": "tool", "callID": f"call_{t}", "tool": "bash", "state": state},
                         {"type": "text", "text": f"lint {t} clean"}, {"type": "step-finish", "tokens": {}}])]


def _ocid(kind: str, session: str, n: int) -> str:
    return f"{kind}_{session[4:]}{n:04d}"


def opencode_db(path: Path, sessions: dict) -> Path:
    """``sessions``: id -> (directory, turns); appends to an existing database."""
    import json
    import sqlite3

    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    if not con.execute("SELECT name FROM sqlite_master WHERE name='session'").fetchone():
        con.executescript(OPENCODE_SCHEMA)
    for sid_, (directory, turns) in sessions.items():
        con.execute("INSERT OR IGNORE INTO project VALUES ('p1', ?, ?, ?)", (directory, OC_T0, OC_T0))
        con.execute("INSERT OR IGNORE INTO session (id, project_id, slug, directory, title, version, time_created,"
                    " time_updated) VALUES (?, 'p1', 'slug', ?, ?, '1.0.0', ?, ?)",
                    (sid_, directory, f"title {sid_[-4:]}", OC_T0, OC_T0))
        n = con.execute("SELECT COUNT(*) FROM message WHERE session_id = ?", (sid_,)).fetchone()[0]
        p = con.execute("SELECT COUNT(*) FROM part WHERE session_id = ?", (sid_,)).fetchone()[0]
        for data, parts in turns:
            mid = _ocid("msg", sid_, n)
            created = data["time"]["created"]
            con.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)", (mid, sid_, created, created, json.dumps(data)))
            for part in parts:
                con.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                            (_ocid("prt", sid_, p), mid, sid_, created, created + p, json.dumps(part)))
                p += 1
            n += 1
        con.execute("UPDATE session SET time_updated = ? WHERE id = ?", (OC_T0 + 10 * n, sid_))
    con.commit()
    con.close()
    return path


def opencode_legacy(storage: Path, sid_: str, directory: str, turns: list) -> None:
    """The same session in the legacy JSON tree."""
    import json

    (storage / "session" / "p1").mkdir(parents=True, exist_ok=True)
    (storage / "session" / "p1" / f"{sid_}.json").write_text(json.dumps(
        {"id": sid_, "projectID": "p1", "directory": directory, "title": "legacy", "version": "0.3",
         "time": {"created": OC_T0, "updated": OC_T0}}))
    p = 0
    for n, (data, parts) in enumerate(turns):
        mid = _ocid("msg", sid_, n)
        (storage / "message" / sid_).mkdir(parents=True, exist_ok=True)
        (storage / "message" / sid_ / f"{mid}.json").write_text(json.dumps(dict(data, id=mid, sessionID=sid_)))
        for part in parts:
            pid = _ocid("prt", sid_, p)
            (storage / "part" / mid).mkdir(parents=True, exist_ok=True)
            (storage / "part" / mid / f"{pid}.json").write_text(
                json.dumps(dict(part, id=pid, messageID=mid, sessionID=sid_)))
            p += 1


# ---------------------------------------------------------------------------- Cursor
def cu_turn(t: int, phrase: str = "") -> list[dict]:
    """One turn of a Cursor agent transcript: the ask wrapped in <user_query> with workspace info,
    a tool_use and its tool_result, and the answer."""
    ask = f"rename helper {t} {phrase}".strip()
    return [
        {"role": "user", "message": {"content": [{"type": "text", "text":
            f"<user_info>OS: linux</user_info>\n<user_query>\n{ask}\n</user_query>"}]}},
        {"role": "assistant", "message": {"content": [
            {"type": "text", "text": "Searching."},
            {"type": "tool_use", "name": "Grep", "input": {"pattern": f"helper{t}"}}]}},
        {"role": "user", "message": {"content": [
            {"type": "tool_result", "name": "Grep", "content": [{"type": "text", "text": f"src/a{t}.py"}]}]}},
        {"role": "assistant", "message": {"content": [{"type": "text", "text": f"Renamed helper {t}."}]}},
    ]


def cursor_transcript(home: Path, project: str, session: str) -> Path:
    return home / ".cursor" / "projects" / project / "agent-transcripts" / session / f"{session}.jsonl"


# ---------------------------------------------------------------------------- Aider
def aider_run(started: str, asks: list[str]) -> str:
    """One run of .aider.chat.history.md as Aider's InputOutput appends it: the header, per ask the
    typed lines (#### ..., two trailing spaces), notices (> ...) and the reply."""
    out = f"\n# aider chat started at {started}\n\n> Aider v0.80.0  \n> Main model: sonnet  \n"
    for ask in asks:
        out += "\n" + "  \n".join(f"#### {line}" for line in ask.splitlines()) + "  \n"
        out += f"\nSure, here is the change for {ask.splitlines()[0]}.\n\n"
        out += "> Applied edit to app.py  \n> Tokens: 2.1k sent, 120 received.  \n"
    return out
