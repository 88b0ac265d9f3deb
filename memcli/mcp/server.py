"""``memcli mcp``: a stdio MCP server over the store, on the official ``mcp`` SDK (FastMCP).

Only this module imports the SDK, and only ``memcli mcp`` imports this module: no other command
pays for it. The tools (at most six, small paginated answers; the logic is
:class:`memcli.mcp.tools.MemoryTools`):

    memory_search    ranked hits (id, kind, tier, turn, time, snippet); ids expand with memory_get
    memory_get       one record by id, or a call and its result by tool_call_id
    memory_recent    the last turns of the active history, newest last, paged by before_turn
    memory_remember  add a fact (optionally pinned into every snapshot)
    memory_forget    take a fact or summary out with a tombstone (nothing is deleted)
    memory           the working-memory tool (Anthropic memory tool commands)

With ``--agent A`` the ``agent`` argument may be omitted (the schema marks it optional); without
it, ``agent`` is required. Optional arguments accept ``null``. A memcli error (unknown agent or
id, bad argument) is returned as a tool error carrying memcli's message, never a crash.

Adding a tool is one entry in :func:`_tool_specs`: a function whose signature is the schema.
"""

from __future__ import annotations

import inspect
import os
from typing import Any, Callable, Optional

from memcli import __version__
from memcli.errors import MemcliError
from memcli.mcp.tools import MAX_RECENT_TURNS, MAX_SEARCH_LIMIT, MemoryTools

SERVER_NAME = "memcli"


def _instructions(agent: str | None) -> str:
    who = f"agent {agent!r}" if agent else "any agent (pass `agent`)"
    return (f"Long-term memory of {who}, kept by memcli: every message, tool call and result the agent saw, "
            "plus summaries and facts. Search it before asking the user to repeat something; ids in results "
            "expand with memory_get; remember durable facts with memory_remember.")


def _tool_specs(tools: MemoryTools) -> list[tuple[str, str, Callable]]:
    """(name, description, function) for every tool; each function's signature is its schema."""

    def memory_search(agent: Optional[str] = None, query: str = "", limit: Optional[int] = 10,
                      offset: Optional[int] = 0, kind: Optional[str] = None,
                      history: Optional[bool] = False) -> dict[str, Any]:
        return tools.search(agent, query, limit, offset, kind, history)

    def memory_get(agent: Optional[str] = None, id: str = "", max_chars: Optional[int] = 4000,
                   char_offset: Optional[int] = 0) -> dict[str, Any]:
        return tools.get(agent, id, max_chars, char_offset)

    def memory_recent(agent: Optional[str] = None, turns: Optional[int] = 3,
                      before_turn: Optional[str] = None) -> dict[str, Any]:
        return tools.recent(agent, turns, before_turn)

    def memory_remember(agent: Optional[str] = None, fact: str = "", tags: Optional[list[str]] = None,
                        pin: Optional[bool] = False, supersedes: Optional[list[str]] = None) -> dict[str, Any]:
        return tools.remember(agent, fact, tags, pin, supersedes)

    def memory_forget(agent: Optional[str] = None, id: str = "", reason: Optional[str] = None) -> dict[str, Any]:
        return tools.forget(agent, id, reason)

    specs = [
        ("memory_search", "Search the agent's whole memory (every trace, active and archived, every summary and "
         "fact). Ask in words or as a question: common words are ignored, records holding more of the other words "
         "(close together) rank first, identical texts are one hit with a `count`. \"quoted phrase\" and prefix* "
         "work. kind: trace, episodic or semantic. Forgotten or superseded facts only with history=true (each hit's "
         "`status` says). "
         f"limit 1-{MAX_SEARCH_LIMIT}; page with offset=next_offset. Each hit's id expands with memory_get.",
         memory_search),
        ("memory_get", "One record in full by id (a trace, summary or fact), or a tool call and its result by "
         "tool_call_id (every one when the id was reused: `ambiguous`). Long fields are cut to max_chars; "
         "`clipped` names them; page with char_offset=next_char_offset.", memory_get),
        ("memory_recent", f"The last turns of the active history (1-{MAX_RECENT_TURNS}, oldest first), each trace "
         "as one short line with its id. Older turns: before_turn=next_before_turn.", memory_recent),
        ("memory_remember", "Remember a durable fact (a sentence or two). pin=true puts it into every snapshot of "
         "this agent's context. supersedes: ids of facts it replaces. Secrets are redacted.", memory_remember),
        ("memory_forget", "Take a fact or summary out of memory (a tombstone supersedes it; nothing is deleted). "
         "reason is kept.", memory_forget),
    ]
    specs.append(_working_memory_tool(tools))
    return specs


