"""Fake agent homes for the sync tests and the sync benchmark.

Every line here is written by this project from the producers' documented formats (Claude Code
session JSONL, Codex rollout JSONL, Gemini CLI JSONL sessions as its chatRecordingService writes
them): nothing is copied from another project.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import orjson

CWD = "/home/me/app"


def write_lines(path: Path, records: list, *, mode: str = "wb", newline_at_end: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = b"\n".join(orjson.dumps(r) for r in records) + (b"\n" if newline_at_end and records else b"")
    with open(path, mode) as f:
        f.write(data)
    return path


def sid(n: int, kind: str = "cc") -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"memcli-sync-test/{kind}/{n}"))


# ---------------------------------------------------------------------------- Claude Code
def cc_user(session: str, n: int, text: str, *, sidechain: bool = False, agent: str | None = None, **extra) -> dict:
    rec = {"type": "user", "uuid": f"{session[:8]}-u{n:05d}", "parentUuid": None, "sessionId": session,
           "cwd": CWD, "version": "2.1.30", "isSidechain": sidechain, "timestamp": f"2026-03-01T10:{n // 60 % 60:02d}:{n % 60:02d}Z",
           "message": {"role": "user", "content": text}}
    if agent:
        rec["agentId"] = agent
    rec.update(extra)
    return rec


def cc_assistant(session: str, n: int, text: str, *, msg_id: str | None = None, sidechain: bool = False,
                 agent: str | None = None, tool: tuple | None = None, usage: dict | None = None) -> dict:
    content = [{"type": "text", "text": text}]
    if tool:
        content = [{"type": "tool_use", "id": tool[0], "name": tool[1], "input": tool[2]}]
    rec = {"type": "assistant", "uuid": f"{session[:8]}-a{n:05d}", "sessionId": session, "cwd": CWD,
           "isSidechain": sidechain, "timestamp": f"2026-03-01T10:{n // 60 % 60:02d}:{n % 60:02d}Z",
           "message": {"id": msg_id or f"msg_{session[:8]}_{n}", "role": "assistant", "model": "claude-sonnet-4-5",
                       "content": content,
                       "usage": usage or {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 100}}}
    if agent:
        rec["agentId"] = agent
    return rec


def cc_result(session: str, n: int, call_id: str, text: str, *, sidechain: bool = False, agent: str | None = None) -> dict:
    rec = cc_user(session, n, "", sidechain=sidechain, agent=agent)
    rec["message"]["content"] = [{"type": "tool_result", "tool_use_id": call_id, "content": text}]
    return rec


def cc_session(session: str, turns: int = 2, *, phrase: str = "") -> list[dict]:
    lines = [{"type": "permission-mode", "permissionMode": "default", "sessionId": session}]
    n = 0
    for t in range(turns):
        n += 1
        lines.append(cc_user(session, n, f"please fix bug {t} {phrase}".strip()))
        n += 1
        lines.append(cc_assistant(session, n, "", tool=(f"toolu_{session[:6]}_{t}", "Bash", {"command": f"pytest -k t{t}"})))
        n += 1
        lines.append(cc_result(session, n, f"toolu_{session[:6]}_{t}", f"{t} passed"))
        n += 1
        lines.append(cc_assistant(session, n, f"fixed bug {t}"))
    return lines


def claude_project(home: Path, key: str = "-home-me-app") -> Path:
    return home / ".claude" / "projects" / key


# ---------------------------------------------------------------------------- Codex
def cx_lines(session: str, turns: int = 2, *, phrase: str = "", cwd: str = CWD) -> list[dict]:
    ts = "2026-03-02T09:00:00.000Z"
    lines = [{"timestamp": ts, "type": "session_meta",
              "payload": {"id": session, "timestamp": ts, "cwd": cwd, "originator": "codex_cli_rs",
                          "cli_version": "0.104.0", "base_instructions": {"text": "You are Codex."}}},
             {"timestamp": ts, "type": "turn_context", "payload": {"cwd": cwd, "model": "gpt-5-codex"}}]
    for t in range(turns):
        lines += cx_turn(session, t, phrase)
    return lines


def cx_turn(session: str, t: int, phrase: str = "") -> list[dict]:
    ts = f"2026-03-02T09:{t // 60 % 60:02d}:{t % 60:02d}.000Z"
    ask = f"add feature {t} {phrase}".strip()
    call = f"call_{session[:6]}_{t}"
    return [
        {"timestamp": ts, "type": "response_item", "payload": {"type": "message", "role": "user",
                                                               "content": [{"type": "input_text", "text": ask}]}},
        {"timestamp": ts, "type": "event_msg", "payload": {"type": "user_message", "message": ask, "images": []}},
        {"timestamp": ts, "type": "response_item", "payload": {"type": "function_call", "name": "shell",
                                                               "arguments": orjson.dumps({"command": ["ls"]}).decode(),
                                                               "call_id": call}},
        {"timestamp": ts, "type": "response_item", "payload": {"type": "function_call_output", "call_id": call,
                                                               "output": f"file{t}.py"}},
        {"timestamp": ts, "type": "response_item", "payload": {"type": "message", "role": "assistant",
                                                               "content": [{"type": "output_text", "text": f"done {t}"}]}},
        {"timestamp": ts, "type": "event_msg", "payload": {"type": "token_count", "info": {
            "last_token_usage": {"input_tokens": 100, "cached_input_tokens": 50, "output_tokens": 7}}}},
    ]


def codex_rollout(home: Path, session: str, *, archived: bool = False) -> Path:
    name = f"rollout-2026-03-02T09-00-00-{session}.jsonl"
    if archived:
        return home / ".codex" / "archived_sessions" / name
    return home / ".codex" / "sessions" / "2026" / "03" / "02" / name


def fake_home(home: Path, sessions: int, *, phrase_at: int | None = None, phrase: str = "") -> Path:
    """A home with ``sessions`` Claude Code and Codex sessions (alternating), 2 turns each; the
    session numbered ``phrase_at`` mentions ``phrase``."""
    for n in range(sessions):
        p = phrase if n == phrase_at else ""
        if n % 2 == 0:
            s = sid(n, "cc")
            write_lines(claude_project(home, f"-home-me-proj{n % 7}") / f"{s}.jsonl", cc_session(s, phrase=p))
        else:
            s = sid(n, "cx")
            write_lines(codex_rollout(home, s), cx_lines(s, phrase=p))
    return home


# ---------------------------------------------------------------------------- Gemini CLI
def gm_header(session: str, kind: str | None = None) -> dict:
    header = {"sessionId": session, "projectHash": "9f" * 32, "startTime": "2026-03-03T08:00:00.000Z",
              "lastUpdated": "2026-03-03T08:00:00.000Z"}
    if kind:
        header["kind"] = kind
    return header


def gm_user(mid: str, text: str, minute: int = 0) -> dict:
    return {"id": mid, "timestamp": f"2026-03-03T08:{minute:02d}:00.000Z", "type": "user", "content": [{"text": text}]}


def gm_model(mid: str, text: str, minute: int = 0, *, calls: list | None = None, thoughts: bool = False) -> dict:
    msg = {"id": mid, "timestamp": f"2026-03-03T08:{minute:02d}:30.000Z", "type": "gemini", "content": text,
           "model": "gemini-2.5-pro", "tokens": {"input": 120, "output": 8, "cached": 0, "total": 128}}
    if thoughts:
        msg["thoughts"] = [{"subject": "Planning", "description": "look at the files first",
                            "timestamp": f"2026-03-03T08:{minute:02d}:10.000Z"}]
    if calls is not None:
        msg["toolCalls"] = calls
    return msg


def gm_call(cid: str, name: str = "read_file", *, output: str | None = None, status: str = "success") -> dict:
    call = {"id": cid, "name": name, "args": {"path": "README.md"}, "status": status,
            "timestamp": "2026-03-03T08:00:20.000Z"}
    if output is not None:
        call["result"] = [{"functionResponse": {"id": cid, "name": name, "response": {"output": output}}}]
    return call


def gm_session(session: str, turns: int = 2, *, phrase: str = "") -> list[dict]:
    lines = [gm_header(session)]
    for t in range(turns):
        lines.append(gm_user(f"{session[:8]}-u{t}", f"explain module {t} {phrase}".strip(), t))
        lines.append(gm_model(f"{session[:8]}-m{t}", f"module {t} does things", t,
                              calls=[gm_call(f"{session[:8]}-c{t}", output=f"# module {t}")]))
    return lines


def gemini_chats(home: Path, project: str = "app", root: str | None = CWD) -> Path:
    base = home / ".gemini" / "tmp" / project
    base.mkdir(parents=True, exist_ok=True)
    if root:
        (base / ".project_root").write_text(root)
    return base / "chats"
