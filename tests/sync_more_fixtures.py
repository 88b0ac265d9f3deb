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