def _working_memory_tool(tools: MemoryTools):
    """The sixth tool, ``memory``: the working-memory files answered by
    :func:`memcli.memory_tool.answer` (Anthropic's memory tool protocol; :meth:`MemoryTools.memory`:
    the agent's file, or with ``--remote`` its rows in the shared store). Its arguments are
    the memory tool's ``input`` fields, flat; a refused command is an error result carrying the
    reference implementation's text."""
    def memory(agent: Optional[str] = None, command: str = "", path: Optional[str] = None,
               file_text: Optional[str] = None, old_str: Optional[str] = None, new_str: Optional[str] = None,
               insert_line: Optional[int] = None, insert_text: Optional[str] = None,
               view_range: Optional[list[int]] = None, old_path: Optional[str] = None,
               new_path: Optional[str] = None) -> str:
        fields = {"command": command, "path": path, "file_text": file_text, "old_str": old_str, "new_str": new_str,
                  "insert_line": insert_line, "insert_text": insert_text, "view_range": view_range,
                  "old_path": old_path, "new_path": new_path}
        return tools.memory(agent, {k: v for k, v in fields.items() if v is not None})

    return ("memory", "Working memory files under /memories (Anthropic's memory tool): command is view, create, "
            "str_replace, insert, delete or rename, with that command's fields (path, file_text, old_str, new_str, "
            "insert_line, insert_text, view_range, old_path, new_path). Answers exactly as Anthropic's memory tool.",
            memory)


def _guarded(fn: Callable, *, agent_required: bool) -> Callable:
    """``fn`` with memcli errors turned into tool errors, and ``agent`` required when no agent is
    fixed (its signature — what the SDK turns into the input schema — says so)."""
    from mcp.server.fastmcp.exceptions import ToolError

    def call(**kwargs):
        try:
            return fn(**kwargs)
        except MemcliError as exc:
            raise ToolError(exc.message + (f" (hint: {exc.hint})" if exc.hint else "")) from None

    import typing

    hints = typing.get_type_hints(fn)  # this module's annotations are strings (PEP 563): resolve them
    signature = inspect.signature(fn)
    params = []
    for param in signature.parameters.values():
        param = param.replace(annotation=hints.get(param.name, param.annotation))
        if param.name == "agent" and agent_required:
            param = param.replace(default=inspect.Parameter.empty, annotation=str)
        elif param.name in ("query", "id", "fact", "command"):
            param = param.replace(default=inspect.Parameter.empty)
        params.append(param.replace(kind=inspect.Parameter.KEYWORD_ONLY))
    call.__signature__ = signature.replace(parameters=params, return_annotation=hints.get("return"))  # type: ignore[attr-defined]
    call.__name__ = fn.__name__
    call.__annotations__ = {p.name: p.annotation for p in params} | {"return": hints.get("return")}
    return call


LOG_LEVELS = ("debug", "info", "warning", "error")


def build_server(memory_dir: str | os.PathLike, agent: str | None = None, log_level: str = "warning",
                 remote: str | None = None):
    """A FastMCP server with the memory tools over ``memory_dir`` — or, with ``remote`` (a URL;
    "" for ``$MEMCLI_REMOTE``), over the shared PostgreSQL store, with the same six tools. Its log (stderr) says nothing per request unless ``log_level`` is ``info`` or
    ``debug``."""
    from mcp.server.fastmcp import FastMCP

    from memcli.api import Memory

    if agent is not None:
        Memory(memory_dir).agent(agent.rpartition("/")[2] if remote is not None else agent)  # a valid agent id
    if log_level not in LOG_LEVELS:
        from memcli.errors import UsageError

        raise UsageError(f"{{log_level}}: expected one of {', '.join(LOG_LEVELS)}, got {log_level!r}", param="log_level")
    if remote is not None:
        from memcli.mcp.tools import RemoteMemoryTools

        tools = RemoteMemoryTools(Memory(memory_dir).remote(remote or None), agent)
    else:
        tools = MemoryTools(memory_dir, agent)
    server = FastMCP(SERVER_NAME, instructions=_instructions(agent), log_level=log_level.upper())
    server._mcp_server.version = __version__
    for name, description, fn in _tool_specs(tools):
        server.add_tool(_guarded(fn, agent_required=agent is None), name=name, description=description)
    return server


def serve(memory_dir: str | os.PathLike, agent: str | None = None, log_level: str = "warning",
          remote: str | None = None) -> None:
    """Run the server on stdin/stdout until the client closes the connection."""
    build_server(memory_dir, agent, log_level, remote).run("stdio")
